/**
 * Collection requests: create (every rule of the spec's create table), get, list; the status machine on
 * the sandbox clock; matching of incoming collections; recurring series.
 *
 * Statuses, in the order the spec lists and implies (the spec shows creation and expiry):
 *   created, start_date in the future (or a recurring series) -> new --(start)--> pending
 *   created otherwise                 -> pending (201, as the spec's sample)
 *   pending --(send_instructions, unless instructions is `skip`; INSTRUCTIONS_SECONDS)--> instructions_sent (SMS)
 *   pending | instructions_sent --(the subscriber pays: a matching collection, or the `pays_requests` number
 *       after WAIT_SECONDS.prompt)--> processing_started --> successful (`collection` set)
 *   pending | instructions_sent --(the `collection_fails` number)--> processing_started --> failed
 *       (error_message; a `failed` collection is recorded); processing_started --(the organization's
 *       verification rejects the collection)--> failed
 *   pending | instructions_sent --(expiry_date reached)--> expired
 *   failed | expired --(retry_interval_minutes, while retries < max_attempts)--> pending, open as long as before
 *   successful --(its collection reversed)--> reversed
 * Each change emits collectionrequest.status.changed.
 * Recurring (`subscription_settings`, recurrence.ts): the request made is the series' first occurrence,
 * `new` until the series' start_date; each later occurrence is a new request (same phone, amount, reason,
 * metadata, instructions, retries, open as long) made at its time, with its own notifications.
 * Choices: see RETRY_INTERVAL_MIN_MINUTES and MAX_REQUEST_ATTEMPTS (src/momo/assumptions.ts); `reason` is
 * kept to REQUEST_REASON_MAX_LENGTH characters (networks may show fewer than 20); the default expiry is 24
 * hours after the request opens (its start); BXC is refused (the test currency works only for outgoing
 * payments).
 * SMS (controls.sms()): instructions when instructions_sent (`instructions`, or the network's default), and
 * the success message with {amount} and {customer} plus SMS_SUFFIX.
 */
import type { Decimal } from 'decimal.js';
import { Router } from 'express';
import { z } from 'zod';
import { MAX_REQUEST_ATTEMPTS, REQUEST_REASON_MAX_LENGTH, RETRY_INTERVAL_MIN_MINUTES } from '../momo/assumptions.js';
import { receiveCollection } from './collections.js';
import { findOrCreateContact, verifyContact } from './contacts.js';
import { apiLocals, owned, recordSms, type SandboxContext } from './context.js';
import { currencySuits, lookupSubscriber, PAYER_SHORT, WAIT_SECONDS } from './directory.js';
import { FieldErrors, methodNotAllowed, validate } from './errors.js';
import {
  amount,
  boolean,
  incomingCurrency,
  jsonObject,
  metadata,
  optional,
  optionalInteger,
  optionalText,
  phone,
} from './fields.js';
import { amountExact, dateRange, exact, list, phoneExact, type Filters } from './listing.js';
import { occurrences, readRecurrence, type Recurrence } from './recurrence.js';
import { money } from './render.js';
import type { Collection, CollectionRequest, CollectionRequestStatus, Currency, Organization } from './state.js';
import { parseWhen, WHEN_FORMATS } from './when.js';

const DEFAULT_OPEN_MS = 24 * 3600 * 1000;
const SMS_SUFFIX = ' - sent by Sandbox Pay';
/** Seconds from a request opening to its instructions going out. */
const INSTRUCTIONS_SECONDS = 1;

