/**
 * How a payment moves on, in the spec's processing order, on the sandbox clock. The spec shows only the
 * creation state (`new`); the sandbox's state machine is:
 *
 *   new --(STEP_SECONDS.validate)--> validated        (1) funds, (2) registration and name check
 *       \-> processed_with_errors                      funds short, or no recipient passed the checks
 *   validated --(approve)--> approved                  (3) no approval rules are configured: auto-approved
 *   approved --> scheduled (start_date in the future) --> at start_date, sent
 *   approved --(send)--> processed                     (4) every recipient complete
 *                   \--> processed_with_errors         any recipient in error; last_error says why
 *
 * Recipient entries go new -> processing (checks passed) -> complete | error, each with its last_error.
 * Every state change emits payment.status.changed with the payment (metadata included).
 * On completion: the account is debited the amount and charged_fee, and remote_transaction_id is set,
 * formatted `SBXP` + the payment id in 10 digits (`SBXP0000000042`).
 * Name check (rule 3): runs when a name was given or the contact has one, and only decides the payment
 * when the organization's `Name match affects payment` is on. Kenyan recipients given with national_id and
 * national_id_type are verified by id instead (rule 4): the sandbox accepts the id.
 */
import { Decimal } from 'decimal.js';
import { recordSms, savedVersion, type SandboxContext } from './context.js';
import { lookupSubscriber, NAME_MATCH_THRESHOLD, nameMatchScore, NETWORK_FAILURE } from './directory.js';
import { money } from './render.js';
import type { Currency, Payment, PaymentState, Recipient } from './state.js';

export const STEP_SECONDS = { validate: 0.3, approve: 0.3, send: 0.4 };

/** Fee charged per recipient on completion, by kind and currency. BXC is free. */
const FEES: Record<'money' | 'airtime' | 'bank' | 'sms', Record<Currency, string>> = {
  money: { BXC: '0', UGX: '500', KES: '30' },
  airtime: { BXC: '0', UGX: '0', KES: '0' },
  bank: { BXC: '0', UGX: '5000', KES: '100' },
  sms: { BXC: '0', UGX: '50', KES: '1' },
};

function feeFor(payment: Payment): Decimal {
  const kind = payment.bank ? 'bank' : payment.payment_type;
  const fee = new Decimal(FEES[kind][payment.currency]);
  return payment.send_sms_message ? fee.plus(FEES.sms[payment.currency]) : fee;
}

function setState(ctx: SandboxContext, payment: Payment, state: PaymentState): void {
  payment.state = state;
  payment.modified = ctx.clock.now();
  ctx.notifications.emit(payment.organization, 'payment.status.changed', ctx.render.payment(payment, savedVersion(ctx, payment.organization)));
}

function fail(recipient: Recipient, error: string): void {
  recipient.state = 'error';
  recipient.last_error = error;
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

function finish(ctx: SandboxContext, payment: Payment): void {
  const errors = payment.recipients.filter((r) => r.state === 'error');
  payment.last_error = errors[0]?.last_error ?? null;
  setState(ctx, payment, errors.length === 0 ? 'processed' : 'processed_with_errors');
}

function validateStep(ctx: SandboxContext, payment: Payment): void {
  const account = ctx.state.accounts.get(payment.account)!;
  const fee = feeFor(payment);
  const total = payment.recipients.reduce((sum, r) => sum.plus(r.amount).plus(fee), new Decimal(0));
  if (account.balance.lt(total)) {
    for (const r of payment.recipients) fail(r, `Insufficient funds: the ${account.currency} account holds ${money(account.balance)}.`);
    return finish(ctx, payment);
  }
  for (const r of payment.recipients) {
    const error = checkRecipient(ctx, payment, r);
    if (error) fail(r, error);
    else r.state = 'processing';
  }
  if (payment.recipients.every((r) => r.state === 'error')) return finish(ctx, payment);
  setState(ctx, payment, 'validated');
  ctx.clock.schedule(STEP_SECONDS.approve, () => approveStep(ctx, payment));
}

function approveStep(ctx: SandboxContext, payment: Payment): void {
  setState(ctx, payment, 'approved');
  const wait = (payment.start_date - ctx.clock.now()) / 1000;
  if (wait > STEP_SECONDS.send) {
    setState(ctx, payment, 'scheduled');
    ctx.clock.schedule(wait, () => sendStep(ctx, payment));
  } else {
    ctx.clock.schedule(STEP_SECONDS.send, () => sendStep(ctx, payment));
  }
}

function sendStep(ctx: SandboxContext, payment: Payment): void {
  const account = ctx.state.accounts.get(payment.account)!;
  const fee = feeFor(payment);
  let charged = new Decimal(0);
  for (const r of payment.recipients.filter((x) => x.state === 'processing')) {
    if (lookupSubscriber(r.phonenumber).behaviour === 'payment_fails') {
      fail(r, NETWORK_FAILURE);
      continue;
    }
    if (account.balance.lt(r.amount.plus(fee))) {
      fail(r, `Insufficient funds: the ${account.currency} account holds ${money(account.balance)}.`);
      continue;
    }
    account.balance = account.balance.minus(r.amount).minus(fee);
    account.modified = ctx.clock.now();
    charged = charged.plus(fee);
    r.state = 'complete';
    if (payment.send_sms_message) sendSms(ctx, payment, r);
  }
  if (payment.recipients.some((r) => r.state === 'complete')) {
    payment.charged_fee = charged;
    payment.remote_transaction_id = `SBXP${String(payment.id).padStart(10, '0')}`;
  }
  finish(ctx, payment);
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
  ctx.clock.schedule(STEP_SECONDS.validate, () => validateStep(ctx, payment));
}
