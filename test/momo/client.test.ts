import { inspect } from 'node:util';
import { Decimal } from 'decimal.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ConnectionError,
  MissingKeyError,
  MomoClient,
  ServiceError,
  ValidationError,
  isInternationalPhone,
} from '../../src/momo/index.js';
import { collectionRequest, contact, payment } from './fixtures.js';
import { ScriptedServer } from './scriptedServer.js';

let server: ScriptedServer;
const fast = { retryBaseDelayMs: 1, retryMaxDelayMs: 5 };
const newClient = (extra: Partial<ConstructorParameters<typeof MomoClient>[0]> = {}) =>
  new MomoClient({ baseUrl: server.url, apiKey: 'secret-key-1', ...fast, ...extra });
const pay = { phonenumber: '+256772123456', amount: '1500.50', currency: 'UGX', description: 'Rent' };

beforeAll(async () => {
  server = await ScriptedServer.start();
});
afterAll(() => server.close());
beforeEach(() => {
  server.reset();
});

describe('headers', () => {
  it('sends the token, JSON, and Service-Version when a version is set', async () => {
    server.reply({ body: contact });
    await newClient({ version: 'v5' }).contacts.get(11);
    const [req] = server.requests;
    expect(req?.method).toBe('GET');
    expect(req?.url).toBe('/api/contacts/11');
    expect(req?.headers.authorization).toBe('Token secret-key-1');
    expect(req?.headers['service-version']).toBe('v5');
    expect(req?.headers.accept).toBe('application/json');
  });

  it('sends no Service-Version without a version', async () => {
    server.reply({ body: contact });
    await newClient().contacts.get(11);
    expect(server.header('service-version')).toEqual([undefined]);
  });

  it('keeps a path prefix of the base URL', async () => {
    server.reply({ body: contact });
    await new MomoClient({ baseUrl: `${server.url}/sandbox-api/`, apiKey: 'k' }).contacts.get(11);
    expect(server.requests[0]?.url).toBe('/sandbox-api/api/contacts/11');
  });

  it('uses the injected fetch', async () => {
    const seen: string[] = [];
    const spy: typeof fetch = (input, init) => {
      seen.push(String(input));
      return fetch(input, init);
    };
    server.reply({ body: contact });
    await newClient({ fetch: spy }).contacts.get(11);
    expect(seen).toEqual([`${server.url}/api/contacts/11`]);
  });

  it('does not show the API key when the client is inspected or serialised', () => {
    const client = newClient({ vendingApiKey: 'vend-secret' });
    expect(inspect(client, { depth: 10 })).not.toContain('secret-key-1');
    expect(JSON.stringify(client)).not.toContain('secret-key-1');
    expect(inspect(client, { depth: 10 })).not.toContain('vend-secret');
  });
});

describe('retries', () => {
  it('503, 503, 201 on payments.create: three requests under the same non-empty key', async () => {
    server.reply({ status: 503 }, { status: 503, body: { detail: 'maintenance' } }, { status: 201, body: payment });
    const created = await newClient().payments.create(pay, { key: 'k-client-74' });
    expect(created.id).toBe(501);
    const keys = server.header('duplicate-check-key');
    expect(keys).toHaveLength(3);
    expect(keys[0]).toBe('k-client-74');
    expect(new Set(keys).size).toBe(1);
    expect(server.requests.map((r) => r.body)).toEqual([
      server.requests[0]?.body,
      server.requests[0]?.body,
      server.requests[0]?.body,
    ]);
  });

  it("uses the caller's key on every attempt, and a call without one is refused before anything is sent", async () => {
    server.reply({ status: 500 }, { status: 201, body: payment });
    const client = newClient();
    await client.payments.create(pay, { key: 'flow-key-1' });
    expect(server.header('duplicate-check-key')).toEqual(['flow-key-1', 'flow-key-1']);
    // No key, or an empty one: thrown, never sent with a key made up here (nobody could look it up or repeat it).
    const keyless = [{}, { key: '' }] as Array<{ key: string }>;
    for (const options of keyless) {
      await expect(client.payments.create(pay, options)).rejects.toBeInstanceOf(MissingKeyError);
      await expect(
        client.collectionRequests.create({ phonenumber: '+256772123456', amount: 1, currency: 'UGX' }, options),
      ).rejects.toBeInstanceOf(MissingKeyError);
    }
    expect(server.header('duplicate-check-key')).toHaveLength(2);
  });

  it('429 with Retry-After: 1 then 200 succeeds after one retry', async () => {
    server.reply({ status: 429, headers: { 'retry-after': '1' }, body: { detail: 'throttled' } }, { body: contact });
    const got = await newClient({ retryMaxDelayMs: 2000 }).contacts.get(11);
    expect(got.phone_number).toBe('+256772123456');
    expect(server.requests).toHaveLength(2);
  });

  it('a POST without a key is not retried', async () => {
    server.reply({ status: 503, body: { detail: 'down' } }, { status: 201, body: contact });
    await expect(
      newClient().contacts.create({ phone_number: '+256772123456', first_name: 'A', last_name: 'O' }),
    ).rejects.toBeInstanceOf(ServiceError);
    expect(server.requests).toHaveLength(1);
    expect(server.header('duplicate-check-key')).toEqual([undefined]);
  });

  it('a POST without a key that gets no answer is not retried either', async () => {
    server.reply({ drop: true }, { status: 201, body: contact });
    await expect(
      newClient().contacts.create({ phone_number: '+256772123456', first_name: 'A', last_name: 'O' }),
    ).rejects.toBeInstanceOf(ConnectionError);
    expect(server.requests).toHaveLength(1);
  });

  it('a contact create with a caller key is retried', async () => {
    server.reply({ status: 502 }, { status: 201, body: contact });
    await newClient().contacts.create(
      { phone_number: '+256772123456', first_name: 'A', last_name: 'O' },
      { key: 'c-1' },
    );
    expect(server.header('duplicate-check-key')).toEqual(['c-1', 'c-1']);
  });

  it('a GET is retried maxRetries times, then the last error is thrown', async () => {
    server.reply({ status: 500 }, { status: 500 }, { status: 503, body: { detail: 'still down' } });
    const e = await newClient()
      .payments.get(1)
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ServiceError);
    expect((e as ServiceError).status).toBe(503);
    expect(server.requests).toHaveLength(3);
  });

  it('maxRetries: 0 sends once', async () => {
    server.reply({ status: 500 });
    await expect(newClient({ maxRetries: 0 }).payments.get(1)).rejects.toBeInstanceOf(ServiceError);
    expect(server.requests).toHaveLength(1);
  });

  it('a dropped connection is retried, then answered', async () => {
    server.reply({ drop: true }, { body: payment });
    const got = await newClient().payments.get(501);
    expect(got.state).toBe('new');
    expect(server.requests).toHaveLength(2);
  });

  it('4xx other than 429 is never retried', async () => {
    server.reply({ status: 404, body: { detail: 'Not found.' } });
    await expect(newClient().payments.get(2)).rejects.toThrow('Not found.');
    server.reply({ status: 400, body: { amount: ['bad'] } });
    await expect(newClient().payments.create(pay, { key: 'k-client-163' })).rejects.toBeInstanceOf(ValidationError);
    expect(server.requests).toHaveLength(2);
  });
});

