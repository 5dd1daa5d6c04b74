/**
 * Graceful shutdown of the real process: `node dist/src/main.js` as a child, on Redis, against a
 * standalone sandbox behind a proxy that holds payments back. SIGTERM arrives while one payment's request
 * is in flight and another payment runs past the USSD deadline (its user was answered "processing"):
 * /readyz answers 503 from then on, a new dial is answered at once with a screen ending the session, the
 * hop in flight is answered, the late run finishes and keeps its outcome for the user's next dial, and the
 * process exits 0 within SHUTDOWN_GRACE_SECONDS, then takes no connection. Each payment exists exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { keys } from '../../src/store/keys.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { AtSession } from '../e2e/helpers.js';
import http from 'node:http';
import { TEST_REDIS_URL } from '../services.js';
import {
  cleanProductKeys,
  dropSharedDatabase,
  productKeyPrefix,
  startProductProcess,
  startService,
  type ProductProcess,
  type Service,
} from './product.js';
import { storedNotes } from '../../src/conversation/channels/ussd-inbox.js';
import { until } from '../until.js';

/** The tests' Redis database (TEST_REDIS_URL), the products' keys under a prefix of this file's own. */
const REDIS_URL = TEST_REDIS_URL;
const PREFIX = productKeyPrefix('shutdown');
const API_KEY = 'shutdown-key';
const FAST_USER = '+256701888001';
const LATE_USER = '+256701888002';
const NEW_USER = '+256701888003';
const GRACE_SECONDS = 20;
/** Opened by the test: the fast payment's creation is held at the service until then. */
let releaseFast!: () => void;
const fastReleased = new Promise<void>((resolve) => (releaseFast = resolve));
/** Resolves once the fast payment's creation reached the service (its hop is in flight). */
let fastReached!: () => void;
const fastHeld = new Promise<void>((resolve) => (fastReached = resolve));
/** Opened once the late user was answered "processing": its run is then past the deadline. */
let releaseLate!: () => void;
const lateReleased = new Promise<void>((resolve) => (releaseLate = resolve));
/** Production mode: each USSD user with their PIN, and the gateway's callback token. */
const CALLBACK_TOKEN = 'shutdown-callback-token-0123';
const payer = { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '100000' } };
const POLICY = JSON.stringify({
  roles: { payer },
  users: {
    telegram: {},
    slack: {},
    ussd: {
      [FAST_USER]: { role: 'payer', pin: hashPin('1234') },
      [LATE_USER]: { role: 'payer', pin: hashPin('1234') },
    },
  },
});

let service: Service;
let redis: Redis;
let child: ChildProcess | undefined;

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  await cleanProductKeys(redis, PREFIX);
  // Payments are held: the late user's until it was answered "processing" (past the USSD deadline), the
  // fast user's until the test has seen the process drain.
  service = await startService(API_KEY, async (_req, body) => {
    if (body.toString().includes(LATE_USER)) return lateReleased;
    fastReached();
    return fastReleased;
  });
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await service?.close();
  await cleanProductKeys(redis, PREFIX);
  await redis?.quit();
  await dropSharedDatabase();
});

/** Starts the product as its own process and resolves with its URL once it listens. */
async function startChild(): Promise<ProductProcess> {
  const product = await startProductProcess({
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: service.url,
    MOMO_API_KEY: API_KEY,
    REDIS_URL,
    REDIS_KEY_PREFIX: PREFIX,
    ACCESS_POLICY: POLICY,
    USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
    SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
    // The late payment's hop waits it out; the fast one's is held while the test watches the drain (a few
    // requests, a tenth of a second) and must not reach it first.
    USSD_DEADLINE_MS: '5000',
  });
  child = product.child;
  return product;
}

/** A USSD payment up to the PIN screen. */
async function upToPin(url: string, phone: string): Promise<AtSession> {
  const ussd = new AtSession(url, phone, undefined, `/ussd/africastalking/${CALLBACK_TOKEN}`);
  await ussd.dial();
  for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '2500', '1', '1']) await ussd.answer(answer);
  expect(ussd.screens.at(-1)).toMatch(/PIN/);
  return ussd;
}

/** A fresh connection (no keep-alive socket reused): resolves with the status, rejects when refused. */
function freshRequest(url: string, path = '/healthz'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('SIGTERM', () => {
  it('turns not ready, refuses new dials, answers the one in flight, finishes the late run, exits 0', async () => {
    const product = await startChild();
    expect(await freshRequest(product.url)).toBe(200);
    expect(await freshRequest(product.url, '/readyz')).toBe(200);
    const late = await upToPin(product.url, LATE_USER);
    const fast = await upToPin(product.url, FAST_USER);

    // The late payment passes the USSD deadline: "processing"; its run goes on in the process.
    expect(await late.answer('1234')).toMatch(/still working on it/);
    releaseLate();
    // The fast payment's request is in flight (held at the service) when SIGTERM arrives.
    const inFlight = fast.answer('1234');
    await fastHeld;
    const signalled = Date.now();
    child!.kill('SIGTERM');

    // Not ready at once, so a balancer stops sending; a new dial is answered at once, ending its session.
    await until('/readyz answers 503', async () => (await freshRequest(product.url, '/readyz')) === 503);
    const newcomer = new AtSession(product.url, NEW_USER, undefined, `/ussd/africastalking/${CALLBACK_TOKEN}`);
    expect(await newcomer.dial()).toMatch(/^END The service is restarting\. Please dial again in a moment/);

    releaseFast();
    expect(await inFlight).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    expect(await product.exit).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(GRACE_SECONDS * 1000);
    await expect(freshRequest(product.url)).rejects.toThrow();

    // Each payment exactly once.
    const chats = service.sandbox.controls
      .payments()
      .map((p) => (p as { metadata: Record<string, string> }).metadata.chat);
    expect(chats.filter((c) => c === `ussd:${FAST_USER}`)).toHaveLength(1);
    expect(chats.filter((c) => c === `ussd:${LATE_USER}`)).toHaveLength(1);
    // The late run finished before the exit and kept its outcome for the user's next dial.
    // A store record is `<version>:<write id>:<JSON>` (src/store/redis-store.ts).
    const pending = (
      await redis.get(`${PREFIX}${keys.pending({ channel: 'ussd', conversationId: LATE_USER })}`)
    )?.replace(/^\d+:[\w-]+:/, '');
    expect(
      storedNotes(JSON.parse(pending ?? '[]'))
        .map((note) => note.text)
        .join('\n'),
    ).toMatch(/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
  }, 60_000);
});
