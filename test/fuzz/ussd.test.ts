/**
 * Fuzzing the USSD gateways over real HTTP: for each of the five codecs and Africa's Talking's end-of-session
 * report, bodies shaped like the gateway's (plausible fields, wrong types, missing and extra fields, session
 * ids that repeat so conversations go on, answers that walk the menus), sent in concurrent batches; then
 * anything at all at /ussd/*.
 * No 5xx, no hang, every rejection a 4xx with a reason, no unhandled rejection or exception.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anyRequestTo, count, fuzz, fuzzSuite, pathsUnder, sendAll, shaped, type FuzzRequest } from './harness.js';

const suite = fuzzSuite('ussd');

const phone = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '+256772000001',
      '256772123456',
      '0772123456',
      '+254712345678',
      '233271231234',
      '256700000009',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('', '12', 'abc', '+', '0000000000000000000000', '+999123456789') },
  { weight: 1, arbitrary: fc.string({ maxLength: 16 }) },
);
const sessionId = fc.oneof(fc.constantFrom('s-1', 's-2', 's-3', 's-4'), fc.string({ minLength: 1, maxLength: 24 }));
/** One answer a user might type: menu numbers, navigation, PINs, amounts, numbers, names, junk. */
const answer = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      '1',
      '2',
      '3',
      '4',
      '5',
      '0',
      '00',
      '98',
      '99',
      '1234',
      '0000',
      '5000',
      '0772000001',
      'Sarah',
      '',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 1, arbitrary: fc.stringMatching(/^[0-9*#]{0,20}$/) },
);
const dialString = fc.constantFrom('*384*123#', '*384*123*1#', '', '#', '*');
const bool = fc.oneof(fc.boolean(), fc.constantFrom('true', 'false', 'TRUE', 'yes', '1'));

/** Form fields as a gateway posts them; values of other types are written as JSON text. */
const asForm = (fields: Record<string, unknown>): string =>
  new URLSearchParams(
    Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? v : (JSON.stringify(v) ?? '')]),
  ).toString();

const bodies: Record<string, { form: boolean; body: fc.Arbitrary<Record<string, unknown>> }> = {
  africastalking: {
    form: true,
    body: shaped({
      sessionId,
      serviceCode: dialString,
      phoneNumber: phone,
      networkCode: fc.constantFrom('63902', '62120', ''),
      text: fc.array(answer, { maxLength: 9 }).map((a) => a.join('*')),
    }),
  },
  hubtel: {
    form: false,
    body: shaped({
      Type: fc.constantFrom('initiation', 'response', 'release', 'timeout', 'Initiation', 'RESPONSE', 'other'),
      SessionId: sessionId,
      Mobile: phone,
      ServiceCode: dialString,
      Message: answer,
      Operator: fc.constantFrom('mtn', 'vodafone'),
      Sequence: fc.oneof(fc.integer({ min: -1, max: 12 }), fc.constantFrom('2', 'x')),
      ClientState: fc.string({ maxLength: 10 }),
    }),
  },
  arkesel: {
    form: false,
    body: shaped({
      sessionID: sessionId,
      userID: fc.constantFrom('APP', ''),
      newSession: bool,
      msisdn: phone,
      userData: answer,
      network: fc.constantFrom('MTN', 'AIRTELTIGO'),
    }),
  },
  nalo: {
    form: false,
    body: shaped({
      USERID: fc.constantFrom('NALO_1', ''),
      MSISDN: phone,
      USERDATA: answer,
      MSGTYPE: bool,
      NETWORK: fc.constantFrom('MTN', 'VODAFONE'),
      SESSIONID: sessionId,
    }),
  },
  beem: {
    form: false,
    body: shaped({
      command: fc.constantFrom('initiate', 'continue', 'terminate', 'CONTINUE', 'bogus'),
      msisdn: phone,
      session_id: sessionId,
      operator: fc.constantFrom('vodacom', 'airtel'),
      payload: shaped({ request_id: fc.oneof(fc.integer({ min: -1, max: 12 }), fc.constant('3')), response: answer }),
    }),
  },
  // Africa's Talking's end-of-session report (adapters/ussd/events.ts).
  'africastalking/events': {
    form: true,
    body: shaped({
      sessionId,
      phoneNumber: phone,
      status: fc.constantFrom('Success', 'Incomplete', 'Failed', 'incomplete', ''),
      durationInMillis: fc.oneof(fc.nat().map(String), fc.constantFrom('-1', '1e9', 'x')),
      hopsCount: fc.oneof(fc.nat({ max: 40 }).map(String), fc.constant('many')),
      input: fc.array(answer, { maxLength: 9 }).map((a) => a.join('*')),
      lastAppResponse: fc.string({ maxLength: 200 }),
      errorMessage: fc.string({ maxLength: 60 }),
      date: fc.constantFrom('2026-11-20 10:11:12', ''),
      serviceCode: dialString,
      networkCode: fc.constantFrom('63902', ''),
      cost: fc.constantFrom('UGX 0.00', ''),
    }),
  },
};

/** Per route: batches of 6 concurrent requests. */
const RUNS_PER_CODEC = 45;
const BATCH = 6;

describe('USSD gateways under fuzzing', () => {
  for (const [gateway, { form, body }] of Object.entries(bodies)) {
    it(`/ussd/${gateway}: shaped bodies never get a 5xx, a hang or a rejection without a reason`, async () => {
      const request: fc.Arbitrary<FuzzRequest> = body.map((fields) => ({
        method: 'POST',
        path: `/ussd/${gateway}`,
        headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' },
        body: form ? asForm(fields) : JSON.stringify(fields),
      }));
      const statuses = new Set<number>();
      const sent = await fuzz(
        fc.array(request, { minLength: BATCH, maxLength: BATCH }),
        async (batch) => {
          for (const res of await sendAll(suite.product.url, batch)) statuses.add(res.status);
        },
        RUNS_PER_CODEC,
      );
      count(`/ussd/${gateway}`, sent);
      // Both sides were reached: screens (200) and refusals (400).
      expect(statuses).toContain(200);
      expect(statuses).toContain(400);
      expect(suite.watch.failures).toEqual([]);
    });
  }

  it('/ussd/*: any method, path, headers and body', async () => {
    const paths = pathsUnder('/ussd', [
      '/africastalking',
      '/africastalking/events',
      '/hubtel',
      '/arkesel',
      '/nalo',
      '/beem',
      '/unknown',
      '',
    ]);
    const sent = await fuzz(
      fc.array(anyRequestTo(paths), { minLength: BATCH, maxLength: BATCH }),
      async (batch) => void (await sendAll(suite.product.url, batch)),
      45,
    );
    count('/ussd/* (any)', sent);
    expect(suite.watch.failures).toEqual([]);
  });

  it('the product still answers a whole USSD dial afterwards', async () => {
    const res = await fetch(`${suite.product.url}/ussd/africastalking`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        sessionId: 'after-fuzz',
        serviceCode: '*384*123#',
        phoneNumber: '+256772999111',
        networkCode: '63902',
        text: '',
      }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^CON /);
    expect(suite.watch.failures).toEqual([]);
  });
});
