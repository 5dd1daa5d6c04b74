/**
 * Payments: create (single, `recipient_data` bulk, airtime, bank), get, list. Creation checks every rule
 * of the spec's create table and answers 201 with the payment in state `new`; processing then moves it on
 * (payment-processing.ts). A `recipient_data` call makes one payment whose recipient entries (`phone_nos`)
 * share one schedule (`batch_id`), so bulk operations apply to them together.
 */
import { Decimal } from 'decimal.js';
import { Router } from 'express';
import { z } from 'zod';
import { BANKS } from './banks.js';
import { findOrCreateContact } from './contacts.js';
import { apiLocals, owned, type SandboxContext } from './context.js';
import { currencySuits, lookupSubscriber } from './directory.js';
import { FieldErrors, methodNotAllowed, validate } from './errors.js';
import {
  amount,
  boolean,
  code,
  currency,
  email,
  metadata,
  nationalIdType,
  optional,
  optionalInteger,
  optionalText,
  parseJsonText,
  phone,
  REQUIRED,
  stringMetadata,
  text,
} from './fields.js';
import { amountExact, dateRange, exact, list, phoneExact, type Filters } from './listing.js';
import { startProcessing } from './payment-processing.js';
import type { Account, BankDetails, Currency, Organization, Payment, Recipient, Version } from './state.js';
import { parseWhen, WHEN_FORMATS } from './when.js';

const nationalId = optional(code.pipe(z.string().min(1).max(50, 'Ensure this field has no more than 50 characters.')));

const recipientSchema = z.object({
  phonenumber: phone,
  amount: optional(amount),
  first_name: optionalText(255),
  last_name: optionalText(255),
  national_id: nationalId,
  national_id_type: nationalIdType,
  description: optionalText(140),
  metadata,
});

const recipientList = z.preprocess(
  parseJsonText,
  z.array(recipientSchema, { error: 'Expected a JSON list of recipients.' }).min(1, 'Give at least one recipient.'),
);

export const paymentCreateSchema = z.object({
  phonenumber: optional(phone),
  payment_type: optional(z.enum(['money', 'airtime'], { error: (i) => `"${String(i.input)}" is not a valid choice.` })),
  amount: optional(amount),
  currency: optional(currency),
  account: optionalInteger,
  description: text(140),
  callback_url: optionalText(500),
  metadata: stringMetadata(10),
  first_name: optionalText(255),
  last_name: optionalText(255),
  national_id: nationalId,
  national_id_type: nationalIdType,
  send_sms_message: optional(boolean),
  start_date: optionalText(50),
  recipient_data: optional(recipientList),
  bank: optionalInteger,
  account_number: optional(code.pipe(z.string().regex(/^\d{5,20}$/, 'Enter the account number: 5 to 20 digits.'))),
  account_name: optionalText(255),
  email,
});

type CreateInput = z.output<typeof paymentCreateSchema>;

function resolveAccount(
  ctx: SandboxContext,
  org: Organization,
  input: CreateInput,
  errors: FieldErrors,
): Account | undefined {
  if (input.account !== undefined) {
    const account = ctx.state.accounts.get(input.account);
    if (!account || account.organization !== org.id)
      errors.add('account', `Invalid pk "${input.account}" - object does not exist.`);
    else if (account.status !== 'active') errors.add('account', 'The account is not active.');
    else if (input.currency && input.currency !== account.currency) {
      errors.add('account', `The account's currency (${account.currency}) is not ${input.currency}.`);
    } else return account;
    return undefined;
  }
  if (!input.currency) {
    errors.add('currency', 'One of currency or account is required.');
    return undefined;
  }
  const account = ctx.state.accountFor(org.id, input.currency);
  if (!account) errors.add('currency', `The organization has no active ${input.currency} account.`);
  return account;
}

function resolveBank(input: CreateInput, currencyCode: Currency | undefined, errors: FieldErrors): BankDetails | null {
  const given = ['bank', 'account_number', 'account_name', 'email'] as const;
  if (given.every((k) => input[k] === undefined)) return null;
  for (const k of given) if (input[k] === undefined) errors.add(k, `${REQUIRED.slice(0, -1)} for bank payments.`);
  const bank = BANKS.find((b) => b.id === input.bank);
  if (input.bank !== undefined && !bank)
    errors.add('bank', `Invalid pk "${input.bank}" - object does not exist (see /api/banks).`);
  if (bank && currencyCode && currencyCode !== 'BXC' && bank.currency !== currencyCode) {
    errors.add('bank', `${bank.name} does not take ${currencyCode}.`);
  }
  if (input.recipient_data) errors.add('recipient_data', 'Bank payments take one recipient.');
  return bank && input.account_number && input.account_name && input.email
    ? { bank: bank.id, account_number: input.account_number, account_name: input.account_name, email: input.email }
    : null;
}

/** Recipient entries of the request (recipient_data, or the single phonenumber), before contacts exist. */
function recipientInputs(input: CreateInput, errors: FieldErrors) {
  if (input.recipient_data) {
    return input.recipient_data.map((r, i) => {
      const entryAmount = r.amount ?? input.amount;
      if (!entryAmount) errors.add(`recipient_data.${i}.amount`, 'Give an amount here or at the top level.');
      return { ...r, amount: entryAmount ?? new Decimal(0), description: r.description ?? input.description };
    });
  }
  if (!input.phonenumber) errors.add('phonenumber', REQUIRED);
  if (!input.amount) errors.add('amount', REQUIRED);
  if (!input.phonenumber || !input.amount) return [];
  return [
    {
      phonenumber: input.phonenumber,
      amount: input.amount,
      first_name: input.first_name,
      last_name: input.last_name,
      national_id: input.national_id,
      national_id_type: input.national_id_type,
      description: input.description,
      metadata: undefined,
    },
  ];
}

