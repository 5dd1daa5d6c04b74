/**
 * Fuzzing the notification receiver and the collection verification route over real HTTP: bodies shaped
 * like the service's (every event, metadata naming chats on every channel, wrong types), with the right
 * Basic auth and with wrong or missing credentials; then anything at all at /notifications/*. The queued
 * work runs after the 200, so the suite waits for the queue to empty before checking for unhandled
 * rejections.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BASIC_AUTH,
  anyRequestTo,
  anyValue,
  count,
  fuzz,
  fuzzSuite,
  pathsUnder,
  sendAll,
  shaped,
  type FuzzRequest,
} from './harness.js';
import { until } from '../until.js';

const suite = fuzzSuite('notification');

const chat = fc.oneof(
  fc.constantFrom(
    'telegram:42',
    'telegram:-100123',
    'slack:T0001:U0001',
    'ussd:+256772000001',
    'ussd:',
    'telegram:',
    'slack:T0001',
    'nowhere:1',
    '',
  ),
  fc.string({ maxLength: 20 }),
);
const metadata = fc.oneof(
  shaped({ chat, ref: fc.string({ maxLength: 10 }), lang: fc.constantFrom('en', 'sw', 'xx') }),
  fc.string({ maxLength: 20 }),
  fc.constant(null),
);
const amount = fc.oneof(
  fc.constantFrom('5000.00', '0', '-1', '1e9', 'NaN', '12.345'),
  fc.double().map(String),
  fc.integer(),
);
const data = shaped({
  id: fc.oneof(fc.nat(100_000), fc.string({ maxLength: 6 })),
  state: fc.constantFrom('complete', 'failed', 'cancelled', 'new', 'processing', 'unknown'),
  status: fc.constantFrom('pending', 'paid', 'expired', 'cancelled', 'odd'),
  amount,
  currency: fc.constantFrom('UGX', 'KES', 'BXC', 'xx'),
  metadata,
  description: fc.string({ maxLength: 30 }),
  phonenumber: fc.constantFrom('+256772000001', '0772000001', ''),
  phone_nos: fc.array(
    fc.oneof(fc.constantFrom('+256772000001'), shaped({ phonenumber: fc.constantFrom('+256772000001', '') })),
    { maxLength: 3 },
  ),
  contact: shaped({ first_name: fc.string({ maxLength: 8 }), last_name: fc.string({ maxLength: 8 }) }),
  collection_request: fc.oneof(fc.nat(100), shaped({ id: fc.nat(100), status: fc.constant('paid'), metadata })),
  state_message: fc.string({ maxLength: 20 }),
});
const notification = shaped({
  hook: shaped({
    event: fc.constantFrom(
      'payment.status.changed',
      'collectionrequest.status.changed',
      'collection.received',
      'other.event',
      '',
    ),
    id: fc.nat(10),
  }),
  data,
});
const verification = shaped({
  phonenumber: fc.constantFrom('+256772000001', '+254712345678', '', 'x'),
  amount,
  currency_code: fc.constantFrom('UGX', 'KES', ''),
  reference: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  remote_transaction_id: fc.oneof(fc.string({ maxLength: 12 }), fc.nat()),
});

const post = (path: string, body: unknown, authorization: string | undefined): FuzzRequest => ({
  method: 'POST',
  path,
  headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
  body: JSON.stringify(body),
});
const wrongAuth = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    'Basic ',
    'Basic bW9tbzo=',
    `${BASIC_AUTH}x`,
    BASIC_AUTH.toLowerCase(),
    'Bearer sandbox-key',
    `Basic ${Buffer.from('momo-service:wrong').toString('base64')}`,
  ),
  fc.string({ maxLength: 40 }).map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
);
const BATCH = 6;

/**
 * Waits (up to 10 s) for the queue to have nothing left to do (its depth on /metrics is 0), so work the
 * requests queued has run before unhandled rejections are counted. A job a notifier refused waits for its
 * retry with backoff, so the depth is not itself asserted.
 */
function queueDrained(): Promise<boolean> {
  return until(
    'the notification queue empty',
    async () => {
      const metrics = await (await fetch(`${suite.product.url}/metrics`)).text();
      const depth = /^\S*queue_depth\S*\s+(\d+)/m.exec(metrics)?.[1];
      return depth === undefined || depth === '0';
    },
    { timeoutMs: 10_000, everyMs: 50 },
  ).then(
    () => true,
    () => false,
  );
}

describe('notification routes under fuzzing', () => {
  it('/notifications/momo with the right credentials: shaped bodies never 5xx, never hang', async () => {
    const statuses = new Set<number>();
    const sent = await fuzz(
      fc.array(
        fc.oneof(notification, anyValue).map((b) => post('/notifications/momo', b, BASIC_AUTH)),
        { minLength: BATCH, maxLength: BATCH },
      ),
      async (batch) => {
        for (const res of await sendAll(suite.product.url, batch)) statuses.add(res.status);
      },
      50,
    );
    count('/notifications/momo (auth)', sent);
    expect(statuses).toContain(200);
    expect(statuses).toContain(400);
    await queueDrained();
    expect(suite.watch.failures).toEqual([]);
  });

  it('/notifications/momo/verify with the right credentials: answered ACCEPT/REJECT or refused with a reason', async () => {
    const statuses = new Set<number>();
    const sent = await fuzz(
      fc.array(
        fc.oneof(verification, anyValue).map((b) => post('/notifications/momo/verify', b, BASIC_AUTH)),
        { minLength: BATCH, maxLength: BATCH },
      ),
      async (batch) => {
        const answers = await sendAll(suite.product.url, batch);
        for (const res of answers) {
          statuses.add(res.status);
          if (res.status === 200 && !/^(ACCEPT|REJECT) /.test(res.text))
            throw new Error(`verify answered "${res.text}"`);
        }
      },
      40,
    );
    count('/notifications/momo/verify (auth)', sent);
    expect(statuses).toContain(200);
    expect(suite.watch.failures).toEqual([]);
  });

  it('wrong or missing credentials: always 401 with a reason, whatever the body', async () => {
    const request = fc
      .tuple(
        fc.constantFrom('/notifications/momo', '/notifications/momo/verify'),
        fc.oneof(notification, verification, anyValue),
        wrongAuth,
      )
      .map(([path, body, auth]) => post(path, body, auth));
    const sent = await fuzz(
      fc.array(request, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => {
        await sendAll(suite.product.url, batch, (req, res) =>
          res.status === 401 && res.text.includes('credentials')
            ? null
            : `${req.path} with "${req.headers.authorization}" answered ${res.status}`,
        );
      },
      40,
    );
    count('/notifications/* (wrong auth)', sent);
    expect(suite.watch.failures).toEqual([]);
  });

  it('/notifications/*: any method, path, headers and body (with and without credentials)', async () => {
    const paths = pathsUnder('/notifications', ['/momo', '/momo/verify', '/momo/', '']);
    const request = fc.boolean().chain((auth) => anyRequestTo(paths, auth ? { authorization: BASIC_AUTH } : {}));
    const sent = await fuzz(
      fc.array(request, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => void (await sendAll(suite.product.url, batch)),
      45,
    );
    count('/notifications/* (any)', sent);
    await queueDrained();
    expect(suite.watch.failures).toEqual([]);
  });
});
