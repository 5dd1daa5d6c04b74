/**
 * How a payment moves on, in the spec's processing order, on the sandbox clock. The spec shows only the
 * creation state (`new`) and what the final states mean; the sandbox's state machine is:
 *
 *   new --(STEP_SECONDS.validate)--> validated           (1) funds, (2) registration and name check
 *       \-> processed_with_errors                         funds short, or no recipient passed the checks
 *   validated --(3) approval rules--> approved            no rule of the organization matches
 *             \-> approval_needed --(STEP_SECONDS.approve)--> approval_requested   a rule matches: the
 *                 approvers are asked; POST /sandbox/payments/{id}/approve -> approved, .../reject -> rejected
 *   approved --> scheduled (start_date in the future) --> at start_date, sent
 *   approved --(STEP_SECONDS.send)--> sent                (4) each recipient as the directory says:
 *       complete; error (payment_fails, funds); aborted (payment_aborted); queued, paused or parked for
 *       WAIT_SECONDS, then complete; paused_for_admin_action until .../approve (or .../cancel)
 *   sent --> processed                                    every recipient complete
 *        \-> processed_with_errors                        any recipient in error or aborted; last_error says why
 *   any state before processed, while no recipient is paid --(.../cancel)--> cancelled
 *
 * Every change of the payment's state or of a recipient's emits payment.status.changed with the payment.
 * On a recipient's completion its amount and the fee are debited; remote_transaction_id is set,
 * formatted `SBXP` + the payment id in 10 digits (`SBXP0000000042`).
 * Name check (rule 3): runs when a name was given or the contact has one, and only decides the payment
 * when the organization's `Name match affects payment` is on. Kenyan recipients given with national_id and
 * national_id_type are verified by id instead (rule 4): the sandbox accepts the id.
 */
import { Decimal } from 'decimal.js';
import { recordSms, savedVersion, type SandboxContext } from './context.js';
import {
  lookupSubscriber,
  NAME_MATCH_THRESHOLD,
  nameMatchScore,
  NETWORK_ABORTED,
  NETWORK_FAILURE,
  PAUSED_REASON,
  WAIT_SECONDS,
} from './directory.js';
import { detailError } from './errors.js';
import { money } from './render.js';
import type { Currency, Organization, Payment, PaymentState, Recipient, RecipientState } from './state.js';

export const STEP_SECONDS = { validate: 0.3, approve: 0.3, send: 0.4 };

/** Fee charged per recipient on completion, by kind and currency. BXC is free. */
const FEES: Record<'money' | 'airtime' | 'bank' | 'sms', Record<Currency, string>> = {
  money: { BXC: '0', UGX: '500', KES: '30' },
  airtime: { BXC: '0', UGX: '0', KES: '0' },
  bank: { BXC: '0', UGX: '5000', KES: '100' },
  sms: { BXC: '0', UGX: '50', KES: '1' },
};

/** States a payment ends in: nothing moves it on. */
const FINAL: ReadonlySet<PaymentState> = new Set(['processed', 'processed_with_errors', 'rejected', 'cancelled']);
/** States in which approvers decide. */
const AWAITING_APPROVAL: ReadonlySet<PaymentState> = new Set(['approval_needed', 'approval_requested']);
/** Recipient states that end a transfer. */
const RECIPIENT_DONE: ReadonlySet<RecipientState> = new Set(['complete', 'error', 'aborted']);

function feeFor(payment: Payment): Decimal {
  const kind = payment.bank ? 'bank' : payment.payment_type;
  const fee = new Decimal(FEES[kind][payment.currency]);
  return payment.send_sms_message ? fee.plus(FEES.sms[payment.currency]) : fee;
}

const total = (payment: Payment): Decimal => Decimal.sum(...payment.recipients.map((r) => r.amount));

/** Tells the organization the payment changed (its state, or a recipient's). */
function changed(ctx: SandboxContext, payment: Payment): void {
  payment.modified = ctx.clock.now();
  ctx.notifications.emit(
    payment.organization,
    'payment.status.changed',
    ctx.render.payment(payment, savedVersion(ctx, payment.organization)),
  );
}

function setState(ctx: SandboxContext, payment: Payment, state: PaymentState): void {
  payment.state = state;
  changed(ctx, payment);
}

function fail(recipient: Recipient, error: string, state: 'error' | 'aborted' = 'error'): void {
  recipient.state = state;
  recipient.last_error = error;
}

/** Runs `step` after `seconds`, unless the payment ended (cancelled, rejected) meanwhile. */
function later(ctx: SandboxContext, payment: Payment, seconds: number, step: () => void): void {
  ctx.clock.schedule(seconds, () => {
    if (!FINAL.has(payment.state)) step();
  });
}

