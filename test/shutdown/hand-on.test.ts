/**
 * A drain that cannot wait for a run hands it on. Two products (`node dist/src/main.js`) over one Redis of the
 * test's own and one PostgreSQL database, against a standalone sandbox behind a proxy that holds the first
 * creation of a payment and never lets it through until the test says so. A USSD person pays on the first
 * process; their payment's call is held at the service, so the hop is answered "processing" and the run goes
 * on. SIGTERM: the run cannot finish within SHUTDOWN_GRACE_SECONDS, so before the grace runs out the process
 * cuts its lease and exits; the second process's sweep takes the run over long before that lease would have
 * expired (a condition on the Redis clock and the lease's listed expiry, not a sleep), repeats the call under
 * the same Duplicate-Check-Key, and keeps the outcome for the person's next dial. The held first call is then
 * let through: the service answers the same key, so it holds one payment; the person is told once.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { keys } from '../../src/store/keys.js';
import { AtSession } from '../e2e/helpers.js';
import { startOwnRedis, stopAll } from '../redis/servers.js';
import { until } from '../until.js';
import { dropSharedDatabase, startProductProcess, startService, type ProductProcess, type Service } from './product.js';

const API_KEY = 'hand-on-key';
const CALLBACK_TOKEN = 'hand-on-callback-token-0123';
const GATEWAY = `/ussd/africastalking/${CALLBACK_TOKEN}`;
const PHONE = '+256701889001';
/** Short, so the hand-on (at STOP_RUNS_SHARE of it) comes well within the run lease's 10 s. */
const GRACE_SECONDS = 3;
const POLICY = JSON.stringify({
  roles: { payer: { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '100000' } } },
  users: { telegram: {}, slack: {}, ussd: { [PHONE]: { role: 'payer', pin: hashPin('1234') } } },
});
/** Redis keys of the person's conversation (the product's `momo:` prefix). */
const CONVERSATION = keys.conversation({ channel: 'ussd', conversationId: PHONE });
const RECORD_KEY = `momo:${CONVERSATION}`;
const LEASE_KEY = `momo:${keys.runLease(CONVERSATION)}`;
const INDEX_KEY = `momo:${keys.openRuns(CONVERSATION)}`;
const PENDING_KEY = `momo:${keys.pending({ channel: 'ussd', conversationId: PHONE })}`;

let service: Service;
let redis: Redis;
let redisUrl: string;
const children: ProductProcess[] = [];
/** The payment creations that reached the proxy; the first is held until {@link letFirstThrough}. */
let creations = 0;
/** The service's statuses for the creations, in the order answered. */
const statuses: number[] = [];
let letFirstThrough!: () => void;
const firstLetThrough = new Promise<void>((resolve) => (letFirstThrough = resolve));
let firstHeld!: () => void;
const firstArrived = new Promise<void>((resolve) => (firstHeld = resolve));

beforeAll(async () => {
  redisUrl = `redis://127.0.0.1:${(await startOwnRedis()).port}`;
  redis = new Redis(redisUrl);
  service = await startService(
    API_KEY,
    async () => {
      creations += 1;
      if (creations > 1) return;
      firstHeld();
      await firstLetThrough;
    },
    { answered: (status) => statuses.push(status) },
  );
});

afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null) child.child.kill('SIGKILL');
  letFirstThrough();
  await service?.close();
  await redis?.quit();
  await stopAll();
  await dropSharedDatabase();
});

async function startProduct(): Promise<ProductProcess> {
  const product = await startProductProcess({
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: service.url,
    MOMO_API_KEY: API_KEY,
    REDIS_URL: redisUrl,
    ACCESS_POLICY: POLICY,
    USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
    SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
    USSD_DEADLINE_MS: '1000',
    // The run handed on is taken over at the second process's next sweep: within a tenth of a second of it,
    // not two (the lease keeps its default: the takeover is to come long before it would expire).
    RUN_SWEEP_MS: '100',
  });
  children.push(product);
  return product;
}

