/**
 * The chaos run's check of a copy (transport.ts delivers a share of requests twice, the copy to another
 * instance once the first was answered): a resent USSD request gets the screen the first one got, as the
 * engine keeps the answer of each delivery (its ledger, and the USSD state beside it). What may differ, and why.
 */
import type { Answer } from './transport.js';
import { ACKNOWLEDGED, OUTCOME, START_OVER } from './users.js';

/** The engine's answer while a run is out: "still working on it" or "being confirmed". */
export const PLACEHOLDER = /still working on it/i;
/** A new dial showing what was kept for it (a run's outcome, whatever it was). */
const KEPT_FOR_DIAL = /^CON Update on your last request:\n/;
/** The answer when the store could not be reached (common.unavailable): nothing was recorded to repeat. */
const UNAVAILABLE = /cannot reach your conversation/i;
/** How long after Redis came back a command may still fail for it (ioredis reconnecting with a back-off). */
export const STORE_FAULT_TAIL_MS = 2000;

/** When Redis was cut or refused writes: [from, to] in ms since the epoch (to is Infinity while it lasts). */
export type StoreFaults = ReadonlyArray<readonly [number, number]>;

/** Redis failed while the request ran, or shortly before it ({@link STORE_FAULT_TAIL_MS}). */
export function storeFailedDuring(faults: StoreFaults, answer: Answer): boolean {
  return faults.some(([from, to]) => from <= answer.answeredAt && to + STORE_FAULT_TAIL_MS >= answer.sentAt);
}

/**
 * What is wrong with the copy of a request to `path` (undefined: nothing). `first` is the first delivery's
 * answer; undefined when both went at once (then either may be the one that stepped the flow).
 */
export function copyProblem(
  path: string,
  first: Answer | undefined,
  copy: Answer,
  faults: StoreFaults,
): string | undefined {
  if (!first || !path.startsWith('/ussd') || first.status !== 200 || copy.status !== 200) return undefined;
  // An answer that is no answer kept for the delivery: an error or "start again", the store's own "cannot
  // reach your conversation" (an answer Redis refused to record cannot be repeated), the adapter's apology at
  // its deadline (not the engine's: a resend gets the one made since).
  if (START_OVER.test(first.text) || UNAVAILABLE.test(first.text) || /taking longer than expected/.test(first.text))
    return undefined;
  // The copy ran while Redis failed and says so: the answer kept could not be read.
  if (START_OVER.test(copy.text) && storeFailedDuring(faults, copy)) return undefined;
  if (PLACEHOLDER.test(first.text)) {
    // "Still working on it" is written to the ledger (and the USSD state) in one write before it is answered;
    // when Redis refused or dropped that write, the engine answers it all the same, unrecorded. The copy then
    // gets what the conversation shows since, as a new delivery would: the run's outcome, which may be the
    // flow's next question. Only with a store fault seen during the first delivery.
    if (storeFailedDuring(faults, first)) return undefined;
    // Unrecorded without a store fault (its write losing every try to the run's own): the outcome it stood
    // for, no second step either (a dial's copy shows it under "Update on your last request:", whatever it
    // was, a service failure too).
    if (ACKNOWLEDGED.test(copy.text) || OUTCOME.test(copy.text) || KEPT_FOR_DIAL.test(copy.text)) return undefined;
  }
  if (copy.text === first.text) return undefined;
  return `a resent USSD request got another screen: ${JSON.stringify([first.instance, first.text, copy.instance, copy.text])}`;
}
