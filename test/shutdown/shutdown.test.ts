/**
 * Graceful shutdown of the real process: `node --import tsx src/main.ts` as a child, on Redis, against a
 * standalone sandbox behind a proxy that slows payments down. SIGTERM arrives while one payment's request
 * is in flight and another payment runs past the USSD deadline (its user was answered "processing"):
 * the process stops taking requests, answers the one in flight, finishes the late run and keeps its
 * outcome for the user's next dial, and exits 0. Each payment exists exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { keys } from '../../src/conversation/store/keys.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/services/access-policy.js';
import { AtSession } from '../e2e/helpers.js';
import http from 'node:http';
import { TEST_REDIS_URL } from '../services.js';
import {
  cleanProductKeys,
  dropProductDatabase,
  startProductProcess,
  startService,
  type ProductProcess,
  type Service,
} from './product.js';
import { storedNotes } from '../../src/conversation/channels/ussd-inbox.js';
import { until } from '../until.js';

/** The tests' Redis database (TEST_REDIS_URL): the product's own `momo:` keys, this file alone while it runs. */
const REDIS_URL = TEST_REDIS_URL;
const API_KEY = 'shutdown-key';
const FAST_USER = '+256701888001';
const LATE_USER = '+256701888002';
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
/** The bodies of the payment requests the service has received (each then held 1.5 s or 4.5 s). */
const arrived: string[] = [];

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  await cleanProductKeys(redis);
  // Payments take their time: the late user's 4.5 s (past the 3 s USSD deadline), everybody else's 1.5 s.
  service = await startService(API_KEY, async (_req, body) => {
    arrived.push(body.toString());
    const late = body.toString().includes(LATE_USER);
    await new Promise((resolve) => setTimeout(resolve, late ? 4500 : 1500));
  });
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await service?.close();
  await cleanProductKeys(redis);
  await redis?.quit();
  await dropProductDatabase();
});

/** Starts the product as its own process and resolves with its URL once it listens. */
async function startChild(): Promise<ProductProcess> {
  const product = await startProductProcess({
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: service.url,
    MOMO_API_KEY: API_KEY,
    REDIS_URL,
    ACCESS_POLICY: POLICY,
    USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
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
    await until('the fast payment at the service', () => arrived.some((body) => body.includes(FAST_USER)));
    child!.kill('SIGTERM');
    await until('new connections refused', () =>
      freshRequest(product.url).then(
        () => false,
        () => true,
      ),
    );

    await expect(freshRequest(product.url)).rejects.toThrow();
    expect(await inFlight).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    expect(await product.exit).toBe(0);

    // Each payment exactly once.
    const chats = service.sandbox.controls
      .payments()
      .map((p) => (p as { metadata: Record<string, string> }).metadata.chat);
    expect(chats.filter((c) => c === `ussd:${FAST_USER}`)).toHaveLength(1);
    expect(chats.filter((c) => c === `ussd:${LATE_USER}`)).toHaveLength(1);
    // The late run finished before the exit and kept its outcome for the user's next dial.
    // A store record is `<version>:<write id>:<JSON>` (src/conversation/store/redis-store.ts).
    const pending = (await redis.get(`momo:${keys.pending({ channel: 'ussd', conversationId: LATE_USER })}`))?.replace(
      /^\d+:[\w-]+:/,
      '',
    );
    expect(
      storedNotes(JSON.parse(pending ?? '[]'))
        .map((note) => note.text)
        .join('\n'),
    ).toMatch(/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
  }, 60_000);
});
