import { afterAll, describe, expect, it } from 'vitest';
import { MemoryMarks, RedisMarks, type NotificationMarks } from '../../src/notifications/marks.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';

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

describe.each(implementations)('%s notification marks', (_name, make) => {
  it('refuses a state older than one already told, and lets equal or newer ones through', async () => {
    const marks = make();
    const order = fresh();
    const take = (rank: number, state: string) => marks.take({ orderKey: order, rank, dedupKey: `${order}:${state}`, ttlSeconds });
    expect((await take(4, 'approved')).outcome).toBe('ok');
    expect((await take(1, 'validated')).outcome).toBe('stale');
    expect((await take(4, 'approved-again')).outcome).toBe('ok');
    expect((await take(9, 'processed')).outcome).toBe('ok');
    expect((await take(5, 'scheduled')).outcome).toBe('stale');
  });

  it('refuses a duplicate, also when ten arrive at once: exactly one is told', async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds };
    const claims = await Promise.all(Array.from({ length: 10 }, () => marks.take(request)));
    expect(claims.filter((c) => c.outcome === 'ok')).toHaveLength(1);
    expect(claims.filter((c) => c.outcome === 'duplicate')).toHaveLength(9);
    expect((await marks.take(request)).outcome).toBe('duplicate');
  });

  it('frees the dedup mark when the send failed, so the retry tells it', async () => {
    const marks = make();
    const order = fresh();
    const request = { orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds };
    const first = await marks.take(request);
    expect(first.outcome).toBe('ok');
    await first.release();
    const retry = await marks.take(request);
    expect(retry.outcome).toBe('ok');
    expect((await marks.take(request)).outcome).toBe('duplicate');
  });

  it('claims nothing for a stale state', async () => {
    const marks = make();
    const order = fresh();
    expect((await marks.take({ orderKey: order, rank: 9, dedupKey: `${order}:processed`, ttlSeconds })).outcome).toBe('ok');
    expect((await marks.take({ orderKey: order, rank: 1, dedupKey: `${order}:validated`, ttlSeconds })).outcome).toBe('stale');
    // Had the stale take claimed the mark, this would be a duplicate.
    expect((await marks.take({ orderKey: order, rank: 9, dedupKey: `${order}:validated`, ttlSeconds })).outcome).toBe('ok');
  });

  it('raises only the order mark when there is nothing to tell', async () => {
    const marks = make();
    const order = fresh();
    const raised = await marks.take({ orderKey: order, rank: 3, ttlSeconds });
    expect(raised.outcome).toBe('ok');
    await raised.release(); // nothing to free
    expect((await marks.take({ orderKey: order, rank: 2, dedupKey: `${order}:approval_needed`, ttlSeconds })).outcome).toBe('stale');
    expect((await marks.take({ orderKey: order, rank: 3, dedupKey: `${order}:approval_requested`, ttlSeconds })).outcome).toBe('ok');
  });
});

describe('MemoryMarks', () => {
  it('forgets marks after their TTL, and a late release does not free a newer claim', async () => {
    let now = 1_000_000;
    const marks = new MemoryMarks(() => now);
    const request = { orderKey: 'payment:1', rank: 9, dedupKey: 'payment:1:processed', ttlSeconds: 60 };
    const old = await marks.take(request);
    expect(old.outcome).toBe('ok');
    now += 61_000;
    const newer = await marks.take(request);
    expect(newer.outcome).toBe('ok');
    await old.release();
    expect((await marks.take(request)).outcome).toBe('duplicate');
    expect((await marks.take({ ...request, rank: 1, dedupKey: 'payment:1:validated' })).outcome).toBe('stale');
  });
});

describe('RedisMarks (real Redis)', () => {
  it('keeps both marks under the prefix with the TTL', async () => {
    const marks = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
    opened.push(marks);
    await marks.take({ orderKey: 'payment:ttl', rank: 9, dedupKey: 'payment:ttl:processed', ttlSeconds: 120 });
    expect(await raw.redis.get(`${prefix}notify:rank:payment:ttl`)).toBe('9');
    for (const key of [`${prefix}notify:rank:payment:ttl`, `${prefix}notify:sent:payment:ttl:processed`]) {
      const ttl = await raw.redis.ttl(key);
      expect(ttl).toBeGreaterThan(100);
      expect(ttl).toBeLessThanOrEqual(120);
    }
  });

  it('a release frees only its own claim', async () => {
    const marks = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
    opened.push(marks);
    const request = { orderKey: 'payment:own', rank: 9, dedupKey: 'payment:own:processed', ttlSeconds };
    const claim = await marks.take(request);
    expect(claim.outcome).toBe('ok');
    // The mark expired and another process claimed it since.
    await raw.redis.set(`${prefix}notify:sent:payment:own:processed`, 'someone-else');
    await claim.release();
    expect(await raw.redis.get(`${prefix}notify:sent:payment:own:processed`)).toBe('someone-else');
    expect((await marks.take(request)).outcome).toBe('duplicate');
  });

  it('a resent take (its reply lost with the connection) still holds its claim', async () => {
    const marks = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
    opened.push(marks);
    // ioredis resends the very same command: same keys, same claim token.
    const script = (marks as unknown as { redis: { momoNotifyTake(...args: unknown[]): Promise<number> } }).redis;
    const args = ['notify:rank:payment:resend', 'notify:sent:payment:resend:processed', 9, ttlSeconds, 'token-1'];
    expect(await script.momoNotifyTake(...args)).toBe(0);
    expect(await script.momoNotifyTake(...args)).toBe(0);
    expect((await marks.take({ orderKey: 'payment:resend', rank: 9, dedupKey: 'payment:resend:processed', ttlSeconds })).outcome).toBe('duplicate');
  });
});
