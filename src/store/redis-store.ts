/**
 * Store in Redis (ioredis), shared by every process of the product. A versioned record is ONE string
 * `<version>:<write id>:<JSON>`, e.g. `3:q1Xb0Z9k-aE:{"step":"amount"}`, read with one GET. A string is
 * cheaper than the hash `{ v, w, d }` this used to be (a hash with a value over 64 bytes is a hashtable, with
 * its overhead per field; a string is one allocation).
 * The version is decimal and the write id base64url (no ':' in either), so the first two ':' end them and
 * the JSON may hold any ':' of its own. Compare-and-set is one Lua script (WATCH/MULTI on a shared connection
 * loses updates), the bounded counter, the keyed spend reservation and the run leases others. Every write sets
 * the key's TTL (a lease's index entry lives until the lease is released or swept).
 *
 * A key of another type under a record's name (a hash of the former `{ v, w, d }` layout; there is no
 * production data in it) reads as absent, and set() writes over it as over an absent record (SET replaces a
 * key of any type). A string that is not a record (a claim mark or a counter under a record's name) is a
 * programming error: get() throws, and set() reports a conflict and leaves it alone.
 */
import {
  connectRedis,
  closeRedis,
  replicaCheck,
  settingsOf,
  type RedisClient,
  type RedisTarget,
} from '../redis/connect.js';
import type { Logger } from '../log.js';
import { randomInt } from 'node:crypto';
import { Cluster } from 'ioredis';
import { DEFAULT_KEY_PREFIX, tagOf } from './keys.js';
import { randomId } from './random-id.js';
import type { Lease, LeaseChange, Store, StoredSnapshot } from './types.js';

/**
 * KEYS[1] record; ARGV: expected header (`<version>:`, '' = must be absent), the new record
 * (`<new version>:<write id>:<JSON>`, built by the caller: VERSION_STEP), ttl, the new record's header
 * (`<new version>:<write id>:`). Returns 1 when the record is written (or was written by this very script),
 * nil on a conflict; the caller knows the version it wrote.
 *
 * The write id makes a resent script idempotent: ioredis resends a command whose reply a dropped connection
 * lost, and the resend finds the version moved on by its own first run: that is not a conflict. Only our own
 * first run can have stored our header (the write id is 64 random bits), so a stored header equal to ours
 * means "already done". It is checked only when the expected header does not match, as the first run leaves
 * the version past the expected one.
 *
 * Cost for Redis: one GETRANGE of the stored header (as many bytes as our own header: never shorter than the
 * expected one) and one SET ... EX. The stored JSON never enters Lua (a GET of it would have
 * every byte copied into a reply and a Lua string), and ours is passed through untouched. pcall, so a key of
 * another type reads as absent (see above) instead of failing the script; GETRANGE reads an absent key as ''.
 */
const CHECK_VERSION = `
local head = redis.pcall('GETRANGE', KEYS[1], 0, #ARGV[4] - 1)
if type(head) == 'string' and head ~= '' then
  if ARGV[1] == '' or string.sub(head, 1, #ARGV[1]) ~= ARGV[1] then
    if head == ARGV[4] then return 1 end
    return nil
  end
elseif ARGV[1] ~= '' then
  return nil
end
`;
const COMPARE_AND_SET = `${CHECK_VERSION}
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
`;

/** KEYS[1] counter; ARGV: amount, limit, ttl. Returns {1|0, total}. Adding 0 reads without writing. */
const ADD_WITHIN_LIMIT = `
local total = tonumber(redis.call('GET', KEYS[1]) or '0')
local amount = tonumber(ARGV[1])
if amount == 0 then return {1, total} end
if total + amount > tonumber(ARGV[2]) then return {0, total} end
total = redis.call('INCRBY', KEYS[1], amount)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {1, total}
`;

/**
 * KEYS[1] reservation, KEYS[2] counter; ARGV: amount, limit, ttl. Returns {1|0, total}. A reservation already
 * recorded (held or given back) is a no-op answering ok, so a resend, a second run or a restored step of the
 * same payment counts once. The reservation keeps `held:<amount>:<counter key>`; give-back reads the counter's
 * name from it (a key outside KEYS: fine on one Redis, which is what the product runs on).
 */
