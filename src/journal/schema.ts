/**
 * The journal's tables as Kysely sees them (snake_case, as in the database). Migrations (./migrations) make
 * them; this file only describes them. Other parts add their own tables in their own migrations and extend
 * `Schema` with an interface of their own (`Kysely<Schema & TheirTables>`).
 */
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

/** What an operation is. */
export const OPERATION_KINDS = ['payment', 'request', 'purchase', 'payout', 'approval'] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];

/**
 * Our word for where an operation stands. `intended`: written, the service not yet asked (or asked without
 * an answer yet); `held`: waiting for an approver; `submitted`: the service took it; then one final word:
 * `completed`, `failed` (the service's final failure), `refused` (the service said no to the create),
 * `rejected` (an approver said no), `expired`, `cancelled`: the words after which nothing more is expected
 * (`FINAL_STATES`).
 */
const FINAL = ['completed', 'failed', 'refused', 'rejected', 'expired', 'cancelled'] as const;
export const OPERATION_STATES = ['intended', 'held', 'submitted', ...FINAL] as const;
export type OperationState = (typeof OPERATION_STATES)[number];
export const FINAL_STATES: readonly OperationState[] = FINAL;

/** What an event says happened. */
export type EventType =
  'intent' | 'answer' | 'refusal' | 'state' | 'approval' | 'telling' | 'correction' | (string & {});

/** How we learned it. */
export type EventSource =
  'create' | 'notification' | 'read' | 'reconciliation' | 'approval' | 'operator' | 'payout' | (string & {});

/** A timestamp column: written as a Date or ISO string, read as a Date. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** The current-state row of one operation: the only row ever updated in place. */
export interface OperationsTable {
  /** Our ref: the Duplicate-Check-Key of the money-moving call, also its `metadata.ref`. */
  ref: string;
  /**
   * The short ref people read and say (`MC-7K2QX`, src/journal/short-ref.ts): drawn from the journal's sequence
   * by the intent's insert (migration 0340), unique, never changed.
   */
  short_ref: Generated<string>;
  kind: OperationKind;
  /** The service's id, once it answered. */
  service_id: string | null;
  /** A decimal, read back as a string (never a binary float). */
  amount: ColumnType<string, string, string>;
  currency: string;
  /** The payee's (or payer's, for a request) number in international `+` form, or the product bought. */
  payee: string;
  payee_name: string | null;
  channel: string;
  /** Who asked: the channel's user id (a phone number on USSD). */
  channel_user: string;
  /** The chat the answer goes to. */
  chat: string;
  /** The asker's role in the access policy. */
  role: string;
  /** The flow that made it (pay, request, data, pin, payout). */
  flow: string;
  state: OperationState;
  /** The service's own word for its state, as last reported. */
  service_state: string | null;
  /** The outcome the user was last told (a state word), so a correction knows whom to tell. */
  told_state: string | null;
  /** A payout's ref, for each of its payments. */
  parent_ref: string | null;
  created: Timestamp;
  updated: Timestamp;
}

/** One fact about an operation, appended and never changed. */
export interface OperationEventsTable {
  id: Generated<string>;
  ref: string;
  type: EventType;
  source: EventSource;
  /** The fact's identity: the same fact written twice is one row. */
  event_key: string;
  at: Timestamp;
  data: ColumnType<Record<string, unknown>, string, string>;
  /**
   * The operation the event belongs to (a foreign key to `operations`): its ref, or null for the events of a
   * person (`person:<id>`), an operator (`operator:<name>`) or the journal itself (`journal:…`). Computed by the
   * database (migration 0300).
   */
  operation_ref: ColumnType<string | null, never, never>;
  /** Its place in the hash chain (1, 2, 3, … in commit order), set by the database (migration 0301). */
  seq: ColumnType<string, never, never>;
  /** The hash of the event before it in the chain when it was written ('' for the first). */
  prev_hash: ColumnType<string, never, never>;
  /** sha256 (hex) of `prev_hash` and its canonical content (src/journal/chain.ts). */
  hash: ColumnType<string, never, never>;
}

export interface Schema {
  operations: OperationsTable;
  operation_events: OperationEventsTable;
}

export type Operation = Selectable<OperationsTable>;
export type NewOperation = Insertable<OperationsTable>;
export type OperationEvent = Selectable<OperationEventsTable>;
