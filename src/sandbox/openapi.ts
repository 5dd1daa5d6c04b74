/**
 * The sandbox's OpenAPI 3.1 document, generated from the zod schemas the sandbox parses requests with
 * (their input side) and those of its answers (wire.ts), through zod 4's JSON Schema output. Served at
 * GET /sandbox/openapi.json and written to docs/openapi.json by `npm run openapi` (scripts/openapi.ts).
 * Every route the sandbox serves is an operation here (test/sandbox/openapi.test.ts walks the router).
 */
import { z } from 'zod';
import { bankFilters } from './banks.js';
import { requestCreateSchema, requestFilters } from './collection-requests.js';
import { collectionFilters, sendCollectionSchema } from './collections.js';
import { contactCreateSchema, contactFilters, contactUpdateSchema } from './contacts.js';
import { clockAdvanceSchema, decisionSchema, settingsSchema } from './controls.js';
import { eventFilters } from './events.js';
import { faultsSchema } from './faults.js';
import { paymentCreateSchema, paymentFilters } from './payments.js';
import { dataBundlesQuery, dataPurchase, nameQuery, pinBundlesQuery, pinPurchase } from './vending.js';
import { webhookCreateSchema, webhookFilters } from './webhooks.js';
import * as wire from './wire.js';

type Json = Record<string, unknown>;

/**
 * The schemas named in components/schemas, each referred to as `#/components/schemas/<name>`. A function:
 * controls.ts (which serves the document) holds some of them, so they are read after every module loaded.
 */
const components = (): Record<string, z.ZodType> => ({
  Contact: wire.contact,
  RecipientEntry: wire.recipientEntry,
  Payment: wire.payment,
  CollectionRequest: wire.collectionRequest,
  Account: wire.account,
  Transaction: wire.transaction,
  Collection: wire.collection,
  Webhook: wire.webhook,
  Event: wire.event,
  Bank: wire.bank,
  Detail: wire.detail,
  FieldErrors: wire.fieldErrors,
  ContactCreate: contactCreateSchema,
  ContactUpdate: contactUpdateSchema,
  PaymentCreate: paymentCreateSchema,
  CollectionRequestCreate: requestCreateSchema,
  WebhookCreate: webhookCreateSchema(false),
  NameValidationQuery: nameQuery,
  DataBundleQuery: dataBundlesQuery,
  PinBundleQuery: pinBundlesQuery,
  PinPurchase: pinPurchase,
  DataPurchase: dataPurchase,
  NameValidation: wire.nameValidation,
  DataBundle: wire.dataBundle,
  PinBundle: wire.pinBundle,
  PinPurchaseResult: wire.pinPurchaseResult,
  DataPurchaseResult: wire.dataPurchaseResult,
  SendCollection: sendCollectionSchema,
  ClockAdvance: clockAdvanceSchema,
  OrganizationSettings: wire.organizationSettings,
  OrganizationChanges: settingsSchema,
  PaymentApproval: decisionSchema(false),
  PaymentDecision: decisionSchema(true),
  Faults: wire.faults,
  FaultChanges: faultsSchema,
  Clock: wire.clock,
  Delivery: wire.delivery,
  Sms: wire.sms,
  Purchase: wire.purchase,
  Balances: wire.balances,
});

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const listOf = (name: string): Json => ({ type: 'array', items: ref(name) });
const envelopeOf = (name: string): Json => ({
  type: 'object',
  required: ['count', 'next', 'previous', 'results'],
  properties: {
    count: { type: 'integer', description: 'Records matching, not only this page.' },
    next: { type: ['string', 'null'] },
    previous: { type: ['string', 'null'] },
    results: listOf(name),
  },
});
const vendingOf = (data: Json): Json => ({
  type: 'object',
  required: ['status', 'message', 'code', 'data'],
  properties: {
    status: { type: 'string', examples: ['success'] },
    message: { type: 'string' },
    code: { type: 'integer' },
    data,
  },
});

