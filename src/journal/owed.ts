/**
 * The outcomes still owed to people, and the checks that settle them (`owed_outcomes`, migration 0310), kept in
 * the database: a Redis loss loses no check and no telling owed. A row is inserted with its intent, in the same
 * statement (Journal.intend, `Intent.owed`), before the money call; marked in doubt (`conflict`, `unanswered`)
 * before the person is told "we are checking"; moved to its next check by the follow-up; claimed by the one
 * process that checks it now (a conditional update, so two never check it at once); and settled, with the
 * operation's state, once nothing more is owed. src/notifications/owed-poller.ts works it.
 *
 * A row carries the build that wrote it (migration 0460): a poller reads and claims only the rows of its own
 * build or an earlier one (or of none: written before the column), so older code never works a newer record in
 * a rolling deploy. A later build's row still open {@link LATER_BUILD_WAITS_MS} after it was due (no process of
 * that build has led since: it was rolled back) is worked by any build: a check reads the service by our ref
 * and needs no flow's shape.
 */
import { sql, type ColumnType, type Kysely, type Selectable } from 'kysely';
import type { OperationState, Schema } from './schema.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** Why an outcome is in doubt: just made (`intent`), a 409 on our own key, or no answer from the service. */
export type DoubtReason = 'intent' | 'conflict' | 'unanswered';

/** The row, as migration 0310 makes it. */
export interface OwedOutcomesTable {
  ref: string;
  /** `<channel>:<conversation>` to tell. */
  chat: string;
  /** What is owed: our record of the operation (src/conversation/calls/made-records.ts Made), its words. */
  owed: ColumnType<Record<string, unknown>, string, string>;
  reason: ColumnType<DoubtReason, DoubtReason | undefined, DoubtReason>;
  /** Which check is next (the follow-up's steps). */
  step: ColumnType<number, number | undefined, number>;
  next_check: Timestamp;
  tries: ColumnType<number, number | undefined, number>;
  created: Timestamp;
  settled_at: Timestamp | null;
  /** The operation's state when settled. */
  outcome: string | null;
  /** The build that wrote it (src/conversation/flow/build.ts; bigint, read as a string); null before 0460. */
  build: ColumnType<string | null, number | null | undefined, never>;
}

export interface OwedTables {
  owed_outcomes: OwedOutcomesTable;
}

export type OwedSchema = Schema & OwedTables;

/** An open row due for a check, with what the journal knows of its operation. */
export interface OwedDue extends Selectable<OwedOutcomesTable> {
  state: OperationState;
  service_id: string | null;
  told_state: string | null;
  /** Our short ref (src/journal/short-ref.ts): a restored record is told by it, as the first was. */
  short_ref: string | null;
}

/** What Journal.intend inserts beside the intent. */
export interface Owed {
  /** Our record of it (what the person is told of, in its words). */
  record: Record<string, unknown>;
  /** When it is first checked. */
  checkAt: Date;
  /** The build writing it (src/conversation/flow/build.ts); none: any build's poller works it. */
  build?: number;
}

/** How a claim's time grows with the tries of a check that keeps failing: this many times the claim, at most. */
const MAX_BACKOFF = 30;

/**
 * How long after it was due a later build's row waits for a poller of that build, ms: past it, that build is
 * gone (rolled back) and any build checks it. As long as the notification queue hands a job back (queue.ts).
 */
export const LATER_BUILD_WAITS_MS = 10 * 60_000;

/** Rows a poller of `build` may work at `now`: its build's or earlier, of no build, or a later one's left too long. */
function readableBy(build: number | undefined, now: Date) {
  if (build === undefined) return sql<boolean>`true`;
  const gone = new Date(now.getTime() - LATER_BUILD_WAITS_MS);
  return sql<boolean>`(build is null or build <= ${build} or next_check <= ${gone}::timestamptz)`;
}

/** The advisory lock of the one process that checks owed outcomes: the same number in every process. */
export const OWED_LOCK = 0x6f776564; // 'owed'

export class OwedOutcomes {
  private readonly db: Kysely<OwedSchema>;
  private leading = false;

  constructor(private readonly database: { db: Kysely<Schema>; kind: 'postgres' | 'pglite' }) {
    this.db = database.db as unknown as Kysely<OwedSchema>;
  }

