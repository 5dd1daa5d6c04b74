import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore, SWEEP_EVERY } from '../../src/conversation/memory-store.js';
import { RedisStore } from '../../src/conversation/redis-store.js';
import { createSessionStore } from '../../src/conversation/store.js';
import type { SessionStore } from '../../src/conversation/types.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';

const prefix = uniquePrefix('stores');
const raw = inspector(prefix);
const redisStore = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
afterAll(async () => {
  await redisStore.close();
  await raw.cleanup();
});

describe.each<[string, () => SessionStore]>([
  ['MemoryStore', () => new MemoryStore()],
  ['RedisStore', () => redisStore],
])('%s', (name, make) => {
  const store = make();
  const key = (k: string) => `${name}:${k}`;

  it('creates, reads and updates a record with compare-and-set', async () => {
    expect(await store.get(key('a'))).toBeNull();
    expect(await store.set(key('a'), { step: 1, list: [] }, null, 60)).toBe(1);
    expect(await store.get(key('a'))).toEqual({ snapshot: { step: 1, list: [] }, version: 1 });
    expect(await store.set(key('a'), { step: 2 }, 1, 60)).toBe(2);
    expect(await store.get(key('a'))).toEqual({ snapshot: { step: 2 }, version: 2 });
  });

  it('refuses a stale version and a create over an existing record', async () => {
    await store.set(key('b'), { n: 1 }, null, 60);
    await store.set(key('b'), { n: 2 }, 1, 60);
    expect(await store.set(key('b'), { n: 'stale' }, 1, 60)).toBeNull();
    expect(await store.set(key('b'), { n: 'create' }, null, 60)).toBeNull();
    expect(await store.set(key('missing'), { n: 1 }, 3, 60)).toBeNull();
    expect((await store.get(key('b')))?.snapshot).toEqual({ n: 2 });
  });

  it('lets exactly one of many concurrent writers of one version win', async () => {
    await store.set(key('race'), { n: 0 }, null, 60);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.set(key('race'), { n: i }, 1, 60)));
    expect(results.filter((r) => r === 2)).toHaveLength(1);
    expect(results.filter((r) => r === null)).toHaveLength(19);
  });

  it('deletes', async () => {
    await store.set(key('d'), { x: 1 }, null, 60);
    await store.delete(key('d'));
    expect(await store.get(key('d'))).toBeNull();
  });

  it('claims a key for the first caller only', async () => {
    const claims = await Promise.all(Array.from({ length: 10 }, () => store.claim(key('claim'), 60, 'me')));
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  it('adds within a limit atomically under concurrency', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => store.addWithinLimit(key('sum'), 10, 200, 60)));
    expect(results.filter((r) => r.ok)).toHaveLength(20);
    expect(Math.max(...results.map((r) => r.total))).toBe(200);
    expect(await store.addWithinLimit(key('sum'), 1, 200, 60)).toEqual({ ok: false, total: 200 });
    expect(await store.addWithinLimit(key('sum'), 0, 200, 60)).toEqual({ ok: true, total: 200 });
    expect(await store.addWithinLimit(key('other'), 0, 200, 60)).toEqual({ ok: true, total: 0 });
  });
});

describe('TTL on every write', () => {
  it('RedisStore sets the TTL on set, claim and addWithinLimit', async () => {
    await redisStore.set('ttl:rec', { a: 1 }, null, 100);
    await redisStore.claim('ttl:mark', 200);
    await redisStore.addWithinLimit('ttl:sum', 5, 10, 300);
    const ttl = (k: string) => raw.redis.ttl(`${prefix}${k}`);
    expect(await ttl('ttl:rec')).toBeGreaterThan(90);
    expect(await ttl('ttl:rec')).toBeLessThanOrEqual(100);
    expect(await ttl('ttl:mark')).toBeGreaterThan(190);
    expect(await ttl('ttl:sum')).toBeGreaterThan(290);
    // A later write refreshes it.
    await redisStore.set('ttl:rec', { a: 2 }, 1, 500);
    expect(await ttl('ttl:rec')).toBeGreaterThan(490);
  });

  it('MemoryStore forgets every kind of entry when its TTL has passed', async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ now: () => now });
    await store.set('rec', { a: 1 }, null, 10);
    await store.claim('mark', 10);
    await store.addWithinLimit('sum', 5, 10, 10);
    now += 9_999;
    expect(await store.get('rec')).not.toBeNull();
    expect(await store.claim('mark', 10)).toBe(false);
    now += 1;
    expect(await store.get('rec')).toBeNull();
    expect(await store.claim('mark', 10)).toBe(true);
    expect(await store.addWithinLimit('sum', 0, 10, 10)).toEqual({ ok: true, total: 0 });
    expect(await store.set('rec', { a: 2 }, null, 10)).toBe(1);
  });
});

describe('MemoryStore memory', () => {
  it('sweeps expired entries nobody reads again', async () => {
    let now = 0;
    const store = new MemoryStore({ now: () => now });
    for (let i = 0; i < SWEEP_EVERY - 1; i++) await store.claim(`seen:${i}`, 10);
    expect(store.size).toBe(SWEEP_EVERY - 1);
    now += 10_000;
    await store.claim('seen:last', 10);
    expect(store.size).toBe(1);
  });
});

describe('createSessionStore', () => {
  it('chooses Redis when a URL is given and memory otherwise', async () => {
    const memory = createSessionStore();
    const redis = createSessionStore({ redisUrl: REDIS_URL, keyPrefix: prefix });
    expect(memory).toBeInstanceOf(MemoryStore);
    expect(redis).toBeInstanceOf(RedisStore);
    await redis.close();
    await memory.close();
  });
});
