/**
 * The dispatcher's marks, per record of ours (events.ts marksOf): the rank of the newest state seen (an older
 * state never follows a newer one), and per state change a short lease while it is being told and a long
 * dedup mark once it was told. Told at least once, shown once: the long mark is written only after the
 * notifier succeeded, so a worker that dies mid-send leaves a lease that runs out, and the delivery is told
 * again by whoever comes next (the queue's retry, the service's next attempt); while the lease is held,
 * others are refused as `busy` and come back later.
 *
 * Each step is one Lua script in Redis (one round trip; idempotent when ioredis resends it after a dropped
 * reply) and one synchronous function in memory:
 * - take: the order check, the order mark raised, the lease taken (unless the change was told or is held);
 * - renew: the lease extended while the notifier is still at work;
 * - done: the long dedup mark written, the lease freed;
 * - release: the lease freed (not told: a retry tells it);
 * - hold: the told and order checks and a lease on confirming a state change by a read (no mark written),
 *   in one step, so that all processes together spend one read on it, renewed and released as the other.
 *   One step, because the lease alone does not keep a second reader out: one that looked before the first
 *   told the change and took the lease after the first let it go would read it again.
 *
 * Keys (under the product's key prefix, `momo:` by default; all of one record in one slot, tagged with its
 * order key): `notify:{<orderKey>}:rank` the rank as a decimal string, `notify:{<orderKey>}:lease:<dedupKey>`
 * the token of whoever is telling it, `notify:{<orderKey>}:sent:<dedupKey>` once told,
 * `notify:{<orderKey>}:reading:<dedupKey>` the token of whoever is reading it. Rank and dedup marks expire after the
 * marks' TTL, a lease after its own.
 */
import { randomUUID } from 'node:crypto';
import { markKeys } from '../store/keys.js';
import { scriptedRedis } from '../store/redis-store.js';
import { closeRedis, type RedisClient, type RedisTarget } from '../redis/connect.js';
import type { Logger } from '../log.js';

/**
 * What take() found: `ok` the caller may tell it (and holds its lease, when it asked for one); `stale` a
 * newer state was seen; `duplicate` it was told; `busy` someone holds its lease (telling it, or dead:
 * the lease then runs out).
 */
export type MarkOutcome = 'ok' | 'stale' | 'duplicate' | 'busy';

export interface TakeRequest {
  /** The record whose states are ordered. */
  orderKey: string;
  /** This state's place in the record's order. */
  rank: number;
  /** The state change's dedup key; unset: only the order mark is raised (nothing will be told). */
  dedupKey?: string;
  /** Seconds the rank and dedup marks are kept. */
  ttlSeconds: number;
  /** Milliseconds the lease lasts unless renewed. */
  leaseMs: number;
}

/** What hold() asks for: the order and dedup marks it checks, and how long the lease lasts. */
export type HoldRequest = Pick<TakeRequest, 'orderKey' | 'rank' | 'leaseMs'> & { dedupKey: string };

/** A lease held: renewed while its work goes on, released after. */
export interface Lease {
  /** Extends the lease; false when it was lost (it ran out and another took it). */
  renew(): Promise<boolean>;
  /** Frees the lease (only while it is still this one's). */
  release(): Promise<void>;
}

export interface Claim extends Lease {
  outcome: MarkOutcome;
  /** Told: writes the long dedup mark and frees the lease. */
  done(): Promise<void>;
}

/** What hold() found: `ok` the caller holds the lease on reading it; else as take(), and no lease. */
export interface Hold extends Lease {
  outcome: MarkOutcome;
}

/** What the marks hold for a record and one of its state changes, read without writing. */
export interface MarksSeen {
  /** The highest rank taken for the record, -1 when none. */
  rank: number;
  /** The state change was told (its long mark is there). */
  told: boolean;
}