  /**
   * Runs `work` as the one process checking owed outcomes, or returns null without running it while another
   * is: a PostgreSQL advisory lock held on one reserved connection for the whole of it (the server lets it go
   * if the process dies); PGlite is one process, where a flag does.
   */
  async asLeader<T>(work: () => Promise<T>): Promise<T | null> {
    if (this.database.kind === 'pglite') {
      if (this.leading) return null;
      this.leading = true;
      try {
        return await work();
      } finally {
        this.leading = false;
      }
    }
    return this.database.db.connection().execute(async (conn) => {
      const got = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${OWED_LOCK}) as locked`.execute(conn);
      if (!got.rows[0]?.locked) return null;
      try {
        return await work();
      } finally {
        await sql`select pg_advisory_unlock(${OWED_LOCK})`.execute(conn);
      }
    });
  }

  /**
   * The outcome of `ref` is in doubt for `reason`: written (awaited) before the person is told it is being
   * checked. False when there is no open row (nothing owed, or its intent was never journalled).
   */
  async inDoubt(ref: string, reason: Exclude<DoubtReason, 'intent'>): Promise<boolean> {
    const rows = await this.db
      .updateTable('owed_outcomes')
      .set({ reason })
      .where('ref', '=', ref)
      .where('settled_at', 'is', null)
      .returning('ref')
      .execute();
    return rows.length > 0;
  }

  /**
   * Open rows due by `now` that a poller of `build` may work (none: every row), oldest first, with their
   * operation's state, id and the outcome told.
   */
  async due(now: Date, limit: number, build?: number): Promise<OwedDue[]> {
    return (await this.db
      .selectFrom('owed_outcomes as o')
      .innerJoin('operations as op', 'op.ref', 'o.ref')
      .selectAll('o')
      .select(['op.state', 'op.service_id', 'op.told_state', 'op.short_ref'])
      .where('o.settled_at', 'is', null)
      .where('o.next_check', '<=', now)
      .where(readableBy(build, now))
      .orderBy('o.next_check')
      .limit(limit)
      .execute()) as OwedDue[];
  }

  /**
   * Takes a due row for this process: its next check moves `claimMs` on (times its tries, up to
   * {@link MAX_BACKOFF}), so should the check fail or this process die, it is tried again then. Null when it is
   * no longer due (another took it, or it was settled), or a later build than `build` wrote it (its poller's).
   */
  async claim(ref: string, now: Date, claimMs: number, build?: number): Promise<Selectable<OwedOutcomesTable> | null> {
    const row = await this.db
      .updateTable('owed_outcomes')
      .set((eb) => ({
        tries: eb('tries', '+', 1),
        next_check: sql<Date>`${now}::timestamptz + least(tries + 1, ${MAX_BACKOFF}) * ${claimMs} * interval '1 millisecond'`,
      }))
      .where('ref', '=', ref)
      .where('settled_at', 'is', null)
      .where('next_check', '<=', now)
      .where(readableBy(build, now))
      .returningAll()
      .executeTakeFirst();
    return row ?? null;
  }

  /** The follow-up's next check of `ref`: check `step` at `at`. False when it has no open row. */
  async reschedule(ref: string, step: number, at: Date): Promise<boolean> {
    const rows = await this.db
      .updateTable('owed_outcomes')
      .set({ step, next_check: at })
      .where('ref', '=', ref)
      .where('settled_at', 'is', null)
      .returning('ref')
      .execute();
    return rows.length > 0;
  }

  /**
   * Nothing more is owed of the row as it was claimed (the same step and next check: a check that moved it on
   * left it open): settled with its operation's state. Returns whether it was.
   */
  async settle(
    claimed: Pick<Selectable<OwedOutcomesTable>, 'ref' | 'step' | 'next_check'>,
    now: Date,
  ): Promise<boolean> {
    const rows = await this.db
      .updateTable('owed_outcomes')
      .set({
        settled_at: now,
        outcome: sql<string>`coalesce((select state from operations where operations.ref = owed_outcomes.ref), 'unknown')`,
      })
      .where('ref', '=', claimed.ref)
      .where('settled_at', 'is', null)
      .where('step', '=', claimed.step)
      .where('next_check', '=', claimed.next_check)
      .returning('ref')
      .execute();
    return rows.length > 0;
  }

  /** The row of `ref` (tests, the operator). */
  async byRef(ref: string): Promise<Selectable<OwedOutcomesTable> | undefined> {
    return this.db.selectFrom('owed_outcomes').selectAll().where('ref', '=', ref).executeTakeFirst();
  }
}
