/**
 * The states of a payout's recipients as the service reports them (v5 `phone_nos[].state`), kept so that a
 * report repeated or arriving late never moves a recipient back: each state has a rank, a recipient takes a
 * reported state only when it ranks higher than the one kept, and a final state (complete, error, aborted)
 * is never replaced. Counts are derived from the kept states, never added up report by report.
 */
import type { PayoutRecipient } from '../../flows/calls.js';

/** One recipient as a report gives it: the number and the state, with the service's error text. */
export interface RecipientReport {
  phone: string;
  state: string;
  error: string;
}

/** What we keep of a recipient's state. */
export interface RecipientState {
  state: string;
  /** The service's last_error, for a recipient in error or aborted. */
  error?: string;
}

/**
 * The contract's recipient states in the order we take a transfer to go through them; the last three end it.
 * The contract lists the ten values without an order between them ("not shown"): this is our choice (docs/sandbox.md
 * "What we assumed"). A recipient paused and then resumed keeps showing `paused` until its end. A Map: the
 * state comes from the service, and `constructor` is no state.
 */
const RANKS: ReadonlyMap<string, number> = new Map(
  Object.entries({
    new: 0,
    processing: 1,
    pending_confirmation: 2,
    queued: 3,
    paused: 4,
    parked: 5,
    paused_for_admin_action: 6,
    complete: 9,
    error: 9,
    aborted: 9,
  }),
);
/** A state the contract does not list: after the open ones, before the final ones. */
const UNKNOWN_RANK = 7;
const FINAL_RANK = 9;
/** Longest state and error kept (the notice already bounds them; the store keeps them 30 days). */
const MAX_STATE = 40;
const MAX_ERROR = 200;

const rankOf = (state: string): number => RANKS.get(state) ?? UNKNOWN_RANK;

/** A recipient's transfer ended (complete, error or aborted). */
export const isDone = (state: RecipientState | undefined): boolean =>
  state !== undefined && rankOf(state.state) >= FINAL_RANK;

/**
 * Our recipients' states after a report: each of ours takes the report's entry of the same number (the n-th
 * of ours with a number takes the n-th entry with it, so a number paid twice in one request is matched in
 * order). Null when the report moves nobody on.
 */
export function mergeStates(
  recipients: readonly PayoutRecipient[],
  kept: readonly RecipientState[] | undefined,
  report: readonly RecipientReport[],
): RecipientState[] | null {
  const byPhone = new Map<string, RecipientReport[]>();
  for (const entry of report) {
    if (entry.state === '') continue;
    const phone = entry.phone.replace(/^\+?/, '+');
    byPhone.set(phone, [...(byPhone.get(phone) ?? []), entry]);
  }
  let moved = false;
  const next = recipients.map((recipient, i): RecipientState => {
    const before = kept?.[i] ?? { state: 'new' };
    const entry = byPhone.get(recipient.phonenumber)?.shift();
    if (!entry || isDone(before) || rankOf(entry.state) <= rankOf(before.state)) return before;
    moved = true;
    const state = entry.state.slice(0, MAX_STATE);
    return rankOf(state) >= FINAL_RANK && state !== 'complete' && entry.error
      ? { state, error: entry.error.slice(0, MAX_ERROR) }
      : { state };
  });
  return moved ? next : null;
}
