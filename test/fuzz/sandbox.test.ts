/**
 * Fuzzing the embedded sandbox's API over real HTTP: /api/... (every resource, with and without the key,
 * versions in the path and the header, duplicate-check keys, bodies shaped like the spec's resources with
 * wrong types), /vending/... (both auth styles) and /sandbox/... controls; then anything at all under each.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  SANDBOX_KEY,
  VENDING_KEY,
  anyRequestTo,
  count,
  extraHeaders,
  fuzz,
  fuzzSuite,
  pathsUnder,
  sendAll,
  shaped,
  type FuzzRequest,
} from './harness.js';

const suite = fuzzSuite('sandbox');

const API_PATHS = [
  '/contacts',
  '/payments',
  '/banks',
  '/collections',
  '/collectionrequests',
  '/webhooks',
  '/events',
  '/organization',
  '/contacts/1',
  '/payments/1',
  '/collectionrequests/1',
  '/webhooks/1',
  '/events/1',
  '/collections/1',
];
const VENDING_PATHS = [
  '/services/namefinder/query',
  '/services/databundle/bundles',
  '/services/databundle/purchase',
  '/services/epin/bundles',
  '/services/epin/purchase',
];
// /sandbox/faults is left out on purpose: its maintenance is a 503 on every API call, and its latency slows them.
const CONTROL_PATHS = [
  '/clock',
  '/clock/advance',
  '/organization',
  '/collections',
  '/collections/1/reverse',
  '/collections/1/cash-out',
  '/payments/1/approve',
  '/payments/1/reject',
  '/payments/1/cancel',
  '/openapi.json',
];

const phone = fc.constantFrom('+256772000001', '+256772000002', '0772000001', '+254712345678', '12', '');
const amount = fc.oneof(
  fc.constantFrom('5000', '5000.00', '0', '-1', '1e6', '99999999999', '0.001', 'abc'),
  fc.double(),
  fc.integer(),
);
const resource = shaped({
  amount,
  currency: fc.constantFrom('UGX', 'KES', 'BXC', 'usd', ''),
  phonenumber: phone,
  phone_number: phone,
  phone_nos: fc.array(
    fc.oneof(
      phone,
      shaped({ phonenumber: phone, first_name: fc.string({ maxLength: 6 }), last_name: fc.string({ maxLength: 6 }) }),
    ),
    { maxLength: 3 },
  ),
  first_name: fc.string({ maxLength: 10 }),
  last_name: fc.string({ maxLength: 10 }),
  description: fc.string({ maxLength: 30 }),
  metadata: fc.oneof(
    shaped({ chat: fc.constant('telegram:42'), ref: fc.string({ maxLength: 5 }) }),
    fc.string({ maxLength: 10 }),
  ),
  payment_type: fc.constantFrom('mobile money', 'bank', 'cash', 'x'),
  send_instructions: fc.boolean(),
  expiry_date: fc.constantFrom('2030-01-01T00:00:00Z', 'yesterday', ''),
  url: fc.constantFrom('http://127.0.0.1:9/hook', 'https://example.org/hook', 'ftp://x', 'not a url'),
  event: fc.constantFrom('payment.status.changed', 'collection.received', 'nope'),
  seconds: fc.oneof(fc.integer({ min: -10, max: 600 }), fc.constant('60')),
  service_type: fc.constantFrom('jamb', 'waec', 'mtn', 'airtel', 'glo', '9mobile', 'spectranet', 'x'),
  account_number: fc.constantFrom('1234567890', '', '0'),
  product_code: fc.constantFrom('UTME', 'DE', 'x'),
  gsmNo: phone,
  amount_kobo: fc.integer(),
  reason: fc.oneof(fc.string({ maxLength: 30 }), fc.integer()),
  by: fc.oneof(fc.integer(), fc.string({ maxLength: 4 })),
  approvalRules: fc.oneof(
    fc.array(shaped({ currency: fc.constantFrom('UGX', 'KES', 'x'), above: amount }), { maxLength: 2 }),
    fc.string({ maxLength: 4 }),
  ),
});

const apiPath = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...API_PATHS).map((p) => `/api${p}`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('v1', 'v3', 'v5', 'v9', 'vx'), fc.constantFrom(...API_PATHS))
      .map(([v, p]) => `/api/${v}${p}`),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(...API_PATHS),
        fc.constantFrom('?limit=2', '?offset=-1', '?limit=abc', '?ordering=-created', '?state=x&limit=1000000', '/'),
      )
      .map(([p, q]) => `/api${p}${q}`),
  },
);

function shapedRequest(
  paths: fc.Arbitrary<string>,
  auth: fc.Arbitrary<Record<string, string>>,
): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: fc.constantFrom('GET', 'POST', 'POST', 'PUT', 'PATCH', 'DELETE'),
      path: paths,
      auth,
      body: resource,
      extra: extraHeaders,
      version: fc.option(fc.constantFrom('v1', 'v5', 'v99', ''), { nil: undefined }),
      duplicate: fc.option(fc.constantFrom('k1', 'k2', 'k3', ''), { nil: undefined }),
    })
    .map(({ method, path, auth, body, extra, version, duplicate }) => ({
      method,
      path,
      headers: {
        ...extra,
        'content-type': 'application/json',
        ...auth,
        ...(version === undefined ? {} : { 'service-version': version }),
        ...(duplicate === undefined ? {} : { 'duplicate-check-key': duplicate }),
      },
      body: JSON.stringify(body),
    }));
}

const apiAuth = fc.constantFrom<Record<string, string>>(
  { authorization: `Token ${SANDBOX_KEY}` },
  { authorization: `Token ${SANDBOX_KEY}` },
  { authorization: 'Token wrong-key' },
  { authorization: `Bearer ${SANDBOX_KEY}` },
  {},
);
const vendingAuth = fc.constantFrom<Record<string, string>>(
  { authorization: `Token ${VENDING_KEY}`, 'x-api-key': VENDING_KEY, 'provider-date': new Date().toUTCString() },
  { authorization: `Bearer ${VENDING_KEY}`, 'x-api-key': VENDING_KEY, 'provider-date': 'not a date' },
  { authorization: `Token ${VENDING_KEY}` },
  { 'x-api-key': 'wrong' },
  {},
);
const BATCH = 6;

/**
 * An authorized read of a list (no id): answered 2xx. One leads every /api batch, so each run reaches the
 * handlers behind the key for certain; by chance alone, one run's 300 shaped requests had none.
 */
