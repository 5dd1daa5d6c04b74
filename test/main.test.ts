/**
 * `node dist/src/main.js` as a child process: the start banner says WhatsApp is on, and a start with only some
 * of its settings exits 2 with one line naming the missing ones; so does a REDIS_URL naming a database its
 * server does not have, and a REDIS_KEY_PREFIX that is none.
 */
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { productArgs, ROOT } from './product.js';
import { TEST_REDIS_URL } from './services.js';
import { productDatabase } from './journal/server-database.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the product with `env` until it prints its banner (then kills it: shutdown has its own test) or exits. */
async function run(env: Record<string, string>): Promise<Run> {
  const journal = await productDatabase();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, productArgs(), {
      cwd: ROOT,
      env: { PATH: process.env.PATH, PORT: '0', LOG_LEVEL: 'silent', ...journal, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('Sessions:')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const all = {
  WHATSAPP_TOKEN: 'EAAG-token',
  WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
  WHATSAPP_APP_SECRET: 'secret',
  WHATSAPP_VERIFY_TOKEN: 'verify',
};

/** A child's start takes seconds on a busy two-core machine (tsx compiles the sources first). */
const START_TIMEOUT_MS = 60_000;

describe('npm start and WhatsApp', () => {
  it(
    'says WhatsApp is on, with the webhook to give Meta, when the four settings are set',
    async () => {
      const { stdout, stderr } = await run({ ...all, PUBLIC_URL: 'https://momo.example.org/' });
      expect(stdout).toMatch(/^ {2}WhatsApp: on \(Meta's webhook: https:\/\/momo\.example\.org\/whatsapp\/webhook\)$/m);
      expect(stderr).toBe('');
    },
    START_TIMEOUT_MS,
  );

  it(
    'refuses to start half configured: exit 2, one line naming what is missing',
    async () => {
      const { code, stdout, stderr } = await run({ WHATSAPP_TOKEN: 'EAAG-token', WHATSAPP_APP_SECRET: 'secret' });
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr.trim().split('\n')).toEqual([
        'WhatsApp is half configured: set WHATSAPP_PHONE_NUMBER_ID, WHATSAPP_VERIFY_TOKEN too (or unset every WHATSAPP_ setting to turn it off)',
      ]);
    },
    START_TIMEOUT_MS,
  );
});

describe('npm start and REDIS_URL', () => {
  it(
    'refuses a database the server does not have: exit 2, one line naming REDIS_URL and why',
    async () => {
      // The first index past the server's databases (16 by default), whatever the server is set to.
      const server = new URL(TEST_REDIS_URL);
      server.pathname = '';
      const admin = new Redis(server.toString());
      const databases = Number(((await admin.config('GET', 'databases')) as string[])[1]);
      admin.disconnect();
      server.pathname = `/${databases}`;
      const { code, stdout, stderr } = await run({ REDIS_URL: server.toString() });
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr.trim().split('\n')).toEqual([
        `REDIS_URL: database ${databases} is not on the server at ${server.host} (it has ${databases}: 0 to ${databases - 1}), so every connection would fail to select it: name one of its databases`,
      ]);
    },
    START_TIMEOUT_MS,
  );
});

describe('npm start and REDIS_KEY_PREFIX', () => {
  it(
    'refuses a prefix with braces: exit 2, one line naming the setting and why',
    async () => {
      const { code, stdout, stderr } = await run({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: '{momo}:' });
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr.trim().split('\n')).toEqual([
        `Invalid configuration: REDIS_KEY_PREFIX: "{momo}:": braces would take the keys' hash tags away on a cluster`,
      ]);
    },
    START_TIMEOUT_MS,
  );
});
