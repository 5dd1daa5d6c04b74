/**
 * Collections: money a subscriber sends. Read-only through /api (get, list, claim); created by the
 * sandbox control `POST /sandbox/collections` / controls.sendCollection(), or by a subscriber of the
 * directory paying a request.
 *
 * Arrival: the collection is matched to the oldest open collection request with the same amount,
 * number and currency; it goes to that request's organization, else to the organization named (by
 * default the caller's), or to none when `organization: null` (only a claim finds it then). From the
 * directory's `collection_fails` number it arrives `failed` (the wallet is short) and fails the request.
 * Otherwise the organization's verification URL decides (verification.ts): accepted -> `successful`, the
 * wallet is credited (the `transaction`), the request fulfilled; rejected -> `failed`.
 * Later (controls): `successful` --(reverse)--> `reversed` (the wallet is debited back, a fulfilled request
 * becomes `reversed`); `successful` --(cash-out)--> `cashed_out`.
 * Events: collection.received when a collection reaches an organization (successful or failed), and again
 * on each later change (COLLECTION_CHANGE_EVENT).
 *
 * Lists: without filters the list envelope; with any filter a bare list, as the spec's samples show
 * (limit/offset/ordering still apply). Claim (`claim=True`): rules 1 to 4 of the spec; a claim that
 * fails (a missing parameter, more than one match) is 400 `{detail}`; the answer is always a bare list.
 */
import { Router, type Request } from 'express';
import { z } from 'zod';
import { findOpenRequest, fulfil, requestFailed, reverseRequest } from './collection-requests.js';
import { findOrCreateContact, verifyContact } from './contacts.js';
import { apiLocals, owned, savedVersion, type SandboxContext } from './context.js';
import { currencySuits, lookupSubscriber } from './directory.js';
import { detailError, fieldError, methodNotAllowed, validate } from './errors.js';
import { money } from './render.js';
import { amount, boolean, incomingCurrency, optionalInteger, optionalText, phone } from './fields.js';
import {
  amountExact,
  applyFilters,
  dateRange,
  exact,
  hasFilters,
  list,
  order,
  page,
  phoneExact,
  queryValue,
  type Filters,
} from './listing.js';
import type { Collection, Currency, EventType, Organization, Version } from './state.js';
import { verifyCollection } from './verification.js';

export const sendCollectionSchema = z.object({
  phonenumber: phone,
  amount,
  currency: incomingCurrency,
  reference: z.preprocess((v) => (v === undefined || v === null ? '' : v), z.string().max(255)),
  remote_transaction_id: optionalText(100),
  organization: z.union([z.null(), optionalInteger]),
});

/** What a subscriber sends (controls.sendCollection, POST /sandbox/collections). */
export interface SendCollectionInput {
  /** International format. */
  phonenumber: string;
  amount: string | number;
  currency: string;
  reference?: string;
  /** The network's id. Default `SBXC` + the collection id in 10 digits. */
  remote_transaction_id?: string;
  /** Default: the matched request's organization, else the caller's; null: unassigned (claim only). */
  organization?: number | null;
}

/**
 * "collection.received: a collection (incoming payment) is received" is the spec's only collection event;
 * how the service tells a collection's later changes (reversed, cashed_out) is not shown. The sandbox's
 * choice: the same event again, with the collection in its new status.
 */
const COLLECTION_CHANGE_EVENT: EventType = 'collection.received';

function notify(ctx: SandboxContext, collection: Collection): void {
  const org = collection.organization!;
  ctx.notifications.emit(org, COLLECTION_CHANGE_EVENT, ctx.render.collection(collection, savedVersion(ctx, org)));
}

/** Assigns the collection to the organization and its contact for the sender. */
function assign(ctx: SandboxContext, collection: Collection, org: Organization): void {
  const subscriber = lookupSubscriber(collection.phonenumber);
  const [first, ...rest] = subscriber.nameOnNetwork.split(' ');
  const { contact } = findOrCreateContact(ctx, org, {
    phone_number: collection.phonenumber,
    first_name: first || 'Anonymous',
    last_name: rest.join(' ') || 'Contact',
  });
  verifyContact(ctx, contact);
  collection.organization = org.id;
  collection.contact = contact.id;
  collection.modified = ctx.clock.now();
}