const listRead = fc.constantFrom(...API_PATHS.filter((p) => !/\/\d+$/.test(p))).map((p): FuzzRequest => ({
  method: 'GET',
  path: `/api${p}`,
  headers: { authorization: `Token ${SANDBOX_KEY}` },
  body: undefined,
}));

describe('sandbox API under fuzzing', () => {
  it('/api/...: shaped requests with and without the key never 5xx, never hang, rejections with a reason', async () => {
    const statuses = new Set<number>();
    const sent = await fuzz(
      fc
        .tuple(listRead, fc.array(shapedRequest(apiPath, apiAuth), { minLength: BATCH - 1, maxLength: BATCH - 1 }))
        .map(([read, shaped]) => [read, ...shaped]),
      async (batch) => {
        for (const res of await sendAll(suite.product.url, batch)) statuses.add(res.status);
      },
      50,
    );
    count('/api (shaped)', sent);
    expect(statuses).toContain(401);
    expect([...statuses].some((s) => s >= 200 && s < 300)).toBe(true);
    expect(suite.watch.failures).toEqual([]);
  });

  it('/vending/...: shaped requests with either auth style or none', async () => {
    const paths = fc.constantFrom(...VENDING_PATHS).map((p) => `/vending${p}`);
    const statuses = new Set<number>();
    const sent = await fuzz(
      fc.array(shapedRequest(paths, vendingAuth), { minLength: BATCH, maxLength: BATCH }),
      async (batch) => {
        for (const res of await sendAll(suite.product.url, batch)) statuses.add(res.status);
      },
      40,
    );
    count('/vending (shaped)', sent);
    expect([...statuses].some((s) => s >= 400)).toBe(true);
    expect(suite.watch.failures).toEqual([]);
  });

  it('/sandbox/... controls: shaped requests', async () => {
    const paths = fc.constantFrom(...CONTROL_PATHS).map((p) => `/sandbox${p}`);
    const sent = await fuzz(
      fc.array(shapedRequest(paths, apiAuth), { minLength: BATCH, maxLength: BATCH }),
      async (batch) => void (await sendAll(suite.product.url, batch)),
      20,
    );
    count('/sandbox (shaped)', sent);
    expect(suite.watch.failures).toEqual([]);
  });

  it('/api, /vending, /sandbox: any method, path, headers and body', async () => {
    const paths = fc.oneof(
      pathsUnder('/api', API_PATHS),
      pathsUnder('/vending', VENDING_PATHS),
      pathsUnder('/sandbox', CONTROL_PATHS),
    );
    const request = fc.tuple(fc.boolean(), fc.boolean()).chain(([api, vending]) =>
      anyRequestTo(paths, {
        ...(api ? { authorization: `Token ${SANDBOX_KEY}` } : {}),
        ...(vending ? { 'x-api-key': VENDING_KEY } : {}),
      }),
    );
    const sent = await fuzz(
      fc.array(request, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => void (await sendAll(suite.product.url, batch)),
      45,
    );
    count('/api|/vending|/sandbox (any)', sent);
    expect(suite.watch.failures).toEqual([]);
  });
});