describe('payments.create', () => {
  it('sends the spec fields, the amount as a decimal string and metadata as an object', async () => {
    server.reply({ status: 201, body: payment }, { status: 201, body: payment }, { status: 201, body: payment });
    const client = newClient();
    await client.payments.create(
      { ...pay, amount: 1500.5, metadata: '{"chat":"tg:1","ref":"r1"}', first_name: 'Ann' },
      { key: 'k-client-172' },
    );
    await client.payments.create(
      { ...pay, amount: new Decimal('0.10'), metadata: { chat: 'tg:1' } },
      { key: 'k-client-173' },
    );
    await client.payments.create({ ...pay, amount: '2500' }, { key: 'k-client-174' });
    expect(server.requests[0]?.body).toEqual({
      phonenumber: '+256772123456',
      amount: '1500.5',
      currency: 'UGX',
      description: 'Rent',
      metadata: { chat: 'tg:1', ref: 'r1' },
      first_name: 'Ann',
    });
    expect(server.requests[0]?.headers['content-type']).toBe('application/json');
    expect((server.requests[1]?.body as { amount: unknown }).amount).toBe('0.1');
    expect((server.requests[2]?.body as { amount: unknown }).amount).toBe('2500');
  });

  it('checks recipients of a multi-recipient payment', async () => {
    server.reply({ status: 201, body: payment });
    await newClient().payments.create(
      {
        amount: 100,
        currency: 'UGX',
        description: 'Bonus',
        recipient_data: [{ phonenumber: '+256772000001' }, { phonenumber: '+256772000002', amount: 250 }],
      },
      { key: 'k-client-190' },
    );
    expect(server.requests[0]?.body).toEqual({
      amount: '100',
      currency: 'UGX',
      description: 'Bonus',
      recipient_data: [{ phonenumber: '+256772000001' }, { phonenumber: '+256772000002', amount: '250' }],
    });
    await expect(
      newClient().payments.create(
        {
          currency: 'UGX',
          description: 'x',
          recipient_data: [{ phonenumber: '0772000001', amount: 1 }],
        },
        { key: 'k-client-203' },
      ),
    ).rejects.toMatchObject({ fields: { 'recipient_data[0].phonenumber': [expect.any(String)] } });
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['a local phone number', { phonenumber: '0772123456' }, 'phonenumber'],
    ['a phone number with spaces', { phonenumber: '+256 772 123456' }, 'phonenumber'],
    ['no phone number', { phonenumber: undefined }, 'phonenumber'],
    ['NaN', { amount: Number.NaN }, 'amount'],
    ['a negative amount', { amount: '-5' }, 'amount'],
    ['thousands separators', { amount: '1,000' }, 'amount'],
    ['Infinity', { amount: Number.POSITIVE_INFINITY }, 'amount'],
    ['no amount', { amount: undefined }, 'amount'],
    ['neither currency nor account', { currency: undefined }, 'currency'],
    ['an empty description', { description: ' ' }, 'description'],
    ['metadata that is not JSON', { metadata: '{chat' }, 'metadata'],
    ['metadata that is a list', { metadata: '[1]' }, 'metadata'],
  ])('refuses %s before sending (ValidationError, status 0)', async (_name, change, field) => {
    const e = (await newClient()
      .payments.create({ ...pay, ...change } as typeof pay, { key: 'k-client-227' })
      .catch((x: unknown) => x)) as ValidationError;
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.status).toBe(0);
    expect(Object.keys(e.fields)).toEqual([field]);
    expect(server.requests).toHaveLength(0);
  });

  it('reads both phone_nos shapes and normalises number amounts', async () => {
    server.reply({ status: 201, body: { ...payment, amount: 1500.5, phone_nos: ['+256772123456'], charged_fee: 250 } });
    const before5 = await newClient({ version: 'v4' }).payments.create(pay, { key: 'k-client-237' });
    expect(before5.phone_nos).toEqual(['+256772123456']);
    expect(before5.amount).toBe('1500.5');
    expect(before5.charged_fee).toBe('250');
    server.reply({ status: 201, body: payment });
    const from5 = await newClient({ version: 'v5' }).payments.create(pay, { key: 'k-client-242' });
    expect(from5.phone_nos?.[0]).toMatchObject({ phonenumber: '+256772123456', amount: '1500.50', state: 'new' });
  });
});

