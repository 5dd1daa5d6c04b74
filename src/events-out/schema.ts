/**
 * The tables of events out as Kysely sees them (migration 0350, src/journal/migrations).
 */
import type { ColumnType, Selectable } from 'kysely';
import type { Schema } from '../journal/schema.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** `pending` until a 2xx (`delivered`) or until its retries end (`failed`); a replay makes it `pending` again. */
export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export interface EventsOutCursorTable {
  id: number;
  /** The last journal event (`operation_events.seq`) read. */
  seq: ColumnType<string, string, string>;
}

export interface EventsOutStatesTable {
  ref: string;
  state: string;
}

export interface EventsOutTable {
  /** `evt_…`: the same at every attempt and every replay. */
  id: string;
  seq: ColumnType<string, string, string>;
  ref: string;
  /** `<kind>.<state>`, e.g. `payment.completed`. */
  type: string;
  state: string;
  /** The raw JSON posted. */
  body: string;
  created: Timestamp;
}

export interface EventDeliveriesTable {
  event_id: string;
  endpoint: string;
  state: DeliveryState;
  attempts: ColumnType<number, number | undefined, number>;
  /** The HTTP status of the last attempt (null: no answer, see `last_error`). */
  last_status: number | null;
  last_error: string | null;
  /** When it is tried next (null once delivered or given up). */
  next_try: Timestamp | null;
  /** Retried until then (three days after the event, or after a replay). */
  retry_until: Timestamp;
  delivered_at: Timestamp | null;
  created: Timestamp;
  replayed_by: string | null;
  replayed_at: Timestamp | null;
}

export interface EventsOutSchema extends Schema {
  events_out_cursor: EventsOutCursorTable;
  events_out_states: EventsOutStatesTable;
  events_out: EventsOutTable;
  event_deliveries: EventDeliveriesTable;
}

export type Delivery = Selectable<EventDeliveriesTable>;