/** Assigns the collection to the organization: contact, wallet credit and transaction, request, event. */
function credit(ctx: SandboxContext, collection: Collection, org: Organization): void {
  const now = ctx.clock.now();
  assign(ctx, collection, org);
  const account = ctx.state.accountFor(org.id, collection.currency)!;
  account.balance = account.balance.plus(collection.amount);
  account.modified = now;
  collection.transaction = {
    id: ctx.state.nextId('transaction'),
    amount: collection.amount,
    currency: collection.currency,
    description: collection.reference,
    created: now,
    account: account.id,
  };
  const request =
    collection.collection_request === null ? undefined : ctx.state.requests.get(collection.collection_request);
  if (request) fulfil(ctx, request, collection);
  notify(ctx, collection);
}

/** A subscriber sends money. Resolves once the collection is accepted or rejected. */
export async function receiveCollection(
  ctx: SandboxContext,
  defaultOrganization: number,
  body: unknown,
): Promise<Collection> {
  const input = validate(sendCollectionSchema, body);
  if (!currencySuits(input.currency, input.phonenumber)) {
    throw fieldError('currency', `${input.currency} does not suit ${input.phonenumber}.`);
  }
  const now = ctx.clock.now();
  const id = ctx.state.nextId('collection');
  // Networks' ids are unique per network only: a given id may repeat (which is what claim rule 3 is for).
  const remoteId = input.remote_transaction_id ?? `SBXC${String(id).padStart(10, '0')}`;
  const wanted = input.organization === undefined ? defaultOrganization : input.organization;
  const open = findOpenRequest(ctx, { ...input, currency: input.currency as Currency });
  const request =
    open && (input.organization === undefined || open.organization === input.organization) ? open : undefined;
  const orgId = request?.organization ?? wanted;
  const org = orgId === null ? undefined : ctx.state.organizations.get(orgId);
  if (orgId !== null && !org) throw fieldError('organization', `No organization ${orgId}.`);
  const payerShort = lookupSubscriber(input.phonenumber).behaviour === 'collection_fails';
  const collection: Collection = {
    id,
    organization: null,
    amount: input.amount,
    currency: input.currency as Currency,
    phonenumber: input.phonenumber,
    reference: input.reference,
    remote_transaction_id: remoteId,
    status: 'pending',
    contact: null,
    collection_request: request?.id ?? null,
    transaction: null,
    payment_date: now,
    created: now,
    modified: now,
  };
  ctx.state.collections.set(id, collection);
  if (!org) {
    collection.status = payerShort ? 'failed' : 'successful';
    return collection;
  }
  if (payerShort) {
    // The network could not take the money from the subscriber's wallet: nothing to verify or credit.
    collection.status = 'failed';
    assign(ctx, collection, org);
    if (request) requestFailed(ctx, request);
    notify(ctx, collection);
    return collection;
  }
  const { accepted, outcome } = await verifyCollection(ctx, org, collection);
  collection.status = accepted ? 'successful' : 'failed';
  if (accepted) credit(ctx, collection, org);
  else {
    collection.collection_request = null;
    collection.modified = ctx.clock.now();
    // A subscriber already paying the request (processing_started) was refused: that attempt failed.
    if (request?.status === 'processing_started')
      requestFailed(ctx, request, `The collection was rejected (${outcome}).`);
  }
  return collection;
}

/** Changes of a collection that the web portal or the network make (sandbox controls). */
export type CollectionChange = 'reverse' | 'cash-out';

/**
 * reverse: a `successful` collection is taken back (the wallet debited by its amount; 409 when the wallet
 * holds less) and becomes `reversed`, and so does the request it paid. cash-out: `successful` ->
 * `cashed_out`. Anything else is 409.
 */