describe('contacts', () => {
  it('create checks phone_number under its own name and sends metadata as an object', async () => {
    await expect(
      newClient().contacts.create({ phone_number: '772123456', first_name: 'A', last_name: 'O' }),
    ).rejects.toMatchObject({
      status: 0,
      fields: { phone_number: [expect.any(String)] },
    });
    server.reply({ status: 201, body: { ...contact, phone_is_mm_registered: 'yes', name_on_network: 'ANN OKELLO' } });
    const made = await newClient().contacts.create({
      phone_number: '+256772123456',
      first_name: 'Ann',
      last_name: 'Okello',
      metadata: '{"sync":"1"}',
    });
    expect(made.name_on_network).toBe('ANN OKELLO');
    expect(server.requests[0]?.body).toEqual({
      phone_number: '+256772123456',
      first_name: 'Ann',
      last_name: 'Okello',
      metadata: { sync: '1' },
    });
  });

  it('update is a PATCH of the given fields', async () => {
    server.reply({ body: { ...contact, email: 'ann@example.test' } });
    const updated = await newClient().contacts.update(11, { email: 'ann@example.test' });
    expect(updated.email).toBe('ann@example.test');
    expect(server.requests[0]).toMatchObject({
      method: 'PATCH',
      url: '/api/contacts/11',
      body: { email: 'ann@example.test' },
    });
  });
});

describe('collection requests', () => {
  it('create always carries a key and sends the amount as a decimal string', async () => {
    server.reply({ status: 201, body: collectionRequest });
    const made = await newClient().collectionRequests.create(
      {
        phonenumber: '+256772123456',
        amount: new Decimal('2000.00'),
        currency: 'UGX',
        reason: 'Dues',
        send_instructions: true,
        metadata: { chat: 'tg:1' },
      },
      { key: 'k-client-286' },
    );
    expect(made).toMatchObject({ id: 77, status: 'pending', mfscode: 'ABC123', amount: '2000' });
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      url: '/api/collectionrequests',
      body: {
        phonenumber: '+256772123456',
        amount: '2000',
        currency: 'UGX',
        reason: 'Dues',
        send_instructions: true,
        metadata: { chat: 'tg:1' },
      },
    });
    expect(server.header('duplicate-check-key')[0]).toBe('k-client-286');
  });

  it('create refuses a local phone number before sending', async () => {
    await expect(
      newClient().collectionRequests.create(
        { phonenumber: '0772123456', amount: 1, currency: 'UGX' },
        { key: 'k-client-312' },
      ),
    ).rejects.toBeInstanceOf(ValidationError);
    expect(server.requests).toHaveLength(0);
  });

  it('get and list send the id and filters', async () => {
    server.reply(
      { body: collectionRequest },
      { body: { count: 1, next: null, previous: null, results: [collectionRequest] } },
    );
    const client = newClient();
    expect((await client.collectionRequests.get(77)).id).toBe(77);
    const page = await client.collectionRequests.list({ status: 'pending', limit: 5, ordering: '-created' });
    expect(page.results[0]?.contact).toMatchObject({ phone_number: '+256772123456' });
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/collectionrequests/77',
      '/api/collectionrequests?status=pending&limit=5&ordering=-created',
    ]);
  });
});

describe('isInternationalPhone', () => {
  it.each([
    ['+256772123456', true],
    ['+14155550123', true],
    ['256772123456', false],
    ['+0256772123456', false],
    ['+256-772-123456', false],
    ['+25677', false],
    ['', false],
  ])('%s -> %s', (value, expected) => {
    expect(isInternationalPhone(value)).toBe(expected);
  });
});
