/**
 * The client against the embedded sandbox over real HTTP: the two sides of the contract agree, including
 * the shapes the spec leaves open (purchase endpoints, banks, vending errors) that both document.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  DuplicateRequestError,
  MomoClient,
  NotFoundError,
  ValidationError,
} from '../../src/momo/index.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';

let sandbox: Sandbox;
let server: Server;
let url: string;
const client = (version: string) =>
  new MomoClient({
    baseUrl: url,
    apiKey: 'sandbox-key',
    vendingUrl: `${url}/vending`,
    vendingApiKey: 'sandbox-vending-key',
    version,
  });

beforeAll(async () => {
  sandbox = createSandbox({ autoAdvance: false, limits: { readsPerMinute: 1e6 }, logger: pino({ level: 'silent' }) });
  server = createServer(sandbox.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await sandbox.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('client x sandbox', () => {
  it('a payment round trip: create, read, list; the same key again is a DuplicateRequestError', async () => {
    const momo = client('v5');
    const params = {
      phonenumber: '+256772000001',
      amount: '1000',
      currency: 'UGX',
      description: 'Rent',
      metadata: { chat: 'tg:1' },
    };
    const made = await momo.payments.create(params, { key: 'sandbox-pay-1' });
    expect(made.state).toBe('new');
    expect(made.phone_nos?.[0]).toMatchObject({ phonenumber: '+256772000001' });
    expect((await momo.payments.get(made.id)).metadata).toEqual({ chat: 'tg:1' });
    expect((await momo.payments.list()).results.map((p) => p.id)).toContain(made.id);
    await expect(momo.payments.create(params, { key: 'sandbox-pay-1' })).rejects.toBeInstanceOf(DuplicateRequestError);
  });

  it('before v5 phone_nos are bare numbers', async () => {
    const made = await client('v4').payments.create(
      {
        phonenumber: '+256772000001',
        amount: 5,
        currency: 'UGX',
        description: 'x',
      },
      { key: 'k-sandbox-63' },
    );
    expect(made.phone_nos).toEqual(['+256772000001']);
  });

  it('collection requests, contacts, webhooks, events and banks parse', async () => {
    const momo = client('v5');
    const request = await momo.collectionRequests.create(
      {
        phonenumber: '+256772000001',
        amount: 500,
        currency: 'UGX',
        reason: 'Dues',
      },
      { key: 'k-sandbox-74' },
    );
    expect(request.amount).toMatch(/^500(\.0+)?$/);
    expect((await momo.collectionRequests.get(request.id)).id).toBe(request.id);
    const contacts = await momo.contacts.list({ phone_number: '+256772000001' });
    expect(contacts.results[0]?.phone_number).toBe('+256772000001');
    const hook = await momo.webhooks.create({ event: 'collection.received', target: 'https://example.test/hook' });
    expect((await momo.webhooks.get(hook.id)).target).toBe('https://example.test/hook');
    const ids: number[] = [];
    for await (const event of momo.events.listAll({ limit: 1 })) ids.push(event.id);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.length).toBe((await momo.events.list()).count);
    expect(new Set(ids).size).toBe(ids.length);
    expect((await momo.banks.list()).results.length).toBeGreaterThan(0);
    expect(
      await momo.collections.claim({ amount: 1, remote_transaction_id: 'none', phonenumber: '+256772000001' }),
    ).toEqual([]);
  });

  it('errors map: 400 fields, 404, 401', async () => {
    const momo = client('v5');
    const bad = (await momo.payments
      .create({ phonenumber: '+256772000001', amount: 1, currency: 'XXX', description: 'x' }, { key: 'k-sandbox-100' })
      .catch((e: unknown) => e)) as ValidationError;
    expect(bad).toBeInstanceOf(ValidationError);
    expect(Object.keys(bad.fields)).toContain('currency');
    await expect(momo.collections.get(987654)).rejects.toBeInstanceOf(NotFoundError);
    await expect(new MomoClient({ baseUrl: url, apiKey: 'wrong' }).contacts.list()).rejects.toBeInstanceOf(
      AuthenticationError,
    );
  });

  it('vending: validate, list, purchase a pin with the gsmNo returned, buy data', async () => {
    const { vending } = client('v5');
    const pins = await vending.listPinBundles({ service_type: 'jamb' });
    const product = { ...pins[0]!, product_code: pins[0]?.product_code ?? '' };
    const candidate = await vending.validateName({
      service_type: 'jamb',
      account_number: '1234567890',
      product_code: product.product_code,
    });
    expect(candidate.gsmNo).toBeTruthy();
    const bought = await vending.purchasePin(
      {
        service_type: 'jamb',
        product_code: product.product_code,
        account_number: '1234567890',
        gsmNo: candidate.gsmNo ?? '',
        amount: product.amount,
        quantity: 1,
      },
      { key: 'k-sandbox-120' },
    );
    expect(bought).toMatchObject({ status: 'successful', quantity: 1 });
    expect(bought.pins).toHaveLength(1);
    const wrong = (await vending
      .purchasePin(
        {
          service_type: 'jamb',
          product_code: product.product_code,
          account_number: '1234567890',
          gsmNo: '08000000000',
          amount: product.amount,
          quantity: 1,
        },
        { key: 'k-sandbox-131' },
      )
      .catch((e: unknown) => e)) as ValidationError;
    expect(Object.keys(wrong.fields)).toEqual(['gsmNo']);
    const [bundle] = await vending.listDataBundles({ service_type: 'mtn' });
    const data = await vending.purchaseData(
      {
        service_type: 'mtn',
        datacode: bundle!.datacode,
        phonenumber: '+2348031234567',
        amount: bundle!.price,
      },
      { key: 'k-sandbox-142' },
    );
    expect(data).toMatchObject({ status: 'successful', datacode: bundle!.datacode, phonenumber: '+2348031234567' });
  });
});
