/**
 * The dispatcher's marks: per resource, the rank of the newest state told (an older state never follows a
 * newer one), and per state change, a dedup mark (it is told once). Both are taken in ONE step: in Redis one
 * Lua script, one round trip (it was a read, a compare-and-set and a SET NX, three in a row, on the path of
 * every notification); in memory one synchronous function.
 *
 * Keys (under the product's key prefix, `momo:` by default): `notify:rank:<orderKey>` holds the rank as a
 * decimal string, `notify:sent:<dedupKey>` the claim token of whoever is telling that change. Both expire
 * after the marks' TTL.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { scriptedRedis } from '../conversation/redis-store.js';

/** What take() found: `ok` the caller may tell it (and holds the dedup mark, when it asked for one). */
export type MarkOutcome = 'ok' | 'stale' | 'duplicate';

export interface TakeRequest {
  /** The resource whose states are ordered. */
  orderKey: string;
  /** This state's place in the resource's order. */
  rank: number;
  /** The state change's dedup key; unset: only the order mark is raised (nothing will be told). */
  dedupKey?: string;
  /** Seconds both marks are kept. */
  ttlSeconds: number;
}

export interface Claim {
  outcome: MarkOutcome;
  /** Frees the dedup mark this take() claimed (the message was not told), so a retry tells it. */
  release(): Promise<void>;
}

export interface NotificationMarks {
  /**
   * Atomically: refuses (`stale`) when a higher rank than `rank` was already told for `orderKey`, else raises
   * the order mark to `rank`; then, with a `dedupKey`, claims its mark, refusing (`duplicate`) when someone
   * else holds it. A stale state claims nothing; a duplicate leaves the order mark raised (the state was
   * told, by the holder of the mark).
   */
  take(request: TakeRequest): Promise<Claim>;
  close(): Promise<void>;
}

const nothingToRelease = async (): Promise<void> => undefined;
const seconds = (ttl: number): number => Math.max(1, Math.ceil(ttl));

/**
 * KEYS[1] order mark, KEYS[2] dedup mark (ignored when ARGV[3] is ''); ARGV: rank, ttl, claim token ('' = no
 * claim). Returns 0 ok, 1 stale, 2 duplicate.
 *
 * Idempotent when resent (ioredis resends a command whose reply a dropped connection lost): the resend finds
 * the order mark at its own rank (ok, no write) and the dedup mark holding its own token (ok).
 */
const TAKE = `
local rank = tonumber(ARGV[1])
local told = tonumber(redis.call('GET', KEYS[1]) or '-1')
if told > rank then return 1 end
if told < rank then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end
if ARGV[3] == '' then return 0 end
if redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[2], 'NX') then return 0 end
if redis.call('GET', KEYS[2]) == ARGV[3] then return 0 end
return 2
`;

/** KEYS[1] dedup mark; ARGV[1] claim token. Deletes the mark only while it is still this claim's. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
`;

const OUTCOMES: readonly MarkOutcome[] = ['ok', 'stale', 'duplicate'];

interface ScriptedRedis extends Redis {
  momoNotifyTake(orderMark: string, dedupMark: string, rank: number, ttl: number, token: string): Promise<number>;
  momoNotifyRelease(dedupMark: string, token: string): Promise<number>;
}

export interface RedisMarksOptions {
  url: string;
  /** Prefix of every key. Default `momo:`, the session store's. */
  keyPrefix?: string;
}

export class RedisMarks implements NotificationMarks {
  private readonly redis: ScriptedRedis;

  constructor(options: RedisMarksOptions) {
    // The takes of jobs worked in the same tick go out in one write; a failed command fails its job, which
    // the queue retries.
    this.redis = scriptedRedis<ScriptedRedis>(options.url, options.keyPrefix, {
      momoNotifyTake: { lua: TAKE, keys: 2 },
      momoNotifyRelease: { lua: RELEASE },
    });
  }

  async take({ orderKey, rank, dedupKey, ttlSeconds }: TakeRequest): Promise<Claim> {
    const token = dedupKey === undefined ? '' : randomUUID();
    const mark = dedupKey === undefined ? '' : `notify:sent:${dedupKey}`;
    const code = await this.redis.momoNotifyTake(`notify:rank:${orderKey}`, mark, rank, seconds(ttlSeconds), token);
    const outcome = OUTCOMES[Number(code)];
    if (!outcome) throw new Error(`unexpected answer ${String(code)} from the notification marks script`);
    if (outcome !== 'ok' || !token) return { outcome, release: nothingToRelease };
    return {
      outcome,
      release: async () => {
        await this.redis.momoNotifyRelease(mark, token);
      },
    };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/** One process only: the marks in a Map, expired lazily on read and swept now and then. */
export class MemoryMarks implements NotificationMarks {
  private readonly ranks = new Map<string, { rank: number; expires: number }>();
  private readonly sent = new Map<string, { token: object; expires: number }>();
  private nextSweep = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async take({ orderKey, rank, dedupKey, ttlSeconds }: TakeRequest): Promise<Claim> {
    const now = this.now();
    this.sweep(now);
    const expires = now + seconds(ttlSeconds) * 1000;
    const order = this.ranks.get(orderKey);
    const told = order && order.expires > now ? order.rank : -1;
    if (told > rank) return { outcome: 'stale', release: nothingToRelease };
    if (told < rank) this.ranks.set(orderKey, { rank, expires });
    if (dedupKey === undefined) return { outcome: 'ok', release: nothingToRelease };
    const held = this.sent.get(dedupKey);
    if (held && held.expires > now) return { outcome: 'duplicate', release: nothingToRelease };
    const token = {};
    this.sent.set(dedupKey, { token, expires });
    return {
      outcome: 'ok',
      release: async () => {
        if (this.sent.get(dedupKey)?.token === token) this.sent.delete(dedupKey);
      },
    };
  }

  async close(): Promise<void> {}

  /** Drops expired marks, at most once a minute, so a long-running process does not keep them all. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + 60_000;
    for (const [k, v] of this.ranks) if (v.expires <= now) this.ranks.delete(k);
    for (const [k, v] of this.sent) if (v.expires <= now) this.sent.delete(k);
  }
}

export function createMarks(redisUrl: string | undefined, keyPrefix?: string): NotificationMarks {
  return redisUrl ? new RedisMarks({ url: redisUrl, keyPrefix }) : new MemoryMarks();
}