/** The reason a recipient cannot be paid, or null. */
function checkRecipient(ctx: SandboxContext, payment: Payment, recipient: Recipient): string | null {
  if (payment.payment_type === 'airtime' || payment.bank) return null;
  const subscriber = lookupSubscriber(recipient.phonenumber);
  if (!subscriber.supported) return "The phone number's network is not supported.";
  if (!subscriber.registered) return 'The phone number is not registered for mobile money.';
  const org = ctx.state.organizations.get(payment.organization)!;
  if (!org.nameMatchAffectsPayment || recipient.verified_by_id || recipient.name.trim() === '') return null;
  if (nameMatchScore(recipient.name, subscriber.nameOnNetwork) < NAME_MATCH_THRESHOLD) {
    return `The name "${recipient.name}" does not match the name on the network ("${subscriber.nameOnNetwork}").`;
  }
  return null;
}

/**
 * Ends the payment once every recipient's transfer ended (processed, or processed_with_errors); until then
 * tells the recipients' change, the payment itself still waiting.
 */
function finishIfDone(ctx: SandboxContext, payment: Payment): void {
  if (!payment.recipients.every((r) => RECIPIENT_DONE.has(r.state))) return changed(ctx, payment);
  const errors = payment.recipients.filter((r) => r.state !== 'complete');
  payment.last_error = errors[0]?.last_error ?? null;
  payment.paused_reason = null;
  setState(ctx, payment, errors.length === 0 ? 'processed' : 'processed_with_errors');
}

function validateStep(ctx: SandboxContext, payment: Payment): void {
  const account = ctx.state.accounts.get(payment.account)!;
  const fee = feeFor(payment);
  const needed = total(payment).plus(fee.times(payment.recipients.length));
  if (account.balance.lt(needed)) {
    for (const r of payment.recipients)
      fail(r, `Insufficient funds: the ${account.currency} account holds ${money(account.balance)}.`);
    return finishIfDone(ctx, payment);
  }
  for (const r of payment.recipients) {
    const error = checkRecipient(ctx, payment, r);
    if (error) fail(r, error);
    else r.state = 'processing';
  }
  if (payment.recipients.every((r) => r.state === 'error')) return finishIfDone(ctx, payment);
  setState(ctx, payment, 'validated');
  later(ctx, payment, STEP_SECONDS.approve, () => approvalStep(ctx, payment));
}

/** (3) The organization's approval rules: above a rule's amount in the payment's currency, approvers decide. */
export function needsApproval(org: Organization, payment: Payment): boolean {
  return org.approvalRules.some((rule) => rule.currency === payment.currency && total(payment).gt(rule.above));
}

function approvalStep(ctx: SandboxContext, payment: Payment): void {
  const org = ctx.state.organizations.get(payment.organization)!;
  if (!needsApproval(org, payment)) return approve(ctx, payment);
  setState(ctx, payment, 'approval_needed');
  later(ctx, payment, STEP_SECONDS.approve, () => {
    if (payment.state === 'approval_needed') setState(ctx, payment, 'approval_requested');
  });
}

function approve(ctx: SandboxContext, payment: Payment): void {
  setState(ctx, payment, 'approved');
  const wait = (payment.start_date - ctx.clock.now()) / 1000;
  if (wait > STEP_SECONDS.send) {
    setState(ctx, payment, 'scheduled');
    later(ctx, payment, wait, () => sendStep(ctx, payment));
  } else {
    later(ctx, payment, STEP_SECONDS.send, () => sendStep(ctx, payment));
  }
}

/** Sends one recipient's money: debits the amount and the fee, or fails for want of funds. */
function complete(ctx: SandboxContext, payment: Payment, r: Recipient): void {
  const account = ctx.state.accounts.get(payment.account)!;
  const fee = feeFor(payment);
  if (account.balance.lt(r.amount.plus(fee))) {
    fail(r, `Insufficient funds: the ${account.currency} account holds ${money(account.balance)}.`);
    return;
  }
  account.balance = account.balance.minus(r.amount).minus(fee);
  account.modified = ctx.clock.now();
  payment.charged_fee = (payment.charged_fee ?? new Decimal(0)).plus(fee);
  payment.remote_transaction_id ??= `SBXP${String(payment.id).padStart(10, '0')}`;
  r.state = 'complete';
  r.last_error = null;
  if (payment.send_sms_message) sendSms(ctx, payment, r);
}

