import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuthenticationError, MomoClient, ServiceError, ValidationError } from '../../src/momo/index.js';
import { ScriptedServer } from './scriptedServer.js';

let server: ScriptedServer;
let client: MomoClient;
const ok = (data: unknown) => ({ body: { status: 'success', message: 'Successful', code: 200, data } });

beforeAll(async () => {
  server = await ScriptedServer.start();
});
afterAll(() => server.close());
beforeEach(() => {
  server.reset();
  client = new MomoClient({
    baseUrl: 'http://127.0.0.1:9',
    apiKey: 'main-key',
    vendingUrl: `${server.url}/vending`,
    vendingApiKey: 'vend-key',
    retryBaseDelayMs: 1,
    retryMaxDelayMs: 5,
  });
});

const validation = {
  user: {
    name: 'ADA OBI',
    address: null,
    outstandingBalance: null,
    dueDate: null,
    district: null,
    accountNumber: null,
    minimumAmount: null,
    rawOutput: { firstName: 'ADA', lastName: 'OBI', middleName: null, gsmNo: '08031234567', error: null },
    errorMessage: null,
  },
};

describe('validateName', () => {
  it('posts to namefinder/query with x-api-key and unwraps data, lifting gsmNo', async () => {
    server.reply(ok(validation));
    const got = await client.vending.validateName({
      service_type: 'jamb',
      account_number: 'CONF123',
      product_code: 'UTME',
    });
    expect(got.user?.name).toBe('ADA OBI');
    expect(got.gsmNo).toBe('08031234567');
    const [req] = server.requests;
    expect(req).toMatchObject({
      method: 'POST',
      url: '/vending/services/namefinder/query',
      body: { service_type: 'jamb', account_number: 'CONF123', product_code: 'UTME' },
    });
    expect(req?.headers['x-api-key']).toBe('vend-key');
    expect(req?.headers.authorization).toBeUndefined();
  });

  it('finds gsmNo beside user too', async () => {
    server.reply(ok({ user: { name: 'ADA OBI' }, rawOutput: { gsmNo: '08030000000' }, errorMessage: null }));
    expect(
      (await client.vending.validateName({ service_type: 'jamb', account_number: 'C', product_code: 'P' })).gsmNo,
    ).toBe('08030000000');
  });
});

describe('bundles', () => {
  it('listDataBundles sends Authorization Token <key> and Provider-Date, reads numbers as strings', async () => {
    server.reply(ok([{ name: '1GB', allowance: '1GB', price: 300, validity: '30 days', datacode: 1001 }]));
    const bundles = await client.vending.listDataBundles({ service_type: 'mtn' });
    expect(bundles).toEqual([{ name: '1GB', allowance: '1GB', price: '300', validity: '30 days', datacode: '1001' }]);
    const [req] = server.requests;
    expect(req).toMatchObject({ url: '/vending/services/databundle/bundles', body: { service_type: 'mtn' } });
    expect(req?.headers.authorization).toBe('Token vend-key');
    const date = Date.parse(String(req?.headers['provider-date']));
    expect(Number.isNaN(date)).toBe(false);
    expect(String(req?.headers['provider-date'])).toMatch(/GMT$/);
  });

  it('listPinBundles posts to epin/bundles', async () => {
    server.reply(
      ok([
        { amount: 4700, available: 12, description: 'UTME pin', product_code: 'utme' },
        { amount: '500', available: 1 },
      ]),
    );
    expect(await client.vending.listPinBundles({ service_type: 'jamb' })).toEqual([
      { amount: '4700', available: 12, description: 'UTME pin', product_code: 'utme' },
      { amount: '500', available: 1 },
    ]);
    expect(server.requests[0]?.url).toBe('/vending/services/epin/bundles');
  });

  it('vendingAuthorization replaces the default Authorization', async () => {
    const custom = new MomoClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'k',
      vendingUrl: `${server.url}/vending`,
      vendingAuthorization: 'Bearer abc',
    });
    server.reply(ok([]));
    await custom.vending.listPinBundles({ service_type: 'glo' });
    expect(server.header('authorization')).toEqual(['Bearer abc']);
  });
});

