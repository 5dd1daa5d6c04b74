/**
 * The soak benchmark (`npm run bench -- soak`, not part of the default run): the real product started as an
 * operator runs it in production (`node dist/src/main.js`, configured by environment only, its own
 * process) against a standalone sandbox on its own port (payments advance and their webhooks come back with
 * Basic auth) and Redis, while users walk whole USSD payments (Africa's Talking requests to the secret
 * callback path, the PIN checked against the policy's scrypt hash) one after another for several minutes.
 * Every SAMPLE_EVERY_MS it asks the product for its memory after a full garbage collection (the probe,
 * bench/soak/probe.ts, loaded with --expose-gc: the product's code is unchanged) and says whether RSS and the
 * heap after collection plateau (plateauOf).
 *
 * SOAK_MINUTES (default 5; BENCH_QUICK=1: 1) and SOAK_USERS (default 16). Redis: REDIS_URL's server, database
 * 12, the product's keys under a prefix of the run's own (REDIS_KEY_PREFIX), deleted after.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { createLogger } from '../../src/log.js';
import { createSandbox } from '../../src/sandbox/index.js';
import { ACKNOWLEDGED, decide, OUTCOME, PIN, ussdChoice, type Decision } from '../../test/chaos/users.js';
import { cleanProductKeys, productKeyPrefix } from '../../test/shutdown/product.js';
import { compileBench, compiledPath, stop } from '../child.js';
import type { MemoryReport } from './probe.js';

const API_KEY = 'soak-key';
const WEBHOOK_USER = 'soak-webhooks';
const WEBHOOK_PASSWORD = 'soak-webhook-password';
const USSD_TOKEN = 'soak-ussd-callback-token';
const SAMPLE_EVERY_MS = 10_000;
/** The menu's choice of the pay flow. */
const MENU_CHOICE = /^Pay someone$/;
/** A plateau: the last third's median within this share of the middle third's. */
const PLATEAU_GROWTH = 0.05;
const MB = 1024 * 1024;

export interface SoakSample {
  /** Seconds since the users started. */
  atS: number;
  rssMb: number;
  heapAfterGcMb: number;
  sessions: number;
}

export interface Plateau {
  startMb: number;
  /** Median of the middle third of the run, and of the last third. */
  middleMb: number;
  lastMb: number;
  /** Highest sample of the first two thirds, and of the whole run. */
  earlierMaxMb: number;
  maxMb: number;
  /** The last third's median against the middle third's. */
  growth: number;
  /** The last third's median is no more than PLATEAU_GROWTH above the earlier high (no new level reached). */
  plateaus: boolean;
}

export interface SoakResult {
  minutes: number;
  users: number;
  sessions: number;
  /** Sessions whose final screen acknowledged the payment (submitted, or its outcome). */
  paid: number;
  /** Dials answered with the news of the user's previous payment instead of the menu (its run was still out). */
  retold: number;
  /** Payments the sandbox holds: one per paid session when none was made twice. */
  sandboxPayments: number;
  errors: number;
  firstErrors: string[];
  sessionsPerSecond: number;
  hopsPerSecond: number;
  hopP50Ms: number;
  hopP99Ms: number;
  samples: SoakSample[];
  rss: Plateau;
  heapAfterGc: Plateau;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * RSS moves by tens of MB between samples (the allocator gives pages back and takes them again), so a plateau
 * is judged by levels, not slopes: the last third's median against the highest sample before it.
 */
function plateauOf(values: number[]): Plateau {
  const third = Math.max(1, Math.floor(values.length / 3));
  const middle = median(values.slice(third, 2 * third));
  const last = median(values.slice(values.length - third));
  const earlierMax = Math.max(...values.slice(0, values.length - third));
  return {
    startMb: values[0] ?? 0,
    middleMb: middle,
    lastMb: last,
    earlierMaxMb: earlierMax,
    maxMb: Math.max(...values),
    growth: round(middle === 0 ? 0 : (last - middle) / middle, 3),
    plateaus: last <= earlierMax * (1 + PLATEAU_GROWTH),
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

const listen = (server: Server): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

async function freePort(): Promise<number> {
  const server = http.createServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The product in production mode, with the memory probe; resolves once it listens. */
async function startProduct(env: Record<string, string>): Promise<ChildProcess> {
  // The built product (`npm run build`, as `npm start` runs it), the probe compiled beside the benchmark's servers.
  execFileSync(process.execPath, ['scripts/build.js', '--if-needed'], { stdio: 'inherit' });
  compileBench();
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', `./${compiledPath('bench/soak/probe.ts')}`, 'dist/src/main.js'],
    {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on http/.test(output)) resolve();
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) =>
      reject(new Error(`the product exited (${code}) before listening: ${output.slice(-2000)}`)),
    );
  });
  child.stdout!.removeAllListeners('data');
  child.stdout!.resume();
  return child;
}