const RESERVE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {1, tonumber(redis.call('GET', KEYS[2]) or '0')} end
local total = tonumber(redis.call('GET', KEYS[2]) or '0')
if total + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, total} end
total = redis.call('INCRBY', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[1], 'held:' .. ARGV[1] .. ':' .. KEYS[2], 'EX', ARGV[3])
return {1, total}
`;

/** KEYS[1] reservation. Returns 1 when a held reservation was given back (its counter lowered), else 0. */
const GIVE_BACK = `
local held = redis.call('GET', KEYS[1])
if not held or string.sub(held, 1, 5) ~= 'held:' then return 0 end
local rest = string.sub(held, 6)
local at = string.find(rest, ':', 1, true)
local amount = tonumber(string.sub(rest, 1, at - 1))
local counter = string.sub(rest, at + 1)
local total = tonumber(redis.call('GET', counter) or '0')
if total > 0 then redis.call('SET', counter, math.max(0, total - amount), 'KEEPTTL') end
redis.call('SET', KEYS[1], 'given:' .. rest, 'KEEPTTL')
return 1
`;

/** The server's clock in ms, so every process scores leases on one clock. */
const NOW_MS = `local clock = redis.call('TIME') local now = clock[1] * 1000 + math.floor(clock[2] / 1000)`;

/** KEYS[1] lease, KEYS[2] index; ARGV: token, ttl ms, member. Returns 1 when the lease is (now) the token's. */
const LEASE = `
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
${NOW_MS}
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
return 1
`;

/** KEYS[1] lease, KEYS[2] index; ARGV: token, ttl ms, member. Returns 1 when extended, 0 when not the token's. */
const RENEW_LEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
${NOW_MS}
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
return 1
`;

/** KEYS[1] lease, KEYS[2] index; ARGV: token, member, '1' to unlist. */
const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[2]) end
return 1
`;

/**
 * COMPARE_AND_SET with a run's lease changed in the same step (LeaseChange). KEYS[1] record, KEYS[2] lease,
 * KEYS[3] index; ARGV 1-4 as COMPARE_AND_SET's, then `take` or `release`, the token, the lease's ms, the
 * member. A lease to take that another token holds is a conflict: nil, nothing written. A resent script that
 * finds its own write answers 1 as COMPARE_AND_SET does: its first run changed the lease with it.
 */
const COMPARE_AND_SET_LEASED = `${CHECK_VERSION}
if ARGV[5] == 'take' then
  local held = redis.call('GET', KEYS[2])
  if held and held ~= ARGV[6] then return nil end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
if ARGV[5] == 'take' then
  redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[7])
  ${NOW_MS}
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[7]), ARGV[8])
else
  if redis.call('GET', KEYS[2]) == ARGV[6] then redis.call('DEL', KEYS[2]) end
  if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('ZREM', KEYS[3], ARGV[8]) end
end
return 1
`;

/**
 * KEYS[1] index; ARGV: limit. Members scored before now, strictly: Redis keeps a key through the millisecond
 * its expiry names (expired once the clock is past it), so a lease scored now still holds its key.
 */
const EXPIRED_LEASES = `
${NOW_MS}
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, ARGV[1])
`;

interface StoreScripts {
  momoCompareAndSet(
    key: string,
    expectedHeader: string,
    record: string,
    ttl: number,
    header: string,
  ): Promise<1 | null>;
  momoCompareAndSetLeased(
    key: string,
    lease: string,
    index: string,
    expectedHeader: string,
    record: string,
    ttl: number,
    header: string,
    op: 'take' | 'release',
    token: string,
    ms: number,
    member: string,
  ): Promise<1 | null>;
  momoAddWithinLimit(key: string, amount: number, limit: number, ttl: number): Promise<[number, number]>;
  momoReserve(
    reservation: string,
    counter: string,
    amount: number,
    limit: number,
    ttl: number,
  ): Promise<[number, number]>;
  momoGiveBack(reservation: string): Promise<number>;
  momoLease(lease: string, index: string, token: string, ttlMs: number, member: string): Promise<number>;
  momoRenewLease(lease: string, index: string, token: string, ttlMs: number, member: string): Promise<number>;
  momoReleaseLease(lease: string, index: string, token: string, member: string, unlist: '0' | '1'): Promise<number>;
  momoExpiredLeases(index: string, limit: number): Promise<string[]>;
}

export interface RedisStoreOptions {
  /** Where Redis is: a one-server URL (`redis://host:6379/0`) or the Sentinel or Cluster settings. */
  url: RedisTarget;
  /** Where the connection's errors are logged (boundedly); unset: not logged, the failed calls say it. */
  logger?: Logger;
  /**
   * Prefix of every key. Default `momo:` so the product can share a Redis with others; tests use their
   * own to stay apart.
   */
  keyPrefix?: string;
}

