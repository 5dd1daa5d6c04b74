/**
 * Fuzzing the WhatsApp webhook over real HTTP: deliveries shaped like Meta's (texts, taps with our ids and
 * with junk, other kinds, statuses, wrong types, other phone numbers) without a signature or with a wrong
 * one, all refused with 401 and changing nothing; the same signed right, never a 5xx or a hang; Meta's
 * verification with any query; then anything at all at /whatsapp/*.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { APP_SECRET, VERIFY_TOKEN, signature } from '../adapters/whatsapp/deliveries.js';
import { PHONE_NUMBER_ID } from '../adapters/whatsapp/fake-graph-api.js';
import { reading, until } from '../until.js';
import {
  anyBody,
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

const suite = fuzzSuite('whatsapp');

const waId = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('256772700001', '256772700002', '15551234567') },
  { weight: 1, arbitrary: fc.string({ maxLength: 25 }) },
);
const wamid = fc.oneof(fc.stringMatching(/^wamid\.[A-Za-z0-9+/=]{8,40}$/), fc.string({ maxLength: 300 }));
const timestamp = fc.oneof(
  fc.integer({ min: 1_600_000_000, max: 2_000_000_000 }).map(String),
  fc.constantFrom('0', '99999999999999', '-1', 'soon'),
);
const text = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'hi',
      'menu',
      'back',
      'cancel',
      'help',
      '/pay',
      '/data',
      '1',
      '2',
      '0772000001',
      '+256772000001',
      'Sarah',
      '5000',
      'UGX',
      'Confirm',
      '',
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 80 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 5000 }) },
);
const replyId = fc.oneof(
  fc.constantFrom(
    'c:pay',
    'c:money',
    'c:confirm',
    'c:cancel',
    'c:UGX',
    'i:0',
    'i:9999',
    'p:1',
    'p:9999',
    'c:',
    'p:-1',
    'x',
  ),
  fc.string({ maxLength: 300 }),
);
const reply = shaped({ id: replyId, title: fc.string({ maxLength: 30 }), description: fc.string({ maxLength: 80 }) });
/** A message with its sender and id (mostly well-formed, so the handler and the engine are reached), or shaped at random. */
const head = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      from: waId,
      id: wamid,
      timestamp,
      context: fc.option(shaped({ from: fc.constant('15550783881'), id: wamid }), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: shaped({
      from: waId,
      id: wamid,
      timestamp,
      context: shaped({ from: fc.constant('15550783881'), id: wamid }),
    }),
  },
);
const message = fc
  .tuple(
    head,
    fc.oneof(
      { weight: 4, arbitrary: shaped({ body: text }).map((t) => ({ type: 'text', text: t })) },
      {
        weight: 2,
        arbitrary: reply.map((r) => ({ type: 'interactive', interactive: { type: 'button_reply', button_reply: r } })),
      },
      {
        weight: 2,
        arbitrary: reply.map((r) => ({ type: 'interactive', interactive: { type: 'list_reply', list_reply: r } })),
      },
      {
        weight: 1,
        arbitrary: shaped({
          type: fc.constantFrom('button_reply', 'list_reply', 'nfm_reply'),
          button_reply: anyValue,
          list_reply: anyValue,
        }).map((i) => ({ type: 'interactive', interactive: i })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(
            'image',
            'audio',
            'location',
            'sticker',
            'reaction',
            'contacts',
            'unsupported',
            'button',
            'whatever',
          )
          .map((type) => ({ type, [type]: { id: 'media', emoji: '👍', text: 'Menu' } })),
      },
      { weight: 1, arbitrary: fc.record({ type: anyValue }) },
    ),
  )
  .map(([head, kind]) => ({ ...head, ...kind }));
const status = shaped({
  id: wamid,
  status: fc.constantFrom('sent', 'delivered', 'read', 'failed', 'deleted', 'bogus'),
  timestamp,
  recipient_id: waId,
  errors: fc.array(shaped({ code: fc.integer(), title: fc.string({ maxLength: 20 }) }), { maxLength: 2 }),
});
const value = shaped({
  messaging_product: fc.constant('whatsapp'),
  metadata: shaped({
    display_phone_number: fc.constant('15550783881'),
    phone_number_id: fc.oneof(
      { weight: 5, arbitrary: fc.constant(PHONE_NUMBER_ID) },
      { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
    ),
  }),
  contacts: fc.array(shaped({ wa_id: waId, profile: shaped({ name: fc.string({ maxLength: 20 }) }) }), {
    maxLength: 2,
  }),
  messages: fc.array(message, { maxLength: 3 }),
  statuses: fc.array(status, { maxLength: 3 }),
});
/** Meta's envelope around the messages and statuses (mostly as Meta sends it), or shaped at random. */
const payload = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.array(message, { minLength: 1, maxLength: 3 }), fc.array(status, { maxLength: 2 }))
      .map(([messages, statuses]) => ({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: '102290129340398',
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { phone_number_id: PHONE_NUMBER_ID },
                  messages,
                  statuses,
                },
              },
            ],
          },
        ],
      })),
  },
  {
    weight: 2,
    arbitrary: shaped({
      object: fc.oneof(
        { weight: 5, arbitrary: fc.constant('whatsapp_business_account') },
        { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
      ),
      entry: fc.array(
        shaped({
          id: fc.string({ maxLength: 16 }),
          changes: fc.array(shaped({ field: fc.constantFrom('messages', 'account_update'), value }), { maxLength: 2 }),
        }),
        { maxLength: 2 },
      ),
    }),
  },
);

const post = (body: string, headers: Record<string, string>): FuzzRequest => ({
  method: 'POST',
  path: '/whatsapp/webhook',
  headers: { 'content-type': 'application/json', ...headers },
  body,
});
const BATCH = 6;
const messagesSent = () => suite.product.graph.sent.length;

