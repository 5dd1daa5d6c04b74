import { afterAll, describe, expect, it } from 'vitest';
import { lettingGo, MemoryMarks, RedisMarks, type NotificationMarks } from '../../src/notifications/marks.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';
import { markKeys } from '../../src/store/keys.js';
import { until } from '../until.js';

const prefix = uniquePrefix('marks');
const raw = inspector(prefix);
const opened: RedisMarks[] = [];
afterAll(async () => {
  await Promise.all(opened.map((m) => m.close()));
  await raw.cleanup();
});

const implementations: Array<[string, () => NotificationMarks]> = [
  ['memory', () => new MemoryMarks()],
  [
    'redis',
    () => {
      const m = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
      opened.push(m);
      return m;
    },
  ],
];

let n = 0;
const fresh = () => `payment:${process.pid}-${++n}`;
const ttlSeconds = 600;
const leaseMs = 30_000;

describe.each(implementations)('%s notification marks', (_name, make) => {
  it('refuses a state older than one already taken, and lets equal or newer ones through', async () => {
    const marks = make();
    const order = fresh();
    const take = (rank: number, state: string) =>
      marks.take({ orderKey: order, rank, dedupKey: `${order}:${state}`, ttlSeconds, leaseMs });
    expect((await take(4, 'approved')).outcome).toBe('ok');
    expect((await take(1, 'validated')).outcome).toBe('stale');
    expect((await take(4, 'approved-again')).outcome).toBe('ok');
    expect((await take(9, 'processed')).outcome).toBe('ok');
    expect((await take(5, 'scheduled')).outcome).toBe('stale');
  });

  it('ten at once: one holds the lease, the others are busy; once told, every later one is a duplicate', async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds, leaseMs };
    const claims = await Promise.all(Array.from({ length: 10 }, () => marks.take(request)));
    const holder = claims.find((c) => c.outcome === 'ok')!;
    expect(claims.filter((c) => c.outcome === 'ok')).toHaveLength(1);
    expect(claims.filter((c) => c.outcome === 'busy')).toHaveLength(9);
    await holder.done();
    expect((await marks.take(request)).outcome).toBe('duplicate');
    expect(await marks.seen(order, request.dedupKey)).toEqual({ rank: 9, told: true });
  });

  it('frees the lease when the send failed, so the retry tells it; the dedup mark comes only with done()', async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds, leaseMs };
    const first = await marks.take(request);
    expect(first.outcome).toBe('ok');
    expect((await marks.seen(order, request.dedupKey)).told).toBe(false);
    await first.release();
    const retry = await marks.take(request);
    expect(retry.outcome).toBe('ok');
    await retry.done();
    expect((await marks.take(request)).outcome).toBe('duplicate');
  });

  it('a lease never renewed runs out (its holder died mid-send): the change is told by the next one', async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds, leaseMs: 150 };
    const dead = await marks.take(request);
    expect(dead.outcome).toBe('ok');
    expect((await marks.take(request)).outcome).toBe('busy');
    const next = await until('the lease run out', async () => {
      const taken = await marks.take(request);
      return taken.outcome === 'ok' ? taken : undefined;
    });
    // The dead holder's late renewal does not take it back.
    expect(await dead.renew()).toBe(false);
    await next.done();
    expect((await marks.take(request)).outcome).toBe('duplicate');
  });

  it('a renewed lease stays held past its first expiry', async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds, leaseMs: 300 };
    const holder = await marks.take(request);
    for (let i = 0; i < 4; i++) {
      // timer-ok: the duration is the subject: renewed every 100 ms, the 300 ms lease is held past its expiry.
      await new Promise((r) => setTimeout(r, 100));
      expect(await holder.renew()).toBe(true);
    }
    expect((await marks.take(request)).outcome).toBe('busy');
  });

  it("holds a read's lease for one at a time, without any mark; it is freed by release or when it runs out", async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, leaseMs: 150 };
    const reading = await marks.hold(request);
    expect(reading.outcome).toBe('ok');
    expect((await marks.hold(request)).outcome).toBe('busy');
    expect(await marks.seen(order, request.dedupKey)).toEqual({ rank: -1, told: false });
    await reading.release();
    const next = await marks.hold(request);
    expect(next.outcome).toBe('ok');
    expect((await marks.hold(request)).outcome).toBe('busy');
    await until('the lease run out', async () => (await marks.hold(request)).outcome === 'ok');
    expect(await next.renew()).toBe(false);
  });

  it('holds no read of a change told or overtaken, in the same step as the lease (a reader that let go had told it)', async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, leaseMs };
    const reading = await marks.hold(request);
    const telling = await marks.take({ ...request, ttlSeconds });
    await telling.done();
    await reading.release();
    const again = await marks.hold(request);
    expect(again.outcome).toBe('duplicate');
    // Refused: no lease was taken, so nothing is left to renew.
    expect(await again.renew()).toBe(false);
    const older = { orderKey: order, rank: 4, dedupKey: `${order}:approved`, leaseMs };
    expect((await marks.hold(older)).outcome).toBe('stale');
  });

  it('takes nothing for a stale state', async () => {
    const marks = make();
    const order = fresh();
    expect(
      (await marks.take({ orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds, leaseMs })).outcome,
    ).toBe('ok');
    expect(
      (await marks.take({ orderKey: order, rank: 1, dedupKey: `${order}:validated`, ttlSeconds, leaseMs })).outcome,
    ).toBe('stale');
    // Had the stale take held the lease, this would be busy.
    expect(
      (await marks.take({ orderKey: order, rank: 9, dedupKey: `${order}:validated`, ttlSeconds, leaseMs })).outcome,
    ).toBe('ok');
  });

  it('raises only the order mark when there is nothing to tell', async () => {
    const marks = make();
    const order = fresh();
    const raised = await marks.take({ orderKey: order, rank: 3, ttlSeconds, leaseMs });
    expect(raised.outcome).toBe('ok');
    await raised.release(); // nothing to free
    expect((await marks.seen(order)).rank).toBe(3);
    expect(
      (await marks.take({ orderKey: order, rank: 2, dedupKey: `${order}:approval_needed`, ttlSeconds, leaseMs }))
        .outcome,
    ).toBe('stale');
    expect(
      (await marks.take({ orderKey: order, rank: 3, dedupKey: `${order}:approval_requested`, ttlSeconds, leaseMs }))
        .outcome,
    ).toBe('ok');
  });
});

