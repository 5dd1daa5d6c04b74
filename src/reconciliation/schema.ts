/**
 * The reconciliation's tables as Kysely sees them (migrations 0010, 0400 and 0410, src/journal/migrations). The operator's
 * page (/ops/reconciliation) reads `reconciliation_runs` and `reconciliation_items` by these names.
 */
import type { ColumnType, Generated, Selectable } from 'kysely';
import type { OperationState, Schema } from '../journal/schema.js';
import type { Outcome, TheirKind } from './match.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A jsonb column: written as a JSON string, read as the value. */
type Json<T> = ColumnType<T, string, string>;

/**
 * `running` while it reads; then `clean` (every operation of ours as the service holds it), `differences`
 * (some operation of ours differs or is unknown to the service), or `failed` (it could not finish: `error`).
 */
export type RunStatus = 'running' | 'clean' | 'differences' | 'failed';

/** One reconciliation of a period of whole UTC days. */
export interface ReconciliationRunsTable {
  id: Generated<string>;
  /** First day of the period (UTC), `YYYY-MM-DD`. */
  from_day: ColumnType<string, string, string>;
  /** Last day of the period (UTC, included). */
  to_day: ColumnType<string, string, string>;
  started: Timestamp;
  finished: Timestamp | null;
  /** Items per outcome, every outcome present: `{ matched: 12, unknown_to_service: 0, ... }`. */
  counts: Json<Record<Outcome, number>>;
  status: RunStatus;
  /** Why a failed run failed (no secret, no personal data). */
  error: string | null;
  /** `command` (npm run reconcile) or `daily` (the product's nightly run of its window). */
  trigger: string;
  /**
   * Per kind of the service's records, the `modified_after` the run asked (`YYYY-MM-DD HH:MM`, UTC): it compared
   * only what changed since. Null: every record of its period (migration 0400).
   */
  changed_since: ColumnType<Partial<Record<TheirKind, string>> | null, string | null | undefined, string | null>;
  /**
   * Per kind of ours, how many operations of the period were not compared, and why: `{ "purchase": { "count": 3,
   * "why": "..." } }` (vending purchases: the service offers no list of them).
   */
  not_compared: ColumnType<Record<string, NotCompared>, string | undefined, string>;
}

/** Operations of one kind a run could not compare. */
export interface NotCompared {
  count: number;
  why: string;
}

/** When the nightly run last began to list one kind of the service's records (migration 0400). */
export interface ReconciliationLooksTable {
  kind: TheirKind;
  looked: Timestamp;
}

/** One line of a run's result: a service record, or an operation of ours no record matched. */
export interface ReconciliationItemsTable {
  id: Generated<string>;
  run_id: string;
  outcome: Outcome;
  /** Our ref (the Duplicate-Check-Key), when the record is ours. */
  ref: string | null;
  /** The service's id, when the service holds it. */
  service_id: string | null;
  /** The journal's operation as compared (match.ts Ours), or null. */
  ours: Json<Record<string, unknown> | null>;
  /** The service's record as compared (match.ts Theirs), or null. */
  theirs: Json<Record<string, unknown> | null>;
  /** detail_differs: which of `amount`, `currency`, `recipient` differ; else null. */
  differs: Json<string[] | null>;
}

/**
 * A correction owed to a person: the journal says they were told `told_state`, the service holds `state`.
 * Written by a run (of the command or the product), told by the product, which holds the channels.
 */
export interface ReconciliationCorrectionsTable {
  id: Generated<string>;
  run_id: string;
  ref: string;
  /** The operation's chat (`<channel>:<conversationId>`). */
  chat: string;
  /** What the service holds now, in our words. */
  state: string;
  /** What the person was told. */
  told_state: string;
  /** The service's own word. */
  service_state: string;
  created: Timestamp;
  /** A process telling it since then (a lease: another takes it over once it is old). */
  claimed: Timestamp | null;
  told: Timestamp | null;
}

/** Where a difference stands (./exceptions.ts). */
export const EXCEPTION_STATES = ['open', 'resolved', 'corrected'] as const;
export type ExceptionState = (typeof EXCEPTION_STATES)[number];

/** One difference a run found, once, and how it was closed (migration 0410, ./exceptions.ts). */
export interface ReconciliationExceptionsTable {
  id: Generated<string>;
  /** The difference's identity (exceptions.ts differenceOf). */
  difference: string;
  ref: string;
  outcome: Exclude<Outcome, 'matched' | 'not_ours'>;
  /** The operation's day (UTC, `YYYY-MM-DD`): the period it belongs to. */
  day: string;
  service_id: string | null;
  ours: Json<Record<string, unknown> | null>;
  theirs: Json<Record<string, unknown> | null>;
  differs: Json<string[] | null>;
  /** The final state a correction journals (the service's, in our words), or null when none can be made. */
  correction: OperationState | null;
  found_run: string;
  found_at: Timestamp;
  state: ColumnType<ExceptionState, ExceptionState | undefined, ExceptionState>;
  /** An operator's name, or `reconciliation`. */
  closed_by: string | null;
  /** The second operator who approved a correction. */
  approved_by: string | null;
  /** The operator request a correction was approved by. */
  request: string | null;
  closed_at: Timestamp | null;
  reason: string | null;
}

export interface ReconciliationTables {
  reconciliation_runs: ReconciliationRunsTable;
  reconciliation_items: ReconciliationItemsTable;
  reconciliation_corrections: ReconciliationCorrectionsTable;
  reconciliation_looks: ReconciliationLooksTable;
  reconciliation_exceptions: ReconciliationExceptionsTable;
}

/** The journal's schema and the reconciliation's. */
export type ReconciliationSchema = Schema & ReconciliationTables;

export type ReconciliationRun = Selectable<ReconciliationRunsTable>;
export type ReconciliationItem = Selectable<ReconciliationItemsTable>;
