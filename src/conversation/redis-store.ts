/**
 * SessionStore in Redis (ioredis), shared by every process of the product. A versioned record is a hash
 * `{ v: version, d: JSON }`; compare-and-set is one Lua script (WATCH/MULTI on a shared connection loses
 * updates), the bounded counter another. Every write sets the key's TTL.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { SessionStore, StoredSnapshot } from './types.js';

/**
 * KEYS[1] record; ARGV: expected version ('' = must be absent), JSON, ttl, write id. Returns the new version
 * or nil. The write id makes a resent script idempotent: ioredis resends a command whose reply a dropped
 * connection lost, and the resend finds the version moved on by its own first run: that is not a conflict.
 */
const COMPARE_AND_SET = `
local current = redis.call('HGET', KEYS[1], 'v')
if current and redis.call('HGET', KEYS[1], 'w') == ARGV[4] then return tonumber(current) end
if ARGV[1] == '' then
  if current then return nil end
elseif current ~= ARGV[1] then
  return nil
end
local version = (tonumber(current) or 0) + 1
redis.call('HSET', KEYS[1], 'v', version, 'd', ARGV[2], 'w', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return version
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

interface ScriptedRedis extends Redis {
  momoCompareAndSet(key: string, expected: string, json: string, ttl: number, writeId: string): Promise<number | null>;
  momoAddWithinLimit(key: string, amount: number, limit: number, ttl: number): Promise<[number, number]>;
}

export interface RedisStoreOptions {
  /** Connection URL (`redis://host:6379/0`). */
  url: string;
  /**
   * Prefix of every key. Default `momo:` so the product can share a Redis with others; tests use their
   * own to stay apart.
   */
  keyPrefix?: string;
}

const seconds = (ttl: number): number => Math.max(1, Math.ceil(ttl));

export class RedisStore implements SessionStore {
  private readonly redis: ScriptedRedis;

  constructor(options: RedisStoreOptions) {
    // Auto-pipelining: commands issued in the same tick (one hop's parallel reads, other conversations'
    // commands under load) go out in one write. Each command keeps its own reply and order, so
    // compare-and-set and SET NX marks behave exactly as before; it only saves syscalls (one write per
    // command was the largest native cost in the USSD benchmark's profile, bench/profile).
    const redis = new Redis(options.url, { keyPrefix: options.keyPrefix ?? 'momo:', enableAutoPipelining: true });
    // Failed commands reject with the error and their callers log it; without a listener ioredis would
    // also print every reconnection failure to stderr.
    redis.on('error', () => {});
    redis.defineCommand('momoCompareAndSet', { numberOfKeys: 1, lua: COMPARE_AND_SET });
    redis.defineCommand('momoAddWithinLimit', { numberOfKeys: 1, lua: ADD_WITHIN_LIMIT });
    this.redis = redis as ScriptedRedis;
  }

  async get(key: string): Promise<StoredSnapshot | null> {
    const [version, json] = await this.redis.hmget(key, 'v', 'd');
    if (version == null || json == null) return null;
    return { snapshot: JSON.parse(json), version: Number(version) };
  }

  async set(key: string, snapshot: unknown, expectedVersion: number | null, ttlSeconds: number): Promise<number | null> {
    const expected = expectedVersion === null ? '' : String(expectedVersion);
    const version = await this.redis.momoCompareAndSet(key, expected, JSON.stringify(snapshot), seconds(ttlSeconds), randomUUID());
    return version === null ? null : Number(version);
  }

  async delete(key: string): Promise<void> {
    await this.redis.del(key);
  }

  async claim(key: string, ttlSeconds: number, value?: string): Promise<boolean> {
    // A token of this call: when a dropped connection lost the reply of our SET NX, ioredis resends it and
    // the resend answers null although the key is ours; the token tells our claim from another's.
    const token = value ?? randomUUID();
    if ((await this.redis.set(key, token, 'EX', seconds(ttlSeconds), 'NX')) === 'OK') return true;
    return value === undefined && (await this.redis.get(key)) === token;
  }

  async addWithinLimit(key: string, amount: number, limit: number, ttlSeconds: number): Promise<{ ok: boolean; total: number }> {
    const [ok, total] = await this.redis.momoAddWithinLimit(key, amount, limit, seconds(ttlSeconds));
    return { ok: ok === 1, total: Number(total) };
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}
