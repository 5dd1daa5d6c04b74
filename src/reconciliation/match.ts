/**
 * The matching of a reconciliation, pure: our operations (the journal's current-state rows) against the
 * service's records of the same period (its payments, collection requests and collections, as read from its
 * lists), each service record found by its id first, then by its `metadata.ref` (our ref, for a create whose
 * answer, and so the id, we never got). Every record on either side ends in one item with one outcome:
 *
 * - `matched`: both sides agree (a collection: it fulfilled one of our requests, with the same money);
 * - `unknown_to_service`: ours, expected at the service (the service was asked, or may have been), not there;
 * - `not_ours`: the service's, made elsewhere (its web portal, another integration): listed, not an error;
 * - `state_differs`: the service's state, in our words, is not the journal's;
 * - `detail_differs`: the amount, the currency or the recipient is not what we asked for.
 *
 * A record whose state and detail both differ is `detail_differs` (the graver: it is not what we meant to pay),
 * with its state correction still owed. The run (./run.ts) reads both sides, journals the corrections and
 * keeps the items.
 */
import { Decimal } from 'decimal.js';

/** What one item of a run says. */
export type Outcome = 'matched' | 'unknown_to_service' | 'not_ours' | 'state_differs' | 'detail_differs';

/** Every outcome, in the order the command prints them. */
export const OUTCOMES: readonly Outcome[] = [
  'matched',
  'unknown_to_service',
  'not_ours',
  'state_differs',
  'detail_differs',
];

/** Outcomes that make the command exit 1: an operation of ours that the service does not hold as we do. */
export const DIFFERENCES: readonly Outcome[] = ['unknown_to_service', 'state_differs', 'detail_differs'];

/** Our word for where an operation stands (the journal's OperationState). */
export type OurState =
  'intended' | 'held' | 'submitted' | 'completed' | 'failed' | 'refused' | 'rejected' | 'expired' | 'cancelled';

/** One operation of ours, as the journal's current-state row holds it (the fields matching needs). */
export interface Ours {
  ref: string;
  kind: string;
  serviceId: string | null;
  amount: string;
  currency: string;
  payee: string;
  state: OurState;
  /** The outcome the user was last told (a state word), if any. */
  toldState: string | null;
}

/** The service's kinds of record a reconciliation reads. */
export type TheirKind = 'payment' | 'request' | 'collection';

/** One record of the service, as its list gave it (the fields matching needs). */
export interface Theirs {
  kind: TheirKind;
  id: string;
  /** `metadata.ref`, '' when it has none. */
  ref: string;
  /** The service's own word: a payment's `state`, a request's or a collection's `status`. */
  state: string;
  amount: string;
  currency: string;
  /** The recipient (payment), the payer asked (request) or the sender (collection), international format. */
  phone: string;
  /** A collection: the id of the request it fulfilled, if any. */
  requestId?: string;
}

/** One line of a run's result. */
export interface Item {
  outcome: Outcome;
  /** Our ref, when the record is ours. */
  ref: string | null;
  /** The service's id, when the service holds it. */
  serviceId: string | null;
  ours: Ours | null;
  theirs: Theirs | null;
  /** For detail_differs: which of `amount`, `currency`, `recipient` differ. */
  differs?: string[];
  /**
   * The state the service holds, in our words, when the journal's differs from it: journalled by the run
   * (source `reconciliation`).
   */
  correction?: OurState;
  /**
   * The state the service holds, in our words, that the journal's final state was NOT overwritten with (the
   * run's read of that one operation confirmed it, or could not find the record the list showed): an
   * exception for a person to look at, with nothing journalled and nobody told.
   */
  exception?: OurState;
  /** True when the service's side of this item is a read of that one operation (not a list entry). */
  confirmed?: boolean;
}

/** The service's payment states (and `completed`, seen in a webhook sample) in our words. */
const PAYMENT_STATES: ReadonlyMap<string, OurState> = new Map([
  ['processed', 'completed'],
  ['completed', 'completed'],
  ['processed_with_errors', 'failed'],
  ['rejected', 'rejected'],
  ['cancelled', 'cancelled'],
]);

/** The service's collection request statuses in our words (`reversed`: the money went back). */
const REQUEST_STATES: ReadonlyMap<string, OurState> = new Map([
  ['successful', 'completed'],
  ['failed', 'failed'],
  ['expired', 'expired'],
  ['reversed', 'failed'],
]);

/**
 * The service's state of a payment or request in our words: its final states by name, every other (new,
 * pending, approval_needed, scheduled, a state the contract does not list) `submitted`: the service holds
 * it and has not decided.
 */
export function ourWord(kind: 'payment' | 'request', serviceState: string): OurState {
  // Ours, not the service's: an "already submitted" of which the service holds nothing (nothing was made).
  if (serviceState === 'not_made') return 'refused';
  const words = kind === 'payment' ? PAYMENT_STATES : REQUEST_STATES;
  return words.get(serviceState) ?? 'submitted';
}

/** Our states that end an operation: one the service decided, or one that never reached it. */
export function isFinal(state: string): boolean {
  return !['intended', 'held', 'submitted'].includes(state);
}

/** The kinds of ours that are at the service as a payment (a payout is one payment of several recipients). */
const PAID = new Set(['payment', 'payout']);

