/**
 * The funnel (src/ops/funnel.ts) in memory and in a real Redis: what each move counts, the time per step,
 * outcomes per day and channel, an abandonment reported twice counted once, the bounds on what is kept
 * (fields from the machines only, a TTL on every day, nothing of a user), and the quantiles of the histogram.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import type { FlowTransition } from '../../src/conversation/flow/flow-runtime.js';
import { bucketOf, createFunnel, quantile, TIME_BUCKETS_MS, type Funnel } from '../../src/ops/funnel.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';

const logger = createLogger('silent');
const DAY = 86_400_000;
const T0 = Date.parse('2026-11-20T10:00:00Z');

/** A pay run on USSD: choosingKind -> awaitingPhone -> ... as the engine reports it. */
const move = (over: Partial<FlowTransition>): FlowTransition => ({
  flow: 'pay',
  channel: 'ussd',
  runId: 'run-1',
  at: T0,
  ...over,
});

const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await inspector(prefix).cleanup();
});

const kinds: Array<[string, (now: () => number) => { funnel: Funnel; prefix?: string }]> = [
  ['memory', (now) => ({ funnel: createFunnel({ logger, now, days: 7 }) })],
  [
    'redis',
    (now) => {
      const prefix = uniquePrefix('funnel');
      prefixes.push(prefix);
      return { funnel: createFunnel({ logger, now, days: 7, redisUrl: REDIS_URL, keyPrefix: prefix }), prefix };
    },
  ],
];

