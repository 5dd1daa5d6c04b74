/**
 * The journal's buffered writer: the facts learned after the money moved (the service's answer, reported
 * states, approval decisions, tellings) are written without making anyone wait, and survive the database being
 * away. An intent is never written here: it must be committed before the money moves (Journal.intend, awaited);
 * a held payment's is committed with its hold (src/approvals/held.ts). {@link JournalWriter.writeIntent} has no
 * caller in the product now: its `intend` writes are those an earlier release left waiting in Redis, replayed.
 *
 * `write()` returns at once. The write is tried straight away; when the database does not take it, it is kept in
 * Redis (a list under `keys.journalPending`, shared by every process) and written when the database answers
 * again, in the order kept. Every event carries its key, so a write replayed (two processes draining, a crash
 * between the write and the trim) is still one row. Nothing waits in this process's memory: a fact neither the
 * database nor Redis takes (both away, or no Redis) is logged as lost at once, one error line with its ref, type,
 * key and state (no personal data), and counted ({@link JournalWriter.lost}); the service's answers and states
 * are learned again by the follow-up and the reconciliation, a telling's words are not (docs/journal.md).
 *
 * While anything waits, new writes queue behind it rather than overtaking it (a held payment's decision must
 * not land before its intent). Draining takes a lock in Redis so one process drains at a time: its token is a
 * fence. Before each write the drain renews the lock only if it still holds the token (a Lua script), and stops
 * when it does not; its trim runs in the same script as the token check, so a drain whose lock lapsed (a pause
 * longer than the lock) writes nothing more and trims nothing: the holder after it writes and trims its own.
 */
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { keys } from '../store/keys.js';
import type { Logger } from '../log.js';
import { isRefusedForGood, type Intent, type Journal, type JournalEvent } from './journal.js';

/** One write waiting for the database. */
export type PendingWrite = { op: 'intend'; intent: Intent } | { op: 'append'; event: JournalEvent };

export interface JournalWriterOptions {
  journal: Pick<Journal, 'intend' | 'append'>;
  /** Where writes wait for the database (shared by every process); absent: nowhere (a fact the database does not take is lost, logged). */
  redis?: RedisClient;
  logger: Logger;
  /** How often the waiting writes are tried again (and the list looked at). Default 5 s. */
  retryEveryMs?: number;
  /**
   * How long the drain lock lives without renewal; each write of a drain renews it. Default 30 s: three times a
   * write's longest wait on the database (its 10 s query timeout). Tests shorten it to make it lapse.
   */
  lockMs?: number;
}

/** How many writes one drain round takes from the list. */
const BATCH = 100;
/** One process drains at a time, holding the lock this long past its last write. */
const DRAIN_LOCK_MS = 30_000;