const seconds = (ttl: number): number => Math.max(1, Math.ceil(ttl));

/**
 * How far past the version it replaces a write puts a record's: 1 plus a random step below this. Versions only
 * grow, and two histories of one record almost never meet at the same version: after a failover dropped the old
 * master's last write, a process that read it (from the demoted master, still serving its stale data) and
 * another that wrote from the base before it would share a version counted by one, and the first one's
 * compare-and-set would overwrite the other's write (the likely cause, in a Sentinel chaos run, of a dropped
 * payment run taken over and paid after a dial had said nothing was sent). With a step of 2^20 two such writes share a version
 * once in a million, and a record takes 2^33 writes before its version passes Number.MAX_SAFE_INTEGER.
 */
const VERSION_STEP = 2 ** 20;

/** Splits `<version>:<write id>:<JSON>`; throws on a string that is not a record. */
function parseRecord(record: string): StoredSnapshot {
  const versionEnd = record.indexOf(':');
  const idEnd = versionEnd > 0 ? record.indexOf(':', versionEnd + 1) : -1;
  const version = Number(record.slice(0, versionEnd));
  if (idEnd < 0 || !Number.isSafeInteger(version) || version < 1) {
    throw new Error(`not a session record: ${JSON.stringify(record.slice(0, 40))}`);
  }
  return { snapshot: JSON.parse(record.slice(idEnd + 1)), version };
}

/** True when every key carries the same, non-empty hash tag (keys.ts): one slot. */
function oneTag(keys: string[]): boolean {
  const tag = tagOf(keys[0] ?? '');
  return tag !== '' && keys.every((key) => tagOf(key) === tag);
}

const isWrongType = (error: unknown): boolean => error instanceof Error && error.message.startsWith('WRONGTYPE');

/**
 * The product's Redis connection with its Lua scripts defined as commands (one key each unless said), as the
 * store, the read budget and the notification marks open it (src/redis/connect.ts). Auto-pipelining
 * (one server and Sentinel; connectRedis never pipelines a cluster connection, whose pipelines fail whole
 * after a failover or a slot move): commands issued in the same tick (one hop's parallel reads, other
 * conversations' commands under load) go out in one write. Each command keeps its own reply and order, so
 * compare-and-set and SET NX marks behave exactly as without it; it only saves syscalls (one write per command
 * was the largest native cost in the USSD benchmark's profile, bench/profile). Failed commands reject with
 * the error and their callers handle it.
 */
export function scriptedRedis<S>(
  target: RedisTarget,
  keyPrefix: string | undefined,
  scripts: Record<string, { lua: string; keys?: number }>,
  connection: { name: string; logger?: Logger } = { name: 'store' },
): RedisClient & S {
  const redis = connectRedis(target, {
    ...connection,
    keyPrefix: keyPrefix ?? DEFAULT_KEY_PREFIX,
    enableAutoPipelining: true,
  });
  for (const [name, { lua, keys = 1 }] of Object.entries(scripts))
    redis.defineCommand(name, { numberOfKeys: keys, lua });
  return redis as RedisClient & S;
}

export class RedisStore implements Store {
  private readonly redis: RedisClient & StoreScripts;
  /**
   * Store.replicated, on Sentinel and on a cluster (where a failover drops the old master's last
   * writes): every replica in sync holds every write sent so far on the store's connection to the key's master
   * (replicaCheck: callers at once share one WAIT per master).
   */
  readonly replicated?: (key: string) => Promise<boolean>;

  constructor(options: RedisStoreOptions) {
    this.redis = scriptedRedis<StoreScripts>(
      options.url,
      options.keyPrefix,
      {
        momoCompareAndSet: { lua: COMPARE_AND_SET },
        momoCompareAndSetLeased: { lua: COMPARE_AND_SET_LEASED, keys: 3 },
        momoAddWithinLimit: { lua: ADD_WITHIN_LIMIT },
        momoReserve: { lua: RESERVE, keys: 2 },
        momoGiveBack: { lua: GIVE_BACK },
        momoLease: { lua: LEASE, keys: 2 },
        momoRenewLease: { lua: RENEW_LEASE, keys: 2 },
        momoReleaseLease: { lua: RELEASE_LEASE, keys: 2 },
        momoExpiredLeases: { lua: EXPIRED_LEASES },
      },
      { name: 'sessions', ...(options.logger ? { logger: options.logger } : {}) },
    );
    if (settingsOf(options.url).mode !== 'server') this.replicated = replicaCheck(this.redis, options.url);
  }

