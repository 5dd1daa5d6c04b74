/**
 * The delivery log as /ops reads and changes it (src/ops/deliveries.ts): the deliveries newest first, by state,
 * and a replay (one delivery made `pending` again, due now, retried for another window).
 */
import type { Kysely } from 'kysely';
import type { DeliveryState, EventsOutSchema } from './schema.js';

export interface DeliveryView {
  eventId: string;
  type: string;
  ref: string;
  endpoint: string;
  state: DeliveryState;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextTry: Date | null;
  deliveredAt: Date | null;
  created: Date;
  replayedBy: string | null;
}

/** The deliveries, newest first (`limit` + 1 read, to say whether there are more). */
export async function listDeliveries(
  db: Kysely<EventsOutSchema>,
  query: { state?: DeliveryState; limit: number },
): Promise<{ items: DeliveryView[]; more: boolean }> {
  let q = db
    .selectFrom('event_deliveries as d')
    .innerJoin('events_out as e', 'e.id', 'd.event_id')
    .select([
      'd.event_id',
      'e.type',
      'e.ref',
      'd.endpoint',
      'd.state',
      'd.attempts',
      'd.last_status',
      'd.last_error',
      'd.next_try',
      'd.delivered_at',
      'd.created',
      'd.replayed_by',
    ]);
  if (query.state) q = q.where('d.state', '=', query.state);
  const rows = await q
    .orderBy('d.created', 'desc')
    .orderBy('e.seq', 'desc')
    .orderBy('d.endpoint')
    .limit(query.limit + 1)
    .execute();
  return {
    items: rows.slice(0, query.limit).map((r) => ({
      eventId: r.event_id,
      type: r.type,
      ref: r.ref,
      endpoint: r.endpoint,
      state: r.state,
      attempts: r.attempts,
      lastStatus: r.last_status,
      lastError: r.last_error,
      nextTry: r.next_try,
      deliveredAt: r.delivered_at,
      created: r.created,
      replayedBy: r.replayed_by,
    })),
    more: rows.length > query.limit,
  };
}

/**
 * Makes one delivery due now (whatever its state: a delivered one is sent again, with the same event id), to be
 * retried with backoff for `retryMs` from now; records who asked. False when there is no such delivery.
 */
export async function replayDelivery(
  db: Kysely<EventsOutSchema>,
  o: { eventId: string; endpoint: string; by: string; retryMs: number; now?: Date },
): Promise<boolean> {
  const now = o.now ?? new Date();
  const result = await db
    .updateTable('event_deliveries')
    .set({
      state: 'pending',
      next_try: now,
      retry_until: new Date(now.getTime() + o.retryMs),
      delivered_at: null,
      replayed_by: o.by,
      replayed_at: now,
    })
    .where('event_id', '=', o.eventId)
    .where('endpoint', '=', o.endpoint)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
