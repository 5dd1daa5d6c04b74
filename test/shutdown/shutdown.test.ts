/**
 * Graceful shutdown of the real process: `node --import tsx src/main.ts` as a child, on Redis, against a
 * standalone sandbox behind a proxy that slows payments down. SIGTERM arrives while one payment's request
 * is in flight and another payment runs past the USSD deadline (its user was answered "processing"):
 * the process stops taking requests, answers the one in flight, finishes the late run and keeps its
 * outcome for the user's next dial, and exits 0. Each payment exists exactly once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { AtSession } from '../e2e/helpers.js';
import { clearProductKeys } from '../chaos/instances.js';
import { forward, readAll } from '../chaos/proxies.js';

const REDIS_URL = process.env.SHUTDOWN_REDIS_URL ?? 'redis://127.0.0.1:6379/12';
const API_KEY = 'shutdown-key';
const FAST_USER = '+256701888001';
const LATE_USER = '+256701888002';

let sandbox: Sandbox;
let sandboxServer: Server;
let proxy: Server;
let redis: Redis;
let child: ChildProcess | undefined;

const listen = (server: Server): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  await clearProductKeys(redis);
  sandbox = createSandbox({ apiKey: API_KEY, allowHttpWebhooks: true, limits: { readsPerMinute: 10_000 }, logger: createLogger('silent') });
  sandboxServer = http.createServer(sandbox.app);
  const sandboxPort = await listen(sandboxServer);
  // Payments take their time: the late user's 4.5 s (past the 3 s USSD deadline), everybody else's 1.5 s.
  proxy = http.createServer((req, res) => {
    void (async () => {
      const body = await readAll(req);
      if (req.method === 'POST' && req.url?.startsWith('/api/payments')) {
        const late = body.toString().includes(LATE_USER);
        await new Promise((resolve) => setTimeout(resolve, late ? 4500 : 1500));
      }
      try {
        const answer = await forward(sandboxPort, req, body);
        const headers = { ...answer.headers };
        delete headers['transfer-encoding'];
        delete headers.connection;
        res.writeHead(answer.status, headers).end(answer.body);
      } catch {
        res.socket?.destroy();
      }
    })();
  });
  await listen(proxy);
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  proxy?.closeAllConnections();
  await new Promise<void>((resolve) => proxy?.close(() => resolve()));
  sandboxServer?.closeAllConnections();
  await new Promise<void>((resolve) => sandboxServer?.close(() => resolve()));
  await sandbox?.close();
  await clearProductKeys(redis);
  await redis?.quit();
});

/** Starts the product as its own process and resolves with its URL once it listens. */
function startChild(): Promise<{ url: string; exit: Promise<number | null>; output: () => string }> {
  let output = '';
  child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      LOG_LEVEL: 'warn',
      MOMO_BASE_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      MOMO_API_KEY: API_KEY,
      REDIS_URL,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exit = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the product did not start: ${output}`)), 30_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on http:\/\/localhost:(\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ url: `http://127.0.0.1:${m[1]}`, exit, output: () => output });
      }
    };
    child!.stdout!.on('data', read);
    child!.stderr!.on('data', read);
    void exit.then(() => reject(new Error(`the product exited before listening: ${output}`)));
  });
}

/** A USSD payment up to the PIN screen. */
async function upToPin(url: string, phone: string): Promise<AtSession> {
  const ussd = new AtSession(url, phone);
  await ussd.dial();
  for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '2500', '1', 'rent', '1']) await ussd.answer(answer);
  expect(ussd.screens.at(-1)).toMatch(/PIN/);
  return ussd;
}

/** A fresh connection (no keep-alive socket reused): resolves with the status, rejects when refused. */
function freshRequest(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/healthz`, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('SIGTERM', () => {
  it('answers the request in flight, finishes the late run, refuses new requests and exits 0', async () => {
    const product = await startChild();
    expect(await freshRequest(product.url)).toBe(200);
    const late = await upToPin(product.url, LATE_USER);
    const fast = await upToPin(product.url, FAST_USER);

    // The late payment passes the 3 s deadline: "processing"; its run goes on in the process.
    expect(await late.answer('1234')).toMatch(/still working on it/);
    // The fast payment's request is in flight (1.5 s at the service) when SIGTERM arrives.
    const inFlight = fast.answer('1234');
    await new Promise((resolve) => setTimeout(resolve, 400));
    child!.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));

    await expect(freshRequest(product.url)).rejects.toThrow();
    expect(await inFlight).toMatch(/^END Payment \d+ submitted/);
    expect(await product.exit).toBe(0);

    // Each payment exactly once.
    const chats = sandbox.controls.payments().map((p) => (p as { metadata: Record<string, string> }).metadata.chat);
    expect(chats.filter((c) => c === `ussd:${FAST_USER}`)).toHaveLength(1);
    expect(chats.filter((c) => c === `ussd:${LATE_USER}`)).toHaveLength(1);
    // The late run finished before the exit and kept its outcome for the user's next dial.
    // A store record is `<version>:<write id>:<JSON>` (src/conversation/redis-store.ts).
    const pending = (await redis.get(`momo:pending:ussd:${LATE_USER}`))?.replace(/^\d+:[\w-]+:/, '');
    expect(JSON.parse(pending ?? '[]').join('\n')).toMatch(/Payment \d+ submitted/);
  }, 60_000);
});
