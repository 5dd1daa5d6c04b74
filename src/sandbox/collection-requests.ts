/**
 * Collection requests: create (every rule of the spec's create table), get, list; the status machine on
 * the sandbox clock; matching of incoming collections.
 *
 * Statuses (the spec shows creation and expiry; the rest is the sandbox's choice):
 *   created, start_date in the future -> new --(start_date)--> pending
 *   created otherwise                 -> pending (201, as the spec's sample)
 *   pending --(a collection with the same amount, number and currency)--> successful (`collection` set)
 *   pending --(expiry_date reached)--> expired
 *   expired --(retry_interval_minutes, while retries < max_attempts)--> pending again, open as long as before
 * Each change emits collectionrequest.status.changed.
 * Choices: retry_interval_minutes is at least 10 (the create table's minimum); max_attempts (default 3,
 * at most 3) counts retries, so 0 disables them; `reason` is kept to 255 characters (networks may show
 * fewer than 20); BXC is refused (the test currency works only for outgoing payments); subscription
 * settings are validated and stored, the sandbox does not repeat requests by them.
 * SMS (controls.sms()): instructions when send_instructions is true (`instructions`, or the network's
 * default; `skip` sends none), and the success message with {amount} and {customer} plus SMS_SUFFIX.
 */
import type { Decimal } from 'decimal.js';
import { Router } from 'express';
import { z } from 'zod';
import { findOrCreateContact, verifyContact } from './contacts.js';
import { apiLocals, owned, recordSms, type SandboxContext } from './context.js';
import { currencySuits } from './directory.js';
import { FieldErrors, methodNotAllowed, validate } from './errors.js';
import { amount, boolean, incomingCurrency, jsonObject, metadata, optional, optionalInteger, optionalText, phone } from './fields.js';
import { amountExact, dateRange, exact, list, phoneExact, type Filters } from './listing.js';
import { money } from './render.js';
import type { Collection, CollectionRequest, CollectionRequestStatus, Currency, Organization } from './state.js';
import { parseWhen, WHEN_FORMATS } from './when.js';

const DEFAULT_EXPIRY = '24 hours';
const MIN_RETRY_INTERVAL_MINUTES = 10;
const MAX_ATTEMPTS = 3;
const SMS_SUFFIX = ' - sent by Sandbox Pay';

const FREQUENCIES = ['yearly', 'monthly', 'weekly', 'daily', 'hourly', 'minutely'] as const;
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

const createSchema = z.object({
  phonenumber: phone,
  first_name: optionalText(255),
  last_name: optionalText(255),
  amount,
  currency: incomingCurrency,
  account: optionalInteger,
  reason: optionalText(255),
  metadata,
  success_message: optionalText(140),
  send_instructions: boolean.optional(),
  instructions: optionalText(140),
  expiry_date: optionalText(50),
  start_date: optionalText(50),
  retry_interval_minutes: optionalInteger,
  max_attempts: optionalInteger,
  subscription_settings: optional(jsonObject),
});


/** subscription_settings: start_date and end_date `DD/MM/YYYY HH:MM:SS`, frequency, weekdays, months. */
function checkSubscription(settings: Record<string, unknown>, now: number, errors: FieldErrors): void {
  const field = (key: string) => `subscription_settings.${key}`;
  const date = (key: string) => {
    const v = settings[key];
    if (typeof v !== 'string' || v.trim() === '') return errors.add(field(key), 'This field is required.');
    const at = /^\d{1,2}\/\d{1,2}\/\d{4} \d{1,2}:\d{2}:\d{2}$/.test(v.trim()) ? parseWhen(v, now) : undefined;
    if (at === undefined) return errors.add(field(key), 'Enter a date as DD/MM/YYYY HH:MM:SS (UTC).');
    return at;
  };
  const start = date('start_date');
  const end = date('end_date');
  if (start !== undefined && start <= now) errors.add(field('start_date'), 'Must be in the future.');
  if (start !== undefined && end !== undefined && end <= start) errors.add(field('end_date'), 'Must be later than start_date.');
  const frequency = settings.frequency;
  if (frequency !== undefined && !FREQUENCIES.includes(frequency as (typeof FREQUENCIES)[number])) {
    errors.add(field('frequency'), `Choose one of ${FREQUENCIES.join(', ')}.`);
  }
  for (const [key, names] of [
    ['weekdays', WEEKDAYS],
    ['months', MONTHS],
  ] as const) {
    const v = settings[key];
    if (v === undefined) continue;
    const bad = typeof v !== 'string' || v.split(',').some((n) => !names.includes(n.trim().toLowerCase()));
    if (bad) errors.add(field(key), `Give comma-separated ${key === 'weekdays' ? 'day' : 'month'} names.`);
  }
}