/** The components, each its JSON Schema (input side: what a caller sends), refs between them kept. */
function componentSchemas(): Json {
  const registry = z.registry<{ id: string }>();
  for (const [name, schema] of Object.entries(components())) registry.add(schema, { id: name });
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    unrepresentable: 'any',
    uri: (name) => `#/components/schemas/${name}`,
  });
  return Object.fromEntries(
    Object.entries(schemas).map(([name, { $schema: _dialect, $id: _id, ...schema }]) => [name, schema]),
  );
}

interface Operation {
  summary: string;
  tag: 'Main API' | 'Vending' | 'Sandbox controls';
  /** Security scheme name. Default: `token` on the main API, none (open) elsewhere. */
  security?: 'token' | 'vendingKey' | 'vendingToken';
  /** Names of the query filters (list endpoints, with limit/offset/ordering). */
  filters?: string[];
  /** Component of the JSON body; the main API also takes it as a form. */
  body?: string;
  status?: number;
  /** The 2xx answer's schema. */
  answer: Json;
  /** The error statuses besides those every route of its group has. */
  errors?: number[];
  description?: string;
}

type Paths = Record<string, Partial<Record<'get' | 'post' | 'patch', Operation>>>;

/** The filters' names (the filters themselves run against records in the routers). */
const names = (filters: object): string[] => Object.keys(filters);

/** The main API (under /api; also /api/v1 ... /api/v5, which override the version for one request). */
function mainApi(): Paths {
  const list = (summary: string, component: string, filters: string[]): Operation => ({
    summary,
    tag: 'Main API',
    filters,
    answer: envelopeOf(component),
  });
  const get = (summary: string, component: string): Operation => ({
    summary,
    tag: 'Main API',
    answer: ref(component),
    errors: [403, 404],
  });
  const create = (summary: string, body: string, component: string): Operation => ({
    summary,
    tag: 'Main API',
    body,
    status: 201,
    answer: ref(component),
    errors: [400, 409, 415],
  });
  // The filter factories only keep the context for later: their names are read without one.
  const none = undefined as never;
  return {
    '/api/contacts': {
      get: list('List contacts', 'Contact', names(contactFilters)),
      post: create('Create a contact (200 with the existing one for a known number)', 'ContactCreate', 'Contact'),
    },
    '/api/contacts/{id}': {
      get: get('Retrieve a contact', 'Contact'),
      patch: {
        summary: 'Update a contact',
        tag: 'Main API',
        body: 'ContactUpdate',
        answer: ref('Contact'),
        errors: [400, 403, 404, 415],
      },
    },
    '/api/payments': {
      get: list('List payments', 'Payment', names(paymentFilters(none))),
      post: create('Create a payment (state new)', 'PaymentCreate', 'Payment'),
    },
    '/api/payments/{id}': { get: get('Retrieve a payment', 'Payment') },
    '/api/banks': { get: list('List banks', 'Bank', names(bankFilters)) },
    '/api/collections': {
      get: {
        summary: 'List collections; with any filter a bare list; `claim=True` claims an unmatched one',
        tag: 'Main API',
        filters: names({ ...collectionFilters(none), claim: () => false }),
        answer: { oneOf: [envelopeOf('Collection'), listOf('Collection')] },
      },
    },
    '/api/collections/{id}': { get: get('Retrieve a collection', 'Collection') },
    '/api/collectionrequests': {
      get: list('List collection requests', 'CollectionRequest', names(requestFilters(none))),
      post: create(
        'Create a collection request (pending, or new until start_date)',
        'CollectionRequestCreate',
        'CollectionRequest',
      ),
    },
    '/api/collectionrequests/{id}': { get: get('Retrieve a collection request', 'CollectionRequest') },
    '/api/webhooks': {
      get: { ...list('List webhooks', 'Webhook', names(webhookFilters)), errors: [403] },
      post: { ...create('Create a webhook (https targets)', 'WebhookCreate', 'Webhook'), errors: [400, 403, 409, 415] },
    },
    '/api/webhooks/{id}': { get: get('Retrieve a webhook', 'Webhook') },
    '/api/events': { get: list('List events', 'Event', names(eventFilters)) },
    '/api/events/{id}': { get: get('Retrieve an event', 'Event') },
  };
}