describe.each(kinds)('the funnel in %s', (_kind, make) => {
  it('counts entered, moved on, abandoned and failed per step and channel, with the time spent there', async () => {
    const { funnel } = make(() => T0 + 60_000);
    // Run 1 (USSD): starts, 4 s on choosingKind, 12 s on awaitingPhone, then abandoned at awaitingFirstName.
    funnel.record(move({ to: 'choosingKind' }));
    funnel.record(move({ from: 'choosingKind', to: 'awaitingPhone', at: T0 + 4000, enteredAt: T0 }));
    funnel.record(move({ from: 'awaitingPhone', to: 'lookingUpContact', at: T0 + 16_000, enteredAt: T0 + 4000 }));
    funnel.record(move({ from: 'lookingUpContact', to: 'awaitingFirstName', at: T0 + 16_300, enteredAt: T0 + 16_000 }));
    funnel.record(move({ from: 'awaitingFirstName', end: 'abandoned', at: T0 + 40_000, enteredAt: T0 + 16_300 }));
    // Run 2 (Telegram): refused by the limits at reserving.
    const run2 = { runId: 'run-2', channel: 'telegram' as const };
    funnel.record(move({ ...run2, to: 'choosingKind' }));
    funnel.record(move({ ...run2, from: 'choosingKind', to: 'awaitingPhone', at: T0 + 2000, enteredAt: T0 }));
    funnel.record(
      move({ ...run2, from: 'reserving', to: 'done', end: 'refused', at: T0 + 3000, enteredAt: T0 + 2500 }),
    );

    const report = await funnel.report({ days: 1 });
    const pay = report.flows.find((f) => f.flow === 'pay')!;
    const step = (name: string) => pay.steps.find((s) => s.step === name)!;
    expect(pay.started).toBe(2);
    expect(pay.label).toBe('Pay someone');
    expect(step('awaitingAmount').label).toBe('Amount asked');
    expect(step('checkingRepeat').label).toBe('Checking for a repeat');
    expect(step('choosingKind')).toMatchObject({
      entered: 2,
      movedOn: 2,
      abandoned: 0,
      failed: 0,
      dropOff: 0,
      timed: 2,
    });
    expect(step('choosingKind').channels).toEqual({
      ussd: expect.objectContaining({ entered: 1, movedOn: 1 }),
      telegram: expect.objectContaining({ entered: 1, movedOn: 1 }),
    });
    expect(step('awaitingPhone')).toMatchObject({ entered: 2, movedOn: 1, dropOff: 1 });
    expect(step('awaitingFirstName')).toMatchObject({ entered: 1, movedOn: 0, abandoned: 1, dropOff: 1, timed: 0 });
    expect(step('reserving')).toMatchObject({ failed: 1, timed: 1 });
    expect(step('done')).toMatchObject({ final: true, entered: 1, dropOff: 0 });
    // 12 s falls in the (10 s, 15 s] bucket: the median of one stay is that bucket's middle.
    expect(step('awaitingPhone').medianMs).toBe(12_500);
    expect(pay.outcomes).toMatchObject({ abandoned: 1, refused: 1, paid: 0 });
    expect(pay.outcomesByDay).toEqual([
      expect.objectContaining({ day: '2026-11-20', channel: 'ussd', started: 1, abandoned: 1 }),
      expect.objectContaining({ day: '2026-11-20', channel: 'telegram', started: 1, refused: 1 }),
    ]);
    // One channel only.
    const ussd = await funnel.report({ days: 1, channel: 'ussd' });
    expect(ussd.channels).toEqual(['ussd']);
    expect(ussd.flows.find((f) => f.flow === 'pay')!.started).toBe(1);
    await funnel.close();
  });

  it('counts a run abandoned once, however many times it is reported (a gateway report, then the next dial)', async () => {
    const { funnel } = make(() => T0);
    funnel.record(move({ runId: 'run-twice', to: 'awaitingAmount' }));
    funnel.record(move({ runId: 'run-twice', from: 'awaitingAmount', end: 'abandoned', at: T0 + 1000 }));
    funnel.record(move({ runId: 'run-twice', from: 'awaitingAmount', end: 'abandoned', at: T0 + 5000 }));
    funnel.record(move({ runId: 'run-other', from: 'awaitingAmount', end: 'abandoned', at: T0 + 6000 }));
    const pay = (await funnel.report({ days: 1 })).flows.find((f) => f.flow === 'pay')!;
    expect(pay.steps.find((s) => s.step === 'awaitingAmount')!.abandoned).toBe(2);
    expect(pay.outcomes.abandoned).toBe(2);
    await funnel.close();
  });

  it('keeps each day apart and reports the days asked for, oldest first', async () => {
    const { funnel } = make(() => T0 + 2 * DAY);
    funnel.record(move({ to: 'choosingKind', at: T0 }));
    funnel.record(move({ runId: 'r2', to: 'choosingKind', at: T0 + 2 * DAY }));
    const three = await funnel.report({ days: 3 });
    expect(three.days).toEqual(['2026-11-20', '2026-11-21', '2026-11-22']);
    expect(three.flows.find((f) => f.flow === 'pay')!.started).toBe(2);
    const today = await funnel.report({ days: 1 });
    expect(today.flows.find((f) => f.flow === 'pay')!.started).toBe(1);
    await funnel.close();
  });

  it("counts only the machines' steps, known flows and channels: nothing else makes a field", async () => {
    const { funnel, prefix } = make(() => T0);
    funnel.record(move({ to: '<script>' }));
    funnel.record(move({ from: 'awaitingAmount', to: 'not-a-step' }));
    funnel.record(move({ flow: 'nope' as never, to: 'choosingKind' }));
    funnel.record(move({ channel: 'fax' as never, to: 'choosingKind' }));
    funnel.record(move({ to: 'choosingKind', end: 'weird' as never }));
    funnel.record(move({ to: 'choosingKind', at: Number.NaN }));
    const pay = (await funnel.report({ days: 1 })).flows.find((f) => f.flow === 'pay')!;
    // Only the real step of the second move counts (awaitingAmount left); no run started at an unknown step.
    expect(pay.started).toBe(0);
    expect(pay.steps.find((s) => s.step === 'awaitingAmount')!.movedOn).toBe(1);
    expect(pay.steps.map((s) => s.step)).not.toContain('not-a-step');
    if (prefix) {
      const { redis } = inspector(prefix);
      expect(await redis.hkeys(`${prefix}funnel:2026-11-20`)).toEqual(['pay|ussd|awaitingAmount|movedOn']);
      await redis.quit();
    }
    await funnel.close();
  });
});

