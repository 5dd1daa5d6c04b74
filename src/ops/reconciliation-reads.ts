/**
 * What /ops/reconciliation reads of the reconciliation's tables (migration 0010, src/reconciliation): the
 * runs, newest first, and one run's items. Every read of those tables by the page is here, so a rename
 * there is a change here only. Before the tables exist (a database not yet migrated to 0010) the reads say
 * so (`undefined`) instead of failing.
 */
import type { ColumnType, Kysely, Selectable } from 'kysely';

/** What a run's item came to (src/reconciliation/match.ts). */
export type ReconciliationOutcome = 'matched' | 'unknown_to_service' | 'not_ours' | 'state_differs' | 'detail_differs';
export const RECONCILIATION_OUTCOMES: readonly ReconciliationOutcome[] = ['matched', 'unknown_to_service', 'not_ours', 'state_differs', 'detail_differs'];
/** Outcomes where an operation of ours is not as the service holds it. */
export const DIFFERING: readonly ReconciliationOutcome[] = ['unknown_to_service', 'state_differs', 'detail_differs'];

type Json<T> = ColumnType<T, string, string>;

/** The columns the page reads (the tables have these and maybe more). */
interface Tables {
  reconciliation_runs: {
    id: string;
    from_day: string;
    to_day: string;
    started: Date;
    finished: Date | null;
    counts: Json<Record<string, number>>;
    status: string;
    error: string | null;
    trigger: string;
  };
  reconciliation_items: {
    id: string;
    run_id: string;
    outcome: string;
    ref: string | null;
    service_id: string | null;
    ours: Json<Record<string, unknown> | null>;
    theirs: Json<Record<string, unknown> | null>;
    differs: Json<string[] | null>;
  };
}

export interface RunView {
  id: string;
  fromDay: string;
  toDay: string;
  started: Date;
  finished: Date | null;
  counts: Record<string, number>;
  status: string;
  error: string | null;
  trigger: string;
}

export interface ItemView {
  outcome: string;
  ref: string | null;
  serviceId: string | null;
  ours: Record<string, unknown> | null;
  theirs: Record<string, unknown> | null;
  differs: string[] | null;
}

/** PostgreSQL's "no such table" (42P01): the reconciliation's migration has not run here. */
const missingTable = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '42P01';

const runOf = (r: Selectable<Tables['reconciliation_runs']>): RunView => ({
  id: String(r.id),
  fromDay: r.from_day,
  toDay: r.to_day,
  started: r.started,
  finished: r.finished,
  counts: r.counts ?? {},
  status: r.status,
  error: r.error,
  trigger: r.trigger,
});

export class ReconciliationReads {
  private readonly db: Kysely<Tables>;

  constructor(db: Kysely<any>) {
    this.db = db as Kysely<Tables>;
  }

  /** The latest runs, newest first; undefined when the tables do not exist. */
  async runs(limit = 30): Promise<RunView[] | undefined> {
    try {
      const rows = await this.db.selectFrom('reconciliation_runs').selectAll().orderBy('started', 'desc').orderBy('id', 'desc').limit(limit).execute();
      return rows.map(runOf);
    } catch (err) {
      if (missingTable(err)) return undefined;
      throw err;
    }
  }

  /** One run, or undefined. */
  async run(id: string): Promise<RunView | undefined> {
    try {
      const row = await this.db.selectFrom('reconciliation_runs').selectAll().where('id', '=', id).executeTakeFirst();
      return row ? runOf(row) : undefined;
    } catch (err) {
      if (missingTable(err)) return undefined;
      throw err;
    }
  }

  /** A run's items with these outcomes, differences first, at most `limit` (and whether there were more). */
  async items(runId: string, outcomes: readonly string[], limit: number): Promise<{ items: ItemView[]; more: boolean }> {
    if (outcomes.length === 0) return { items: [], more: false };
    const rows = await this.db
      .selectFrom('reconciliation_items')
      .selectAll()
      .where('run_id', '=', runId)
      .where('outcome', 'in', outcomes)
      .orderBy('outcome')
      .orderBy('id')
      .limit(limit + 1)
      .execute();
    return {
      items: rows.slice(0, limit).map((r) => ({ outcome: r.outcome, ref: r.ref, serviceId: r.service_id, ours: r.ours, theirs: r.theirs, differs: r.differs })),
      more: rows.length > limit,
    };
  }
}
