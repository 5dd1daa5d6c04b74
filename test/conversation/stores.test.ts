import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore, SWEEP_EVERY } from '../../src/store/memory-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { createStore } from '../../src/store/create-store.js';
import type { Store } from '../../src/store/types.js';
import { RedisProxy } from '../chaos/redis-proxy.js';
import { reading, until } from '../until.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';

const prefix = uniquePrefix('stores');
const raw = inspector(prefix);
const redisStore = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
afterAll(async () => {
  await redisStore.close();
  await raw.cleanup();
});

describe.each<[string, () => Store]>([
  ['MemoryStore', () => new MemoryStore()],
  ['RedisStore', () => redisStore],
])('%s', (name, make) => {
  const store = make();
  const key = (k: string) => `${name}:${k}`;
  /** The leases listed in `index` that have expired (the store's own clock: Redis's for Redis). */
  const expired = (index: string) => () => store.expiredLeases(key(index), 10);

  it('creates, reads and updates a record with compare-and-set, its version growing', async () => {
    expect(await store.get(key('a'))).toBeNull();
    const first = (await store.set(key('a'), { step: 1, list: [] }, null, 60))!;
    expect(first).toBeGreaterThanOrEqual(1);
    expect(await store.get(key('a'))).toEqual({ snapshot: { step: 1, list: [] }, version: first });
    const second = (await store.set(key('a'), { step: 2 }, first, 60))!;
    expect(second).toBeGreaterThan(first);
    expect(await store.get(key('a'))).toEqual({ snapshot: { step: 2 }, version: second });
  });

  it('refuses a stale version and a create over an existing record', async () => {
    const first = (await store.set(key('b'), { n: 1 }, null, 60))!;
    const second = (await store.set(key('b'), { n: 2 }, first, 60))!;
    expect(await store.set(key('b'), { n: 'stale' }, first, 60)).toBeNull();
    expect(await store.set(key('b'), { n: 'create' }, null, 60)).toBeNull();
    expect(await store.set(key('b'), { n: 'ahead' }, second + 1, 60)).toBeNull();
    expect(await store.set(key('missing'), { n: 1 }, 3, 60)).toBeNull();
    expect((await store.get(key('b')))?.snapshot).toEqual({ n: 2 });
  });

  it('lets exactly one of many concurrent writers of one version win', async () => {
    const first = (await store.set(key('race'), { n: 0 }, null, 60))!;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.set(key('race'), { n: i }, first, 60)),
    );
    const won = results.filter((r) => r !== null);
    expect(won).toHaveLength(1);
    expect((await store.get(key('race')))?.version).toBe(won[0]);
  });

  it('deletes', async () => {
    await store.set(key('d'), { x: 1 }, null, 60);
    await store.delete(key('d'));
    expect(await store.get(key('d'))).toBeNull();
  });

  it('claims a key for the first caller only', async () => {
    const claims = await Promise.all(Array.from({ length: 10 }, () => store.claim(key('claim'), 60, 'me')));
    expect(claims.filter(Boolean)).toHaveLength(1);
    // Without a value each call has a token of its own: another call's claim is not ours.
    const anonymous = await Promise.all(Array.from({ length: 10 }, () => store.claim(key('claim:anonymous'), 60)));
    expect(anonymous.filter(Boolean)).toHaveLength(1);
  });

  it('adds within a limit atomically under concurrency', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => store.addWithinLimit(key('sum'), 10, 200, 60)));
    expect(results.filter((r) => r.ok)).toHaveLength(20);
    expect(Math.max(...results.map((r) => r.total))).toBe(200);
    expect(await store.addWithinLimit(key('sum'), 1, 200, 60)).toEqual({ ok: false, total: 200 });
    expect(await store.addWithinLimit(key('sum'), 0, 200, 60)).toEqual({ ok: true, total: 200 });
    expect(await store.addWithinLimit(key('other'), 0, 200, 60)).toEqual({ ok: true, total: 0 });
  });

  it('reserves once per reservation key within a limit, atomically, and gives it back once', async () => {
    // Three rounds of four reservations of 30 against a limit of 100, all at once: each key counts once,
    // the first three fit, the fourth does not (and, not recorded, is refused again each time).
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => store.reserve(key(`res:${i % 4}`), key('spent'), 30, 100, 60)),
    );
    expect(results.map((r) => r.ok)).toEqual([
      true,
      true,
      true,
      false,
      true,
      true,
      true,
      false,
      true,
      true,
      true,
      false,
    ]);
    expect(await store.addWithinLimit(key('spent'), 0, 100, 60)).toEqual({ ok: true, total: 90 });
    expect(await store.giveBack(key('res:0'))).toBe(true);
    expect(await store.giveBack(key('res:0'))).toBe(false);
    expect(await store.giveBack(key('res:3'))).toBe(false); // never reserved
    expect(await store.addWithinLimit(key('spent'), 0, 100, 60)).toEqual({ ok: true, total: 60 });
    // A key given back stays spent: reserving it again changes nothing; the room is another's.
    expect(await store.reserve(key('res:0'), key('spent'), 30, 100, 60)).toEqual({ ok: true, total: 60 });
    expect(await store.reserve(key('res:3'), key('spent'), 30, 100, 60)).toEqual({ ok: true, total: 90 });
  });

  it('holds a lease for one token at a time, lists it until released with nothing left, finds it once expired', async () => {
    const lease = { key: key('lease:a'), index: key('runs'), member: 'conv:a' };
    const other = { ...lease, key: key('lease:b'), member: 'conv:b' };
    expect(await store.lease(lease, 'one', 60_000)).toBe(true);
    expect(await store.lease(lease, 'two', 60_000)).toBe(false);
    expect(await store.lease(lease, 'one', 60_000)).toBe(true); // renewed by its holder
    expect(await store.lease(other, 'three', 1)).toBe(true);
    await until(
      'the 1 ms lease expired',
      reading(expired('runs'), (found) => found.length > 0),
    );
    expect(await store.expiredLeases(key('runs'), 10)).toEqual(['conv:b']);
    // Released without unlisting (a run may still be due): free, still listed for a sweep.
    await store.releaseLease(lease, 'one', false);
    expect(await store.lease(lease, 'two', 1)).toBe(true);
    await until(
      'the second 1 ms lease expired',
      reading(expired('runs'), (found) => found.length > 1),
    );
    expect((await store.expiredLeases(key('runs'), 10)).sort()).toEqual(['conv:a', 'conv:b']);
    // Released by a token that does not hold it: nothing changes; by its holder with nothing left: unlisted.
    expect(await store.lease(other, 'four', 60_000)).toBe(true);
    await store.releaseLease(other, 'three', true);
    expect(await store.lease(other, 'five', 60_000)).toBe(false);
    await store.releaseLease(other, 'four', true);
    await store.releaseLease(lease, 'nobody', true);
    expect(await store.expiredLeases(key('runs'), 10)).toEqual([]);
  });

  it("renews a lease only while its token holds it: never takes a free lease, nor another token's", async () => {
    const lease = { key: key('lease:r'), index: key('rruns'), member: 'conv:r' };
    const marker = (m: string) => ({ key: key(`lease:${m}`), index: key('rruns'), member: `conv:${m}` });
    // Held: extended, with its index entry. Taken for a second (room for a loaded machine) and renewed for a
    // minute: once a lease taken after the renewal for that same second expired, the renewed one still holds.
    expect(await store.lease(lease, 'one', 1_000)).toBe(true);
    expect(await store.renewLease(lease, 'one', 60_000)).toBe(true);
    expect(await store.lease(marker('m1'), 'marker', 1_000)).toBe(true);
    await until(
      'the lease taken after the renewal expired',
      reading(expired('rruns'), (found) => found.includes('conv:m1')),
    );
    expect(await store.expiredLeases(key('rruns'), 10)).toEqual(['conv:m1']);
    expect(await store.lease(lease, 'two', 60_000)).toBe(false);
    // Another token's renewal: false, and the lease stays its holder's (whose own renewal still holds it).
    expect(await store.renewLease(lease, 'two', 60_000)).toBe(false);
    expect(await store.lease(lease, 'two', 60_000)).toBe(false);
    expect(await store.renewLease(lease, 'one', 60_000)).toBe(true);
    // Released with nothing left (unlisted): a late renewal finds it free and leaves it so, and adds no index
    // entry (one for 1 ms would be found expired beside the marker's, taken after it).
    await store.releaseLease(lease, 'one', true);
    expect(await store.renewLease(lease, 'one', 1)).toBe(false);
    expect(await store.lease(marker('m2'), 'marker', 1)).toBe(true);
    await until(
      'the 1 ms marker lease expired',
      reading(expired('rruns'), (found) => found.includes('conv:m2')),
    );
    expect((await store.expiredLeases(key('rruns'), 10)).sort()).toEqual(['conv:m1', 'conv:m2']);
    expect(await store.renewLease(lease, 'one', 60_000)).toBe(false);
    expect(await store.lease(lease, 'two', 60_000)).toBe(true);
    expect(await store.renewLease(lease, 'one', 60_000)).toBe(false);
    expect(await store.renewLease(lease, 'two', 60_000)).toBe(true);
  });

  it("takes a run's lease with the write that records it and ends it with the write of its outcome, atomically", async () => {
    const lease = { key: key('lease:w'), index: key('wruns'), member: 'conv:w' };
    // Taken by the write: held for the token, listed (and found once expired). A second: room for a loaded machine.
    const one = (await store.set(key('w'), { run: 'one' }, null, 60, { take: lease, token: 'one', ms: 1_000 }))!;
    expect(one).toBeGreaterThanOrEqual(1);
    expect(await store.lease(lease, 'two', 60_000)).toBe(false);
    expect(await store.expiredLeases(key('wruns'), 10)).toEqual([]);
    await until(
      'the 1 s lease expired',
      reading(expired('wruns'), (found) => found.length > 0),
    );
    expect(await store.expiredLeases(key('wruns'), 10)).toEqual(['conv:w']);
    expect(await store.lease(lease, 'one', 60_000)).toBe(true);
    // A conflict changes neither the record nor the lease; a lease another token holds is a conflict too.
    expect(await store.set(key('w'), { run: 'late' }, one + 7, 60, { release: lease, token: 'one' })).toBeNull();
    expect(await store.set(key('w'), { run: 'two' }, one, 60, { take: lease, token: 'two', ms: 60_000 })).toBeNull();
    expect(await store.get(key('w'))).toEqual({ snapshot: { run: 'one' }, version: one });
    expect(await store.lease(lease, 'two', 60_000)).toBe(false);
    // Ended by the write of the outcome: free and unlisted; another token's release ends nothing.
    const done = (await store.set(key('w'), { run: 'done' }, one, 60, { release: lease, token: 'nobody' }))!;
    expect(done).toBeGreaterThan(one);
    expect(await store.lease(lease, 'two', 60_000)).toBe(false);
    expect(await store.set(key('w'), { run: 'done' }, done, 60, { release: lease, token: 'one' })).toBeGreaterThan(
      done,
    );
    expect(await store.expiredLeases(key('wruns'), 10)).toEqual([]);
    expect(await store.lease(lease, 'two', 60_000)).toBe(true);
  });

  it('reads several records in one call, null for each absent', async () => {
    const m1 = await store.set(key('m1'), { a: 1 }, null, 60);
    const m3 = await store.set(key('m3'), { c: 3 }, null, 60);
    expect(await store.getMany([key('m1'), key('m2'), key('m3')])).toEqual([
      { snapshot: { a: 1 }, version: m1 },
      null,
      { snapshot: { c: 3 }, version: m3 },
    ]);
  });
});

