/**
 * The journal's buffered writer: the facts learned after the money moved (the service's answer, reported
 * states, approval decisions, tellings, a held payment's intent) are written without making anyone wait, and
 * survive the database being away.
 *
 * `write()` returns at once. The write is tried straight away; when the database does not take it, it is kept
 * in Redis (a list under `keys.journalPending`; in memory without Redis, or when Redis fails too) and written
 * when the database answers again, in the order kept. Every event carries its key, so a write replayed (two
 * processes draining, a crash between the write and the trim) is still one row.
 *
 * While anything waits, new writes queue behind it rather than overtaking it (a held payment's decision must
 * not land before its intent). Draining takes a short lock in Redis so one process drains at a time.
 */
import type { RedisClient } from '../redis/connect.js';
import { keys } from '../conversation/store/keys.js';
import type { Logger } from '../log.js';
import { isRefusedForGood, type Intent, type Journal, type JournalEvent } from './journal.js';

/** One write waiting for the database. */
export type PendingWrite = { op: 'intend'; intent: Intent } | { op: 'append'; event: JournalEvent };

export interface JournalWriterOptions {
  journal: Pick<Journal, 'intend' | 'append'>;
  /** Where writes wait for the database (shared by every process); absent: this process's memory. */
  redis?: RedisClient;
  logger: Logger;
  /** How often the waiting writes are tried again (and the list looked at). Default 5 s. */
  retryEveryMs?: number;
  /** Most writes kept in memory when Redis cannot take them either; the oldest are dropped past it (logged). */
  memoryLimit?: number;
}

/** How many writes one drain round takes from the list. */
const BATCH = 100;
/** One process drains at a time, for at most this long a round. */
const DRAIN_LOCK_MS = 30_000;

export class JournalWriter {
  private readonly memory: string[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  /** True while writes may be waiting (here or in Redis): new ones queue behind them. */
  private backlog = false;
  private draining?: Promise<number>;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly o: JournalWriterOptions) {}

  /** Starts the periodic retry (and a first look at what a previous process left waiting). */
  start(): void {
    this.backlog = true;
    this.timer = setInterval(() => void this.drain(), this.o.retryEveryMs ?? 5000);
    this.timer.unref();
    void this.drain();
  }

  /** Writes an event (append) without waiting; kept for later when the database is away. */
  write(event: JournalEvent): void {
    this.submit({ op: 'append', event });
  }

  /** Writes an intent (a held payment's, nothing moved yet) without waiting; kept for later when the database is away. */
  writeIntent(intent: Intent): void {
    this.submit({ op: 'intend', intent: { ...intent, at: intent.at ?? new Date() } });
  }

  private submit(write: PendingWrite): void {
    const work = (async () => {
      if (this.backlog || this.closed) return this.keep(write);
      try {
        await this.apply(write);
      } catch (error) {
        if (isRefusedForGood(error)) return this.setAside(write, error);
        this.o.logger.warn({ err: String(error) }, 'journal: the database did not take a write; kept for later');
        await this.keep(write);
      }
    })();
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private async apply(write: PendingWrite): Promise<void> {
    if (write.op === 'intend')
      await this.o.journal.intend({ ...write.intent, ...(write.intent.at ? { at: new Date(write.intent.at) } : {}) });
    else await this.o.journal.append({ ...write.event, at: new Date(write.event.at) });
  }

  /** Applies a waiting write; one the database refuses for good is set aside so it does not block the rest. */
  private async applyOrSetAside(write: PendingWrite): Promise<void> {
    try {
      await this.apply(write);
    } catch (error) {
      if (!isRefusedForGood(error)) throw error;
      await this.setAside(write, error);
    }
  }

  /**
   * A write the database refuses for what it holds (writing it again would fail again): logged and kept in
   * Redis under `<journalPending>:refused` (the log only, without Redis) for someone to look at, never retried.
   */
  private async setAside(write: PendingWrite, error: unknown): Promise<void> {
    const ref = write.op === 'intend' ? write.intent.ref : write.event.ref;
    this.o.logger.error({ err: String(error), ref }, 'journal: the database refused a write for good; set aside');
    await this.o.redis?.rpush(`${keys.journalPending}:refused`, JSON.stringify(write)).catch(() => 0);
  }

  private async keep(write: PendingWrite): Promise<void> {
    this.backlog = true;
    const text = JSON.stringify(write);
    if (this.o.redis) {
      try {
        await this.o.redis.rpush(keys.journalPending, text);
        return;
      } catch (error) {
        this.o.logger.error(
          { err: String(error) },
          'journal: Redis did not take a waiting write either; kept in memory',
        );
      }
    }
    this.memory.push(text);
    const limit = this.o.memoryLimit ?? 100_000;
    if (this.memory.length > limit) {
      const dropped = this.memory.splice(0, this.memory.length - limit);
      this.o.logger.error(
        { dropped: dropped.length },
        'journal: too many writes waiting in memory; the oldest were dropped',
      );
    }
  }

  /** Resolves once every write handed over so far was written or kept. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** How many writes wait (this process's memory and the shared list). */
  async waiting(): Promise<number> {
    const shared = this.o.redis ? await this.o.redis.llen(keys.journalPending).catch(() => 0) : 0;
    return this.memory.length + shared;
  }

  /**
   * Writes what waits, oldest first, until it is all written or the database refuses one. Resolves to how many
   * still wait. One drain at a time per process (and, with Redis, across processes).
   */
  drain(): Promise<number> {
    this.draining ??= this.drainOnce().finally(() => (this.draining = undefined));
    return this.draining;
  }

  private async drainOnce(): Promise<number> {
    if (!this.backlog) return 0;
    try {
      // What memory holds first (it is older than what Redis took after it, or Redis was away).
      while (this.memory.length > 0) {
        await this.applyOrSetAside(JSON.parse(this.memory[0]!) as PendingWrite);
        this.memory.shift();
      }
      if (this.o.redis) await this.drainShared(this.o.redis);
    } catch (error) {
      this.o.logger.warn({ err: String(error) }, 'journal: waiting writes not written yet');
      return this.waiting();
    }
    const left = await this.waiting();
    if (left === 0) this.backlog = false;
    return left;
  }

  private async drainShared(redis: RedisClient): Promise<void> {
    const lock = `${keys.journalPending}:lock`;
    const token = `${process.pid}:${Math.random()}`;
    if ((await redis.set(lock, token, 'PX', DRAIN_LOCK_MS, 'NX')) !== 'OK') return;
    try {
      for (;;) {
        const batch = await redis.lrange(keys.journalPending, 0, BATCH - 1);
        if (batch.length === 0) return;
        let written = 0;
        try {
          for (const text of batch) {
            await this.applyOrSetAside(JSON.parse(text) as PendingWrite);
            written++;
          }
        } finally {
          // Only the lock holder trims, and only what it wrote: a crash before this replays them (one row each).
          if (written > 0) await redis.ltrim(keys.journalPending, written, -1);
        }
      }
    } finally {
      await redis
        .eval(
          "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
          1,
          lock,
          token,
        )
        .catch(() => 0);
    }
  }

  /** Waits for the writes under way, tries once more to write what waits, and stops the retries. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled([...this.inFlight]);
    await this.drain().catch(() => 0);
    this.closed = true;
    if (this.memory.length > 0)
      this.o.logger.error({ waiting: this.memory.length }, 'journal: writes still waiting in memory at stop are lost');
  }
}
