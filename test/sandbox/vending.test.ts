/** The vending group over raw HTTP: auth headers, Provider-Date, the envelope of answers and errors. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CANDIDATES, DATA_BUNDLES, PIN_PRODUCTS } from '../../src/sandbox/index.js';
import { startSandbox, VENDING_KEY, type RunningSandbox } from './harness.js';

let sb: RunningSandbox;
beforeEach(async () => {
  sb = await startSandbox();
});
afterEach(async () => {
  await sb.close();
});

const post = (
  path: string,
  body: unknown,
  headers: Record<string, string> = { authorization: `Token ${VENDING_KEY}` },
) =>
  sb.raw(`/vending${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

const WAEC = CANDIDATES.find((c) => c.service_type === 'waec')!;

describe('vending group', () => {
  it('validates a name with x-api-key and answers the envelope', async () => {
    const res = await post(
      '/services/namefinder/query',
      { service_type: 'waec', account_number: WAEC.account_number, product_code: 'result-checker' },
      { 'x-api-key': VENDING_KEY },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'success',
      code: 200,
      data: { user: { name: 'IBRAHIM MUSA BELLO', rawOutput: { gsmNo: WAEC.gsmNo } } },
    });
    const unknown = await post(
      '/services/namefinder/query',
      { service_type: 'waec', account_number: '000', product_code: 'gce' },
      { 'x-api-key': VENDING_KEY },
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ status: 'error', code: 404, data: null });
    const badProduct = await post(
      '/services/namefinder/query',
      { service_type: 'jamb', account_number: '1234567890', product_code: 'gce' },
      { 'x-api-key': VENDING_KEY },
    );
    expect(badProduct.status).toBe(400);
    expect(badProduct.body.data.product_code[0]).toMatch(/utme/);
  });

  it('refuses wrong or missing keys with 401 in the envelope', async () => {
    const noKey = await post(
      '/services/namefinder/query',
      { service_type: 'jamb', account_number: '1', product_code: 'utme' },
      {},
    );
    expect(noKey.status).toBe(401);
    expect(noKey.body).toMatchObject({ status: 'error', code: 401 });
    expect((await post('/services/epin/bundles', { service_type: 'mtn' }, { 'x-api-key': VENDING_KEY })).status).toBe(
      401,
    );
    expect(
      (await post('/services/epin/bundles', { service_type: 'mtn' }, { authorization: `Bearer ${VENDING_KEY}` }))
        .status,
    ).toBe(200);
    expect(
      (await post('/services/epin/bundles', { service_type: 'mtn' }, { authorization: 'Token sandbox-key' })).status,
    ).toBe(401);
  });

  it('lists data bundles per network; SPECTRANET needs account_number', async () => {
    const glo = await post(
      '/services/databundle/bundles',
      { service_type: 'glo' },
      { authorization: `Token ${VENDING_KEY}`, 'provider-date': new Date().toUTCString() },
    );
    expect(glo.body.data).toEqual(DATA_BUNDLES.glo);
    const spectranet = await post('/services/databundle/bundles', { service_type: 'SPECTRANET' });
    expect(spectranet.status).toBe(400);
    expect(spectranet.body.data).toHaveProperty('account_number');
    expect(
      (await post('/services/databundle/bundles', { service_type: 'SPECTRANET', account_number: '1002003' })).body.data,
    ).toEqual(DATA_BUNDLES.spectranet);
    expect((await post('/services/databundle/bundles', { service_type: 'vodafone' })).body.data).toHaveProperty(
      'service_type',
    );
    const badDate = await post(
      '/services/databundle/bundles',
      { service_type: 'mtn' },
      { authorization: `Token ${VENDING_KEY}`, 'provider-date': 'soon' },
    );
    expect(badDate.status).toBe(400);
    expect(badDate.body.message).toMatch(/Provider-Date/);
  });

  it('lists pin bundles for exams and networks', async () => {
    for (const service of ['jamb', 'waec', 'glo', 'mtn', 'airtel', '9mobile', 'spectranet']) {
      const res = await post('/services/epin/bundles', { service_type: service });
      expect(res.body.data, service).toEqual(PIN_PRODUCTS[service]);
      for (const p of res.body.data)
        expect(Object.keys(p)).toEqual(expect.arrayContaining(['amount', 'available', 'description']));
    }
  });

  it('buys pins and data, refusing wrong amounts, unknown codes and repeated Duplicate-Check-Keys', async () => {
    const pin = {
      service_type: 'waec',
      product_code: 'result-checker',
      account_number: WAEC.account_number,
      gsmNo: `+234${WAEC.gsmNo.slice(1)}`,
      amount: 3900,
      quantity: 1,
    };
    const headers = { authorization: `Token ${VENDING_KEY}`, 'duplicate-check-key': 'buy-1' };
    const bought = await post('/services/epin/purchase', pin, headers);
    expect(bought.status).toBe(200);
    expect(bought.body.data).toMatchObject({
      status: 'successful',
      amount: 3900,
      quantity: 1,
      pins: [{ pin: expect.stringMatching(/^\d{12}$/), serial: expect.any(String) }],
    });
    const again = await post('/services/epin/purchase', pin, headers);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      status: 'error',
      code: 409,
      message: expect.stringContaining('Duplicate Request Detected!'),
    });
    expect((await post('/services/epin/purchase', { ...pin, amount: 100 })).body.data).toHaveProperty('amount');
    expect((await post('/services/epin/purchase', { ...pin, quantity: 0 })).body.data).toHaveProperty('quantity');
    expect((await post('/services/epin/purchase', { ...pin, gsmNo: '08000000000' })).body.data).toHaveProperty('gsmNo');
    const networkPin = await post('/services/epin/purchase', {
      service_type: 'mtn',
      product_code: 'mtn-500',
      account_number: '08031234567',
      gsmNo: '08031234567',
      amount: '500',
      quantity: 3,
      reference: 'mine',
    });
    expect(networkPin.body.data).toMatchObject({ reference: 'mine', quantity: 3 });

    const data = { service_type: 'airtel', datacode: 2001, phonenumber: '08021234567', amount: 300 };
    expect((await post('/services/databundle/purchase', data)).body.data).toMatchObject({
      status: 'successful',
      datacode: 2001,
      amount: 300,
    });
    expect((await post('/services/databundle/purchase', { ...data, datacode: 1001 })).body.data).toHaveProperty(
      'datacode',
    );
    expect((await post('/services/databundle/purchase', { ...data, phonenumber: '12' })).body.data).toHaveProperty(
      'phonenumber',
    );
    expect(
      (
        await post('/services/databundle/purchase', {
          ...data,
          service_type: 'spectranet',
          datacode: 5001,
          amount: 5000,
        })
      ).body.data,
    ).toHaveProperty('account_number');
    expect(sb.controls.purchases()).toHaveLength(3);
  });

  it('answers 405 and 404 in the envelope, and bad JSON with 400', async () => {
    const get = await sb.raw('/vending/services/epin/bundles');
    expect(get.status).toBe(405);
    expect(get.body).toMatchObject({ status: 'error', code: 405 });
    expect((await post('/services/unknown', {})).body).toMatchObject({ status: 'error', code: 404 });
    const broken = await sb.raw('/vending/services/epin/bundles', {
      method: 'POST',
      headers: { authorization: `Token ${VENDING_KEY}`, 'content-type': 'application/json' },
      body: '{',
    });
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ status: 'error', code: 400 });
  });
});