describe('RedisStore record layout', () => {
  const stored = (k: string) => raw.redis.get(`${prefix}${k}`);

  it('keeps a record as one string `<version>:<write id>:<JSON>` with a fresh short write id per write', async () => {
    const snapshot = { flow: 'pay', history: Array.from({ length: 53 }, (_, i) => `step-${i}:ok`) };
    expect(JSON.stringify(snapshot).length).toBeGreaterThan(690); // ~700 bytes, a USSD session's size
    const v1 = await redisStore.set('layout', snapshot, null, 60);
    expect(await raw.redis.type(`${prefix}layout`)).toBe('string');
    const first = (await stored('layout'))!;
    expect(first).toMatch(new RegExp(`^${v1}:[A-Za-z0-9_-]{11}:\\{"flow":"pay"`));
    const id = (record: string) => record.split(':')[1];
    expect(first.slice(`${v1}:${id(first)}:`.length)).toBe(JSON.stringify(snapshot));
    const v2 = await redisStore.set('layout', snapshot, v1, 60);
    const second = (await stored('layout'))!;
    expect(second).toMatch(new RegExp(`^${v2}:[A-Za-z0-9_-]{11}:`));
    expect(id(second)).not.toBe(id(first));
    // The point of the layout: the old hash of this record took ~1,080 bytes, the string ~840.
    expect(Number(await raw.redis.memory('USAGE', `${prefix}layout`))).toBeLessThan(1000);
  });

  it('parses the version before the JSON, whatever ":" the JSON holds, past one digit', async () => {
    const snapshot = { url: 'https://x:1/a', 'k:1': '2:3:4', list: ['1:', ':2:', '10:'] };
    let version = (await redisStore.set('colons', snapshot, null, 60))!;
    for (let v = 1; v < 12; v++) version = (await redisStore.set('colons', { ...snapshot, v }, version, 60))!;
    expect(await redisStore.get('colons')).toEqual({ snapshot: { ...snapshot, v: 11 }, version });
    // `1:` must not match `12:`, nor `12:` a `1:...` record.
    await raw.redis.set(`${prefix}colons:hand`, '12:AAAAAAAAAAA:{"a":"1:x:1:"}');
    expect(await redisStore.set('colons:hand', snapshot, 1, 60)).toBeNull();
    await raw.redis.set(`${prefix}colons:hand`, '1:AAAAAAAAAAA:{"a":"12:x:1:"}');
    expect(await redisStore.get('colons:hand')).toEqual({ snapshot: { a: '12:x:1:' }, version: 1 });
    expect(await redisStore.set('colons:hand', { a: 'x' }, 12, 60)).toBeNull();
    const written = (await redisStore.set('colons:hand', { a: 'y' }, 1, 60))!;
    expect(written).toBeGreaterThan(1);
    expect(await redisStore.get('colons:hand')).toEqual({ snapshot: { a: 'y' }, version: written });
  });

  it('gives two writes from one version different versions, so a write read from one history misses the other', async () => {
    // A failover drops the old master's last write; another process writes from the version before it. Counted
    // by one, both histories would hold the same version, and a compare-and-set read from the lost one (a
    // demoted master still serving it) would overwrite the other's write.
    const base = (await redisStore.set('histories', { step: 'base' }, null, 60))!;
    const versions = new Set<number>();
    let version = base;
    for (let i = 0; i < 50; i++) {
      const lost = (await redisStore.set('histories', { step: 'lost' }, version, 60))!;
      await raw.redis.set(`${prefix}histories`, `${version}:AAAAAAAAAAA:{"step":"base"}`); // the failover
      const kept = (await redisStore.set('histories', { step: 'kept' }, version, 60))!;
      expect(kept).not.toBe(lost);
      expect(await redisStore.set('histories', { step: 'stale' }, lost, 60)).toBeNull();
      versions.add(kept);
      version = kept;
    }
    expect(versions.size).toBe(50);
  });

  it('reads a key of another type (an old-layout hash) as absent, and a create writes over it', async () => {
    const key = `${prefix}wrongtype`;
    await raw.redis.hset(key, { v: '4', w: 'c9a4f8f2-2f7e-4b8e-9d55-0d3e1f7c2a11', d: '{"old":true}' });
    expect(await redisStore.get('wrongtype')).toBeNull();
    expect(await redisStore.set('wrongtype', { n: 5 }, 4, 60)).toBeNull();
    expect(await raw.redis.type(key)).toBe('hash');
    const created = await redisStore.set('wrongtype', { n: 1 }, null, 60);
    expect(created).toBeGreaterThanOrEqual(1);
    expect(await raw.redis.type(key)).toBe('string');
    expect(await redisStore.get('wrongtype')).toEqual({ snapshot: { n: 1 }, version: created });
    expect(await raw.redis.ttl(key)).toBeGreaterThan(50);
  });

  it('refuses to read a string that is not a record, and leaves it alone', async () => {
    await redisStore.claim('not-a-record', 60, 'claim-token');
    await expect(redisStore.get('not-a-record')).rejects.toThrow(/not a session record/);
    expect(await redisStore.set('not-a-record', { n: 1 }, null, 60)).toBeNull();
    expect(await stored('not-a-record')).toBe('claim-token');
  });

  describe('when a dropped connection loses the reply of a compare-and-set or a claim', () => {
    // ioredis resends the script; the resend finds its own first run's write and must answer its version.
    const target = new URL(REDIS_URL);
    let cutter: RedisProxy;
    let cut: RedisStore;
    afterAll(async () => {
      await cut?.close();
      await cutter?.close();
    });

    it('answers the version it wrote, on a create and on an update, and only once', async () => {
      cutter = await new RedisProxy({ host: target.hostname, port: Number(target.port || 6379) }).start();
      cut = new RedisStore({ url: `redis://127.0.0.1:${cutter.port}${target.pathname}`, keyPrefix: prefix });
      await cut.set('resent:warm-up', {}, null, 60); // the script is loaded: the lost reply is the script's own
      cutter.swallowNextReply = true;
      const created = (await cut.set('resent', { step: 1 }, null, 60))!;
      expect(cutter.swallowNextReply).toBe(false);
      expect(await cut.get('resent')).toEqual({ snapshot: { step: 1 }, version: created });
      cutter.swallowNextReply = true;
      const updated = (await cut.set('resent', { step: 2 }, created, 60))!;
      expect(cutter.swallowNextReply).toBe(false);
      expect(updated).toBeGreaterThan(created);
      expect(await cut.get('resent')).toEqual({ snapshot: { step: 2 }, version: updated });
      // Another writer of the same version is still a conflict.
      expect(await cut.set('resent', { step: 'other' }, created, 60)).toBeNull();
      expect(await redisStore.set('resent', { step: 'other' }, null, 60)).toBeNull();
    });

    it('answers a leased write whose reply was lost as written, its lease changed once', async () => {
      const lease = { key: 'resent:lease', index: 'resent:runs', member: 'conv:resent' };
      await cut.set('resent:warm-up-leased', {}, null, 60, { release: lease, token: 'nobody' }); // the script is loaded
      cutter.swallowNextReply = true;
      const taken = (await cut.set('resent:leased', { run: 1 }, null, 60, { take: lease, token: 'mine', ms: 60_000 }))!;
      expect(cutter.swallowNextReply).toBe(false);
      expect((await cut.get('resent:leased'))?.version).toBe(taken);
      expect(await cut.lease(lease, 'other', 60_000)).toBe(false);
      cutter.swallowNextReply = true;
      const done = await cut.set('resent:leased', { run: 'done' }, taken, 60, { release: lease, token: 'mine' });
      expect(done).toBeGreaterThan(taken);
      expect((await cut.get('resent:leased'))?.version).toBe(done);
      expect(cutter.swallowNextReply).toBe(false);
      expect(await cut.lease(lease, 'other', 60_000)).toBe(true);
    });

    it('keeps a claim whose reply was lost for its caller', async () => {
      cutter.swallowNextReply = true;
      expect(await cut.claim('resent:claim', 60)).toBe(true);
      expect(cutter.swallowNextReply).toBe(false);
      expect(await cut.claim('resent:claim', 60)).toBe(false);
      expect(await stored('resent:claim')).toMatch(/^[A-Za-z0-9_-]{11}$/);
    });
  });
});

describe('TTL on every write', () => {
  it('RedisStore sets the TTL on set, claim and addWithinLimit', async () => {
    const version = await redisStore.set('ttl:rec', { a: 1 }, null, 100);
    await redisStore.claim('ttl:mark', 200);
    await redisStore.addWithinLimit('ttl:sum', 5, 10, 300);
    const ttl = (k: string) => raw.redis.ttl(`${prefix}${k}`);
    expect(await ttl('ttl:rec')).toBeGreaterThan(90);
    expect(await ttl('ttl:rec')).toBeLessThanOrEqual(100);
    expect(await ttl('ttl:mark')).toBeGreaterThan(190);
    expect(await ttl('ttl:sum')).toBeGreaterThan(290);
    // A later write refreshes it.
    expect(await redisStore.set('ttl:rec', { a: 2 }, version, 500)).not.toBeNull();
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

describe('createStore', () => {
  it('chooses Redis when a URL is given and memory otherwise', async () => {
    const memory = createStore();
    const redis = createStore({ redisUrl: REDIS_URL, keyPrefix: prefix });
    expect(memory).toBeInstanceOf(MemoryStore);
    expect(redis).toBeInstanceOf(RedisStore);
    await redis.close();
    await memory.close();
  });
});