describe('purchases', () => {
  const pin = {
    service_type: 'jamb',
    product_code: 'UTME',
    account_number: 'CONF123',
    gsmNo: '08031234567',
    amount: '4700',
    quantity: 1,
  };

  it('purchasePin sends the gsmNo from validation, the amount as a string, and a Duplicate-Check-Key', async () => {
    server.reply(
      ok({
        reference: 'R1',
        status: 'successful',
        amount: 4700,
        quantity: 1,
        pins: [{ pin: 1234567890, serial: 'S1' }],
      }),
    );
    const bought = await client.vending.purchasePin({ ...pin, amount: 4700 }, { key: 'k-vending-127' });
    expect(bought).toEqual({
      reference: 'R1',
      status: 'successful',
      amount: '4700',
      quantity: 1,
      pins: [{ pin: '1234567890', serial: 'S1' }],
    });
    const [req] = server.requests;
    expect(req).toMatchObject({ url: '/vending/services/epin/purchase', body: { ...pin, amount: '4700' } });
    expect(req?.headers.authorization).toBe('Token vend-key');
    expect(req?.headers['provider-date']).toBeDefined();
    expect(req?.headers['duplicate-check-key']).toBe('k-vending-127');
  });

  it('purchasePin is retried under the same key', async () => {
    server.reply({ status: 502 }, ok({ reference: 'R1', status: 'successful', amount: '4700', quantity: 1, pins: [] }));
    await client.vending.purchasePin(pin, { key: 'pin-key' });
    expect(server.header('duplicate-check-key')).toEqual(['pin-key', 'pin-key']);
  });

  it.each([
    ['gsmNo', { gsmNo: '' }],
    ['quantity', { quantity: 0 }],
    ['quantity', { quantity: 1.5 }],
    ['amount', { amount: '-1' }],
    ['product_code', { product_code: ' ' }],
  ])('purchasePin refuses a bad %s before sending', async (field, change) => {
    const e = (await client.vending
      .purchasePin({ ...pin, ...change }, { key: 'k-vending-155' })
      .catch((x: unknown) => x)) as ValidationError;
    expect(e).toBeInstanceOf(ValidationError);
    expect(Object.keys(e.fields)).toEqual([field]);
    expect(server.requests).toHaveLength(0);
  });

  it('purchaseData posts the bundle, phone and amount under a key', async () => {
    server.reply(
      ok({ reference: 'D1', status: 'successful', datacode: 1001, phonenumber: '+2348031234567', amount: 300 }),
    );
    const bought = await client.vending.purchaseData(
      { service_type: 'mtn', datacode: 1001, phonenumber: '+2348031234567', amount: 300 },
      { key: 'data-key' },
    );
    expect(bought).toEqual({
      reference: 'D1',
      status: 'successful',
      datacode: '1001',
      phonenumber: '+2348031234567',
      amount: '300',
    });
    expect(server.requests[0]).toMatchObject({
      url: '/vending/services/databundle/purchase',
      body: { service_type: 'mtn', datacode: '1001', phonenumber: '+2348031234567', amount: '300' },
    });
    expect(server.header('duplicate-check-key')).toEqual(['data-key']);
  });

  it('purchaseData refuses a local phone number before sending', async () => {
    await expect(
      client.vending.purchaseData(
        { service_type: 'mtn', datacode: 1, phonenumber: '08031234567', amount: 300 },
        { key: 'k-vending-185' },
      ),
    ).rejects.toMatchObject({ status: 0, fields: { phonenumber: [expect.any(String)] } });
    expect(server.requests).toHaveLength(0);
  });
});

describe('vending errors', () => {
  it('an error envelope on HTTP 200 maps by its code', async () => {
    server.reply({ body: { status: 'error', message: 'Invalid key', code: 401 } });
    const e = (await client.vending
      .listPinBundles({ service_type: 'mtn' })
      .catch((x: unknown) => x)) as AuthenticationError;
    expect(e).toBeInstanceOf(AuthenticationError);
    expect(e.message).toBe('401: Invalid key');
    expect(e.body).toEqual({ status: 'error', message: 'Invalid key', code: 401 });
  });

  it('an error envelope without a usable code is a ServiceError', async () => {
    server.reply({ body: { status: 'failed', message: 'Provider down' } });
    await expect(client.vending.listDataBundles({ service_type: 'glo' })).rejects.toBeInstanceOf(ServiceError);
  });

  it('a non-2xx envelope maps by the HTTP status', async () => {
    server.reply({
      status: 400,
      body: { status: 'error', message: 'Bad service_type', code: 400, data: { service_type: ['Unknown network.'] } },
    });
    const e = (await client.vending.listDataBundles({ service_type: 'x' }).catch((x: unknown) => x)) as ValidationError;
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe('400: Bad service_type');
    expect(e.fields).toEqual({ service_type: ['Unknown network.'] });
  });

  it('a POST listing without a key is not retried on 503', async () => {
    server.reply({ status: 503, body: { status: 'error', message: 'down', code: 503 } }, ok([]));
    await expect(client.vending.listPinBundles({ service_type: 'mtn' })).rejects.toBeInstanceOf(ServiceError);
    expect(server.requests).toHaveLength(1);
  });

  it('a client without vendingUrl refuses vending calls with a clear message', async () => {
    const plain = new MomoClient({ baseUrl: server.url, apiKey: 'k', vendingApiKey: 'v' });
    await expect(plain.vending.listPinBundles({ service_type: 'mtn' })).rejects.toThrow('vendingUrl is not configured');
    const keyless = new MomoClient({ baseUrl: server.url, apiKey: 'k', vendingUrl: server.url });
    await expect(
      keyless.vending.validateName({ service_type: 'jamb', account_number: 'C', product_code: 'P' }),
    ).rejects.toThrow('vendingApiKey is not configured');
    expect(server.requests).toHaveLength(0);
  });
});