export function changeCollection(ctx: SandboxContext, collection: Collection, change: CollectionChange): void {
  if (collection.status !== 'successful') {
    throw detailError(
      409,
      `Collection ${collection.id} is ${collection.status}: only a successful collection can be ${change === 'reverse' ? 'reversed' : 'cashed out'}.`,
    );
  }
  if (change === 'reverse') {
    const account = ctx.state.accountFor(collection.organization!, collection.currency)!;
    if (account.balance.lt(collection.amount)) {
      throw detailError(
        409,
        `The ${collection.currency} wallet holds ${money(account.balance)}: less than the ${money(collection.amount)} to reverse.`,
      );
    }
    account.balance = account.balance.minus(collection.amount);
    account.modified = ctx.clock.now();
  }
  collection.status = change === 'reverse' ? 'reversed' : 'cashed_out';
  collection.modified = ctx.clock.now();
  const request =
    collection.collection_request === null ? undefined : ctx.state.requests.get(collection.collection_request);
  if (change === 'reverse' && request) reverseRequest(ctx, request);
  notify(ctx, collection);
}

export function collectionFilters(ctx: SandboxContext): Filters<Collection> {
  const contactOf = (c: Collection) => (c.contact === null ? undefined : ctx.state.contacts.get(c.contact));
  return {
    amount: amountExact((c) => c.amount),
    currency: exact((c) => c.currency),
    phonenumber: phoneExact((c) => c.phonenumber),
    reference: exact((c) => c.reference),
    remote_transaction_id: exact((c) => c.remote_transaction_id),
    ...dateRange('created', (c) => c.created),
    ...dateRange('modified', (c) => c.modified),
    status: exact((c) => c.status),
    network: exact((c) => lookupSubscriber(c.phonenumber).network),
    contact_first_name: exact((c) => contactOf(c)?.first_name),
    contact_last_name: exact((c) => contactOf(c)?.last_name),
  };
}

const CLAIM_NEEDS = ['amount', 'remote_transaction_id', 'phonenumber'] as const;

function claim(
  ctx: SandboxContext,
  req: Request,
  org: Organization,
  version: Version,
  collectionFilters: Filters<Collection>,
) {
  // Rule 1: all three parameters in the same request.
  const missing = CLAIM_NEEDS.filter((p) => !queryValue(req, p));
  if (missing.length > 0)
    throw detailError(
      400,
      `A claim needs amount, remote_transaction_id and phonenumber; missing: ${missing.join(', ')}.`,
    );
  // Rule 2 is the phone filter's exact match (a `+` added when missing); unmatched collections are searched too.
  const candidates = [...ctx.state.collections.values()].filter(
    (c) => c.organization === org.id || c.organization === null,
  );
  const matches = applyFilters(req, candidates, collectionFilters);
  // Rule 3: more than one match fails.
  if (matches.length > 1)
    throw detailError(
      400,
      'The claim matches more than one collection: give the exact amount, transaction id and number.',
    );
  const found = matches[0];
  if (found && found.organization === null && found.status === 'successful') credit(ctx, found, org);
  // Rule 4: a list, not a single collection.
  return matches.map((c) => ctx.render.collection(c, version));
}

export function collectionsRouter(ctx: SandboxContext): Router {
  const router = Router();
  const filters = collectionFilters(ctx);
  router
    .route('/collections')
    .get((req, res) => {
      const { org, version } = apiLocals(res);
      const claimParam = queryValue(req, 'claim');
      const claiming = claimParam === undefined ? false : boolean.safeParse(claimParam);
      if (claiming !== false && !claiming.success) throw fieldError('claim', 'Must be a valid boolean.');
      if (claiming !== false && claiming.data) return res.json(claim(ctx, req, org, version, filters));
      const mine = [...ctx.state.collections.values()].filter((c) => c.organization === org.id);
      const render = (c: Collection) => ctx.render.collection(c, version);
      if (!hasFilters(req, filters as Filters<unknown>)) return res.json(list(req, mine, filters, render));
      return res.json(page(req, order(req, applyFilters(req, mine, filters).map(render))).results);
    })
    .all(methodNotAllowed('GET'));
  router
    .route('/collections/:id')
    .get((req, res) => {
      const { org, version } = apiLocals(res);
      res.json(ctx.render.collection(owned(ctx.state.collections, req.params.id, org), version));
    })
    .all(methodNotAllowed('GET'));
  return router;
}