export interface NotificationMarks {
  /**
   * Atomically: refuses (`stale`) when a higher rank than `rank` was taken for `orderKey`; with a `dedupKey`,
   * refuses when the change was told (`duplicate`) or its lease is held by another (`busy`), else takes the
   * lease; then raises the order mark to `rank`.
   */
  take(request: TakeRequest): Promise<Claim>;
  /** Reads the marks (a follow-up spends no read on an outcome told or being told). */
  seen(orderKey: string, dedupKey?: string): Promise<MarksSeen>;
  /**
   * Atomically: refuses when the change was told (`duplicate`), a higher rank than `rank` was taken for
   * `orderKey` (`stale`), or another holds the lease on reading it (`busy`); else takes that lease. Writes no
   * mark: a read that does not confirm the change leaves it to the next.
   */
  hold(request: HoldRequest): Promise<Hold>;
  close(): Promise<void>;
}

const seconds = (ttl: number): number => Math.max(1, Math.ceil(ttl));
const nothing = async (): Promise<void> => undefined;
const withoutLease = (outcome: MarkOutcome): Claim => ({
  outcome,
  renew: async () => false,
  done: nothing,
  release: nothing,
});
const withoutHold = (outcome: MarkOutcome): Hold => ({ outcome, renew: async () => false, release: nothing });

/**
 * KEYS[1] order mark, KEYS[2] dedup mark, KEYS[3] lease (both ignored when ARGV[3] is ''); ARGV: rank, ttl
 * in seconds, lease token ('' = no lease), lease ms. Returns 0 ok, 1 stale, 2 duplicate, 3 busy. A resend finds
 * the lease holding its own token (ok) and the order mark at its rank.
 */
const TAKE = `
local rank = tonumber(ARGV[1])
local seen = tonumber(redis.call('GET', KEYS[1]) or '-1')
if seen > rank then return 1 end
if ARGV[3] ~= '' then
  if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
  local holder = redis.call('GET', KEYS[3])
  if holder and holder ~= ARGV[3] then return 3 end
  redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[4])
end
if seen < rank then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end
return 0
`;

/**
 * KEYS[1] order mark, KEYS[2] dedup mark, KEYS[3] reading lease; ARGV: rank, token, lease ms. Returns 0 held
 * (also when already ours: a resend), 1 stale, 2 duplicate, 3 busy; as TAKE, but it raises no mark.
 */
