/**
 * Sandbox-only controls: what a test, a demo or a developer does that the real service's web portal, its
 * networks or its subscribers would do. In process through SandboxControls; over HTTP under /sandbox.
 * Who may call: the holder of an API key of the sandbox (`Authorization: Token <key>`, as the API; 401
 * otherwise), acting on that key's organization only (another organization's record is 403). The
 * controls exist only where the sandbox runs (`npm run sandbox`, or embedded when no service is set).
 *   POST  /sandbox/collections      {phonenumber, amount, currency, reference?, remote_transaction_id?, organization?}
 *   POST  /sandbox/collections/{id}/reverse     POST /sandbox/collections/{id}/cash-out
 *   POST  /sandbox/payments/{id}/approve  {by?}   POST /sandbox/payments/{id}/reject|cancel {reason, by?}
 *   POST  /sandbox/clock/advance    {seconds}      GET /sandbox/clock
 *   GET   /sandbox/organization     PATCH /sandbox/organization {name?, nameMatchAffectsPayment?, approvalRules?, ...}
 *   GET   /sandbox/faults           POST /sandbox/faults {maintenance?, latencyMs?}   (the whole sandbox)
 *   GET   /sandbox/deliveries       GET /sandbox/sms      GET /sandbox/purchases      GET /sandbox/balances
 * And without a key: GET /sandbox/openapi.json, the OpenAPI 3.1 document of the sandbox (openapi.ts).
 */
import { Router, type Response } from 'express';
import { jsonBody } from './body.js';
import { z } from 'zod';
import { authenticate } from './api.js';
import { changeCollection, receiveCollection, type CollectionChange, type SendCollectionInput } from './collections.js';
import { owned, type SandboxContext } from './context.js';
import { apiErrorHandler, detailError, methodNotAllowed, validate } from './errors.js';
import { setFaults, type Faults } from './faults.js';
import { boolean, currency, decimal, integer, optional, text } from './fields.js';
import { openApiDocument } from './openapi.js';
import { decide, type PaymentDecision } from './payment-processing.js';
import type { DeliveryRecord } from './notifications.js';
import type { Wire } from './render.js';
import { money, timestamp } from './render.js';
import { LATEST_VERSION, VERSIONS, type Organization, type OrganizationSettings, type Sms } from './state.js';
import type { VendingPurchase } from './vending.js';

export interface SandboxControls {
  /** Sandbox time. */
  now(): Date;
  /** Moves sandbox time on, running what falls due (payment steps, expiries, webhook retries) in order. */
  advanceClock(seconds: number): Promise<void>;
  /** Waits until no webhook notification or verification call is in flight. */
  idle(): Promise<void>;
  /**
   * A subscriber sends money. Resolves with the collection (v5 shape) once verification decided.
   * `organization`: default the seeded one; null leaves it unassigned (only a claim finds it).
   */
  sendCollection(input: SendCollectionInput): Promise<Wire>;
  /** Every webhook notification attempt, oldest first. */
  deliveries(): DeliveryRecord[];
  /** Records of the seeded organization, in the latest version's shape, oldest first. */
  payments(): Wire[];
  contacts(): Wire[];
  collections(): Wire[];
  collectionRequests(): Wire[];
  events(): Wire[];
  /** SMS the sandbox would have sent (payment descriptions, request instructions and success messages). */
  sms(): Sms[];
  /** Vending purchases, oldest first. */
  purchases(): VendingPurchase[];
  /** Balances of the seeded organization's accounts by currency. */
  balances(): Record<string, string>;
  /** The seeded organization's options. */
  organization(): OrganizationSettings & { id: number };
  /** Changes options of the seeded organization, as the operator or the web portal would. */
  setOrganization(changes: Partial<OrganizationSettings>): OrganizationSettings & { id: number };
  /** Another organization with its own keys and funded accounts (403 checks, isolation). */
  addOrganization(input: { apiKey: string; vendingApiKey?: string; name?: string }): { id: number };
  /** The web portal's decision on a payment of the seeded organization (see decide() in payment-processing.ts). */
  decidePayment(id: number, decision: PaymentDecision, input?: { reason?: string; by?: number }): Wire;
  /** Reverses or cashes out a collection of the seeded organization. */
  changeCollection(id: number, change: CollectionChange): Wire;
  /** Turns faults on or off for the whole sandbox; answers those now on. */
  setFaults(changes: Partial<Faults>): Faults;
}