export function createPayment(ctx: SandboxContext, org: Organization, version: Version, body: unknown): Payment {
  const input = validate(paymentCreateSchema, body);
  const errors = new FieldErrors();
  const account = resolveAccount(ctx, org, input, errors);
  const bank = resolveBank(input, account?.currency, errors);
  const entries = recipientInputs(input, errors);
  entries.forEach((r, i) => {
    const field = input.recipient_data ? `recipient_data.${i}.phonenumber` : 'phonenumber';
    if (account && !currencySuits(account.currency, r.phonenumber)) {
      errors.add(field, `${account.currency} does not suit ${r.phonenumber}: no currency conversion is done.`);
    }
    if (r.national_id && !r.national_id_type) {
      errors.add(
        input.recipient_data ? `recipient_data.${i}.national_id_type` : 'national_id_type',
        'Required with national_id.',
      );
    }
  });
  const now = ctx.clock.now();
  let startDate = now;
  if (input.start_date !== undefined) {
    const at = parseWhen(input.start_date, now);
    if (at === undefined) errors.add('start_date', `Enter a date as ${WHEN_FORMATS}.`);
    else startDate = at;
  }
  errors.throwIfAny();

  const recipients: Recipient[] = entries.map((r) => {
    const { contact } = findOrCreateContact(ctx, org, {
      phone_number: r.phonenumber,
      first_name: r.first_name ?? '',
      last_name: r.last_name ?? '',
      national_id: r.national_id,
      national_id_type: r.national_id_type,
    });
    const given = `${r.first_name ?? ''} ${r.last_name ?? ''}`.trim();
    return {
      phonenumber: r.phonenumber,
      amount: r.amount,
      description: r.description,
      metadata: r.metadata ?? null,
      state: 'new',
      last_error: null,
      contact: contact.id,
      name: given || `${contact.first_name} ${contact.last_name}`.trim(),
      verified_by_id: Boolean(r.national_id && r.national_id_type) && r.phonenumber.startsWith('+254'),
    };
  });
  const payment: Payment = {
    id: ctx.state.nextId('payment'),
    organization: org.id,
    payment_type: input.payment_type ?? 'money',
    currency: account!.currency,
    account: account!.id,
    description: input.description,
    recipients,
    batch_id: ctx.state.nextId('batch'),
    start_date: startDate,
    metadata: input.metadata ?? null,
    state: 'new',
    last_error: null,
    rejected: null,
    cancelled: null,
    paused_reason: null,
    remote_transaction_id: null,
    send_sms_message: input.send_sms_message ?? false,
    charged_fee: null,
    // callback_url exists only below v5 and has no effect (callbacks are webhooks).
    callback_url: Number(version.slice(1)) < 5 ? (input.callback_url ?? null) : null,
    bank,
    created: now,
    modified: now,
  };
  ctx.state.payments.set(payment.id, payment);
  startProcessing(ctx, payment);
  return payment;
}

const networkOf = (p: Payment) => p.recipients.map((r) => lookupSubscriber(r.phonenumber).network);
const contactsOf = (ctx: SandboxContext, p: Payment) => p.recipients.map((r) => ctx.state.contacts.get(r.contact));

export function paymentFilters(ctx: SandboxContext): Filters<Payment> {
  const anyOf = (values: (string | undefined | null)[], v: string) => values.some((x) => x === v);
  return {
    amount: amountExact((p) => Decimal.sum(...p.recipients.map((r) => r.amount))),
    currency: exact((p) => p.currency),
    payment_type: exact((p) => p.payment_type),
    payment_id: exact((p) => p.id),
    phonenumber: phoneExact((p) => p.recipients.map((r) => r.phonenumber)),
    remote_transaction_id: exact((p) => p.remote_transaction_id),
    ...dateRange('created', (p) => p.created),
    ...dateRange('modified', (p) => p.modified),
    payment_state: (p, v) =>
      anyOf(
        p.recipients.map((r) => r.state),
        v,
      ),
    state: exact((p) => p.state),
    paused_reason: exact((p) => p.paused_reason),
    network: (p, v) => anyOf(networkOf(p), v),
    contact_first_name: (p, v) =>
      anyOf(
        contactsOf(ctx, p).map((c) => c?.first_name),
        v,
      ),
    contact_last_name: (p, v) =>
      anyOf(
        contactsOf(ctx, p).map((c) => c?.last_name),
        v,
      ),
  };
}

export function paymentsRouter(ctx: SandboxContext): Router {
  const router = Router();
  const filters = paymentFilters(ctx);
  router
    .route('/payments')
    .get((req, res) => {
      const { org, version } = apiLocals(res);
      const mine = [...ctx.state.payments.values()].filter((p) => p.organization === org.id);
      res.json(list(req, mine, filters, (p) => ctx.render.payment(p, version)));
    })
    .post((req, res) => {
      const { org, version } = apiLocals(res);
      res.status(201).json(ctx.render.payment(createPayment(ctx, org, version, req.body), version));
    })
    .all(methodNotAllowed('GET', 'POST'));
  router
    .route('/payments/:id')
    .get((req, res) => {
      const { org, version } = apiLocals(res);
      res.json(ctx.render.payment(owned(ctx.state.payments, req.params.id, org), version));
    })
    .all(methodNotAllowed('GET'));
  return router;
}