/** Which kind of the service's record an operation of ours is, or null when the service lists none of it. */
export function theirKindOf(ours: Pick<Ours, 'kind'>): 'payment' | 'request' | null {
  if (PAID.has(ours.kind)) return 'payment';
  if (ours.kind === 'request') return 'request';
  // Purchases are made with the vending group, which lists nothing; approvals are ours alone.
  return null;
}

/**
 * Whether the service should hold an operation of ours. Not: what it lists nothing of, one held for an
 * approver, one the service refused (nothing was made), and one an approver (or the hold's expiry) ended
 * before it was ever sent (no service id).
 */
export function expectedAtService(ours: Ours): boolean {
  if (theirKindOf(ours) === null) return false;
  if (ours.state === 'held' || ours.state === 'refused') return false;
  if (ours.serviceId === null && ['rejected', 'expired', 'cancelled'].includes(ours.state)) return false;
  return true;
}

const decimal = (value: string): Decimal | null => {
  try {
    return new Decimal(value);
  } catch {
    return null;
  }
};

const samePhone = (a: string, b: string): boolean => a.replace(/^\+?/, '+') === b.replace(/^\+?/, '+');

/** A payee that is one number; a payout's (`3 recipients`) or a bank account's is not compared as one. */
const PHONE = /^\+\d{7,15}$/;

/** Which of amount, currency, recipient differ between ours and theirs. */
export function detailDifferences(ours: Ours, theirs: Theirs): string[] {
  const differs: string[] = [];
  const mine = decimal(ours.amount);
  const given = decimal(theirs.amount);
  if (!mine || !given || !mine.eq(given)) differs.push('amount');
  if (ours.currency.toUpperCase() !== theirs.currency.toUpperCase()) differs.push('currency');
  if (PHONE.test(ours.payee) && theirs.phone !== '' && !samePhone(ours.payee, theirs.phone)) differs.push('recipient');
  return differs;
}

/** The item of a service record (not a collection) found to be ours. */
export function compare(ours: Ours, theirs: Theirs): Item {
  const base = { ref: ours.ref, serviceId: theirs.id, ours, theirs };
  const word = ourWord(theirs.kind === 'payment' ? 'payment' : 'request', theirs.state);
  const correction = word !== ours.state ? { correction: word } : {};
  const differs = detailDifferences(ours, theirs);
  if (differs.length > 0) return { outcome: 'detail_differs', ...base, differs, ...correction };
  if (word !== ours.state) return { outcome: 'state_differs', ...base, ...correction };
  return { outcome: 'matched', ...base };
}

/** A collection: matched when it fulfilled one of our requests with that request's money. */
function compareCollection(request: Ours, collection: Theirs): Item {
  const base = { ref: request.ref, serviceId: collection.id, ours: request, theirs: collection };
  const differs = detailDifferences(request, collection);
  return differs.length > 0 ? { outcome: 'detail_differs', ...base, differs } : { outcome: 'matched', ...base };
}

/**
 * Matches both sides. `ours` are the operations of the period and any other the service's records name (by
 * id or ref; the run looks those up, as a record created just past midnight may be ours of the day before);
 * `theirs` are the service's records of the period, and any of ours read by id. Returns one item per
 * service record and one per operation of ours expected at the service that no record matched.
 */
export function match(ours: readonly Ours[], theirs: readonly Theirs[]): Item[] {
  const byId = new Map<string, Ours>();
  const byRef = new Map<string, Ours>();
  for (const op of ours) {
    const kind = theirKindOf(op);
    if (kind === null) continue;
    if (op.serviceId !== null) byId.set(`${kind}:${op.serviceId}`, op);
    byRef.set(`${kind}:${op.ref}`, op);
  }
  const items: Item[] = [];
  const found = new Set<string>();
  const seen = new Set<string>();
  for (const record of theirs) {
    // A record listed twice (a page boundary moved under us) is one item.
    const identity = `${record.kind}:${record.id}`;
    if (seen.has(identity)) continue;
    seen.add(identity);
    if (record.kind === 'collection') {
      const request = record.requestId ? byId.get(`request:${record.requestId}`) : undefined;
      items.push(request ? compareCollection(request, record) : notOurs(record));
      continue;
    }
    const op = byId.get(identity) ?? (record.ref !== '' ? byRef.get(`${record.kind}:${record.ref}`) : undefined);
    // Our ref names one record: a second record carrying it (made elsewhere with our metadata) is not ours.
    if (!op || found.has(op.ref) || (op.serviceId !== null && op.serviceId !== record.id)) {
      items.push(notOurs(record));
      continue;
    }
    found.add(op.ref);
    items.push(compare(op, record));
  }
  for (const op of ours) {
    if (found.has(op.ref) || !expectedAtService(op)) continue;
    items.push({ outcome: 'unknown_to_service', ref: op.ref, serviceId: op.serviceId, ours: op, theirs: null });
  }
  return items;
}

function notOurs(record: Theirs): Item {
  return { outcome: 'not_ours', ref: null, serviceId: record.id, ours: null, theirs: record };
}

/** How many items of each outcome (every outcome present, zero or more). */
export function countOutcomes(items: readonly Item[]): Record<Outcome, number> {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  for (const item of items) counts[item.outcome] += 1;
  return counts;
}

/** True when an operation of ours differs from the service or is unknown to it (the command exits 1). */
export function hasDifferences(counts: Record<Outcome, number>): boolean {
  return DIFFERENCES.some((o) => counts[o] > 0);
}