/** The vending group (under /vending): JSON bodies, the vending envelope. */
function vending(): Paths {
  const call = (
    summary: string,
    security: Operation['security'],
    body: string,
    data: Json,
    errors: number[] = [],
  ): Operation => ({
    summary,
    tag: 'Vending',
    security,
    body,
    answer: vendingOf(data),
    errors: [400, 404, ...errors],
  });
  return {
    '/vending/services/namefinder/query': {
      post: call('Validate a candidate name', 'vendingKey', 'NameValidationQuery', ref('NameValidation')),
    },
    '/vending/services/databundle/bundles': {
      post: call('List data bundles of a network', 'vendingToken', 'DataBundleQuery', listOf('DataBundle')),
    },
    '/vending/services/epin/bundles': {
      post: call('List pin bundles (with product codes)', 'vendingToken', 'PinBundleQuery', listOf('PinBundle')),
    },
    '/vending/services/epin/purchase': {
      post: call('Buy pins (assumed path and body)', 'vendingToken', 'PinPurchase', ref('PinPurchaseResult'), [409]),
    },
    '/vending/services/databundle/purchase': {
      post: call(
        'Buy a data bundle (assumed path and body)',
        'vendingToken',
        'DataPurchase',
        ref('DataPurchaseResult'),
        [409],
      ),
    },
  };
}

/** The sandbox's controls (under /sandbox), acting on the key's organization. */
function controls(): Paths {
  const control = (summary: string, answer: Json, body?: string, errors: number[] = []): Operation => ({
    summary,
    tag: 'Sandbox controls',
    security: 'token',
    body,
    answer,
    errors: body ? [400, ...errors] : errors,
  });
  const open = (summary: string, answer: Json): Operation => ({ summary, tag: 'Sandbox controls', answer });
  return {
    '/sandbox/openapi.json': { get: open('This document', { type: 'object' }) },
    '/sandbox/collections': {
      post: { ...control('A subscriber sends money', ref('Collection'), 'SendCollection'), status: 201 },
    },
    '/sandbox/collections/{id}/reverse': {
      post: control('Reverse a successful collection (and its request)', ref('Collection'), undefined, [403, 404, 409]),
    },
    '/sandbox/collections/{id}/cash-out': {
      post: control('Cash out a successful collection', ref('Collection'), undefined, [403, 404, 409]),
    },
    '/sandbox/payments/{id}/approve': {
      post: control(
        'Approve a payment awaiting approval, or release a recipient paused for admin action',
        ref('Payment'),
        'PaymentApproval',
        [403, 404, 409],
      ),
    },
    '/sandbox/payments/{id}/reject': {
      post: control('Reject a payment awaiting approval', ref('Payment'), 'PaymentDecision', [403, 404, 409]),
    },
    '/sandbox/payments/{id}/cancel': {
      post: control('Cancel a payment not yet paid', ref('Payment'), 'PaymentDecision', [403, 404, 409]),
    },
    '/sandbox/clock/advance': {
      post: control('Move sandbox time on, running what falls due', ref('Clock'), 'ClockAdvance'),
    },
    '/sandbox/clock': { get: control('Sandbox time', ref('Clock')) },
    '/sandbox/organization': {
      get: control("The organization's settings", ref('OrganizationSettings')),
      patch: control(
        'Change settings, as the web portal would (approval rules, version, ...)',
        ref('OrganizationSettings'),
        'OrganizationChanges',
      ),
    },
    '/sandbox/faults': {
      get: control('Faults now on', ref('Faults')),
      post: control(
        'Turn maintenance (503 on every API call) and latency on or off, for the whole sandbox',
        ref('Faults'),
        'FaultChanges',
      ),
    },
    '/sandbox/deliveries': { get: control('Every webhook notification attempt', listOf('Delivery')) },
    '/sandbox/sms': { get: control('SMS the service would have sent', listOf('Sms')) },
    '/sandbox/purchases': { get: control('Vending purchases', listOf('Purchase')) },
    '/sandbox/balances': { get: control('Balances by currency', ref('Balances')) },
  };
}

