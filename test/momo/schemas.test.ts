import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MomoClient } from '../../src/momo/index.js';
import { collectionSchema, contactSchema, paymentSchema } from '../../src/momo/schemas.js';
import { collection, collectionRequest, contact, payment, webhook } from './fixtures.js';
import { ScriptedServer } from './scriptedServer.js';

describe('tolerance of what the service may send', () => {
  let server: ScriptedServer;
  let client: MomoClient;
  beforeAll(async () => {
    server = await ScriptedServer.start();
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.reset();
    client = new MomoClient({ baseUrl: server.url, apiKey: 'k', maxRetries: 0 });
  });

  it('keeps added fields, at the top and nested', async () => {
    server.reply({
      body: {
        ...collection,
        new_top_level: { any: 'thing' },
        contact: { ...contact, loyalty_tier: 'gold' },
        collection_request: { ...collectionRequest, channel: 'ussd' },
      },
    });
    const got = await client.collections.get(301);
    expect(got.new_top_level).toEqual({ any: 'thing' });
    expect(got.contact).toMatchObject({ loyalty_tier: 'gold' });
    expect(got.collection_request).toMatchObject({ id: 77, channel: 'ussd' });
  });

  it('reads a webhook with an added field', async () => {
    server.reply({ body: { ...webhook, secret_hint: 'x' } });
    expect(await client.webhooks.get(5)).toMatchObject({ id: 5, event: 'payment.status.changed', secret_hint: 'x' });
    expect(server.requests[0]?.url).toBe('/api/webhooks/5');
  });
});

describe('version-dependent shapes', () => {
  it('collection_request is an id before v3 and an object from v3; transaction is absent before v4', () => {
    const v2 = collectionSchema.parse({ ...collection, collection_request: 77, transaction: undefined });
    expect(v2.collection_request).toBe(77);
    expect(v2.transaction).toBeUndefined();
    const v4 = collectionSchema.parse(collection);
    expect(v4.collection_request).toMatchObject({ id: 77, mfscode: 'ABC123' });
    expect(v4.transaction).toMatchObject({ id: 900, type: 'mobile_collection', account: { id: 3 } });
  });

  it('phone_nos holds bare phone numbers before v5 and recipient entries from v5', () => {
    expect(paymentSchema.parse({ ...payment, phone_nos: ['+256772123456', '+256772000001'] }).phone_nos).toEqual([
      '+256772123456',
      '+256772000001',
    ]);
    expect(paymentSchema.parse(payment).phone_nos?.[0]).toMatchObject({
      phonenumber: '+256772123456',
      state: 'new',
      batch_id: 9,
    });
  });

  it('accepts the webhook sample state `completed`, which the declared list lacks', () => {
    expect(paymentSchema.parse({ ...payment, state: 'completed' }).state).toBe('completed');
  });
});

describe('samples that vary', () => {
  it('organization, account and currency as an id or a name', () => {
    expect(paymentSchema.parse({ ...payment, organization: 'Acme Ltd', account: 'Main', currency: 2 })).toMatchObject({
      organization: 'Acme Ltd',
      account: 'Main',
      currency: 2,
    });
  });

  it('amounts as numbers become decimal strings; strings are kept', () => {
    const parsed = collectionSchema.parse({
      ...collection,
      amount: 2000.25,
      transaction: { ...collection.transaction, amount: 0.1 },
    });
    expect(parsed.amount).toBe('2000.25');
    expect(parsed.transaction?.amount).toBe('0.1');
    expect(collectionSchema.parse(collection).amount).toBe('2000.00');
  });

  it('refuses an amount that is not a number', () => {
    expect(collectionSchema.safeParse({ ...collection, amount: 'lots' }).success).toBe(false);
  });

  it('a numeric string id is read as a number', () => {
    expect(contactSchema.parse({ ...contact, id: '11' }).id).toBe(11);
  });

  it('metadata as a JSON string is read as an object; unreadable metadata as null', () => {
    expect(contactSchema.parse({ ...contact, metadata: '{"chat":"tg:1"}' }).metadata).toEqual({ chat: 'tg:1' });
    expect(contactSchema.parse({ ...contact, metadata: 'not json' }).metadata).toBeNull();
    expect(contactSchema.parse({ ...contact, metadata: undefined }).metadata).toBeNull();
  });

  it('verification fields of a contact are read when present', () => {
    const verified = contactSchema.parse({
      ...contact,
      phone_is_supported: 'yes',
      phone_is_mm_registered: 'yes',
      name_on_network: 'ANN OKELLO',
      name_matches_network_status: 'checked',
      name_matches_network_score: 87,
      network_name: 'MTN',
    });
    expect(verified).toMatchObject({
      phone_is_mm_registered: 'yes',
      name_matches_network_score: 87,
      network_name: 'MTN',
    });
  });

  it('a record missing a field the client relies on is refused', () => {
    const { state: _state, ...stateless } = payment;
    const result = paymentSchema.safeParse(stateless);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['state']);
  });
});