  async get(key: string): Promise<StoredSnapshot | null> {
    let record: string | null;
    try {
      record = await this.redis.get(key);
    } catch (error) {
      // A key of another type (an old-layout hash) is no record of ours: absent, and set() writes over it.
      if (isWrongType(error)) return null;
      throw error;
    }
    return record === null ? null : parseRecord(record);
  }

  /**
   * One MGET; a key of another type reads as absent, as in get(). On a cluster an MGET must stay in one slot:
   * keys of different tags are read with one GET each, sent together (one write per master).
   */
  async getMany(keys: string[]): Promise<Array<StoredSnapshot | null>> {
    if (this.redis instanceof Cluster && !oneTag(keys)) return Promise.all(keys.map((key) => this.get(key)));
    const records = await this.redis.mget(...keys);
    return records.map((record) => (record === null ? null : parseRecord(record)));
  }

  async set(
    key: string,
    snapshot: unknown,
    expectedVersion: number | null,
    ttlSeconds: number,
    lease?: LeaseChange,
  ): Promise<number | null> {
    const version = (expectedVersion ?? 0) + 1 + randomInt(VERSION_STEP);
    const header = `${version}:${randomId()}:`;
    const expected = expectedVersion === null ? '' : `${expectedVersion}:`;
    const record = header + JSON.stringify(snapshot);
    const ttl = seconds(ttlSeconds);
    const written = !lease
      ? await this.redis.momoCompareAndSet(key, expected, record, ttl, header)
      : 'take' in lease
        ? await this.redis.momoCompareAndSetLeased(
            key,
            lease.take.key,
            lease.take.index,
            expected,
            record,
            ttl,
            header,
            'take',
            lease.token,
            Math.max(1, Math.ceil(lease.ms)),
            lease.take.member,
          )
        : await this.redis.momoCompareAndSetLeased(
            key,
            lease.release.key,
            lease.release.index,
            expected,
            record,
            ttl,
            header,
            'release',
            lease.token,
            0,
            lease.release.member,
          );
    return written === null ? null : version;
  }

  async delete(key: string): Promise<void> {
    await this.redis.del(key);
  }

  async claim(key: string, ttlSeconds: number, value?: string): Promise<boolean> {
    // A token of this call: when a dropped connection lost the reply of our SET NX, ioredis resends it and
    // the resend answers null although the key is ours; the token tells our claim from another's. 64 random
    // bits, like a write id, are plenty for that and keep the mark a small string.
    const token = value ?? randomId();
    if ((await this.redis.set(key, token, 'EX', seconds(ttlSeconds), 'NX')) === 'OK') return true;
    return value === undefined && (await this.redis.get(key)) === token;
  }

  async addWithinLimit(
    key: string,
    amount: number,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ ok: boolean; total: number }> {
    const [ok, total] = await this.redis.momoAddWithinLimit(key, amount, limit, seconds(ttlSeconds));
    return { ok: ok === 1, total: Number(total) };
  }

  async reserve(
    reservationKey: string,
    counterKey: string,
    amount: number,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ ok: boolean; total: number }> {
    const [ok, total] = await this.redis.momoReserve(reservationKey, counterKey, amount, limit, seconds(ttlSeconds));
    return { ok: ok === 1, total: Number(total) };
  }

  async giveBack(reservationKey: string): Promise<boolean> {
    return (await this.redis.momoGiveBack(reservationKey)) === 1;
  }

  async lease(lease: Lease, token: string, ttlMs: number): Promise<boolean> {
    return (
      (await this.redis.momoLease(lease.key, lease.index, token, Math.max(1, Math.ceil(ttlMs)), lease.member)) === 1
    );
  }

  async renewLease(lease: Lease, token: string, ttlMs: number): Promise<boolean> {
    return (
      (await this.redis.momoRenewLease(lease.key, lease.index, token, Math.max(1, Math.ceil(ttlMs)), lease.member)) ===
      1
    );
  }

  async releaseLease(lease: Lease, token: string, unlist: boolean): Promise<void> {
    await this.redis.momoReleaseLease(lease.key, lease.index, token, lease.member, unlist ? '1' : '0');
  }

  async expiredLeases(index: string, limit: number): Promise<string[]> {
    return this.redis.momoExpiredLeases(index, limit);
  }

  /** Closes the connection; one lost or not answering (Redis cut or gone) is dropped, not waited for. */
  async close(): Promise<void> {
    await closeRedis(this.redis);
  }
}