/** Memory of the product after a full collection (answered by the probe over IPC). */
function memoryOf(child: ChildProcess): Promise<MemoryReport> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the product did not report its memory')), 30_000);
    child.once('message', (report) => {
      clearTimeout(timer);
      resolve(report as MemoryReport);
    });
    child.send('memory');
  });
}

/** A production access policy naming the users, each with the PIN's hash; limits the soak never reaches. */
function writePolicy(dir: string, phones: string[]): string {
  const pin = hashPin(PIN);
  const ussd = Object.fromEntries(phones.map((phone) => [phone, { role: 'payer', pin }]));
  const file = join(dir, 'policy.json');
  const limits = { perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '1000000000' } };
  writeFileSync(
    file,
    JSON.stringify({ roles: { payer: { flows: ['pay'], ...limits } }, users: { telegram: {}, slack: {}, ussd } }),
  );
  return file;
}

export async function runSoakBench(quick: boolean, log: (line: string) => void): Promise<SoakResult> {
  const minutes = Number(process.env.SOAK_MINUTES ?? (quick ? 1 : 5));
  const users = Number(process.env.SOAK_USERS ?? 16);
  const redisUrl = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  redisUrl.pathname = '/12';
  const redis = new Redis(redisUrl.toString());
  const keyPrefix = productKeyPrefix('soak');
  const dir = mkdtempSync(join(tmpdir(), 'momo-soak-'));
  const phones = Array.from({ length: users }, (_, i) => `+256701${String(500_000 + i).padStart(6, '0')}`);

  const sandbox = createSandbox({
    apiKey: API_KEY,
    allowHttpWebhooks: true,
    autoAdvance: true,
    limits: { readsPerMinute: 1_000_000, writesPerMinute: 1_000_000 },
    logger: createLogger('silent'),
  });
  sandbox.controls.setOrganization({ webhookAuth: { username: WEBHOOK_USER, password: WEBHOOK_PASSWORD } });
  const sandboxServer = http.createServer(sandbox.app);
  const sandboxPort = await listen(sandboxServer);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const product = await startProduct({
    PORT: String(port),
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: `http://127.0.0.1:${sandboxPort}`,
    MOMO_API_KEY: API_KEY,
    MOMO_WEBHOOK_USER: WEBHOOK_USER,
    MOMO_WEBHOOK_PASSWORD: WEBHOOK_PASSWORD,
    REDIS_URL: redisUrl.toString(),
    REDIS_KEY_PREFIX: keyPrefix,
    PUBLIC_URL: url,
    ACCESS_POLICY_FILE: writePolicy(dir, phones),
    USSD_CALLBACK_TOKEN: USSD_TOKEN,
    // Every request comes from loopback, as a busy gateway's would (README, Security).
    SOURCE_RATE_LIMIT_REQUESTS: '1000000',
    RATE_LIMIT_MESSAGES: '1000000',
  });
  log(
    `soak: product up at ${url} (production, standalone sandbox, Redis ${redisUrl.host}/12); ${users} users for ${minutes} min`,
  );

  const agent = new http.Agent({ keepAlive: true, maxSockets: users });
  const hopMs: number[] = [];
  const firstErrors: string[] = [];
  let sessions = 0;
  let paid = 0;
  let errors = 0;
  /** Dials answered with the news of the user's previous payment (its run was still out). */
  let retold = 0;
  const failed = (what: string) => {
    errors += 1;
    if (firstErrors.length < 10) {
      firstErrors.push(what.replace(/\s+/g, ' ').slice(0, 1000));
      log(`soak: error: ${firstErrors.at(-1)}`);
    }
  };

  function hop(body: string): Promise<{ status: number; text: string }> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const req = http.request(
        `${url}/ussd/africastalking/${USSD_TOKEN}`,
        { method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            hopMs.push(performance.now() - started);
            resolve({ status: res.statusCode ?? 0, text });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** One whole payment from a new dial; counts it paid or an error. */
  async function session(phone: string, id: string): Promise<void> {
    const answers: string[] = [];
    /** What the user typed and saw, for an error's message. */
    const trail: string[] = [];
    const fail = (what: string) => failed(`${what} (after: ${trail.join(' | ')})`);
    const send = () =>
      hop(
        new URLSearchParams({
          sessionId: id,
          serviceCode: '*384*123#',
          phoneNumber: phone,
          networkCode: '63902',
          text: answers.join('*'),
        }).toString(),
      );
    let answer = await send();
    for (let step = 0; step < 20; step++) {
      if (answer.status !== 200) return fail(`HTTP ${answer.status}: ${answer.text}`);
      const screen = answer.text;
      if (screen.startsWith('END ')) {
        // A dial while the last payment's run is still out waits for it and is answered with its news (the
        // conversation is the number's): the user has heard of that payment and dials again.
        if (answers.length === 0 && (ACKNOWLEDGED.test(screen) || OUTCOME.test(screen))) {
          retold += 1;
          return;
        }
        return fail(`ended before the payment: ${screen}`);
      }
      // A dial's notes (outcomes of earlier payments) can push the menu's question off the screen; its
      // choices stay, and a person picks the one they came for.
      const d: Decision = ussdChoice(screen, MENU_CHOICE)
        ? { kind: 'choose', label: MENU_CHOICE }
        : decide(screen, 'ussd', '5000');
      const typed = d.kind === 'text' ? d.value : d.kind === 'choose' ? ussdChoice(screen, d.label) : undefined;
      if (typed === undefined) return fail(`a screen the user cannot answer: ${screen}`);
      answers.push(typed);
      trail.push(`${screen.slice(0, 60)} -> ${typed}`);
      answer = await send();
      if (d.kind !== 'unknown' && d.final) {
        if (answer.status === 200 && (ACKNOWLEDGED.test(answer.text) || OUTCOME.test(answer.text))) paid += 1;
        else fail(`final confirmation not acknowledged: HTTP ${answer.status} ${answer.text}`);
        return;
      }
    }
    fail('no payment after 20 screens');
  }

  const samples: SoakSample[] = [];
  const started = Date.now();
  const until = started + minutes * 60_000;
  const walkers = phones.map(async (phone, u) => {
    for (let n = 0; Date.now() < until; n++) {
      sessions += 1;
      await session(phone, `soak-${started}-${u}-${n}`).catch((error: unknown) =>
        failed(error instanceof Error ? error.message : String(error)),
      );
    }
  });
  const sample = async () => {
    const m = await memoryOf(product);
    samples.push({
      atS: Math.round((Date.now() - started) / 1000),
      rssMb: round(m.rss / MB),
      heapAfterGcMb: round(m.heapUsed / MB),
      sessions,
    });
    log(
      `soak: ${samples.at(-1)!.atS} s, ${sessions} sessions, ${paid} paid, ${errors} errors, RSS ${round(m.rss / MB)} MB, heap after GC ${round(m.heapUsed / MB)} MB`,
    );
  };
  await sample();
  const sampler = setInterval(
    () => void sample().catch((error: unknown) => log(`soak: sample failed: ${String(error)}`)),
    SAMPLE_EVERY_MS,
  );
  try {
    await Promise.all(walkers);
  } finally {
    clearInterval(sampler);
  }
  const seconds = (Date.now() - started) / 1000;
  await sample();
  const sandboxPayments = sandbox.controls.payments().length;
  agent.destroy();
  await stop(product);
  await new Promise<void>((resolve) => {
    sandboxServer.closeAllConnections();
    sandboxServer.close(() => resolve());
  });
  await sandbox.close();
  await cleanProductKeys(redis, keyPrefix);
  redis.disconnect();
  rmSync(dir, { recursive: true, force: true });

  const sorted = [...hopMs].sort((a, b) => a - b);
  return {
    minutes,
    users,
    sessions,
    paid,
    retold,
    sandboxPayments,
    errors,
    firstErrors,
    sessionsPerSecond: round(sessions / seconds),
    hopsPerSecond: round(hopMs.length / seconds),
    hopP50Ms: round(percentile(sorted, 0.5)),
    hopP99Ms: round(percentile(sorted, 0.99)),
    samples,
    rss: plateauOf(samples.map((s) => s.rssMb)),
    heapAfterGc: plateauOf(samples.map((s) => s.heapAfterGcMb)),
  };
}