describe('the funnel in Redis', () => {
  it('keeps one hash per day with a TTL of the days kept, and no phone number, user id or amount', async () => {
    const prefix = uniquePrefix('funnel-keys');
    prefixes.push(prefix);
    const funnel = createFunnel({ logger, now: () => T0, days: 7, redisUrl: REDIS_URL, keyPrefix: prefix });
    funnel.record(move({ runId: 'run-keys', to: 'awaitingAmount' }));
    funnel.record(move({ runId: 'run-keys', from: 'awaitingAmount', end: 'abandoned', at: T0 + 1000 }));
    await funnel.flush();
    const { redis } = inspector(prefix);
    const keys = (await redis.keys(`${prefix}*`)).map((k) => k.slice(prefix.length)).sort();
    expect(keys).toEqual(['funnel:2026-11-20', 'funnel:left:run-keys']);
    const ttl = await redis.ttl(`${prefix}funnel:2026-11-20`);
    expect(ttl).toBeGreaterThan(7 * 86_400);
    expect(ttl).toBeLessThanOrEqual(8 * 86_400);
    expect(await redis.ttl(`${prefix}funnel:left:run-keys`)).toBeGreaterThan(0);
    const stored = JSON.stringify(await redis.hgetall(`${prefix}funnel:2026-11-20`));
    expect(stored).not.toMatch(/\+?256|\d{6,}/);
    await redis.quit();
    await funnel.close();
  });

  it('counts from several processes add up in the one hash', async () => {
    const prefix = uniquePrefix('funnel-shared');
    prefixes.push(prefix);
    const a = createFunnel({ logger, now: () => T0, redisUrl: REDIS_URL, keyPrefix: prefix });
    const b = createFunnel({ logger, now: () => T0, redisUrl: REDIS_URL, keyPrefix: prefix });
    a.record(move({ runId: 'ra', to: 'choosingKind' }));
    b.record(move({ runId: 'rb', to: 'choosingKind' }));
    b.record(move({ runId: 'ra', from: 'choosingKind', end: 'abandoned' }));
    a.record(move({ runId: 'ra', from: 'choosingKind', end: 'abandoned' }));
    await b.flush();
    const pay = (await a.report({ days: 1 })).flows.find((f) => f.flow === 'pay')!;
    expect(pay.started).toBe(2);
    expect(pay.steps.find((s) => s.step === 'choosingKind')!.abandoned).toBe(1);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('the funnel without Redis answering', () => {
  it('keeps its counts for later and fails a report at once', async () => {
    const funnel = createFunnel({
      logger,
      now: () => T0,
      redisUrl: 'redis://127.0.0.1:1',
      keyPrefix: uniquePrefix('funnel-away'),
    });
    funnel.record(move({ to: 'choosingKind' }));
    await funnel.flush();
    const started = Date.now();
    await expect(funnel.report({ days: 1 })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(5000);
    await funnel.close();
  });
});

describe('time per step', () => {
  it('puts a stay in the first bucket whose bound holds it', () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(250)).toBe(0);
    expect(bucketOf(251)).toBe(1);
    expect(bucketOf(12_000)).toBe(TIME_BUCKETS_MS.indexOf(15_000));
    expect(bucketOf(10 * 3_600_000)).toBe(TIME_BUCKETS_MS.length - 1);
  });

  it.each([
    { what: 'nothing timed', counts: {}, q: 0.5, expected: null },
    { what: 'ten stays of 2-3 s', counts: { 4: 10 }, q: 0.5, expected: 2500 },
    { what: 'ten stays of 2-3 s, p90', counts: { 4: 10 }, q: 0.9, expected: 2900 },
    { what: 'nine quick, one slow: the median is quick', counts: { 1: 9, 12: 1 }, q: 0.5, expected: 389 },
    { what: 'nine quick, one slow: p90 is the last quick one', counts: { 1: 9, 12: 1 }, q: 0.9, expected: 500 },
    { what: 'past the last bound reads as that bound', counts: { 19: 3 }, q: 0.5, expected: 1_800_000 },
  ])('$what', ({ counts, q, expected }) => {
    const histogram = TIME_BUCKETS_MS.map((_, i) => (counts as Record<number, number>)[i] ?? 0);
    expect(quantile(histogram, q)).toBe(expected);
  });
});