describe('WhatsApp webhook under fuzzing', () => {
  // First, so no signed delivery's work is still sending answers while it counts them.
  it('without a signature or with a wrong one: every delivery refused with 401, nothing answered', async () => {
    const wrong = fc.oneof(
      fc.constant(undefined),
      fc.constantFrom('', 'sha256=', 'sha1=abc', 'sha256=zz', `sha256=${'0'.repeat(64)}`),
      fc.stringMatching(/^sha256=[0-9a-f]{64}$/),
      fc.string({ maxLength: 80 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
    );
    const forged = fc.oneof(
      {
        weight: 3,
        arbitrary: fc
          .tuple(
            payload.map((p) => JSON.stringify(p)),
            wrong,
          )
          .map(([body, header]) => post(body, header === undefined ? {} : { 'x-hub-signature-256': header })),
      },
      // Signed with another secret, or the signature of another body.
      {
        weight: 2,
        arbitrary: payload
          .map((p) => JSON.stringify(p))
          .map((body) => post(body, { 'x-hub-signature-256': signature(body, `${APP_SECRET}-forged`) })),
      },
      {
        weight: 1,
        arbitrary: fc
          .tuple(
            payload.map((p) => JSON.stringify(p)),
            fc.string({ maxLength: 5 }),
          )
          .map(([body, tail]) => post(`${body} ${tail}`, { 'x-hub-signature-256': signature(body) })),
      },
      {
        weight: 1,
        arbitrary: anyBody.map((body) => ({
          ...post('', { 'x-hub-signature-256': signature('something else') }),
          body,
        })),
      },
    );
    const before = messagesSent();
    const sent = await fuzz(
      fc.array(forged, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => {
        await sendAll(suite.product.url, batch, (req, res) => {
          if (res.status !== 401) return `forged delivery answered ${res.status}: ${String(req.body).slice(0, 160)}`;
          if (res.text.trim() === '') return 'forged delivery refused without a reason';
          return null;
        });
      },
      40,
    );
    count('/whatsapp/webhook (forged)', sent);
    expect(messagesSent()).toBe(before);
    expect(suite.watch.failures).toEqual([]);
  });

  it("signed right: shaped deliveries are answered 200 or 400, never 5xx, never hang; every answer fits Meta's format", async () => {
    const statuses = new Set<number>();
    const before = messagesSent();
    const sent = await fuzz(
      fc.array(
        payload.map((p) => {
          const body = JSON.stringify(p);
          return post(body, { 'x-hub-signature-256': signature(body) });
        }),
        { minLength: BATCH, maxLength: BATCH },
      ),
      async (batch) => {
        for (const res of await sendAll(suite.product.url, batch)) statuses.add(res.status);
      },
      50,
    );
    count('/whatsapp/webhook (signed)', sent);
    expect([...statuses].every((s) => s === 200 || s === 400)).toBe(true);
    expect(statuses).toContain(200);
    // The users' messages were worked and answered, and Meta's server refused none of the answers.
    await until(
      'answers to the signed deliveries',
      reading(
        async () => messagesSent(),
        (n) => n > before,
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    expect(suite.product.graph.refused).toEqual([]);
    expect(suite.watch.failures).toEqual([]);
  });

  it('GET verification with any query: 200 only for subscribe with the verify token, never 5xx', async () => {
    const param = (right: string) =>
      fc.option(
        fc.oneof({ weight: 2, arbitrary: fc.constant(right) }, { weight: 1, arbitrary: fc.string({ maxLength: 40 }) }),
        { nil: undefined },
      );
    const query = fc.record({
      mode: param('subscribe'),
      token: param(VERIFY_TOKEN),
      challenge: param('1158201444'),
      extra: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
    });
    const sent = await fuzz(
      fc.array(query, { minLength: BATCH, maxLength: BATCH }).map((qs) =>
        qs.map(({ mode, token, challenge, extra }): FuzzRequest => {
          const params = new URLSearchParams();
          if (mode !== undefined) params.set('hub.mode', mode);
          if (token !== undefined) params.set('hub.verify_token', token);
          if (challenge !== undefined) params.set('hub.challenge', challenge);
          if (extra !== undefined) params.append('hub.mode', extra);
          return { method: 'GET', path: `/whatsapp/webhook?${params}`, headers: {}, body: undefined };
        }),
      ),
      async (batch) => {
        await sendAll(suite.product.url, batch, (req, res) => {
          const params = new URL(req.path, 'http://x').searchParams;
          const allowed = params.get('hub.mode') === 'subscribe' && params.get('hub.verify_token') === VERIFY_TOKEN;
          if (res.status === 200 && (!allowed || res.text !== params.get('hub.challenge')))
            return `verification answered 200 to ${req.path}`;
          if (res.status !== 200 && res.status !== 400 && res.status !== 403)
            return `verification answered ${res.status} to ${req.path}`;
          return null;
        });
      },
      30,
    );
    count('/whatsapp/webhook (verification)', sent);
  });

  it('/whatsapp/*: any method, path, headers and body (with and without a signature header)', async () => {
    const paths = pathsUnder('/whatsapp', ['/webhook', '/webhook/', '']);
    const requests = fc
      .boolean()
      .chain((on) => anyRequestTo(paths, on ? { 'x-hub-signature-256': `sha256=${'a'.repeat(64)}` } : {}));
    const sent = await fuzz(
      fc.array(requests, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => void (await sendAll(suite.product.url, batch)),
      45,
    );
    count('/whatsapp/* (any)', sent);
    expect(suite.watch.failures).toEqual([]);
  });
});