export const settingsSchema = z
  .object({
    name: text(100),
    nameMatchAffectsPayment: boolean,
    acceptCollectionsByDefault: boolean,
    verificationUrl: z.union([z.null(), z.url({ protocol: /^https?$/, error: 'Enter an http or https URL.' })]),
    webhookAuth: z.union([z.null(), z.object({ username: text(100), password: text(100) })]),
    manageSettings: boolean,
    version: z.union([z.null(), z.enum(VERSIONS)]),
    approvalRules: z
      .array(z.object({ currency, above: decimal }).strict(), { error: 'Give a list of {currency, above} rules.' })
      .max(20, 'At most 20 rules.')
      .transform((rules) => rules.map((r) => ({ currency: r.currency, above: r.above.toFixed() }))),
  })
  .partial()
  .strict();

export const clockAdvanceSchema = z.object({
  seconds: z
    .number({ error: 'Give seconds as a number.' })
    .min(0)
    .max(366 * 86400),
});

/** Body of reject and cancel (a reason is required) and of approve (`by` only). */
export const decisionSchema = (reasonRequired: boolean) =>
  z
    .object({
      reason: reasonRequired ? text(255) : optional(text(255)),
      by: optional(integer),
    })
    .strict();

const settingsOf = ({ id, apiKey: _key, vendingApiKey: _vendingKey, userId: _user, ...settings }: Organization) => ({
  id,
  ...settings,
});

function applySettings(org: Organization, changes: unknown) {
  Object.assign(org, validate(settingsSchema, changes));
  return settingsOf(org);
}

export function createControls(ctx: SandboxContext, org: Organization, purchases: VendingPurchase[]): SandboxControls {
  const { state, render } = ctx;
  const mine = <T extends { organization: number | null }>(records: Map<number, T>) =>
    [...records.values()].filter((r) => r.organization === org.id);
  return {
    now: () => new Date(ctx.clock.now()),
    advanceClock: (seconds) => ctx.clock.advance(seconds),
    idle: () => ctx.clock.idle(),
    sendCollection: async (input) => render.collection(await receiveCollection(ctx, org.id, input), LATEST_VERSION),
    deliveries: () => [...ctx.notifications.deliveries],
    payments: () => mine(state.payments).map((p) => render.payment(p, LATEST_VERSION)),
    contacts: () => mine(state.contacts).map((c) => render.contact(c)),
    collections: () => mine(state.collections).map((c) => render.collection(c, LATEST_VERSION)),
    collectionRequests: () => mine(state.requests).map((r) => render.collectionRequest(r)),
    events: () => mine(state.events).map((e) => render.event(e)),
    sms: () => [...state.sms],
    purchases: () => [...purchases],
    balances: () => balancesOf(ctx, org),
    organization: () => settingsOf(org),
    setOrganization: (changes) => applySettings(org, changes),
    decidePayment: (id, decision, input = {}) => decidePayment(ctx, org, String(id), decision, input),
    changeCollection: (id, change) => collectionChange(ctx, org, String(id), change),
    setFaults: (changes) => setFaults(ctx.faults, changes),
    addOrganization: (input) => ({
      id: state.addOrganization({
        name: input.name ?? `Organization of ${input.apiKey.slice(0, 4)}`,
        apiKey: input.apiKey,
        vendingApiKey: input.vendingApiKey ?? `${input.apiKey}-vending`,
        now: ctx.clock.now(),
      }).id,
    }),
  };
}