/** A recipient the network holds (`queued`, `paused`, `parked`) completes after its wait. */
function hold(ctx: SandboxContext, payment: Payment, r: Recipient, state: 'queued' | 'paused' | 'parked'): void {
  r.state = state;
  if (state === 'paused') payment.paused_reason = PAUSED_REASON;
  later(ctx, payment, WAIT_SECONDS[state], () => {
    if (r.state !== state) return;
    complete(ctx, payment, r);
    if (!payment.recipients.some((x) => x.state === 'paused')) payment.paused_reason = null;
    finishIfDone(ctx, payment);
  });
}

function sendStep(ctx: SandboxContext, payment: Payment): void {
  for (const r of payment.recipients.filter((x) => x.state === 'processing')) {
    const behaviour =
      payment.payment_type === 'airtime' || payment.bank ? 'registered' : lookupSubscriber(r.phonenumber).behaviour;
    if (behaviour === 'payment_fails') fail(r, NETWORK_FAILURE);
    else if (behaviour === 'payment_aborted') fail(r, NETWORK_ABORTED, 'aborted');
    else if (behaviour === 'payment_queued') hold(ctx, payment, r, 'queued');
    else if (behaviour === 'payment_paused') hold(ctx, payment, r, 'paused');
    else if (behaviour === 'payment_parked') hold(ctx, payment, r, 'parked');
    else if (behaviour === 'payment_needs_admin') r.state = 'paused_for_admin_action';
    else complete(ctx, payment, r);
  }
  // Some transfers may wait: the payment stays approved while its recipients' states say where they are.
  finishIfDone(ctx, payment);
}

/** The description as an SMS, with {firstname}, {fullname}, {phone} and {amount} filled in. */
function sendSms(ctx: SandboxContext, payment: Payment, r: Recipient): void {
  const contact = ctx.state.contacts.get(r.contact);
  const values: Record<string, string> = {
    firstname: contact?.first_name ?? '',
    fullname: `${contact?.first_name ?? ''} ${contact?.last_name ?? ''}`.trim(),
    phone: r.phonenumber,
    amount: `${payment.currency} ${money(r.amount)}`,
  };
  const text = r.description.replace(/\{(firstname|fullname|phone|amount)\}/g, (_, key: string) => values[key]!);
  recordSms(ctx, r.phonenumber, text);
}

/** Starts processing a payment just created (state `new`). */
export function startProcessing(ctx: SandboxContext, payment: Payment): void {
  later(ctx, payment, STEP_SECONDS.validate, () => validateStep(ctx, payment));
}

/** The web portal's decisions on a payment (sandbox controls). Each throws 409 when the state forbids it. */
export type PaymentDecision = 'approve' | 'reject' | 'cancel';

const conflict = (payment: Payment, what: string) =>
  detailError(409, `Payment ${payment.id} is ${payment.state}: it cannot be ${what} now.`);

/**
 * approve: a payment awaiting approval goes on (approved, then sent); a recipient waiting
 * `paused_for_admin_action` is released and sent. reject: a payment awaiting approval ends `rejected`.
 * cancel: a payment not yet final, none of whose recipients was paid, ends `cancelled`; transfers still
 * waiting are aborted. `by` is the portal user who decided (rejected_by, cancelled_by).
 */
export function decide(
  ctx: SandboxContext,
  payment: Payment,
  decision: PaymentDecision,
  input: { reason?: string; by: number },
): void {
  const now = ctx.clock.now();
  if (decision === 'approve') {
    if (AWAITING_APPROVAL.has(payment.state)) return approve(ctx, payment);
    const held = payment.recipients.filter((r) => r.state === 'paused_for_admin_action');
    if (held.length === 0) throw conflict(payment, 'approved');
    for (const r of held) complete(ctx, payment, r);
    return finishIfDone(ctx, payment);
  }
  if (decision === 'reject') {
    if (!AWAITING_APPROVAL.has(payment.state)) throw conflict(payment, 'rejected');
    payment.rejected = { reason: input.reason ?? '', time: now, by: input.by };
    for (const r of payment.recipients) if (!RECIPIENT_DONE.has(r.state)) r.state = 'aborted';
    return setState(ctx, payment, 'rejected');
  }
  if (FINAL.has(payment.state) || payment.recipients.some((r) => r.state === 'complete'))
    throw conflict(payment, 'cancelled');
  payment.cancelled = { reason: input.reason ?? '', time: now, by: input.by };
  payment.paused_reason = null;
  for (const r of payment.recipients) if (!RECIPIENT_DONE.has(r.state)) r.state = 'aborted';
  setState(ctx, payment, 'cancelled');
}
