import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MomoClient, ValidationError } from '../../src/momo/index.js';
import { collection, contact, event, page, payment, webhook } from './fixtures.js';
import { ScriptedServer } from './scriptedServer.js';

let server: ScriptedServer;
let client: MomoClient;

beforeAll(async () => {
  server = await ScriptedServer.start();
});
afterAll(() => server.close());
beforeEach(() => {
  server.reset();
  client = new MomoClient({ baseUrl: server.url, apiKey: 'k', retryBaseDelayMs: 1, retryMaxDelayMs: 5 });
});

const contacts = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    ...contact,
    id: from + i,
    phone_number: `+2567720000${String(from + i).padStart(2, '0')}`,
  }));

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('list', () => {
  it('returns the envelope and sends filters, limit, offset and ordering', async () => {
    server.reply({ body: page(contacts(1, 2), `${server.url}/api/contacts?limit=2&offset=2`, 5) });
    const first = await client.contacts.list({
      phone_number: '+256772000001',
      limit: 2,
      offset: 0,
      ordering: '-created',
    });
    expect(first).toEqual({
      count: 5,
      next: `${server.url}/api/contacts?limit=2&offset=2`,
      previous: null,
      results: contacts(1, 2).map((c) => expect.objectContaining({ id: c.id })),
    });
    expect(server.requests[0]?.url).toBe(
      '/api/contacts?phone_number=%2B256772000001&limit=2&offset=0&ordering=-created',
    );
  });

  it('payments, webhooks and events list their paths', async () => {
    server.reply({ body: page([payment]) }, { body: page([webhook]) }, { body: page([event]) });
    expect((await client.payments.list({ state: 'new' })).results[0]?.id).toBe(501);
    expect((await client.webhooks.list({ event: 'payment.status.changed' })).results[0]?.target).toBe(
      'https://example.test/hooks',
    );
    expect((await client.events.list({ type: 'payment.status.changed' })).results[0]?.data).toMatchObject({ id: 501 });
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/payments?state=new',
      '/api/webhooks?event=payment.status.changed',
      '/api/events?type=payment.status.changed',
    ]);
  });
});

describe('listAll', () => {
  it('follows next over three pages and yields every record once', async () => {
    server.reply(
      { body: page(contacts(1, 2), `${server.url}/api/contacts?limit=2&offset=2`, 5) },
      { body: page(contacts(3, 2), `${server.url}/api/contacts?limit=2&offset=4`, 5) },
      { body: page(contacts(5, 1), null, 5) },
    );
    const all = await collect(client.contacts.listAll({ limit: 2 }));
    expect(all.map((c) => c.id)).toEqual([1, 2, 3, 4, 5]);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/contacts?limit=2',
      '/api/contacts?limit=2&offset=2',
      '/api/contacts?limit=2&offset=4',
    ]);
    expect(server.header('authorization')).toEqual(['Token k', 'Token k', 'Token k']);
  });

  it('follows a next link naming another origin on our own origin (the key goes nowhere else)', async () => {
    server.reply(
      { body: page([payment], 'http://internal.example:8000/api/payments?offset=1', 2) },
      { body: page([{ ...payment, id: 502 }], null, 2) },
    );
    const all = await collect(client.payments.listAll());
    expect(all.map((p) => p.id)).toEqual([501, 502]);
    expect(server.requests.map((r) => r.url)).toEqual(['/api/payments', '/api/payments?offset=1']);
  });

  it('stops when a next link repeats', async () => {
    const loop = `${server.url}/api/events?offset=1`;
    server.reply({ body: page([event], loop, 9) }, { body: page([{ ...event, id: 41 }], loop, 9) });
    const all = await collect(client.events.listAll());
    expect(all.map((e) => e.id)).toEqual([40, 41]);
    expect(server.requests).toHaveLength(2);
  });

  it('retries a failed page and goes on', async () => {
    server.reply(
      { body: page([webhook], `${server.url}/api/webhooks?offset=1`, 2) },
      { status: 503 },
      { body: page([{ ...webhook, id: 6 }], null, 2) },
    );
    const all = await collect(client.webhooks.listAll());
    expect(all.map((w) => w.id)).toEqual([5, 6]);
  });
});