/** Applies the portal's decision to the organization's payment and answers it (v5 shape). */
function decidePayment(
  ctx: SandboxContext,
  org: Organization,
  id: string,
  decision: PaymentDecision,
  body: unknown,
): Wire {
  const payment = owned(ctx.state.payments, id, org);
  const input = validate(decisionSchema(decision !== 'approve'), body);
  decide(ctx, payment, decision, { reason: input.reason, by: input.by ?? org.userId });
  return ctx.render.payment(payment, LATEST_VERSION);
}

function collectionChange(ctx: SandboxContext, org: Organization, id: string, change: CollectionChange): Wire {
  const collection = owned(ctx.state.collections, id, org);
  changeCollection(ctx, collection, change);
  return ctx.render.collection(collection, LATEST_VERSION);
}

function balancesOf(ctx: SandboxContext, org: Organization): Record<string, string> {
  return Object.fromEntries(
    [...ctx.state.accounts.values()]
      .filter((a) => a.organization === org.id)
      .map((a) => [a.currency, money(a.balance)]),
  );
}

export function controlsRouter(ctx: SandboxContext, purchases: VendingPurchase[]): Router {
  const router = Router();
  const orgOf = (res: Response) => res.locals.org as Organization;
  let document: Record<string, unknown> | undefined;
  router
    .route('/openapi.json')
    .get((_req, res) => res.json((document ??= openApiDocument())))
    .all(methodNotAllowed('GET'));
  router.use(authenticate(ctx.state), jsonBody);
  router
    .route('/collections')
    .post(async (req, res) => {
      const collection = await receiveCollection(ctx, orgOf(res).id, req.body);
      res.status(201).json(ctx.render.collection(collection, LATEST_VERSION));
    })
    .all(methodNotAllowed('POST'));
  for (const change of ['reverse', 'cash-out'] as const) {
    router
      .route(`/collections/:id/${change}`)
      .post((req, res) => res.json(collectionChange(ctx, orgOf(res), req.params.id!, change)))
      .all(methodNotAllowed('POST'));
  }
  for (const decision of ['approve', 'reject', 'cancel'] as const) {
    router
      .route(`/payments/:id/${decision}`)
      .post((req, res) => res.json(decidePayment(ctx, orgOf(res), req.params.id!, decision, req.body)))
      .all(methodNotAllowed('POST'));
  }
  router
    .route('/faults')
    .get((_req, res) => res.json({ ...ctx.faults }))
    .post((req, res) => res.json(setFaults(ctx.faults, req.body)))
    .all(methodNotAllowed('GET', 'POST'));
  router
    .route('/clock/advance')
    .post(async (req, res) => {
      const { seconds } = validate(clockAdvanceSchema, req.body);
      await ctx.clock.advance(seconds);
      res.json({ now: timestamp(ctx.clock.now()) });
    })
    .all(methodNotAllowed('POST'));
  router
    .route('/clock')
    .get((_req, res) => res.json({ now: timestamp(ctx.clock.now()) }))
    .all(methodNotAllowed('GET'));
  router
    .route('/organization')
    .get((_req, res) => res.json(settingsOf(orgOf(res))))
    .patch((req, res) => res.json(applySettings(orgOf(res), req.body)))
    .all(methodNotAllowed('GET', 'PATCH'));
  const listing = (path: string, read: (org: Organization) => unknown) =>
    router
      .route(path)
      .get((_req, res) => res.json(read(orgOf(res))))
      .all(methodNotAllowed('GET'));
  listing('/deliveries', (org) =>
    ctx.notifications.deliveries.filter((d) => ctx.state.events.get(d.event)?.organization === org.id),
  );
  listing('/sms', () => ctx.state.sms);
  listing('/purchases', (org) => purchases.filter((p) => p.organization === org.id));
  listing('/balances', (org) => balancesOf(ctx, org));
  router.use(() => {
    throw detailError(404, 'Not found.');
  });
  router.use(apiErrorHandler(ctx.log));
  return router;
}
