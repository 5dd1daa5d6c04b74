import { afterAll, describe, expect, it } from 'vitest';
import {
  MemoryReadBudget,
  RedisReadBudget,
  type ReadBudget,
  type ReadBudgetOptions,
} from '../../src/ops/read-budget.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';
import { until } from '../until.js';

const prefix = uniquePrefix('read-budget');
const opened: ReadBudget[] = [];
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()));
  await inspector(prefix).cleanup();
});

let key = 0;
/** Two "processes" sharing one budget: two Redis budgets on the same key, or one memory budget twice. */
const kinds: Array<[string, (options: ReadBudgetOptions) => [ReadBudget, ReadBudget]]> = [
  [
    'memory',
    (options) => {
      const b = new MemoryReadBudget(options);
      return [b, b];
    },
  ],
  [
    'redis',
    (options) => {
      const apiKey = `key-${++key}`;
      const a = new RedisReadBudget({ ...options, url: REDIS_URL, keyPrefix: prefix, apiKey });
      const b = new RedisReadBudget({ ...options, url: REDIS_URL, keyPrefix: prefix, apiKey });
      opened.push(a, b);
      return [a, b];
    },
  ],
];

/**
 * A test's clock for the budgets (`now`), counting how often they read it: every ask of a grant reads it, so
 * `asked` rising shows the reads still waiting asking again, and being refused.
 */
function clock(start: number) {
  const c = {
    at: start,
    asked: 0,
    now: () => {
      c.asked += 1;
      return c.at;
    },
  };
  return c;
}

/** Until `what` holds, then until the budgets have asked 10 times more: a grant that should not come has had its chance. */
async function settled(c: { asked: number }, what: string, ok: () => boolean): Promise<void> {
  await until(what, ok, { timeoutMs: 2_000, everyMs: 10 });
  await askedAgain(c);
}

/** Until the budgets have read the clock 10 times more (asked for grants again: those not granted are refused). */
async function askedAgain(c: { asked: number }): Promise<void> {
  const before = c.asked;
  await until('the waiting reads asking again', () => c.asked >= before + 10);
}

describe.each(kinds)('%s read budget', (_name, make) => {
  it('grants 30 at once over both processes; the next ones wait (queued, never refused) until a grant has aged out', async () => {
    const c = clock(1_000_000_000);
    const [a, b] = make({ now: c.now, pollMs: 10 });
    const granted: string[] = [];
    const takes = Array.from({ length: 34 }, (_, i) =>
      (i % 2 === 0 ? a : b).take().then(() => void granted.push(`read ${i}`)),
    );
    await settled(c, '30 granted', () => granted.length >= 30);
    expect(granted).toHaveLength(30);
    c.at += 30_000;
    await askedAgain(c);
    expect(granted).toHaveLength(30);
    // 61 s after the first grants (the service's minute and a second), the window frees them.
    c.at += 31_000;
    await Promise.all(takes);
    expect(granted).toHaveLength(34);
  });

  it('a sliding window: never more than the limit within any window, also across its edge', async () => {
    const c = clock(5_000_000_000);
    const [a, b] = make({ now: c.now, limit: 3, windowMs: 1000, pollMs: 5 });
    const times: number[] = [];
    const take = (budget: ReadBudget) => budget.take().then(() => void times.push(c.at));
    await Promise.all([take(a), take(b)]);
    c.at += 900;
    const pending = [take(a), take(b), take(a), take(b)];
    await settled(c, '3 granted', () => times.length >= 3);
    expect(times).toHaveLength(3);
    // A fixed window starting at the first grant would grant three more at 1000; the sliding one frees two.
    c.at += 150;
    await settled(c, '5 granted', () => times.length >= 5);
    expect(times).toHaveLength(5);
    c.at += 900;
    await Promise.all(pending);
    for (const t of times) expect(times.filter((u) => u > t - 1000 && u <= t).length).toBeLessThanOrEqual(3);
  });

  it("reads behind the product's leave the reserve free for the product's, from any process, and go after them", async () => {
    const c = clock(9_000_000_000);
    const [a, b] = make({ now: c.now, pollMs: 10, reserve: 10 });
    const order: string[] = [];
    // The reconciliation pages in process a: 20 of the window (30 less the reserve of 10), the rest wait.
    const paging = Array.from({ length: 25 }, (_, i) =>
      a
        .behind()
        .take()
        .then(() => void order.push(`behind ${i}`)),
    );
    await settled(c, '20 granted', () => order.length >= 20);
    expect(order).toHaveLength(20);
    // The product's reads, in either process, are granted at once from the reserve.
    const product = Array.from({ length: 10 }, (_, i) =>
      (i % 2 === 0 ? a : b).take().then(() => void order.push(`product ${i}`)),
    );
    await settled(c, '30 granted', () => order.length >= 30);
    expect(order.slice(20).every((o) => o.startsWith('product'))).toBe(true);
    expect(order).toHaveLength(30);
    // The budget is spent. One more of the product's waits in the process that pages, with the five behind it;
    // the window frees them all: the product's goes first.
    const late = a.take().then(() => void order.push('product late'));
    await askedAgain(c);
    expect(order).toHaveLength(30);
    c.at += 61_000;
    await Promise.all([...paging, ...product, late]);
    expect(order.slice(30)).toEqual(['product late', ...[20, 21, 22, 23, 24].map((i) => `behind ${i}`)]);
  });
});

describe('closing', () => {
  it('a read still waiting when the budget closes fails instead of holding the shutdown', async () => {
    const budget = new MemoryReadBudget({ limit: 1, pollMs: 10 });
    await budget.take();
    const waiting = budget.take();
    await budget.close();
    await expect(waiting).rejects.toThrow(/closed/);
  });
});

describe('RedisReadBudget', () => {
  it("counts on Redis's own clock by default, and keeps the API key out of Redis", async () => {
    const apiKey = `secret-api-key-${process.pid}`;
    const budget = new RedisReadBudget({ url: REDIS_URL, keyPrefix: prefix, apiKey, limit: 2 });
    opened.push(budget);
    await budget.take();
    await budget.take();
    const raw = inspector(prefix);
    const keys = await raw.redis.keys(`${prefix}reads:*`);
    expect(keys.some((k) => k.includes(apiKey))).toBe(false);
    const [seconds, micros] = await raw.redis.time();
    const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    let found = false;
    for (const k of keys) {
      const scores = (await raw.redis.zrange(k, 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
      if (scores.length !== 2) continue;
      found = true;
      for (const score of scores) expect(Math.abs(redisNow - score)).toBeLessThan(5000);
      expect(await raw.redis.pttl(k)).toBeGreaterThan(0);
    }
    expect(found).toBe(true);
    await raw.redis.quit();
  });
});
