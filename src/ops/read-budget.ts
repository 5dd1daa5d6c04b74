/**
 * The read budget: the service allows 30 reads a minute per API key (spec, Limits) and answers 429 past
 * them, so every read this product sends on the main API (the check flow's, the bank list, webhook
 * registration, a notification's confirming read, the follow-up of an outcome that never came) first takes
 * one from here. One budget for all processes: in Redis when REDIS_URL is set (one key per API key, under
 * the product's prefix), in memory otherwise (one process).
 *
 * A sliding log, not a fixed window: the grant times of the last window are kept and a read is granted only
 * while fewer than `limit` of them remain. A fixed window would let 30 reads end one window and 30 start the
 * next, 60 within one of the service's minutes. A read that finds the budget spent waits (it is queued,
 * never dropped): in arrival order within a process, and until a grant of the window has aged out.
 *
 * In Redis one Lua script per grant, on Redis's own clock (TIME), so hosts whose clocks differ still count on
 * one; idempotent when ioredis resends it after a dropped reply (the grant's random id is its log entry).
 */
import { createHash, randomUUID } from 'node:crypto';
import { scriptedRedis } from '../conversation/store/redis-store.js';
import { closeRedis, type RedisClient, type RedisTarget } from '../redis/connect.js';
import type { Logger } from '../log.js';

export interface ReadBudget {
  /** Resolves when a read may be sent, and counts it. Never rejects for want of budget: it waits. */
  take(): Promise<void>;
  close(): Promise<void>;
}

export interface ReadBudgetOptions {
  /** Reads granted per window. Default 30: the service's limit per API key. */
  limit?: number;
  /**
   * Length of the window in ms. Default 61000: the service's minute and one second more, so the time between
   * our grant and the request reaching the service can never show it 31 reads in one of its minutes.
   */
  windowMs?: number;
  /** Longest single sleep of a waiting read before it asks again, ms. Default 1000. */
  pollMs?: number;
  /**
   * Clock in ms. Default: Redis's own (TIME) for the Redis budget, Date.now for the memory one. Tests pass a
   * clock they move.
   */
  now?: () => number;
}

const DEFAULTS = { limit: 30, windowMs: 61_000, pollMs: 1000 };

/**
 * KEYS[1] the log (a sorted set of grant ids scored by grant time); ARGV: limit, window ms, grant id, now in
 * ms ('' = Redis TIME). Returns 0 when granted (the id is logged), else the ms until the oldest grant ages out.
 */
const GRANT = `
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then return 0 end
local now = tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
`;

interface BudgetScripts {
  momoReadGrant(log: string, limit: number, windowMs: number, id: string, now: string): Promise<number>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The waiting common to both: one read of this process asks at a time, the others queue behind it. */
abstract class QueuedBudget implements ReadBudget {
  protected readonly settings: typeof DEFAULTS;
  private tail: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(options: ReadBudgetOptions) {
    this.settings = { ...DEFAULTS, ...definedOnly(options) };
  }

  take(): Promise<void> {
    const turn = this.tail.then(() => this.acquire());
    this.tail = turn.catch(() => undefined);
    return turn;
  }

  /** Stops granting: a read still waiting fails (its job is retried, by another process if this one stops). */
  async close(): Promise<void> {
    this.closed = true;
  }

  private async acquire(): Promise<void> {
    const id = randomUUID();
    for (;;) {
      if (this.closed) throw new Error('the read budget is closed');
      const waitMs = await this.grant(id);
      if (waitMs === 0) return;
      await sleep(Math.min(waitMs, this.settings.pollMs));
    }
  }

  /** 0 when granted, else the ms until a grant ages out. */
  protected abstract grant(id: string): Promise<number>;
}

function definedOnly(options: ReadBudgetOptions): Partial<typeof DEFAULTS> {
  const { limit, windowMs, pollMs } = options;
  return Object.fromEntries(Object.entries({ limit, windowMs, pollMs }).filter(([, v]) => v !== undefined));
}

export class MemoryReadBudget extends QueuedBudget {
  private readonly grants: number[] = [];
  private readonly now: () => number;

  constructor(options: ReadBudgetOptions = {}) {
    super(options);
    this.now = options.now ?? Date.now;
  }

  protected async grant(): Promise<number> {
    const now = this.now();
    while (this.grants.length > 0 && this.grants[0]! <= now - this.settings.windowMs) this.grants.shift();
    if (this.grants.length < this.settings.limit) {
      this.grants.push(now);
      return 0;
    }
    return Math.max(1, this.grants[0]! + this.settings.windowMs - now);
  }
}

export interface RedisReadBudgetOptions extends ReadBudgetOptions {
  /** Where Redis is (src/redis/connect.ts). */
  url: RedisTarget;
  /** Where the connection's errors are logged (boundedly). */
  logger?: Logger;
  /** Prefix of the key. Default `momo:`, the session store's. */
  keyPrefix?: string;
  /** The API key whose reads are counted: the budget's key is a hash of it (the key itself is never stored). */
  apiKey: string;
}

export class RedisReadBudget extends QueuedBudget {
  private readonly redis: RedisClient & BudgetScripts;
  private readonly key: string;
  private readonly now?: () => number;

  constructor(options: RedisReadBudgetOptions) {
    super(options);
    this.now = options.now;
    this.key = `reads:${createHash('sha256').update(options.apiKey).digest('hex').slice(0, 16)}`;
    this.redis = scriptedRedis<BudgetScripts>(
      options.url,
      options.keyPrefix,
      { momoReadGrant: { lua: GRANT } },
      {
        name: 'read budget',
        ...(options.logger ? { logger: options.logger } : {}),
      },
    );
  }

  protected async grant(id: string): Promise<number> {
    const { limit, windowMs } = this.settings;
    return Number(await this.redis.momoReadGrant(this.key, limit, windowMs, id, this.now ? String(this.now()) : ''));
  }

  override async close(): Promise<void> {
    await super.close();
    await closeRedis(this.redis);
  }
}

/** The product's budget: in Redis with a URL (shared by every process), else in memory. */
export function createReadBudget(
  redisUrl: RedisTarget | undefined,
  apiKey: string,
  options: ReadBudgetOptions & { keyPrefix?: string; logger?: Logger } = {},
): ReadBudget {
  return redisUrl ? new RedisReadBudget({ ...options, url: redisUrl, apiKey }) : new MemoryReadBudget(options);
}