const HOLD = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
if tonumber(redis.call('GET', KEYS[1]) or '-1') > tonumber(ARGV[1]) then return 1 end
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[2] then return 3 end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
return 0
`;

/** KEYS[1] lease; ARGV: token, lease ms. Returns 1 when extended, 0 when the lease is not (any more) ours. */
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** KEYS[1] dedup mark, KEYS[2] lease; ARGV: token, ttl in seconds. */
const DONE = `
redis.call('SET', KEYS[1], '1', 'EX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 0
`;

/** KEYS[1] lease; ARGV[1] token. Deletes the lease only while it is still this claim's. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
`;

const OUTCOMES: readonly MarkOutcome[] = ['ok', 'stale', 'duplicate', 'busy'];

/** The outcome a TAKE or HOLD script answered with. */
function outcomeOf(code: number): MarkOutcome {
  const outcome = OUTCOMES[Number(code)];
  if (!outcome) throw new Error(`unexpected answer ${String(code)} from the notification marks script`);
  return outcome;
}

interface MarkScripts {
  momoNotifyTake(
    orderMark: string,
    dedupMark: string,
    lease: string,
    rank: number,
    ttl: number,
    token: string,
    leaseMs: number,
  ): Promise<number>;
  momoNotifyRenew(lease: string, token: string, leaseMs: number): Promise<number>;
  momoNotifyDone(dedupMark: string, lease: string, token: string, ttl: number): Promise<number>;
  momoNotifyRelease(lease: string, token: string): Promise<number>;
  momoNotifyHold(
    orderMark: string,
    dedupMark: string,
    lease: string,
    rank: number,
    token: string,
    leaseMs: number,
  ): Promise<number>;
}

export interface RedisMarksOptions {
  /** Where Redis is (src/redis/connect.ts). */
  url: RedisTarget;
  /** Where the connection's errors are logged (boundedly). */
  logger?: Logger;
  /** Prefix of every key. Default `momo:`, the store's. */
  keyPrefix?: string;
}

/** The keys of one record's marks, in one slot (src/store/keys.ts). */
const keys = markKeys;

export class RedisMarks implements NotificationMarks {
  private readonly redis: RedisClient & MarkScripts;

  constructor(options: RedisMarksOptions) {
    // The takes of jobs worked in the same tick go out in one write; a failed command fails its job, which
    // the queue retries.
    this.redis = scriptedRedis<MarkScripts>(
      options.url,
      options.keyPrefix,
      {
        momoNotifyTake: { lua: TAKE, keys: 3 },
        momoNotifyRenew: { lua: RENEW },
        momoNotifyDone: { lua: DONE, keys: 2 },
        momoNotifyRelease: { lua: RELEASE },
        momoNotifyHold: { lua: HOLD, keys: 3 },
      },
      { name: 'marks', ...(options.logger ? { logger: options.logger } : {}) },
    );
  }

  async hold({ orderKey, rank, dedupKey, leaseMs }: HoldRequest): Promise<Hold> {
    const token = randomUUID();
    const k = keys(orderKey, dedupKey);
    const outcome = outcomeOf(await this.redis.momoNotifyHold(k.rank, k.sent, k.reading, rank, token, leaseMs));
    if (outcome !== 'ok') return withoutHold(outcome);
    return {
      outcome,
      renew: async () => (await this.redis.momoNotifyRenew(k.reading, token, leaseMs)) === 1,
      release: async () => {
        await this.redis.momoNotifyRelease(k.reading, token);
      },
    };
  }

  async take({ orderKey, rank, dedupKey, ttlSeconds, leaseMs }: TakeRequest): Promise<Claim> {
    const token = dedupKey === undefined ? '' : randomUUID();
    const k = keys(orderKey, dedupKey);
    const outcome = outcomeOf(
      await this.redis.momoNotifyTake(k.rank, k.sent, k.lease, rank, seconds(ttlSeconds), token, leaseMs),
    );
    if (outcome !== 'ok' || !token) return withoutLease(outcome);
    return {
      outcome,
      renew: async () => (await this.redis.momoNotifyRenew(k.lease, token, leaseMs)) === 1,
      done: async () => {
        await this.redis.momoNotifyDone(k.sent, k.lease, token, seconds(ttlSeconds));
      },
      release: async () => {
        await this.redis.momoNotifyRelease(k.lease, token);
      },
    };
  }

  async seen(orderKey: string, dedupKey?: string): Promise<MarksSeen> {
    const k = keys(orderKey, dedupKey);
    const [rank, told] = await Promise.all([
      this.redis.get(k.rank),
      dedupKey === undefined ? 0 : this.redis.exists(k.sent),
    ]);
    return { rank: rank === null ? -1 : Number(rank), told: told === 1 };
  }

  async close(): Promise<void> {
    await closeRedis(this.redis);
  }
}

interface Expiring<T> {
  value: T;
  expires: number;
}

/** One process only: the marks in Maps, expired lazily on read and swept now and then. */
export class MemoryMarks implements NotificationMarks {
  private readonly ranks = new Map<string, Expiring<number>>();
  private readonly sent = new Map<string, Expiring<true>>();
  private readonly leases = new Map<string, Expiring<object>>();
  private readonly readings = new Map<string, Expiring<object>>();
  private nextSweep = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async take({ orderKey, rank, dedupKey, ttlSeconds, leaseMs }: TakeRequest): Promise<Claim> {
    const now = this.now();
    this.sweep(now);
    const seen = this.live(this.ranks, orderKey, now) ?? -1;
    if (seen > rank) return withoutLease('stale');
    let token: object | undefined;
    if (dedupKey !== undefined) {
      if (this.live(this.sent, dedupKey, now)) return withoutLease('duplicate');
      if (this.live(this.leases, dedupKey, now)) return withoutLease('busy');
      token = {};
      this.leases.set(dedupKey, { value: token, expires: now + leaseMs });
    }
    if (seen < rank) this.ranks.set(orderKey, { value: rank, expires: now + seconds(ttlSeconds) * 1000 });
    if (dedupKey === undefined || token === undefined) return withoutLease('ok');
    const mine = () => this.live(this.leases, dedupKey, this.now()) === token;
    return {
      outcome: 'ok',
      renew: async () => {
        if (!mine()) return false;
        this.leases.set(dedupKey, { value: token, expires: this.now() + leaseMs });
        return true;
      },
      done: async () => {
        this.sent.set(dedupKey, { value: true, expires: this.now() + seconds(ttlSeconds) * 1000 });
        if (mine()) this.leases.delete(dedupKey);
      },
      release: async () => {
        if (mine()) this.leases.delete(dedupKey);
      },
    };
  }

  async hold({ orderKey, rank, dedupKey, leaseMs }: HoldRequest): Promise<Hold> {
    const now = this.now();
    if (this.live(this.sent, dedupKey, now)) return withoutHold('duplicate');
    if ((this.live(this.ranks, orderKey, now) ?? -1) > rank) return withoutHold('stale');
    if (this.live(this.readings, dedupKey, now)) return withoutHold('busy');
    const token = {};
    this.readings.set(dedupKey, { value: token, expires: now + leaseMs });
    const mine = () => this.live(this.readings, dedupKey, this.now()) === token;
    return {
      outcome: 'ok',
      renew: async () => {
        if (!mine()) return false;
        this.readings.set(dedupKey, { value: token, expires: this.now() + leaseMs });
        return true;
      },
      release: async () => {
        if (mine()) this.readings.delete(dedupKey);
      },
    };
  }

  async seen(orderKey: string, dedupKey?: string): Promise<MarksSeen> {
    const now = this.now();
    return {
      rank: this.live(this.ranks, orderKey, now) ?? -1,
      told: dedupKey !== undefined && this.live(this.sent, dedupKey, now) === true,
    };
  }

  async close(): Promise<void> {}

  private live<T>(map: Map<string, Expiring<T>>, key: string, now: number): T | undefined {
    const entry = map.get(key);
    return entry && entry.expires > now ? entry.value : undefined;
  }

  /** Drops expired marks, at most once a minute, so a long-running process does not keep them all. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + 60_000;
    for (const map of [this.ranks, this.sent, this.leases, this.readings] as Array<Map<string, Expiring<unknown>>>) {
      for (const [k, v] of map) if (v.expires <= now) map.delete(k);
    }
  }
}

/** Marks whose leases a stopping process can let go of all at once ({@link lettingGo}). */
export interface LettingGoMarks extends NotificationMarks {
  /**
   * Frees every lease still held (its notifier or read not done within the grace of a stopping process), so
   * another worker tells the change at once instead of after the lease ran out; none is renewed after. Told at
   * least once, as when a worker dies mid-send. Resolves to how many were freed.
   */
  letGo(): Promise<number>;
}

/** `marks`, with every lease it hands out kept track of until it is done or released, for {@link LettingGoMarks.letGo}. */
export function lettingGo(marks: NotificationMarks): LettingGoMarks {
  const held = new Set<Lease>();
  let gone = false;
  function tracked<T extends Lease>(lease: T & { outcome: MarkOutcome }): T {
    if (lease.outcome !== 'ok') return lease;
    const kept: T = {
      ...lease,
      renew: async () => !gone && lease.renew(),
      release: async () => {
        held.delete(kept);
        await lease.release();
      },
      ...('done' in lease
        ? {
            done: async () => {
              held.delete(kept);
              await (lease as unknown as Claim).done();
            },
          }
        : {}),
    };
    held.add(kept);
    return kept;
  }
  return {
    // Without a dedup key a take holds no lease (only the order mark is raised).
    take: async (request) =>
      request.dedupKey === undefined ? marks.take(request) : tracked(await marks.take(request)),
    hold: async (request) => tracked(await marks.hold(request)),
    seen: (orderKey, dedupKey) => marks.seen(orderKey, dedupKey),
    close: () => marks.close(),
    async letGo() {
      gone = true;
      const leases = [...held];
      held.clear();
      const freed = await Promise.allSettled(leases.map((lease) => lease.release()));
      return freed.filter((f) => f.status === 'fulfilled').length;
    },
  };
}

export function createMarks(redisUrl: RedisTarget | undefined, keyPrefix?: string, logger?: Logger): NotificationMarks {
  return redisUrl ? new RedisMarks({ url: redisUrl, keyPrefix, ...(logger ? { logger } : {}) }) : new MemoryMarks();
}