function setStatus(ctx: SandboxContext, request: CollectionRequest, status: CollectionRequestStatus): void {
  request.status = status;
  request.modified = ctx.clock.now();
  ctx.notifications.emit(request.organization, 'collectionrequest.status.changed', ctx.render.collectionRequest(request));
}

/** Opens an attempt: pending until expiry_date; instructions by SMS when asked. */
function open(ctx: SandboxContext, request: CollectionRequest, announce: boolean): void {
  if (announce) setStatus(ctx, request, 'pending');
  if (request.send_instructions && request.instructions !== 'skip') {
    recordSms(
      ctx,
      request.phonenumber,
      request.instructions ??
        `Dial *165# and approve the payment of ${request.currency} ${money(request.amount)} to ${request.reason} (code ${request.mfscode}).`,
    );
  }
  const attempt = request.retries;
  ctx.clock.schedule((request.expiry_date - ctx.clock.now()) / 1000, () => {
    if (request.status === 'pending' && request.retries === attempt) expire(ctx, request);
  });
}

function expire(ctx: SandboxContext, request: CollectionRequest): void {
  setStatus(ctx, request, 'expired');
  if (request.retry_interval_minutes === null || request.retries >= request.max_attempts) return;
  ctx.clock.schedule(request.retry_interval_minutes * 60, () => {
    if (request.status !== 'expired') return;
    request.retries += 1;
    request.expiry_date = ctx.clock.now() + request.open_ms;
    open(ctx, request, true);
  });
}

export function createCollectionRequest(ctx: SandboxContext, org: Organization, body: unknown): CollectionRequest {
  const input = validate(createSchema, body);
  const now = ctx.clock.now();
  const errors = new FieldErrors();
  if (!currencySuits(input.currency, input.phonenumber)) {
    errors.add('currency', `${input.currency} does not suit ${input.phonenumber}: no currency conversion is done.`);
  }
  const account =
    input.account === undefined ? ctx.state.accountFor(org.id, input.currency as Currency) : ctx.state.accounts.get(input.account);
  if (!account || account.organization !== org.id || account.status !== 'active') {
    errors.add(input.account === undefined ? 'currency' : 'account', `No active ${input.currency} wallet to collect into.`);
  } else if (account.currency !== input.currency) {
    errors.add('account', `The account's currency (${account.currency}) is not ${input.currency}.`);
  }
  const when = (field: 'start_date' | 'expiry_date', text: string | undefined) => {
    if (text === undefined) return undefined;
    const at = parseWhen(text, now);
    if (at === undefined) errors.add(field, `Enter a date as ${WHEN_FORMATS}.`);
    else if (at <= now) errors.add(field, 'Must be later than the creation time.');
    return at;
  };
  const start = when('start_date', input.start_date);
  const expiry = when('expiry_date', input.expiry_date ?? DEFAULT_EXPIRY);
  if (start !== undefined && expiry !== undefined && expiry <= start) errors.add('expiry_date', 'Must be later than start_date.');
  if (input.retry_interval_minutes !== undefined && input.retry_interval_minutes < MIN_RETRY_INTERVAL_MINUTES) {
    errors.add('retry_interval_minutes', `Ensure this value is greater than or equal to ${MIN_RETRY_INTERVAL_MINUTES}.`);
  }
  if (input.max_attempts !== undefined && (input.max_attempts < 0 || input.max_attempts > MAX_ATTEMPTS)) {
    errors.add('max_attempts', `Ensure this value is between 0 and ${MAX_ATTEMPTS}.`);
  }
  if (input.subscription_settings) checkSubscription(input.subscription_settings, now, errors);
  errors.throwIfAny();

  const { contact } = findOrCreateContact(ctx, org, {
    phone_number: input.phonenumber,
    first_name: input.first_name ?? 'Anonymous',
    last_name: input.last_name ?? 'Contact',
  });
  verifyContact(ctx, contact);
  const id = ctx.state.nextId('request');
  const request: CollectionRequest = {
    id,
    organization: org.id,
    amount: input.amount,
    currency: input.currency as Currency,
    account: account!.id,
    phonenumber: input.phonenumber,
    mfscode: String(100000 + ((id * 7919) % 900000)),
    contact: contact.id,
    reason: input.reason ?? org.name,
    metadata: input.metadata ?? {},
    collection: null,
    success_message: input.success_message ?? null,
    instructions: input.instructions ?? null,
    send_instructions: input.send_instructions ?? false,
    status: start === undefined ? 'pending' : 'new',
    error_message: '',
    expiry_date: expiry!,
    start_date: start ?? null,
    retry_interval_minutes: input.retry_interval_minutes ?? null,
    max_attempts: input.max_attempts ?? MAX_ATTEMPTS,
    retries: 0,
    open_ms: expiry! - (start ?? now),
    subscription_settings: input.subscription_settings ? JSON.stringify(input.subscription_settings) : null,
    created: now,
    modified: now,
  };
  ctx.state.requests.set(id, request);
  if (start === undefined) open(ctx, request, false);
  else ctx.clock.schedule((start - now) / 1000, () => open(ctx, request, true));
  return request;
}

