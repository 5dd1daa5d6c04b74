/**
 * What /ops/reconciliation reads of the reconciliation's tables (migration 0010, src/reconciliation): the
 * runs, newest first, and one run's items. Every read of those tables by the page is here, so a rename
 * there is a change here only. Before the tables exist (a database not yet migrated to 0010) the reads say
 * so (`undefined`) instead of failing.
 */
import type { Kysely, Selectable } from 'kysely';
import type { Schema } from '../journal/schema.js';
import { DIFFERENCES, OUTCOMES, type Outcome } from '../reconciliation/match.js';
import type { ReconciliationTables as Tables } from '../reconciliation/schema.js';

/** What a run's item came to (src/reconciliation/match.ts), in the order the command prints them. */
export type ReconciliationOutcome = Outcome;
export const RECONCILIATION_OUTCOMES: readonly Outcome[] = OUTCOMES;
/** Outcomes where an operation of ours is not as the service holds it. */
export const DIFFERING: readonly Outcome[] = DIFFERENCES;

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

  constructor(db: Kysely<Schema>) {
    this.db = db as unknown as Kysely<Tables>;
  }

  /** The latest runs, newest first; undefined when the tables do not exist. */
  async runs(limit = 30): Promise<RunView[] | undefined> {
    try {
      const rows = await this.db
        .selectFrom('reconciliation_runs')
        .selectAll()
        .orderBy('started', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
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
  async items(
    runId: string,
    outcomes: readonly string[],
    limit: number,
  ): Promise<{ items: ItemView[]; more: boolean }> {
    if (outcomes.length === 0) return { items: [], more: false };
    const rows = await this.db
      .selectFrom('reconciliation_items')
      .selectAll()
      .where('run_id', '=', runId)
      .where('outcome', 'in', outcomes as Outcome[])
      .orderBy('outcome')
      .orderBy('id')
      .limit(limit + 1)
      .execute();
    return {
      items: rows.slice(0, limit).map((r) => ({
        outcome: r.outcome,
        ref: r.ref,
        serviceId: r.service_id,
        ours: r.ours,
        theirs: r.theirs,
        differs: r.differs,
      })),
      more: rows.length > limit,
    };
  }
}