export const requestCreateSchema = z.object({
  phonenumber: phone,
  first_name: optionalText(255),
  last_name: optionalText(255),
  amount,
  currency: incomingCurrency,
  account: optionalInteger,
  reason: optionalText(REQUEST_REASON_MAX_LENGTH),
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

/** Statuses in which a request waits for the subscriber's money. */
const OPEN: ReadonlySet<CollectionRequestStatus> = new Set(['pending', 'instructions_sent', 'processing_started']);

function setStatus(ctx: SandboxContext, request: CollectionRequest, status: CollectionRequestStatus): void {
  request.status = status;
  request.modified = ctx.clock.now();
  ctx.notifications.emit(
    request.organization,
    'collectionrequest.status.changed',
    ctx.render.collectionRequest(request),
  );
}

/** Runs `step` after `seconds` if the request is still in the attempt it was in (no retry, no outcome since). */
function duringAttempt(ctx: SandboxContext, request: CollectionRequest, seconds: number, step: () => void): void {
  const attempt = request.retries;
  ctx.clock.schedule(seconds, () => {
    if (request.retries === attempt && OPEN.has(request.status)) step();
  });
}

/** Opens an attempt: pending until expiry_date; instructions; the directory's payers answer. */
function open(ctx: SandboxContext, request: CollectionRequest, announce: boolean): void {
  if (announce) setStatus(ctx, request, 'pending');
  if (request.send_instructions && request.instructions !== 'skip') {
    duringAttempt(ctx, request, INSTRUCTIONS_SECONDS, () => {
      if (request.status !== 'pending') return;
      recordSms(
        ctx,
        request.phonenumber,
        request.instructions ??
          `Dial *165# and approve the payment of ${request.currency} ${money(request.amount)} to ${request.reason} (code ${request.mfscode}).`,
      );
      setStatus(ctx, request, 'instructions_sent');
    });
  }
  const payer = lookupSubscriber(request.phonenumber).behaviour;
  if (payer === 'pays_requests' || payer === 'collection_fails') {
    duringAttempt(ctx, request, WAIT_SECONDS.prompt, () => {
      setStatus(ctx, request, 'processing_started');
      // The subscriber confirmed: the network moves the money (receiveCollection, in collections.ts).
      const paid = receiveCollection(ctx, request.organization, {
        phonenumber: request.phonenumber,
        amount: money(request.amount),
        currency: request.currency,
        reference: request.reason,
        organization: request.organization,
      });
      void ctx.clock.track(paid).catch((err: unknown) => ctx.log.error({ err }, 'sandbox subscriber payment failed'));
    });
  }
  duringAttempt(ctx, request, (request.expiry_date - ctx.clock.now()) / 1000, () => {
    if (request.status !== 'processing_started') end(ctx, request, 'expired');
  });
}

/** The attempt ends unpaid (`failed` or `expired`); another opens after retry_interval_minutes while retries remain. */
function end(ctx: SandboxContext, request: CollectionRequest, status: 'failed' | 'expired', error = ''): void {
  request.error_message = error;
  setStatus(ctx, request, status);
  if (request.retry_interval_minutes === null || request.retries >= request.max_attempts) return;
  ctx.clock.schedule(request.retry_interval_minutes * 60, () => {
    if (request.status !== status) return;
    request.retries += 1;
    request.error_message = '';
    request.expiry_date = ctx.clock.now() + request.open_ms;
    open(ctx, request, true);
  });
}

/** The subscriber's money did not come (a short wallet, by default): the request's attempt fails. */
export function requestFailed(ctx: SandboxContext, request: CollectionRequest, error = PAYER_SHORT): void {
  if (request.status !== 'processing_started') setStatus(ctx, request, 'processing_started');
  end(ctx, request, 'failed', error);
}

/** Makes the series' later occurrences, each at its time, as new requests. */
function repeat(ctx: SandboxContext, first: CollectionRequest, recurrence: Recurrence): void {
  const times = occurrences(recurrence);
  times.next(); // the first occurrence is the request made
  const scheduleNext = () => {
    const next = times.next();
    if (next.done) return;
    ctx.clock.schedule((next.value - ctx.clock.now()) / 1000, () => {
      const now = ctx.clock.now();
      const id = ctx.state.nextId('request');
      const occurrence: CollectionRequest = {
        ...first,
        id,
        mfscode: mfscodeOf(id),
        metadata: structuredClone(first.metadata),
        collection: null,
        status: 'pending',
        error_message: '',
        expiry_date: now + first.open_ms,
        start_date: now,
        retries: 0,
        series: first.id,
        created: now,
        modified: now,
      };
      ctx.state.requests.set(id, occurrence);
      setStatus(ctx, occurrence, 'pending');
      open(ctx, occurrence, false);
      scheduleNext();
    });
  };
  scheduleNext();
}

const mfscodeOf = (id: number): string => String(100000 + ((id * 7919) % 900000));

export function createCollectionRequest(ctx: SandboxContext, org: Organization, body: unknown): CollectionRequest {
  const input = validate(requestCreateSchema, body);
  const now = ctx.clock.now();
  const errors = new FieldErrors();
  if (!currencySuits(input.currency, input.phonenumber)) {
    errors.add('currency', `${input.currency} does not suit ${input.phonenumber}: no currency conversion is done.`);
  }
  const account =
    input.account === undefined
      ? ctx.state.accountFor(org.id, input.currency as Currency)
      : ctx.state.accounts.get(input.account);
  if (!account || account.organization !== org.id || account.status !== 'active') {
    errors.add(
      input.account === undefined ? 'currency' : 'account',
      `No active ${input.currency} wallet to collect into.`,
    );
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
  const recurrence = input.subscription_settings ? readRecurrence(input.subscription_settings, now, errors) : undefined;
  // A series opens at its start_date; a request's own start_date, when later, still holds.
  const start = Math.max(when('start_date', input.start_date) ?? 0, recurrence?.start ?? 0) || undefined;
  const expiry = when('expiry_date', input.expiry_date) ?? (start ?? now) + DEFAULT_OPEN_MS;
  if (start !== undefined && expiry <= start) errors.add('expiry_date', 'Must be later than start_date.');
  if (input.retry_interval_minutes !== undefined && input.retry_interval_minutes < RETRY_INTERVAL_MIN_MINUTES) {
    errors.add(
      'retry_interval_minutes',
      `Ensure this value is greater than or equal to ${RETRY_INTERVAL_MIN_MINUTES}.`,
    );
  }
  if (input.max_attempts !== undefined && (input.max_attempts < 0 || input.max_attempts > MAX_REQUEST_ATTEMPTS)) {
    errors.add('max_attempts', `Ensure this value is between 0 and ${MAX_REQUEST_ATTEMPTS}.`);
  }
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
    mfscode: mfscodeOf(id),
    contact: contact.id,
    reason: input.reason ?? org.name,
    metadata: input.metadata ?? {},
    collection: null,
    success_message: input.success_message ?? null,
    instructions: input.instructions ?? null,
    send_instructions: input.send_instructions ?? false,
    status: start === undefined ? 'pending' : 'new',
    error_message: '',
    expiry_date: expiry,
    start_date: start ?? null,
    retry_interval_minutes: input.retry_interval_minutes ?? null,
    max_attempts: input.max_attempts ?? MAX_REQUEST_ATTEMPTS,
    retries: 0,
    series: null,
    open_ms: expiry - (start ?? now),
    subscription_settings: input.subscription_settings ? JSON.stringify(input.subscription_settings) : null,
    created: now,
    modified: now,
  };
  ctx.state.requests.set(id, request);
  if (start === undefined) open(ctx, request, false);
  else ctx.clock.schedule((start - now) / 1000, () => open(ctx, request, true));
  if (recurrence) repeat(ctx, request, recurrence);
  return request;
}

/** The oldest open request matching an incoming collection by amount, number and currency. */
export function findOpenRequest(
  ctx: SandboxContext,
  c: { phonenumber: string; amount: Decimal; currency: Currency },
): CollectionRequest | undefined {
  return [...ctx.state.requests.values()]
    .filter(
      (r) =>
        OPEN.has(r.status) && r.phonenumber === c.phonenumber && r.currency === c.currency && r.amount.eq(c.amount),
    )
    .sort((a, b) => a.created - b.created || a.id - b.id)[0];
}

/** Marks the request fulfilled by the collection, with its success SMS. */
export function fulfil(ctx: SandboxContext, request: CollectionRequest, collection: Collection): void {
  request.collection = collection.id;
  const contact = ctx.state.contacts.get(request.contact);
  const customer = contact ? `${contact.first_name} ${contact.last_name}` : request.phonenumber;
  const amountText = `${request.currency} ${money(request.amount)}`;
  const message = request.success_message ?? `Thank you {customer}: {amount} received by ${request.reason}.`;
  recordSms(
    ctx,
    request.phonenumber,
    message.replaceAll('{amount}', amountText).replaceAll('{customer}', customer) + SMS_SUFFIX,
  );
  if (request.status !== 'processing_started') setStatus(ctx, request, 'processing_started');
  setStatus(ctx, request, 'successful');
}

/** The collection that paid the request was reversed: so is the request. */
export function reverseRequest(ctx: SandboxContext, request: CollectionRequest): void {
  if (request.status === 'successful') setStatus(ctx, request, 'reversed');
}

export function requestFilters(ctx: SandboxContext): Filters<CollectionRequest> {
  const contactOf = (r: CollectionRequest) => ctx.state.contacts.get(r.contact);
  return {
    amount: amountExact((r) => r.amount),
    currency: exact((r) => r.currency),
    collection: exact((r) => r.collection),
    phonenumber: phoneExact((r) => r.phonenumber),
    remote_transaction_id: exact((r) =>
      r.collection === null ? null : ctx.state.collections.get(r.collection)?.remote_transaction_id,
    ),
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
  const filters = requestFilters(ctx);
  router
    .route('/collectionrequests')
    .get((req, res) => {
      const { org } = apiLocals(res);
      const mine = [...ctx.state.requests.values()].filter((r) => r.organization === org.id);
      res.json(list(req, mine, filters, (r) => ctx.render.collectionRequest(r)));
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