/** The oldest pending request matching an incoming collection by amount, number and currency. */
export function findOpenRequest(ctx: SandboxContext, c: { phonenumber: string; amount: Decimal; currency: Currency }): CollectionRequest | undefined {
  return [...ctx.state.requests.values()]
    .filter((r) => r.status === 'pending' && r.phonenumber === c.phonenumber && r.currency === c.currency && r.amount.eq(c.amount))
    .sort((a, b) => a.created - b.created || a.id - b.id)[0];
}

/** Marks the request fulfilled by the collection, with its success SMS. */
export function fulfil(ctx: SandboxContext, request: CollectionRequest, collection: Collection): void {
  request.collection = collection.id;
  const contact = ctx.state.contacts.get(request.contact);
  const customer = contact ? `${contact.first_name} ${contact.last_name}` : request.phonenumber;
  const amountText = `${request.currency} ${money(request.amount)}`;
  const message = request.success_message ?? `Thank you {customer}: {amount} received by ${request.reason}.`;
  recordSms(ctx, request.phonenumber, message.replaceAll('{amount}', amountText).replaceAll('{customer}', customer) + SMS_SUFFIX);
  setStatus(ctx, request, 'successful');
}

function filters(ctx: SandboxContext): Filters<CollectionRequest> {
  const contactOf = (r: CollectionRequest) => ctx.state.contacts.get(r.contact);
  return {
    amount: amountExact((r) => r.amount),
    currency: exact((r) => r.currency),
    collection: exact((r) => r.collection),
    phonenumber: phoneExact((r) => r.phonenumber),
    remote_transaction_id: exact((r) => (r.collection === null ? null : ctx.state.collections.get(r.collection)?.remote_transaction_id)),
    ...dateRange('created', (r) => r.created),
    ...dateRange('modified', (r) => r.modified),
    status: exact((r) => r.status),
    reason: exact((r) => r.reason),
    contact_first_name: exact((r) => contactOf(r)?.first_name),
    contact_last_name: exact((r) => contactOf(r)?.last_name),
  };
}

export function collectionRequestsRouter(ctx: SandboxContext): Router {
  const router = Router();
  const requestFilters = filters(ctx);
  router
    .route('/collectionrequests')
    .get((req, res) => {
      const { org } = apiLocals(res);
      const mine = [...ctx.state.requests.values()].filter((r) => r.organization === org.id);
      res.json(list(req, mine, requestFilters, (r) => ctx.render.collectionRequest(r)));
    })
    .post((req, res) => {
      res.status(201).json(ctx.render.collectionRequest(createCollectionRequest(ctx, apiLocals(res).org, req.body)));
    })
    .all(methodNotAllowed('GET', 'POST'));
  router
    .route('/collectionrequests/:id')
    .get((req, res) => {
      res.json(ctx.render.collectionRequest(owned(ctx.state.requests, req.params.id, apiLocals(res).org)));
    })
    .all(methodNotAllowed('GET'));
  return router;
}
