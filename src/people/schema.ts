/**
 * The tables of the directory of people (migrations 0100_people, 0101_pin_changes) and of limits and lock-outs
 * (0200_limits) as Kysely sees them. They sit beside the
 * journal's in one database: `Kysely<PeopleSchema>`.
 */
import type { ColumnType, Generated } from 'kysely';
import type { Schema } from '../journal/schema.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface PersonsTable {
  id: string;
  name: string;
  role: string;
  status: 'active' | 'suspended';
  pin_hash: string | null;
  pin_must_change: Generated<boolean>;
  pin_locked_until: Timestamp | null;
  /** Why `pin_locked_until` was set: `wrong PIN`, `wrong one-time code` (migration 0200). */
  pin_locked_why: string | null;
  preferred_chat: string | null;
  /** Who first wrote it: `policy` (the import) or `page`. */
  source: string;
  created: Timestamp;
  updated: Timestamp;
}

export interface PersonIdentitiesTable {
  channel: string;
  user_id: string;
  person_id: string;
  created: Timestamp;
}

export interface PersonCodesTable {
  id: Generated<string>;
  person_id: string;
  /** `pin`: a one-time code to set a PIN after a reset; `link`: a code that links a chat account. */
  purpose: 'pin' | 'link';
  /** scrypt hash of the code (src/people/secrets.ts). */
  code_hash: string;
  /** For link codes: a SHA-256 of the code, to find it by the code alone. */
  lookup: string | null;
  /** For link codes made since migration 0320: their first characters, which name the code a guess aims at. */
  locator: string | null;
  /** Wrong guesses at this link code, from any account (migration 0320); it is used up at the limit. */
  wrong_tries: Generated<number>;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created: Timestamp;
}

/** A change of a person's own PIN under way (migration 0101): who proved what, and the new PIN's hash. */
export interface PinChangesTable {
  person_id: string;
  /** The one-time code of a reset the person typed (used up when the PIN is set); null: they typed their old PIN. */
  code_id: string | null;
  /** scrypt hash of the new PIN once typed the first time; null before. */
  pin_hash: string | null;
  expires_at: Timestamp;
  created: Timestamp;
}

export interface OperatorsTable {
  name: string;
  password_hash: string;
  status: Generated<'active' | 'suspended' | 'removed'>;
  created: Timestamp;
  created_by: string;
}

export interface PeopleVersionTable {
  id: number;
  version: ColumnType<string, string | number, string | number>;
}

/** A reservation in a person's daily total (migration 0200), keyed by the payment's Duplicate-Check-Key. */
export interface SpendReservationsTable {
  ref: string;
  person_id: string;
  currency: string;
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  /** The amount as reserved (a decimal). */
  amount: ColumnType<string, string, string>;
  /** The amount in minor units (hundredths, rounded up), as the limit counts it. */
  minor: ColumnType<string, string | number, string | number>;
  reserved_at: Timestamp;
  given_back_at: Timestamp | null;
  given_back_reason: string | null;
  /** The limit the reservation was checked against, in minor units (migration 0450; null before it). */
  daily_limit: ColumnType<string | null, never, never>;
  /** When a correction found the money moved and counted a given-back reservation again (migration 0450). */
  taken_again_at: ColumnType<Date | null, never, never>;
  /** Whether the day's total passed `daily_limit` when it was taken again (null: not taken again, or unknown). */
  over_limit: ColumnType<boolean | null, never, never>;
}

/** A person's total in one currency on one UTC day (migration 0200): the row a reservation locks. */
export interface SpendDaysTable {
  person_id: string;
  currency: string;
  day: string;
  /** Minor units reserved and not given back. */
  total: ColumnType<string, string | number, string | number>;
}

/** Wrong tries of a secret (migration 0200): per scope and subject, counted until `until`. */
export interface SecretTriesTable {
  scope: string;
  subject: string;
  tries: number;
  until: Timestamp;
}

/** An operator's change waiting for a second operator (migration 0370, src/people/requests.ts). */
export interface OperatorRequestsTable {
  id: string;
  action: string;
  target: string | null;
  payload: ColumnType<Record<string, unknown>, string, string>;
  asked_by: string;
  asked_at: Timestamp;
  expires_at: Timestamp;
  state: 'pending' | 'approved' | 'rejected' | 'expired' | 'failed';
  decided_by: string | null;
  decided_at: Timestamp | null;
  reason: string | null;
}

export interface PeopleTables {
  operator_requests: OperatorRequestsTable;
  persons: PersonsTable;
  person_identities: PersonIdentitiesTable;
  person_codes: PersonCodesTable;
  pin_changes: PinChangesTable;
  operators: OperatorsTable;
  people_version: PeopleVersionTable;
  spend_reservations: SpendReservationsTable;
  spend_days: SpendDaysTable;
  secret_tries: SecretTriesTable;
}

export type PeopleSchema = Schema & PeopleTables;
