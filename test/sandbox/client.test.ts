/**
 * The contract through MomoClient (src/momo) over real HTTP: every resource, the error tree, listAll over
 * several pages, the version header, claim, and the vending group.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  DuplicateRequestError,
  MomoClient,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ValidationError,
} from '../../src/momo/index.js';
import { CANDIDATES, TEST_NUMBERS } from '../../src/sandbox/index.js';
import { API_KEY, startSandbox, VENDING_KEY, type RunningSandbox } from './harness.js';

const SARAH = TEST_NUMBERS.find((t) => t.nameOnNetwork === 'Sarah Nakato')!.phonenumber;
const JAMB = CANDIDATES.find((c) => c.service_type === 'jamb')!;

let sb: RunningSandbox;
let client: MomoClient;
const make = (overrides: Partial<ConstructorParameters<typeof MomoClient>[0]> = {}) =>
  new MomoClient({
    baseUrl: sb.base,
    apiKey: API_KEY,
    vendingUrl: `${sb.base}/vending`,
    vendingApiKey: VENDING_KEY,
    maxRetries: 0,
    ...overrides,
  });

beforeEach(async () => {
  sb = await startSandbox();
  client = make();
});
afterEach(async () => {
  await sb.close();
});

describe('main API through MomoClient', () => {
  it('verifies a contact, pays it and reads the payment once processed', async () => {
    const contact = await client.contacts.create({
      phone_number: SARAH,
      first_name: 'Sarah',
      last_name: 'Nakato',
      metadata: { sync: '1' },
    });
    expect(contact.name_on_network).toBe('Sarah Nakato');
    const again = await client.contacts.create({
      phone_number: SARAH,
      first_name: 'X',
      last_name: 'Y',
      metadata: { sync: '1' },
    });
    expect(again.id).toBe(contact.id);

    const payment = await client.payments.create(
      { phonenumber: SARAH, amount: '2500.50', currency: 'UGX', description: 'Fare', metadata: { chat: 'ussd:1' } },
      { key: 'run-1:pay' },
    );
    expect(payment.state).toBe('new');
    await expect(
      client.payments.create(
        { phonenumber: SARAH, amount: '2500.50', currency: 'UGX', description: 'Fare' },
        { key: 'run-1:pay' },
      ),
    ).rejects.toBeInstanceOf(DuplicateRequestError);
    await sb.controls.advanceClock(2);
    const done = await client.payments.get(payment.id);
    expect(done).toMatchObject({ state: 'processed', amount: '2500.50' });
    const updated = await client.contacts.update(contact.id, { first_name: 'Sarah N.' });
    expect(updated.first_name).toBe('Sarah N.');
  });

  it('maps errors to the client error tree', async () => {
    const server = await client.payments
      .create({ phonenumber: SARAH, amount: '10', account: 99, description: 'x' }, { key: 'k-client-78' })
      .catch((e) => e);
    expect(server).toBeInstanceOf(ValidationError);
    expect((server as ValidationError).fields.account?.[0]).toMatch(/does not exist/);
    await expect(client.payments.get(12345)).rejects.toBeInstanceOf(NotFoundError);
    await expect(make({ apiKey: 'nope' }).contacts.list()).rejects.toBeInstanceOf(AuthenticationError);
    sb.controls.addOrganization({ apiKey: 'other' });
    const theirs = await make({ apiKey: 'other' }).contacts.create({
      phone_number: SARAH,
      first_name: 'A',
      last_name: 'B',
    });
    await expect(client.contacts.get(theirs.id)).rejects.toBeInstanceOf(PermissionError);
  });

  it('follows next links with listAll and sends the version header', async () => {
    for (let i = 0; i < 23; i++) {
      await client.contacts.create({
        phone_number: `+2567720200${String(i).padStart(2, '0')}`,
        first_name: `N${i}`,
        last_name: 'L',
      });
    }
    const ids: number[] = [];
    for await (const c of client.contacts.listAll({ limit: 10 })) ids.push(Number(c.id));
    expect(ids).toHaveLength(23);
    expect(new Set(ids).size).toBe(23);

    const payment = await client.payments.create(
      {
        phonenumber: SARAH,
        amount: '100',
        currency: 'UGX',
        description: 'v',
      },
      { key: 'k-client-106' },
    );
    const old = await make({ version: 'v4' }).payments.get(payment.id);
    expect(old.phone_nos).toEqual([SARAH]);
  });

  it('creates a collection request, sees it matched, claims an unassigned collection', async () => {
    const request = await client.collectionRequests.create(
      {
        phonenumber: SARAH,
        amount: '4000',
        currency: 'UGX',
        reason: 'Dues',
        metadata: { chat: 'slack:T:U' },
      },
      { key: 'k-client-117' },
    );
    expect(request.status).toBe('pending');
    const c = await sb.controls.sendCollection({
      phonenumber: SARAH,
      amount: '4000',
      currency: 'UGX',
      reference: 'dues',
    });
    expect((await client.collectionRequests.get(request.id)).status).toBe('successful');
    expect((await client.collections.get(c.id as number)).reference).toBe('dues');

    await sb.controls.sendCollection({
      phonenumber: SARAH,
      amount: '75',
      currency: 'UGX',
      remote_transaction_id: 'AGENT-7',
      organization: null,
    });
    const claimed = await client.collections.claim({
      amount: '75',
      remote_transaction_id: 'AGENT-7',
      phonenumber: SARAH,
    });
    expect(claimed.map((x) => x.remote_transaction_id)).toEqual(['AGENT-7']);
    const filtered = await client.collections.list({ remote_transaction_id: 'AGENT-7' });
    expect(filtered.results).toHaveLength(1);
  });

  it('lists every match of a filtered collection query, though the service answers it as bare pages', async () => {
    for (let i = 0; i < 13; i++)
      await sb.controls.sendCollection({ phonenumber: SARAH, amount: String(100 + i), currency: 'UGX' });
    await sb.controls.sendCollection({ phonenumber: '+256772999999', amount: '5', currency: 'UGX' });
    const all: number[] = [];
    for await (const c of client.collections.listAll({ phonenumber: SARAH })) all.push(Number(c.id));
    expect(all).toHaveLength(13);
    expect(new Set(all).size).toBe(13);
    const paged: number[] = [];
    for await (const c of client.collections.listAll({ phonenumber: SARAH, limit: 5 })) paged.push(Number(c.id));
    expect(paged.sort((a, b) => a - b)).toEqual([...all].sort((a, b) => a - b));
    const listed = await client.collections.list({ phonenumber: SARAH });
    expect(listed.count).toBe(13);
    expect(listed.results).toHaveLength(13);
    expect((await client.collections.list({ phonenumber: SARAH, limit: 10, offset: 10 })).results).toHaveLength(3);
  });

  it('manages webhooks and reads events', async () => {
    const hook = await client.webhooks.create({ event: 'contact.created', target: 'https://example.com/n' });
    expect((await client.webhooks.get(hook.id)).target).toBe('https://example.com/n');
    await client.contacts.create({ phone_number: SARAH, first_name: 'S', last_name: 'N' });
    const events = await client.events.list({ type: 'contact.created' });
    expect(events.count).toBe(1);
    expect((await client.events.get(events.results[0]!.id)).type).toBe('contact.created');
    const banks = await client.banks.list();
    expect(banks.count).toBeGreaterThan(0);
  });

  it('meets the read limit with RateLimitError carrying Retry-After', async () => {
    await sb.close();
    sb = await startSandbox({ limits: { readsPerMinute: 2 } });
    client = make();
    await client.contacts.list();
    await client.contacts.list();
    const err = await client.contacts.list().catch((e) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterMs).toBeGreaterThan(0);
  });
});

describe('vending through MomoClient', () => {
  it('validates a candidate, lists bundles, buys pins with the validated gsmNo and buys data', async () => {
    const validation = await client.vending.validateName({
      service_type: 'jamb',
      account_number: JAMB.account_number,
      product_code: 'utme',
    });
    expect(validation.gsmNo).toBe(JAMB.gsmNo);
    expect(validation.user?.name).toBe(`${JAMB.firstName} ${JAMB.middleName} ${JAMB.lastName}`);
    const pins = await client.vending.listPinBundles({ service_type: 'jamb' });
    const utme = pins.find((p) => p.description?.includes('UTME'))!;
    const bought = await client.vending.purchasePin(
      {
        service_type: 'jamb',
        product_code: 'utme',
        account_number: JAMB.account_number,
        gsmNo: validation.gsmNo!,
        amount: utme.amount,
        quantity: 2,
      },
      { key: 'k-client-202' },
    );
    expect(bought).toMatchObject({ status: 'successful', quantity: 2 });
    expect(bought.pins).toHaveLength(2);
    const wrongNumber = client.vending.purchasePin(
      {
        service_type: 'jamb',
        product_code: 'utme',
        account_number: JAMB.account_number,
        gsmNo: '08099999999',
        amount: utme.amount,
        quantity: 1,
      },
      { key: 'k-client-212' },
    );
    await expect(wrongNumber).rejects.toBeInstanceOf(ValidationError);

    const bundles = await client.vending.listDataBundles({ service_type: 'mtn' });
    const bundle = bundles[0]!;
    const data = await client.vending.purchaseData(
      {
        service_type: 'mtn',
        datacode: bundle.datacode,
        phonenumber: '+2348031234567',
        amount: bundle.price,
      },
      { key: 'k-client-224' },
    );
    expect(data).toMatchObject({ status: 'successful', phonenumber: '+2348031234567' });
    expect(String(data.datacode)).toBe(String(bundle.datacode));
    expect(sb.controls.purchases().map((p) => p.kind)).toEqual(['epin', 'databundle']);
  });
});
