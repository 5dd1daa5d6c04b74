/**
 * What each recipient of a payout came to, from our record alone (src/payouts/payouts.ts): the number, amount
 * and description the maker gave, the state the service reported for them (recipients.ts), or, until it
 * reports, what their request came to. One list feeds the payout's message and its CSV of outcomes.
 */
import { Decimal } from 'decimal.js';
import { writeCsv } from '../csv.js';
import type { Payout, PayoutRequest } from './payouts.js';

export interface Outcome {
  phone: string;
  amount: string;
  description: string;
  /** Our short ref of the recipient's payment (the reference people read), once drawn. */
  ref: string;
  /** The service's id of the recipient's payment, once known: `id`, as in /ops's exports. */
  id: string;
  /** The recipient's state as the service reported it (`complete`, `error`...), else what their request came to. */
  status: string;
  /** The service's error for a recipient in error or aborted, or why the request was not sent. */
  error: string;
}

/** A request's outcome before the service reports its recipients. */
export function requestStatus(request: PayoutRequest): { status: string; error: string } {
  const result = request.result;
  if (!result) return { status: 'not_made', error: '' };
  if (result.kind === 'refused') return { status: 'not_sent', error: result.reason };
  if (result.kind === 'held') return { status: 'held_for_approval', error: '' };
  if (result.kind === 'unconfirmed') return { status: 'being_confirmed', error: '' };
  return { status: 'submitted', error: '' };
}

export function outcomesOf(payout: Payout): Outcome[] {
  return payout.requests.flatMap((request) => {
    const before = requestStatus(request);
    const sent = request.result?.kind === 'sent' ? request.result : undefined;
    const refs = { ref: sent?.shortRef ?? '', id: sent?.id ?? '' };
    return request.recipients.map((r, i) => {
      const state = request.states?.[i];
      const reported = state && state.state !== 'new' ? { status: state.state, error: state.error ?? '' } : before;
      return { phone: r.phonenumber, amount: r.amount, description: r.description, ...refs, ...reported };
    });
  });
}

/** How many recipients were paid, failed (error, aborted, not sent) or still wait, and the total paid. */
export function tally(outcomes: readonly Outcome[]): {
  paid: number;
  failed: number;
  waiting: number;
  paidTotal: string;
} {
  const paid = outcomes.filter((o) => o.status === 'complete');
  const failed = outcomes.filter((o) => ['error', 'aborted', 'not_sent'].includes(o.status)).length;
  return {
    paid: paid.length,
    failed,
    waiting: outcomes.length - paid.length - failed,
    paidTotal: paid.reduce((sum, o) => sum.plus(o.amount), new Decimal(0)).toFixed(),
  };
}

/**
 * The outcomes as CSV (RFC 4180): its first three columns are a payout's own (`phone,amount,description`),
 * so the rows that failed can be shared again as a new payout's file. Full numbers: see docs/channels.md (Bulk payouts in Slack).
 */
export function outcomesCsv(payout: Payout): string {
  // `ref` and `id` as /ops/payments.csv names them: our short ref, and the service's id.
  const header = ['phone', 'amount', 'description', 'currency', 'status', 'ref', 'id', 'error'];
  return writeCsv([
    header,
    ...outcomesOf(payout).map((o) => [
      o.phone,
      o.amount,
      o.description,
      payout.currency,
      o.status,
      o.ref,
      o.id,
      o.error,
    ]),
  ]);
}
