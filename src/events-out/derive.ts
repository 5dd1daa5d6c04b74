/**
 * Events out, derived from the journal: a cursor over the journal's events in their chain order
 * (`operation_events.seq`, given under the chain's lock and so in commit order: once seq N is seen, every event
 * before it is too). Each event that moves an operation's state (by the journal's own rule, `stateMoves`)
 * becomes one event out (`<kind>.<state>`) and one delivery per endpoint, written in ONE transaction with the
 * cursor's move: a crash, a restart or a Redis loss between two reads repeats the read, never skips one.
 */
import { createHash } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import { stateMoves } from '../journal/journal.js';
import { OPERATION_STATES, type EventSource, type OperationState } from '../journal/schema.js';
import type { EventsOutSchema } from './schema.js';

/** The JSON posted for one event (docs/webhooks-out.md). */
export interface EventBody {
  /** The event's id: the same at every attempt and every replay (a receiver drops one it has seen). */
  id: string;
  /** `<kind>.<state>`: `payment.completed`, `request.submitted`, `purchase.failed`, `payout.completed`, … */
  type: string;
  /** Our short reference of the operation, the one people read out (`MC-7K2QX`), as on the screens and `/ops`. */
  ref: string;
  /** Our Duplicate-Check-Key of the operation (`metadata.ref` at the service; `/ops/payments/<key>`). */
  key: string;
  state: OperationState;
  /** A decimal string. */
  amount: string;
  currency: string;
  /** When the journal learned it, ISO 8601 UTC. */
  created: string;
}

/** Journal events read per transaction. */
const BATCH = 500;

/** The state a journal event reports, in our words, or undefined for one that reports none (a telling). */
export function stateOfEvent(type: string, data: Record<string, unknown>): OperationState | undefined {
  if (type === 'approval') {
    const d = data.decision;
    return d === 'approved' ? 'intended' : d === 'rejected' ? 'rejected' : d === 'expired' ? 'expired' : undefined;
  }
  const state = data.state;
  if (typeof state === 'string' && (OPERATION_STATES as readonly string[]).includes(state))
    return state as OperationState;
  // Written before answers and refusals carried their state.
  if (type === 'answer') return 'submitted';
  if (type === 'refusal') return 'refused';
  return undefined;
}

/** The id of the event out made from journal event `seq` (stable: the same read makes the same id). */
export const eventId = (ref: string, state: string, seq: string): string =>
  `evt_${createHash('sha256').update(`${ref}\u0000${state}\u0000${seq}`).digest('hex').slice(0, 24)}`;

/**
 * Starts the cursor at the journal's head when it has none (the first start with endpoints: what came before
 * is not sent). Without endpoints it forgets the cursor, so a later start with endpoints does not send what
 * happened while none were set.
 */
export async function initCursor(db: Kysely<EventsOutSchema>, sending: boolean): Promise<void> {
  if (!sending) {
    await db.deleteFrom('events_out_cursor').execute();
    return;
  }
  await sql`
    insert into events_out_cursor (id, seq)
    select 1, coalesce(max(seq), 0) from operation_events
    on conflict (id) do nothing`.execute(db);
}

/**
 * Reads the journal's next events after the cursor and writes the events out they make, with a delivery per
 * endpoint, moving the cursor, in one transaction. Returns how many journal events it read (BATCH: read again).
 */
export async function deriveOnce(
  db: Kysely<EventsOutSchema>,
  endpoints: readonly string[],
  retryMs: number,
  now: () => Date = () => new Date(),
): Promise<{ read: number; made: number; noCursor?: true }> {
  return db.transaction().execute(async (trx) => {
    const cursor = await trx
      .selectFrom('events_out_cursor')
      .select('seq')
      .where('id', '=', 1)
      .forUpdate()
      .executeTakeFirst();
    if (!cursor) return { read: 0, made: 0, noCursor: true };
    const { rows } = await sql<{
      seq: string;
      ref: string;
      type: string;
      source: EventSource;
      data: Record<string, unknown> | string;
      at: Date;
      kind: string | null;
      short_ref: string | null;
      amount: string | null;
      currency: string | null;
    }>`
      select e.seq::text as seq, e.ref, e.type, e.source, e.data, e.at, o.kind, o.short_ref, o.amount::text as amount, o.currency
      from operation_events e left join operations o on o.ref = e.operation_ref
      where e.seq > ${cursor.seq}
      order by e.seq
      limit ${BATCH}`.execute(trx);
    if (rows.length === 0) return { read: 0, made: 0 };
    const refs = [...new Set(rows.filter((r) => r.kind).map((r) => r.ref))];
    const known = new Map<string, OperationState>();
    if (refs.length > 0) {
      for (const s of await trx.selectFrom('events_out_states').selectAll().where('ref', 'in', refs).execute())
        known.set(s.ref, s.state as OperationState);
    }
    const made: Array<{ seq: string; body: EventBody }> = [];
    for (const row of rows) {
      if (!row.kind || row.short_ref === null || row.amount === null || row.currency === null) continue;
      const data = typeof row.data === 'string' ? (JSON.parse(row.data) as Record<string, unknown>) : row.data;
      const state = stateOfEvent(row.type, data ?? {});
      if (!state || !stateMoves(known.get(row.ref), state, row.source)) continue;
      known.set(row.ref, state);
      made.push({
        seq: row.seq,
        body: {
          id: eventId(row.ref, state, row.seq),
          type: `${row.kind}.${state}`,
          ref: row.short_ref,
          key: row.ref,
          state,
          amount: row.amount,
          currency: row.currency,
          created: new Date(row.at).toISOString(),
        },
      });
    }
    await write(trx, made, endpoints, retryMs, now());
    const changed = [...new Set(made.map((m) => m.body.key))];
    for (const ref of changed) {
      await trx
        .insertInto('events_out_states')
        .values({ ref, state: known.get(ref)! })
        .onConflict((oc) => oc.column('ref').doUpdateSet({ state: known.get(ref)! }))
        .execute();
    }
    await trx
      .updateTable('events_out_cursor')
      .set({ seq: rows[rows.length - 1]!.seq })
      .where('id', '=', 1)
      .execute();
    return { read: rows.length, made: made.length };
  });
}

async function write(
  trx: Transaction<EventsOutSchema>,
  made: Array<{ seq: string; body: EventBody }>,
  endpoints: readonly string[],
  retryMs: number,
  now: Date,
): Promise<void> {
  for (let i = 0; i < made.length; i += 100) {
    const chunk = made.slice(i, i + 100);
    await trx
      .insertInto('events_out')
      .values(
        chunk.map(({ seq, body }) => ({
          id: body.id,
          seq,
          ref: body.key,
          type: body.type,
          state: body.state,
          body: JSON.stringify(body),
          created: body.created,
        })),
      )
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    if (endpoints.length === 0) continue;
    await trx
      .insertInto('event_deliveries')
      .values(
        chunk.flatMap(({ body }) =>
          endpoints.map((endpoint) => ({
            event_id: body.id,
            endpoint,
            state: 'pending' as const,
            attempts: 0,
            last_status: null,
            last_error: null,
            next_try: now,
            retry_until: new Date(now.getTime() + retryMs),
            delivered_at: null,
            created: now,
            replayed_by: null,
            replayed_at: null,
          })),
        ),
      )
      .onConflict((oc) => oc.columns(['event_id', 'endpoint']).doNothing())
      .execute();
  }
}
