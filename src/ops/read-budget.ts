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
 *
 * The product's reads go first. The reconciliation reads through `behind()`: such a read is granted only while
 * `reserve` reads of the window are still free (so a read of the product, from any process, finds one free
 * while the reconciliation pages), and, within a process, only while no read of the product is waiting.
 */
import { createHash, randomUUID } from 'node:crypto';
import { scriptedRedis } from '../store/redis-store.js';
import { closeRedis, type RedisClient, type RedisTarget } from '../redis/connect.js';
import type { Logger } from '../log.js';

/** What a client awaits before each read (src/momo/client.ts `readBudget`). */
export interface ReadTaker {
  /** Resolves when a read may be sent, and counts it. Never rejects for want of budget: it waits. */
  take(): Promise<void>;
}

export interface ReadBudget extends ReadTaker {
  /**
   * The same budget for reads that go after the product's (the reconciliation's): each leaves `reserve` reads of
   * the window free and waits while a read of this process's product waits.
   */
  behind(): ReadTaker;
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
   * Reads of every window that a read `behind()` never takes, kept for the product's own (a check, a
   * notification's confirming read, a follow-up), whichever process sends them. Default 10: a third of the
   * window, so the reconciliation pages at 20 a window and the product's reads of a busy minute do not wait.
   */
  reserve?: number;
  /**
   * Clock in ms. Default: Redis's own (TIME) for the Redis budget, Date.now for the memory one. Tests pass a
   * clock they move.
   */
  now?: () => number;
}

const DEFAULTS = { limit: 30, windowMs: 61_000, pollMs: 1000, reserve: 10 };

/**
 * KEYS[1] the log (a sorted set of grant ids scored by grant time); ARGV: limit (fewer grants than it in the window:
 * granted), window ms, grant id, now in ms ('' = Redis TIME). Returns 0 when granted (the id is logged), else the
 * ms until enough grants age out.
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
local count = redis.call('ZCARD', KEYS[1])
local freeing = redis.call('ZRANGE', KEYS[1], count - tonumber(ARGV[1]), count - tonumber(ARGV[1]), 'WITHSCORES')
return math.max(1, tonumber(freeing[2]) + window - now)
`;

interface BudgetScripts {
  momoReadGrant(log: string, limit: number, windowMs: number, id: string, now: string): Promise<number>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The waiting common to both: one read of this process asks at a time, the others queue behind it; the reads
 * behind the product's queue apart, and ask only while none of the product's waits.
 */
abstract class QueuedBudget implements ReadBudget {
  protected readonly settings: typeof DEFAULTS;
  private tail: Promise<void> = Promise.resolve();
  private behindTail: Promise<void> = Promise.resolve();
  /** The product's reads of this process not granted yet. */
  private waiting = 0;
  private closed = false;

  constructor(options: ReadBudgetOptions) {
    this.settings = { ...DEFAULTS, ...definedOnly(options) };
  }

  take(): Promise<void> {
    this.waiting++;
    const turn = this.tail.then(() => this.acquire(false)).finally(() => void this.waiting--);
    this.tail = turn.catch(() => undefined);
    return turn;
  }

  behind(): ReadTaker {
    return {
      take: () => {
        const turn = this.behindTail.then(() => this.acquire(true));
        this.behindTail = turn.catch(() => undefined);
        return turn;
      },
    };
  }

  /** Stops granting: a read still waiting fails (its job is retried, by another process if this one stops). */
  async close(): Promise<void> {
    this.closed = true;
  }

  private async acquire(behind: boolean): Promise<void> {
    const id = randomUUID();
    const { limit, reserve, pollMs } = this.settings;
    const upTo = behind ? Math.max(1, limit - reserve) : limit;
    for (;;) {
      if (this.closed) throw new Error('the read budget is closed');
      if (behind && this.waiting > 0) {
        await sleep(pollMs);
        continue;
      }
      const waitMs = await this.grant(id, upTo);
      if (waitMs === 0) return;
      await sleep(Math.min(waitMs, pollMs));
    }
  }

  /** 0 when granted (fewer than `upTo` grants in the window), else the ms until a grant ages out. */
  protected abstract grant(id: string, upTo: number): Promise<number>;
}

function definedOnly(options: ReadBudgetOptions): Partial<typeof DEFAULTS> {
  const { limit, windowMs, pollMs, reserve } = options;
  return Object.fromEntries(Object.entries({ limit, windowMs, pollMs, reserve }).filter(([, v]) => v !== undefined));
}

export class MemoryReadBudget extends QueuedBudget {
  private readonly grants: number[] = [];
  private readonly now: () => number;

  constructor(options: ReadBudgetOptions = {}) {
    super(options);
    this.now = options.now ?? Date.now;
  }

  protected async grant(_id: string, upTo: number): Promise<number> {
    const now = this.now();
    const { windowMs } = this.settings;
    while (this.grants.length > 0 && this.grants[0]! <= now - windowMs) this.grants.shift();
    if (this.grants.length < upTo) {
      this.grants.push(now);
      return 0;
    }
    // The grant whose ageing out brings the count under `upTo`.
    return Math.max(1, this.grants[this.grants.length - upTo]! + windowMs - now);
  }
}

export interface RedisReadBudgetOptions extends ReadBudgetOptions {
  /** Where Redis is (src/redis/connect.ts). */
  url: RedisTarget;
  /** Where the connection's errors are logged (boundedly). */
  logger?: Logger;
  /** Prefix of the key. Default `momo:`, the store's. */
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

  protected async grant(id: string, upTo: number): Promise<number> {
    const { windowMs } = this.settings;
    return Number(await this.redis.momoReadGrant(this.key, upTo, windowMs, id, this.now ? String(this.now()) : ''));
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
