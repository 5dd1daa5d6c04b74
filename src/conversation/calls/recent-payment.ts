/**
 * FlowCalls.recentPayment over the journal: the latest payment the same person (channel and channel user)
 * made to the same payee, of the same amount and currency, in the last {@link REPEAT_WINDOW_MINUTES}, that did
 * not end without money moving. The journal is in PostgreSQL, so the answer outlives a Redis loss that erased
 * the conversation which made it. One indexed query, only when a payment is confirmed.
 */
import type { Kysely } from 'kysely';
import type { RecentPayment } from '../../../flows/calls.js';
import type { Schema } from '../../journal/schema.js';

/** How far back a payment of the same is asked about: a person paying again at once, not a weekly rent. */
export const REPEAT_WINDOW_MINUTES = 10;

/** States in which nothing moved: paying again after one of these is no second payment. */
const ENDED_WITHOUT_MONEY = ['refused', 'failed', 'rejected', 'expired', 'cancelled'] as const;

export interface RecentPaymentQuery {
  channel: string;
  userId: string;
  payee: string;
  amount: string;
  currency: string;
}

/** The recent payment of the same, or null. `now` in ms (default the clock). */
export async function recentPayment(
  db: Kysely<Schema>,
  query: RecentPaymentQuery,
  now = Date.now(),
): Promise<RecentPayment | null> {
  const since = new Date(now - REPEAT_WINDOW_MINUTES * 60_000);
  const row = await db
    .selectFrom('operations')
    .select(['ref', 'short_ref', 'state', 'created'])
    .where('kind', '=', 'payment')
    .where('channel', '=', query.channel)
    .where('channel_user', '=', query.userId)
    .where('payee', '=', query.payee)
    .where('amount', '=', query.amount)
    .where('currency', '=', query.currency)
    .where('created', '>=', since)
    .where('state', 'not in', [...ENDED_WITHOUT_MONEY])
    .orderBy('created', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row) return null;
  const created = row.created instanceof Date ? row.created.getTime() : new Date(row.created).getTime();
  return {
    ref: row.ref,
    shortRef: row.short_ref,
    state: row.state,
    minutesAgo: Math.max(0, Math.floor((now - created) / 60_000)),
  };
}