const ERROR_TEXT: Record<number, string> = {
  400: 'Malformed request or missing parameters',
  401: 'Invalid token',
  403: 'The resource belongs to someone else',
  404: 'No such resource',
  405: 'Method not allowed',
  406: 'The Accept header does not allow JSON',
  409: 'Duplicate-Check-Key already used, or the state forbids this change',
  415: 'Unsupported media type',
  429: 'Throttled (30 reads, 3000 writes a minute)',
  503: 'Maintenance (POST /sandbox/faults)',
};

function operation(path: string, method: string, op: Operation): Json {
  const parameters: Json[] = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'integer' },
  }));
  if (op.filters) {
    parameters.push(
      { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, default: 10 } },
      { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0 } },
      { name: 'ordering', in: 'query', schema: { type: 'string' }, description: 'A field; `-field` sorts descending.' },
      ...op.filters.map((name) => ({ name, in: 'query', schema: { type: 'string' }, description: 'Exact match.' })),
    );
  }
  const security = op.security ?? (op.tag === 'Main API' ? 'token' : undefined);
  const group =
    op.tag === 'Main API'
      ? [401, 405, 406, 429, 503]
      : op.tag === 'Vending'
        ? [401, 405, 503]
        : security
          ? [401, 405]
          : [405];
  const error = `#/components/responses/${op.tag === 'Vending' ? 'VendingError' : 'Error'}`;
  const responses: Json = {
    [String(op.status ?? 200)]: { description: 'OK', content: { 'application/json': { schema: op.answer } } },
  };
  for (const status of [...new Set([...(op.errors ?? []), ...group])].sort()) {
    responses[String(status)] = { $ref: error, description: ERROR_TEXT[status] };
  }
  const body = op.body
    ? {
        requestBody: {
          required: true,
          content: Object.fromEntries(
            (op.tag === 'Main API'
              ? ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data']
              : ['application/json']
            ).map((type) => [type, { schema: ref(op.body!) }]),
          ),
        },
      }
    : {};
  return {
    operationId: `${method}${path.replace(/\{(\w+)\}/g, 'By-$1').replace(/[^a-zA-Z0-9]+(\w)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: op.summary,
    tags: [op.tag],
    security: security ? [{ [security]: [] }] : [],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...body,
    responses,
  };
}

/** The document: the same for every sandbox (paths are relative to where it is served). */
export function openApiDocument(): Json {
  const paths: Json = {};
  for (const [path, methods] of Object.entries({ ...mainApi(), ...vending(), ...controls() })) {
    paths[path] = Object.fromEntries(
      Object.entries(methods).map(([method, op]) => [method, operation(path, method, op!)]),
    );
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mobile-money sandbox',
      version: '1.0.0',
      description:
        'A stateful implementation of the mobile-money payments and collections contract (main API at /api, vending group at ' +
        '/vending) and its sandbox-only controls (/sandbox). Shapes are the latest version (v5); `Service-Version: vN` or ' +
        '`/api/vN/...` asks for an older one. See docs/sandbox.md ("The sandbox" and "What we assumed").',
    },
    servers: [{ url: '/' }],
    tags: [{ name: 'Main API' }, { name: 'Vending' }, { name: 'Sandbox controls' }],
    security: [{ token: [] }],
    paths,
    components: {
      securitySchemes: {
        token: { type: 'apiKey', in: 'header', name: 'Authorization', description: '`Token <API key>`' },
        vendingKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'The vending key (name validation).',
        },
        vendingToken: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: '`Token <vending key>` (bundles and purchases).',
        },
      },
      schemas: componentSchemas(),
      responses: {
        Error: {
          description: 'An error',
          content: { 'application/json': { schema: { oneOf: [ref('Detail'), ref('FieldErrors')] } } },
        },
        VendingError: {
          description: 'An error in the vending envelope',
          content: { 'application/json': { schema: vendingOf({ type: ['object', 'null'] }) } },
        },
      },
    },
  };
}