/** The Redis server's clock, ms: the clock leases are listed on. */
async function redisNow(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** The conversation record as stored (`<version>:<write id>:<JSON>`, src/store/redis-store.ts). */
async function record(): Promise<{ run?: { id: string; takeovers?: number } } | undefined> {
  const raw = await redis.get(RECORD_KEY);
  return raw ? JSON.parse(raw.replace(/^\d+:[\w-]+:/, '')) : undefined;
}

/** The notes kept for the person's next dial. */
async function pendingTexts(): Promise<string[]> {
  const raw = await redis.get(PENDING_KEY);
  if (!raw) return [];
  const notes = JSON.parse(raw.replace(/^\d+:[\w-]+:/, '')) as Array<string | { text: string }>;
  return notes.map((note) => (typeof note === 'string' ? note : note.text));
}

describe('SIGTERM with a run held past the grace', () => {
  it('hands the run on: taken over long before its lease would expire, one payment, told once', async () => {
    const [first, second] = await Promise.all([startProduct(), startProduct()]);

    const person = new AtSession(first.url, PHONE, undefined, GATEWAY);
    await person.dial();
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '2500', '1', '1']) await person.answer(answer);
    expect(person.screens.at(-1)).toMatch(/PIN/);
    // The call is held at the service: the hop is answered at the deadline, the run goes on in the first process.
    expect(await person.answer('1234')).toMatch(/still working on it/);
    await firstArrived;
    const held = await record();
    expect(held?.run?.id).toBeTruthy();
    const holder = held!.run!.id;
    expect(await redis.get(LEASE_KEY)).toBe(holder);

    const signalled = Date.now();
    const signalledOnRedis = await redisNow();
    const exited = first.exit.then((code) => ({ code, ms: Date.now() - signalled }));
    first.child.kill('SIGTERM');
    // Where the lease is listed to expire now: the earliest it could run out without a hand-on (its holder's
    // renewals only move it later).
    const naturalExpiry = Number(await redis.zscore(INDEX_KEY, CONVERSATION));
    expect(naturalExpiry).toBeGreaterThan(await redisNow());

    // Taken over by the second process: the record holds another run, once.
    const takenAt = await until(
      'the second process took the run over',
      async () => {
        const now = await redisNow();
        const run = (await record())?.run;
        return run && run.id !== holder ? { now, run } : undefined;
      },
      { timeoutMs: 30_000, everyMs: 20 },
    );
    const takeoverMs = Date.now() - signalled;
    expect(takenAt.run.takeovers).toBe(1);
    expect(takenAt.now).toBeLessThan(naturalExpiry);

    const { code, ms: exitMs } = await exited;
    expect(code).toBe(0);
    expect(exitMs).toBeLessThan(GRACE_SECONDS * 1000);
    expect(first.output()).toMatch(/runs not finished by the drain handed on/);

    // The second process's call (the same key) made the payment; the outcome is kept for the next dial.
    await until('the outcome kept for the next dial', async () =>
      (await pendingTexts()).some((text) => /Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./.test(text)),
    );
    await until('the run settled', async () => (await record())?.run === undefined);
    // The first call, held all along, reaches the service now: it answers the same key with the same payment.
    letFirstThrough();
    await until('the held call answered', () => statuses.length >= 2);
    // The repeat made it (created); the held first call, under the same key, made nothing more.
    expect(statuses[0]).toBeLessThan(300);
    expect(statuses[1]).toBe(409);
    const paymentsOf = () =>
      service.sandbox.controls
        .payments()
        .filter((p) => (p as { metadata: Record<string, string> }).metadata.chat === `ussd:${PHONE}`);
    expect(paymentsOf()).toHaveLength(1);

    // Told once: one note kept, by the run that took over (the first process wrote none); the next dial shows
    // it, and once a later hop of that session proved the screen arrived, no dial shows it again.
    expect((await pendingTexts()).filter((text) => /Sent:/.test(text))).toHaveLength(1);
    const told = new AtSession(second.url, PHONE, undefined, GATEWAY);
    expect(await told.dial()).toMatch(/Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
    expect(await told.answer('1')).not.toMatch(/Sent:/);
    const again = new AtSession(second.url, PHONE, undefined, GATEWAY);
    expect(await again.dial()).not.toMatch(/Sent:/);
    expect(paymentsOf()).toHaveLength(1);
    console.log(
      `hand-on: SIGTERM to takeover ${takeoverMs} ms (the lease listed to expire ${naturalExpiry - signalledOnRedis} ms after it), to exit ${exitMs} ms (grace ${GRACE_SECONDS} s)`,
    );

    second.child.kill('SIGTERM');
    expect(await second.exit).toBe(0);
  }, 90_000);
});