describe('MemoryMarks', () => {
  it('forgets marks after their TTL, and a late release does not free a newer lease', async () => {
    let now = 1_000_000;
    const marks = new MemoryMarks(() => now);
    const request = { orderKey: 'payment:1', rank: 9, dedupKey: 'payment:1:processed', ttlSeconds: 60, leaseMs: 5000 };
    const old = await marks.take(request);
    expect(old.outcome).toBe('ok');
    now += 6_000;
    const newer = await marks.take(request);
    expect(newer.outcome).toBe('ok');
    await old.release();
    expect((await marks.take(request)).outcome).toBe('busy');
    await newer.done();
    expect((await marks.take(request)).outcome).toBe('duplicate');
    now += 61_000;
    expect((await marks.take(request)).outcome).toBe('ok');
  });
});

describe('RedisMarks (real Redis)', () => {
  it('keeps the marks under the prefix with their TTLs', async () => {
    const marks = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
    opened.push(marks);
    const claim = await marks.take({
      orderKey: 'payment:ttl',
      rank: 9,
      dedupKey: 'payment:ttl:processed',
      ttlSeconds: 120,
      leaseMs: 20_000,
    });
    expect(await raw.redis.get(`${prefix}${markKeys('payment:ttl').rank}`)).toBe('9');
    const lease = await raw.redis.pttl(`${prefix}${markKeys('payment:ttl', 'payment:ttl:processed').lease}`);
    expect(lease).toBeGreaterThan(10_000);
    expect(lease).toBeLessThanOrEqual(20_000);
    expect(await raw.redis.exists(`${prefix}${markKeys('payment:ttl', 'payment:ttl:processed').sent}`)).toBe(0);
    await claim.done();
    expect(await raw.redis.exists(`${prefix}${markKeys('payment:ttl', 'payment:ttl:processed').lease}`)).toBe(0);
    for (const key of [
      `${prefix}${markKeys('payment:ttl').rank}`,
      `${prefix}${markKeys('payment:ttl', 'payment:ttl:processed').sent}`,
    ]) {
      const ttl = await raw.redis.ttl(key);
      expect(ttl).toBeGreaterThan(100);
      expect(ttl).toBeLessThanOrEqual(120);
    }
  });

  it('a release frees only its own lease', async () => {
    const marks = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
    opened.push(marks);
    const request = { orderKey: 'payment:own', rank: 9, dedupKey: 'payment:own:processed', ttlSeconds, leaseMs };
    const claim = await marks.take(request);
    expect(claim.outcome).toBe('ok');
    // The lease ran out and another process took it since.
    await raw.redis.set(`${prefix}${markKeys('payment:own', 'payment:own:processed').lease}`, 'someone-else');
    await claim.release();
    expect(await raw.redis.get(`${prefix}${markKeys('payment:own', 'payment:own:processed').lease}`)).toBe(
      'someone-else',
    );
    expect((await marks.take(request)).outcome).toBe('busy');
  });

  it('a resent take (its reply lost with the connection) still holds its lease', async () => {
    const marks = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
    opened.push(marks);
    // ioredis resends the very same command: same keys, same lease token.
    const script = (marks as unknown as { redis: { momoNotifyTake(...args: unknown[]): Promise<number> } }).redis;
    const resent = markKeys('payment:resend', 'payment:resend:processed');
    const args = [resent.rank, resent.sent, resent.lease, 9, ttlSeconds, 'token-1', leaseMs];
    expect(await script.momoNotifyTake(...args)).toBe(0);
    expect(await script.momoNotifyTake(...args)).toBe(0);
    expect(
      (
        await marks.take({
          orderKey: 'payment:resend',
          rank: 9,
          dedupKey: 'payment:resend:processed',
          ttlSeconds,
          leaseMs,
        })
      ).outcome,
    ).toBe('busy');
  });
});

describe.each(implementations)('%s notification marks letting go', (_name, make) => {
  it('frees the leases still held at once, renews none after, and leaves done ones told', async () => {
    // Another process's worker: the same marks, its own lease tokens.
    const other = make();
    const marks = lettingGo(other);
    const order = fresh();
    const request = (state: string) => ({
      orderKey: order,
      rank: 1,
      dedupKey: `${order}:${state}`,
      ttlSeconds,
      leaseMs,
    });
    const telling = await marks.take(request('processed'));
    const reading = await marks.hold({ orderKey: order, rank: 1, dedupKey: `${order}:failed`, leaseMs });
    const told = await marks.take({ ...request('approved'), orderKey: fresh() });
    await told.done();
    expect((await other.take(request('processed'))).outcome).toBe('busy');
    expect(await marks.letGo()).toBe(2);
    expect(await telling.renew()).toBe(false);
    expect(await reading.renew()).toBe(false);
    // Another process takes both at once, not after the 30 s lease.
    expect((await other.take(request('processed'))).outcome).toBe('ok');
    expect((await other.hold({ orderKey: order, rank: 1, dedupKey: `${order}:failed`, leaseMs })).outcome).toBe('ok');
    expect(await marks.letGo()).toBe(0);
  });
});