/** Renews the lock (KEYS[1]) for ARGV[2] ms if it still holds the token ARGV[1]: 1, else 0. */
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`;
/** Trims the first ARGV[2] writes of the list (KEYS[2]) if the lock (KEYS[1]) still holds the token ARGV[1]. */
const TRIM = `if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('ltrim', KEYS[2], tonumber(ARGV[2]), -1) return 1`;
/** Lets the lock go if it still holds the token. */
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/** What a lost fact's log line says: enough to find it again, nothing personal (no payee, no words told). */
function identity(write: PendingWrite): Record<string, unknown> {
  if (write.op === 'intend') return { ref: write.intent.ref, type: 'intent', state: write.intent.state ?? 'intended' };
  const { ref, type, source, key, state, serviceId, serviceState, toldState } = write.event;
  return { ref, type, source, key, state, serviceId, serviceState, toldState };
}

export class JournalWriter {
  private readonly inFlight = new Set<Promise<void>>();
  /** True while writes may be waiting in Redis: new ones queue behind them. */
  private backlog = false;
  private draining?: Promise<number>;
  private timer?: NodeJS.Timeout;
  private lostCount = 0;

  constructor(private readonly o: JournalWriterOptions) {}

  /** Starts the periodic retry (and a first look at what a previous process left waiting). */
  start(): void {
    this.backlog = Boolean(this.o.redis);
    this.timer = setInterval(() => void this.drain(), this.o.retryEveryMs ?? 5000);
    this.timer.unref();
    void this.drain();
  }

  /** Facts this process could keep neither in the database nor in Redis (each logged when it happened). */
  get lost(): number {
    return this.lostCount;
  }

  /** Writes an event (append) without waiting; kept in Redis when the database is away. */
  write(event: JournalEvent): void {
    this.submit({ op: 'append', event });
  }

  /**
   * Writes the intent of a payment held for approval (nothing moved yet, nothing moves before its decision)
   * without waiting. Never for an intent the money moves after: that one is Journal.intend, awaited.
   */
  writeIntent(intent: Intent): void {
    this.submit({ op: 'intend', intent: { ...intent, at: intent.at ?? new Date() } });
  }

  private submit(write: PendingWrite): void {
    const work = (async () => {
      if (this.backlog && (await this.keep(write))) return;
      try {
        await this.apply(write);
      } catch (error) {
        if (isRefusedForGood(error)) return this.setAside(write, error);
        this.o.logger.warn({ err: String(error) }, 'journal: the database did not take a write; kept for later');
        if (!(await this.keep(write))) this.lose(write);
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

  /** Keeps a write in Redis for the drain; false when there is no Redis or it did not take it. */
  private async keep(write: PendingWrite): Promise<boolean> {
    if (!this.o.redis) return false;
    try {
      await this.o.redis.rpush(keys.journalPending, JSON.stringify(write));
      this.backlog = true;
      return true;
    } catch (error) {
      this.o.logger.error({ err: String(error) }, 'journal: Redis did not take a waiting write');
      return false;
    }
  }

  /** Neither the database nor Redis took it: one line saying so, and counted. */
  private lose(write: PendingWrite): void {
    this.lostCount++;
    this.o.logger.error(
      { lost: identity(write) },
      'journal: neither the database nor Redis took a fact; it is not kept (this line is its only record)',
    );
  }

  /** Resolves once every write handed over so far was written, kept or logged as lost. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** How many writes wait in the shared list. */
  async waiting(): Promise<number> {
    return this.o.redis ? await this.o.redis.llen(keys.journalPending).catch(() => 0) : 0;
  }

  /**
   * Writes what waits, oldest first, until it is all written or the database refuses one. Resolves to how many
   * still wait. One drain at a time per process, and across processes by the lock.
   */
  drain(): Promise<number> {
    this.draining ??= this.drainOnce().finally(() => (this.draining = undefined));
    return this.draining;
  }

  private async drainOnce(): Promise<number> {
    if (!this.backlog || !this.o.redis) return 0;
    try {
      await this.drainShared(this.o.redis);
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
    const lockMs = this.o.lockMs ?? DRAIN_LOCK_MS;
    const token = `${process.pid}:${randomUUID()}`;
    if ((await redis.set(lock, token, 'PX', lockMs, 'NX')) !== 'OK') return;
    const holds = async () => (await redis.eval(RENEW, 1, lock, token, lockMs)) === 1;
    try {
      for (;;) {
        const batch = await redis.lrange(keys.journalPending, 0, BATCH - 1);
        if (batch.length === 0) return;
        let written = 0;
        let held = true;
        try {
          for (const text of batch) {
            // The fence: a drain whose lock lapsed (another holds it now, or nobody) writes nothing more.
            held = await holds();
            if (!held) break;
            await this.applyOrSetAside(JSON.parse(text) as PendingWrite);
            written++;
          }
        } finally {
          // Only the holder trims, and only what it wrote: checked in the same script as the trim. A crash
          // before it replays them (one row each).
          if (written > 0 && held) held = (await redis.eval(TRIM, 2, lock, keys.journalPending, token, written)) === 1;
        }
        if (!held) {
          this.o.logger.warn(
            { written },
            'journal: the drain lost its lock (held past its time); it stops, the next holder writes the rest',
          );
          return;
        }
      }
    } finally {
      await redis.eval(RELEASE, 1, lock, token).catch(() => 0);
    }
  }

  /**
   * Waits for the writes under way, tries once more to write what waits, and stops the retries. What still
   * waits stays in Redis for the next process (said in one line with how many); nothing is held in memory.
   */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled([...this.inFlight]);
    const left = await this.drain().catch(() => this.waiting());
    if (left > 0)
      this.o.logger.warn(
        { waiting: left },
        'journal: writes still waiting at stop are kept in Redis for the next start',
      );
    if (this.lostCount > 0)
      this.o.logger.error(
        { lost: this.lostCount },
        'journal: facts this process could not keep (each logged when lost)',
      );
  }
}