describe('collections', () => {
  it('list accepts the envelope', async () => {
    server.reply({ body: page([collection], null, 1) });
    const got = await client.collections.list({ status: 'successful' });
    expect(got).toMatchObject({ count: 1, next: null, previous: null });
    expect(got.results[0]?.remote_transaction_id).toBe('MP123');
  });

  it('list with a filter pages a bare list itself and returns every match', async () => {
    const many = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ ...collection, id: from + i }));
    server.reply({ body: many(1, 100) }, { body: many(101, 100) }, { body: many(201, 13) });
    const got = await client.collections.list({ phonenumber: '+256772123456' });
    expect(got).toMatchObject({ count: 213, next: null, previous: null });
    expect(got.results.map((c) => c.id)).toEqual(Array.from({ length: 213 }, (_, i) => i + 1));
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/collections?phonenumber=%2B256772123456&limit=100',
      '/api/collections?phonenumber=%2B256772123456&limit=100&offset=100',
      '/api/collections?phonenumber=%2B256772123456&limit=100&offset=200',
    ]);
  });

  it('list with an offset returns that bare page, its next asking the following offset', async () => {
    server.reply({ body: [collection, { ...collection, id: 302 }] }, { body: [{ ...collection, id: 303 }] });
    const first = await client.collections.list({ phonenumber: '+256772123456', limit: 2, offset: 0 });
    expect(first).toMatchObject({ count: 2, previous: null });
    expect(first.results.map((c) => c.id)).toEqual([301, 302]);
    expect(first.next).toBe('/api/collections?phonenumber=%2B256772123456&limit=2&offset=2');
    const second = await client.collections.list({ phonenumber: '+256772123456', limit: 2, offset: 2 });
    expect(second).toMatchObject({ count: 3, next: null });
  });

  it("listAll asks the next offset of a bare list until a short page, with the caller's limit", async () => {
    server.reply(
      { body: [collection, { ...collection, id: 302 }] },
      {
        body: [
          { ...collection, id: 303 },
          { ...collection, id: 304 },
        ],
      },
      { body: [] },
    );
    expect((await collect(client.collections.listAll({ reference: 'Dues', limit: 2 }))).map((c) => c.id)).toEqual([
      301, 302, 303, 304,
    ]);
    expect(server.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('offset'))).toEqual([null, '2', '4']);
  });

  it('claim sends claim=True with the three parameters and returns the list', async () => {
    server.reply({ body: [collection] });
    const claimed = await client.collections.claim({
      amount: 2000,
      remote_transaction_id: 'MP123',
      phonenumber: '+256772123456',
    });
    expect(claimed.map((c) => c.id)).toEqual([301]);
    const url = new URL(server.requests[0]?.url ?? '', server.url);
    expect(url.pathname).toBe('/api/collections');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      claim: 'True',
      amount: '2000',
      remote_transaction_id: 'MP123',
      phonenumber: '+256772123456',
    });
  });

  it('claim answered with an envelope still returns the list', async () => {
    server.reply({ body: page([collection]) });
    expect(
      await client.collections.claim({ amount: '2000', remote_transaction_id: 'MP123', phonenumber: '+256772123456' }),
    ).toHaveLength(1);
  });

  it.each([
    ['amount', { amount: undefined }],
    ['remote_transaction_id', { remote_transaction_id: '' }],
    ['phonenumber', { phonenumber: '' }],
    ['phonenumber', { phonenumber: '772123456' }],
  ])('claim rule 1: refuses without %s, before sending', async (field, change) => {
    const params = { amount: '2000', remote_transaction_id: 'MP123', phonenumber: '+256772123456', ...change };
    const e = (await client.collections.claim(params as never).catch((x: unknown) => x)) as ValidationError;
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.status).toBe(0);
    expect(Object.keys(e.fields)).toEqual([field]);
    expect(server.requests).toHaveLength(0);
  });
});

describe('banks', () => {
  it('reads the envelope of {id, name, code}', async () => {
    server.reply({ body: page([{ id: 1, name: 'Stanbic', code: 'SBIC' }]) });
    const banks = await client.banks.list();
    expect(banks.results).toEqual([{ id: 1, name: 'Stanbic', code: 'SBIC' }]);
    expect(server.requests[0]?.url).toBe('/api/banks');
  });

  it('accepts a bare list', async () => {
    server.reply({ body: [{ id: 2, name: 'Centenary' }] });
    const banks = await client.banks.list();
    expect(banks).toEqual({ count: 1, next: null, previous: null, results: [{ id: 2, name: 'Centenary' }] });
  });
});
