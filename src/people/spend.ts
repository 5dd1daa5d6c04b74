/**
 * The database's two calls of a person's daily total (migration 0320), as SQL fragments: the limits
 * (src/people/limits.ts) run them alone, the journal (src/journal/journal.ts) inside the statement or
 * transaction that writes an intent or a refusal. Nothing here imports the journal or the people.
 */
import { sql } from 'kysely';
import type { GiveBackReason, Reservation } from '../conversation/calls/limits.js';

/**
 * The call of `spend_reserve` (migration 0320) for `r`: the day's row locked, the limit checked and the
 * reservation written, in one round trip; a table of one row (`ok`, `total`). The journal puts it in the statement
 * that writes the intent (Journal.intend).
 */
export function reserveCall(r: Reservation, at: Date) {
  return sql<{
    ok: boolean;
    total: string;
  }>`spend_reserve(${r.ref}, ${r.person}, ${r.currency}, ${r.day}, ${r.amount}::numeric, ${r.minor}::bigint, ${r.limit}::bigint, ${at}::timestamptz)`;
}

/** The call of `spend_give_back` (migration 0320): the reservation given back once; a boolean. */
export function giveBackCall(ref: string, reason: GiveBackReason, at: Date) {
  return sql<boolean>`spend_give_back(${ref}, ${reason}, ${at}::timestamptz)`;
}

/**
 * The call of `spend_take_again` (migration 0450): a given-back reservation counted again in its day's total,
 * never refused (the money moved); a table of one row (`taken`, `total`, `over_limit`).
 */
export function takeAgainCall(ref: string, at: Date) {
  return sql<{
    taken: boolean;
    total: string | null;
    over_limit: boolean | null;
  }>`spend_take_again(${ref}, ${at}::timestamptz)`;
}
