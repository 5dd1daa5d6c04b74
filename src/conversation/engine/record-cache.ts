/**
 * The conversation records this process read or wrote in the last minute, and the one way the engine reads
 * and writes a record. A message starts from the kept record instead of reading Redis: the compare-and-set
 * that commits it proves the record current (another process that wrote since makes that a conflict, and the
 * record is read and the step redone). An answer given without a write (a resend) is given only from a record
 * just read. The kept objects are the ones written, so the flow's live snapshot of them is kept too
 * (FlowRuntime.restore).
 *
 * A USSD user answers within seconds and a gateway session lasts a few minutes, so a minute covers the hops of
 * a session; far inside the record's own TTL (an hour and more), so a record that expired and was made again
 * elsewhere, its version counting from 1 once more, is never taken for the one kept here. With several
 * processes behind a gateway that spreads one session's hops over them, a hop that lands where the record is
 * stale costs a refused compare-and-set, a read and the write (one round trip more than reading first); one
 * that lands where it is current saves the read.
 *
 * Memory: each record holds its conversation's live flow snapshot, so the cache is bounded by age and count. A
 * record is dropped a minute after it was last written or read ({@link ENDED_KEPT_MS} once its flow ended), by
 * a purge of what expired every {@link PURGE_EVERY_MS} (so what expired goes then, not when newer records push
 * it out), and at most {@link RECORDS_KEPT} are kept: the cache holds the conversations of the last minute (and
 * up to five seconds more), and an idle process none. One timer for the cache, not lru-cache's `ttlAutopurge` (a timer per record,
 * cleared and set again on every write: two timers a USSD hop, with this and the adapter's session numbers).
 */
import { LRUCache } from 'lru-cache';
import { readRecord, type ConversationRecord, type Stored } from './ledger.js';
import type { LeaseChange, Store, StoredSnapshot } from '../../store/types.js';

/** Most records kept: about 60 MB at 3 KB each. */
export const RECORDS_KEPT = 20_000;
/** How long a record is kept after it was last read or written. */
export const RECORD_KEPT_MS = 60_000;
/** How long the record of a conversation whose flow ended is kept. */
export const ENDED_KEPT_MS = 2_000;
/** How often records kept past RECORD_KEPT_MS are dropped. */
export const PURGE_EVERY_MS = 5_000;

export class RecordCache {
  private readonly kept: LRUCache<string, Stored>;
  /** The purge of what expired, every {@link PURGE_EVERY_MS} until {@link stop}. */
  private readonly purge: NodeJS.Timeout;

  /**
   * `ttlSeconds`: the lifetime every write gives a record. `now`: the clock of the minute kept, in ms. Default
   * performance.now; tests pass their own. `max`: most records kept, default {@link RECORDS_KEPT}.
   */
  constructor(
    private readonly store: Store,
    private readonly ttlSeconds: number,
    now?: () => number,
    max = RECORDS_KEPT,
  ) {
    this.kept = new LRUCache<string, Stored>({
      max,
      ttl: RECORD_KEPT_MS,
      // The clock read at each use: lru-cache's default (1 ms) keeps the time for a millisecond with a new timer
      // each millisecond the cache is used, a thousand timers a second under load for nothing a minute needs.
      ttlResolution: 0,
      ...(now ? { perf: { now } } : {}),
    });
    this.purge = setInterval(() => this.kept.purgeStale(), PURGE_EVERY_MS);
    this.purge.unref();
  }

  /**
   * Stops the purge (the engine stopping). The cache still reads and writes (a run draining after the stop
   * writes its outcome through it), and an expired record is still never given; it is only not dropped unasked.
   */
  stop(): void {
    clearInterval(this.purge);
  }

  /** Records kept. */
  get size(): number {
    return this.kept.size;
  }

  /** The record kept for `key` (a guess, until a write proves it), or undefined when none is kept. */
  peek(key: string): Stored | undefined {
    return this.kept.get(key);
  }

  /** Reads the record from the store (null: there is none) and keeps it. */
  async read(key: string): Promise<Stored | null> {
    return this.adopt(key, await this.store.get(key));
  }

  /**
   * Reads the record and `others` (records of other kinds: a profile, pending outcomes) in one round trip;
   * keeps the record.
   */
  async readWith(key: string, others: string[]): Promise<[Stored | null, ...Array<StoredSnapshot | null>]> {
    const [stored, ...rest] = await this.store.getMany([key, ...others]);
    return [this.adopt(key, stored ?? null), ...rest];
  }

  /** A record as read, kept (or forgotten when there is none). */
  private adopt(key: string, stored: StoredSnapshot | null): Stored | null {
    if (stored === null) {
      this.kept.delete(key);
      return null;
    }
    const read: Stored = { record: readRecord(stored.snapshot), version: stored.version };
    this.keep(key, read);
    return read;
  }

  /**
   * Compare-and-set of the record (with `lease`, the run's lease changed in the same step): the new Stored, or
   * null on a conflict (and the kept record is forgotten).
   */
  async write(
    key: string,
    record: ConversationRecord,
    expected: number | null,
    lease?: LeaseChange,
  ): Promise<Stored | null> {
    const version = await this.store.set(key, record, expected, this.ttlSeconds, lease);
    if (version === null) {
      this.kept.delete(key);
      return null;
    }
    const written: Stored = { record, version };
    this.keep(key, written);
    return written;
  }

  private keep(key: string, stored: Stored): void {
    const kept = this.kept.get(key, { updateAgeOnGet: false });
    if (kept && kept.version >= stored.version) return;
    // A conversation whose flow ended is kept only for the deliveries waiting on its outcome here (runner.ts):
    // the next message is mostly a new dial, which reads the record anyway with the profile and pending
    // outcomes (turn-read.ts). Kept a minute, finished conversations would pile up under load for the
    // garbage collector to carry.
    this.kept.set(key, stored, stored.record.session?.ended ? { ttl: ENDED_KEPT_MS } : undefined);
  }
}
