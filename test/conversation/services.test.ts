import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { keys } from '../../src/store/keys.js';
import { createFlowCalls, forgetFailedName, type FlowCallsOptions } from '../../src/conversation/calls/flow-calls.js';
import { createLogger } from '../../src/log.js';
import { MomoClient } from '../../src/momo/index.js';
import { ScriptedServer } from '../momo/scriptedServer.js';

const PHONE = '+256772123456';
const policy = new AccessPolicy({
  roles: {
    clerk: { flows: ['pay', 'request', 'check'], perPaymentLimit: { UGX: '100' }, dailyLimit: { UGX: '100' } },
    auditor: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {}, seeAllCollections: true },
  },
  users: { telegram: { u1: { role: 'clerk' }, u2: { role: 'clerk' }, boss: { role: 'auditor' } } },
});
const U1 = { channel: 'telegram', userId: 'u1' };
const U2 = { channel: 'telegram', userId: 'u2' };

let server: ScriptedServer;
beforeAll(async () => {
  server = await ScriptedServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

function setup(extra: Partial<FlowCallsOptions> = {}) {
  const lines: string[] = [];
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  let now = 1_000_000;
  const store = new MemoryStore();
  const client = new MomoClient({
    baseUrl: server.url,
    apiKey: 'secret-key',
    vendingUrl: `${server.url}/vending`,
    vendingApiKey: 'vk',
    maxRetries: 0,
  });
  const calls = createFlowCalls({
    client,
    policy,
    store,
    logger,
    now: () => now,
    moneyCallRetry: { maxRetries: 0 },
    ...extra,
  });
  return { services: calls, store, lines, advance: (ms: number) => (now += ms) };
}

const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );
const contact = {
  id: 7,
  phone_number: PHONE,
  first_name: 'Jane',
  last_name: 'Doe',
  phone_is_supported: 'yes',
  phone_is_mm_registered: 'yes',
  name_on_network: 'JANE A DOE',
  network_name: 'MTN',
};
const payment = (over: object = {}) => ({ id: 41, state: 'submitted', description: 'rent', phone_nos: [], ...over });

describe('createFlowCalls', () => {
  it('verifyContact creates the contact with sync=1, and lookupContact then answers from the local record only', async () => {
    const { services: calls } = setup();
    expect(await calls.lookupContact({ phonenumber: PHONE, ...U1 })).toEqual({ known: false, registered: false });
    server.reply({ status: 201, body: contact });
    const check = await calls.verifyContact({ phonenumber: PHONE, firstName: 'Jane', lastName: 'Doe', ...U1 });
    expect(check).toEqual({
      known: true,
      registered: true,
      nameOnNetwork: 'JANE A DOE',
      networkName: 'MTN',
      firstName: 'Jane',
      lastName: 'Doe',
    });
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      url: '/api/contacts',
      body: { phone_number: PHONE, first_name: 'Jane', last_name: 'Doe', metadata: { sync: '1' } },
    });
    expect(await calls.lookupContact({ phonenumber: PHONE, ...U1 })).toEqual(check);
    expect(server.requests).toHaveLength(1);
  });

  it('the names one user gave a number are theirs; another user learns only what the network said', async () => {
    const { services: calls } = setup();
    // The service's contact carries names someone typed when it was created: neither user gets them.
    server.reply({ status: 201, body: { ...contact, first_name: 'Typed', last_name: 'Elsewhere' } });
    expect(await calls.verifyContact({ phonenumber: PHONE, firstName: 'Jane', lastName: 'Doe', ...U1 })).toMatchObject({
      firstName: 'Jane',
      lastName: 'Doe',
    });
    expect(await calls.lookupContact({ phonenumber: PHONE, ...U2 })).toEqual({
      known: false,
      registered: true,
      nameOnNetwork: 'JANE A DOE',
      networkName: 'MTN',
    });
    expect(await calls.lookupContact({ phonenumber: PHONE, channel: 'ussd', userId: 'u1' })).toMatchObject({
      known: false,
    });
  });

  it('a number the network says is not registered reads as not registered', async () => {
    const { services: calls } = setup();
    server.reply({ status: 201, body: { ...contact, phone_is_mm_registered: 'no' } });
    expect((await calls.verifyContact({ phonenumber: PHONE, firstName: 'J', lastName: 'D', ...U1 })).registered).toBe(
      false,
    );
  });

  it('createPayment sends our Duplicate-Check-Key and remembers the contact', async () => {
    const { services: calls, store } = setup();
    server.reply({ status: 201, body: payment() });
    const result = await calls.createPayment({
      duplicateCheckKey: 'run-9:pay',
      paymentType: 'money',
      phonenumber: PHONE,
      amount: '1500.50',
      currency: 'UGX',
      description: 'rent',
      firstName: 'Jane',
      lastName: 'Doe',
      metadata: { chat: 'telegram:1' },
      ...U1,
    });
    expect(result).toEqual({ id: '41', state: 'submitted' });
    expect(server.header('duplicate-check-key')).toEqual(['run-9:pay']);
    expect(server.requests[0]?.body).toMatchObject({
      phonenumber: PHONE,
      payment_type: 'money',
      amount: '1500.5',
      metadata: { chat: 'telegram:1' },
      first_name: 'Jane',
    });
    // Names the network never confirmed are not kept: the next payment asks them again.
    expect((await store.get(keys.ownContact(U1, PHONE)))?.snapshot).toEqual({ registered: true });
    // Names typed by a payer are nobody else's: the shared record holds only what the network verified.
    expect(await store.get(keys.contact(PHONE))).toBeNull();
  });

  const pay = (over: object = {}) => ({
    duplicateCheckKey: 'run-1:pay',
    paymentType: 'money' as const,
    phonenumber: PHONE,
    amount: '10',
    currency: 'UGX',
    description: 'x',
    metadata: {},
    ...U1,
    ...over,
  });

  it('a name the network refused is not kept: no names known, the payee listed by number', async () => {
    const { services: calls, store } = setup();
    // The network knows the number as JANE A DOE; the payer typed Mary Doe and stopped at the mismatch.
    server.reply({ status: 201, body: contact });
    await calls.verifyContact({ phonenumber: PHONE, firstName: 'Mary', lastName: 'Doe', ...U1 });
    expect(await calls.lookupContact({ phonenumber: PHONE, ...U1 })).toEqual({
      known: false,
      registered: true,
      nameOnNetwork: 'JANE A DOE',
      networkName: 'MTN',
    });
    expect(await store.get(keys.ownContact(U1, PHONE))).toBeNull();
    // Paid under the refused name all the same (the organization's name check off): still not kept, not listed.
    server.reply({ status: 201, body: payment() });
    await calls.createPayment(pay({ firstName: 'Mary', lastName: 'Doe', payeeName: 'Mary Doe' }));
    expect((await calls.lookupContact({ phonenumber: PHONE, ...U1 })).known).toBe(false);
    expect(await calls.recentPayees(U1)).toEqual([{ kind: 'money', phone: PHONE, currency: 'UGX' }]);
  });

  it('names the network confirmed (its check matched, or its own name chosen) are kept and listed', async () => {
    const { services: calls } = setup();
    server.reply({ status: 201, body: contact }, { status: 201, body: payment() });
    await calls.verifyContact({ phonenumber: PHONE, firstName: 'jane', lastName: 'doe', ...U1 });
    expect(await calls.lookupContact({ phonenumber: PHONE, ...U1 })).toMatchObject({
      known: true,
      firstName: 'jane',
      lastName: 'doe',
    });
    // A known contact is paid without names given: its confirmed name is listed.
    await calls.createPayment(pay({ payeeName: 'jane doe' }));
    expect(await calls.recentPayees(U1)).toEqual([
      { kind: 'money', phone: PHONE, currency: 'UGX', name: 'jane doe', nameChecked: true },
    ]);
    // Another user chose the network's own name (learnt by the first user's verification): kept for them.
    server.reply({ status: 201, body: payment({ id: 42 }) });
    await calls.createPayment(
      pay({ ...U2, duplicateCheckKey: 'run-2:pay', firstName: 'JANE', lastName: 'A DOE', payeeName: 'JANE A DOE' }),
    );
    expect(await calls.lookupContact({ phonenumber: PHONE, ...U2 })).toMatchObject({ known: true });
    expect((await calls.recentPayees(U2))[0]).toMatchObject({ name: 'JANE A DOE', nameChecked: true });
  });

  it('a payee kept before names had to be confirmed is asked again and listed by number', async () => {
    const { services: calls, store } = setup();
    await store.set(keys.ownContact(U1, PHONE), { registered: true, firstName: 'Otim', lastName: 'Peter' }, null, 60);
    await store.set(keys.recentPayees(U1), [{ kind: 'money', phone: PHONE, name: 'Otim Peter' }], null, 60);
    expect((await calls.lookupContact({ phonenumber: PHONE, ...U1 })).known).toBe(false);
    expect(await calls.recentPayees(U1)).toEqual([{ kind: 'money', phone: PHONE }]);
  });

  it('a payment that fails on the name forgets the names: the next is checked again', async () => {
    const { services: calls, store, lines } = setup();
    server.reply({ status: 201, body: contact }, { status: 201, body: payment() });
    await calls.verifyContact({ phonenumber: PHONE, firstName: 'Jane', lastName: 'Doe', ...U1 });
    await calls.createPayment(pay({ payeeName: 'Jane Doe' }));
    expect((await calls.lookupContact({ phonenumber: PHONE, ...U1 })).known).toBe(true);
    const logger = createLogger('silent');
    // A failure for another reason forgets nothing.
    await forgetFailedName({ store, logger }, 'run-1:pay', 'The recipient network did not confirm the transfer.');
    expect((await calls.lookupContact({ phonenumber: PHONE, ...U1 })).known).toBe(true);
    await forgetFailedName(
      { store, logger },
      'run-1:pay',
      'The name "Jane Doe" does not match the name on the network ("JANE A DOE").',
    );
    expect((await calls.lookupContact({ phonenumber: PHONE, ...U1 })).known).toBe(false);
    expect(await calls.recentPayees(U1)).toEqual([{ kind: 'money', phone: PHONE, currency: 'UGX' }]);
    expect(await store.get(keys.paidNames('run-1:pay'))).toBeNull();
    expect(lines.join('')).not.toContain(PHONE);
  });

  it('a bank payment sends the bank fields without a payment type', async () => {
    const { services: calls } = setup();
    server.reply({ status: 201, body: payment({ id: 42 }) });
    await calls.createPayment({
      duplicateCheckKey: 'k',
      paymentType: 'bank',
      phonenumber: PHONE,
      amount: '10',
      currency: 'UGX',
      description: 'x',
      bank: { bank: '3', accountNumber: '12345', accountName: 'Jane Doe', email: 'j@example.com' },
      metadata: {},
    });
    const body = server.requests[0]?.body as Record<string, unknown>;
    expect(body).toMatchObject({ account_number: '12345', account_name: 'Jane Doe', bank: 3, email: 'j@example.com' });
    expect(body.payment_type).toBeUndefined();
  });

  it("a bank payment whose email was skipped sends the organization's address, and keeps none for the payee", async () => {
    const { services: calls } = setup({ bankTransferEmail: 'payments@org.example' });
    server.reply({ status: 201, body: payment({ id: 42 }) });
    await calls.createPayment({
      duplicateCheckKey: 'k',
      paymentType: 'bank',
      phonenumber: PHONE,
      amount: '10',
      currency: 'UGX',
      description: 'x',
      payeeName: 'Jane Doe',
      bank: { bank: '3', name: 'Stanbic', accountNumber: '12345', accountName: 'Jane Doe' },
      metadata: {},
      ...U1,
    });
    const body = server.requests[0]?.body as Record<string, unknown>;
    expect(body).toMatchObject({ account_number: '12345', bank: 3, email: 'payments@org.example' });
    const kept = (await calls.recentPayees(U1))[0]?.bank;
    expect(kept).toEqual({ id: '3', name: 'Stanbic', accountNumber: '12345', accountName: 'Jane Doe' });
  });

  it("keeps the payee with the currency paid and a bank account's details (never a PIN), newest first, each once", async () => {
    const { services: calls } = setup();
    const account = {
      bank: '3',
      name: 'Stanbic',
      accountNumber: '12345',
      accountName: 'Jane Doe',
      email: 'j@example.com',
    };
    const bankPayment = {
      paymentType: 'bank' as const,
      phonenumber: PHONE,
      currency: 'UGX',
      description: 'x',
      bank: account,
      metadata: {},
      ...U1,
    };
    server.reply(
      { status: 201, body: payment({ id: 43 }) },
      { status: 201, body: payment({ id: 44 }) },
      { status: 201, body: payment({ id: 45 }) },
    );
    await calls.createPayment({ ...bankPayment, duplicateCheckKey: 'k1', amount: '10', payeeName: 'Jane Doe' });
    await calls.createPayment({
      duplicateCheckKey: 'k2',
      paymentType: 'money',
      phonenumber: PHONE,
      amount: '20',
      currency: 'KES',
      description: 'x',
      payeeName: 'Jane Doe',
      metadata: {},
      ...U1,
    });
    // The same account again: one entry, now first.
    await calls.createPayment({ ...bankPayment, duplicateCheckKey: 'k3', amount: '30', payeeName: 'Jane Doe' });
    expect(await calls.recentPayees(U1)).toEqual([
      {
        kind: 'bank',
        phone: PHONE,
        currency: 'UGX',
        name: 'Jane Doe',
        bank: { id: '3', name: 'Stanbic', accountNumber: '12345', accountName: 'Jane Doe', email: 'j@example.com' },
      },
      // Its name was never confirmed by the network: listed by number.
      { kind: 'money', phone: PHONE, currency: 'KES' },
    ]);
    expect(await calls.recentPayees(U2)).toEqual([]);
  });

  it('a duplicate of our own key is AlreadySubmitted, for every money-moving create', async () => {
    const { services: calls } = setup();
    const duplicate = { status: 409, body: { detail: 'Duplicate Request Detected!' } };
    server.reply(duplicate, duplicate, duplicate, duplicate);
    const base = {
      duplicateCheckKey: 'run-1:x',
      phonenumber: PHONE,
      amount: '5',
      currency: 'UGX',
      metadata: { chat: 'c' },
    };
    const already = { kind: 'alreadySubmitted' };
    expect(await calls.createPayment({ ...base, paymentType: 'money', description: 'd' })).toEqual(already);
    expect(await calls.createCollectionRequest({ ...base, reason: 'r', sendInstructions: true })).toEqual(already);
    expect(await calls.purchaseData({ ...base, network: 'mtn', datacode: 'd1' })).toEqual(already);
    expect(
      await calls.purchasePin({
        ...base,
        serviceType: 'waec',
        productCode: 'p',
        accountNumber: 'a',
        gsmNo: '080',
        quantity: 1,
      }),
    ).toEqual(already);
  });

  it('a payment the service refuses gives its spend reservation back; one whose outcome is unknown keeps it', async () => {
    const { services: calls } = setup();
    const reserve = (key: string) =>
      calls.reserveSpend({
        channel: 'telegram',
        userId: 'u1',
        flow: 'pay',
        amount: '60',
        currency: 'UGX',
        duplicateCheckKey: key,
      });
    const pay = (key: string) =>
      calls.createPayment({
        duplicateCheckKey: key,
        paymentType: 'money',
        phonenumber: PHONE,
        amount: '60',
        currency: 'UGX',
        description: 'd',
        metadata: {},
      });
    // Daily limit 100 UGX: one reservation of 60 leaves room for no other.
    await reserve('run-1:pay');
    server.reply({ status: 400, body: { amount: ['Insufficient balance'] } });
    expect(await failureOf(pay('run-1:pay'))).toMatchObject({ code: 'validation' });
    await expect(reserve('run-2:pay')).resolves.toBeUndefined(); // given back: room again
    server.reply({ drop: true });
    expect(await failureOf(pay('run-2:pay'))).toMatchObject({ code: 'connection' });
    expect(await failureOf(reserve('run-3:pay'))).toMatchObject({ code: 'limit_exceeded' }); // kept: it may have been paid
  });

  it('a payment whose create ends in 429 keeps its spend reservation: an earlier attempt under its key may have been made', async () => {
    const { services: calls } = setup();
    const reserve = (key: string) =>
      calls.reserveSpend({
        channel: 'telegram',
        userId: 'u1',
        flow: 'pay',
        amount: '60',
        currency: 'UGX',
        duplicateCheckKey: key,
      });
    await reserve('run-1:pay');
    server.reply({ status: 429, body: { detail: 'slow down' } });
    const pay = calls.createPayment({
      duplicateCheckKey: 'run-1:pay',
      paymentType: 'money',
      phonenumber: PHONE,
      amount: '60',
      currency: 'UGX',
      description: 'd',
      metadata: {},
    });
    expect(await failureOf(pay)).toMatchObject({ code: 'rate_limited' });
    expect(await failureOf(reserve('run-2:pay'))).toMatchObject({ code: 'limit_exceeded' });
  });

  it('a create whose outcome stays unknown is asked again by the client alone, under the same key, within one time budget', async () => {
    const retried = createFlowCalls({
      client: new MomoClient({ baseUrl: server.url, apiKey: 'k', maxRetries: 0, retryBaseDelayMs: 1 }),
      policy,
      store: new MemoryStore(),
      logger: createLogger('silent'),
      moneyCallRetry: { maxRetries: 5, budgetMs: 10_000 },
    });
    server.reply(
      { status: 503, body: { detail: 'maintenance' } },
      { drop: true },
      { status: 502, body: { detail: 'bad gateway' } },
      { status: 201, body: payment() },
    );
    const made = await retried.createPayment({
      duplicateCheckKey: 'run-1:pay',
      paymentType: 'money',
      phonenumber: PHONE,
      amount: '1000',
      currency: 'UGX',
      description: 'rent',
      metadata: {},
    });
    expect(made).toEqual({ id: '41', state: 'submitted' });
    expect(server.header('duplicate-check-key')).toEqual(['run-1:pay', 'run-1:pay', 'run-1:pay', 'run-1:pay']);
    // Past its budget, the call gives up (the flow then says it could not confirm, and the chat hears later).
    server.reset();
    const tight = createFlowCalls({
      client: new MomoClient({ baseUrl: server.url, apiKey: 'k', retryBaseDelayMs: 200 }),
      policy,
      store: new MemoryStore(),
      logger: createLogger('silent'),
      moneyCallRetry: { maxRetries: 10, budgetMs: 250 },
    });
    server.reply(...Array.from({ length: 10 }, () => ({ status: 503, body: { detail: 'maintenance' } })));
    expect(
      await failureOf(
        tight.createPayment({
          duplicateCheckKey: 'run-2:pay',
          paymentType: 'money',
          phonenumber: PHONE,
          amount: '1',
          currency: 'UGX',
          description: 'd',
          metadata: {},
        }),
      ),
    ).toMatchObject({ code: 'service' });
    expect(server.requests.length).toBeLessThan(4);
  });

  it('sends the Spectranet account number with a data purchase', async () => {
    const { services: calls } = setup();
    server.reply({
      status: 200,
      body: {
        status: 'success',
        message: 'ok',
        code: 200,
        data: { reference: 'R1', status: 'successful', datacode: 'sp1', phonenumber: PHONE, amount: '5' },
      },
    });
    const bought = await calls.purchaseData({
      duplicateCheckKey: 'run-2:data',
      network: 'spectranet',
      datacode: 'sp1',
      phonenumber: PHONE,
      amount: '5',
      accountNumber: 'SP-7788',
      metadata: { chat: 'c' },
    });
    expect(bought).toMatchObject({ reference: 'R1', status: 'successful' });
    expect(server.requests[0]).toMatchObject({
      url: '/vending/services/databundle/purchase',
      body: { service_type: 'spectranet', account_number: 'SP-7788' },
    });
  });

  it('maps every error class to its ServiceFailure code and keeps validation fields', async () => {
    const { services: calls } = setup();
    server.reply(
      { status: 400, body: { amount: ['Insufficient balance'] } },
      { status: 401, body: { detail: 'Invalid token.' } },
      { status: 403, body: { detail: 'no' } },
      { status: 404, body: { detail: 'Not found.' } },
      { status: 429, body: { detail: 'slow down' } },
      { status: 503, body: { detail: 'maintenance' } },
      { drop: true },
    );
    const pay = () =>
      calls.createPayment({
        duplicateCheckKey: 'k',
        paymentType: 'money',
        phonenumber: PHONE,
        amount: '1',
        currency: 'UGX',
        description: 'd',
        metadata: {},
      });
    expect(await failureOf(pay())).toMatchObject({ code: 'validation', fields: { amount: ['Insufficient balance'] } });
    const codes = [];
    for (let i = 0; i < 6; i++) codes.push(((await failureOf(pay())) as { code: string }).code);
    expect(codes).toEqual(['unauthenticated', 'forbidden', 'not_found', 'rate_limited', 'service', 'connection']);
  });

  it('logs failures without phone numbers or keys', async () => {
    const { services: calls, lines } = setup();
    server.reply({ status: 400, body: { phone_number: [`${PHONE} is not valid`] } });
    await failureOf(calls.verifyContact({ phonenumber: PHONE, firstName: 'J', lastName: 'D', ...U1 }));
    const log = lines.join('');
    expect(log).toContain('"code":"validation"');
    expect(log).not.toContain(PHONE);
    expect(log).not.toContain('secret-key');
  });

  it('reserveSpend and verifyPin answer from the policy as ServiceFailures', async () => {
    const { services: calls } = setup();
    const spend = { channel: 'telegram', flow: 'pay', currency: 'UGX' };
    expect(
      await failureOf(calls.reserveSpend({ ...spend, userId: 'u1', amount: '101', duplicateCheckKey: 'a' })),
    ).toMatchObject({ code: 'limit_exceeded' });
    expect(
      await failureOf(calls.reserveSpend({ ...spend, userId: 'nobody', amount: '1', duplicateCheckKey: 'b' })),
    ).toMatchObject({ code: 'not_allowed' });
    await expect(
      calls.reserveSpend({ ...spend, userId: 'u1', amount: '100', duplicateCheckKey: 'c' }),
    ).resolves.toBeUndefined();
    expect(await failureOf(calls.verifyPin({ channel: 'telegram', userId: 'u1', pin: '1234' }))).toMatchObject({
      code: 'not_allowed',
    });
    expect(server.requests).toHaveLength(0);
  });

  it("lists a person's own country's banks and those naming none; no country: every bank (one read)", async () => {
    const { services: calls } = setup();
    server.reply({
      body: [
        { id: 1, name: 'Stanbic Bank Uganda', country: 'UG' },
        { id: 5, name: 'KCB Bank Kenya', country: 'KE' },
        { id: 9, name: 'Regional Bank' },
      ],
    });
    expect(await calls.listBanks({ country: 'UG' })).toEqual([
      { id: '1', name: 'Stanbic Bank Uganda' },
      { id: '9', name: 'Regional Bank' },
    ]);
    expect(await calls.listBanks({ country: 'KE' })).toEqual([
      { id: '5', name: 'KCB Bank Kenya' },
      { id: '9', name: 'Regional Bank' },
    ]);
    expect(await calls.listBanks({ country: 'NG' })).toEqual([{ id: '9', name: 'Regional Bank' }]);
    expect((await calls.listBanks({})).map((b) => b.id)).toEqual(['1', '5', '9']);
    expect(server.requests).toHaveLength(1);
  });

  it('caches the bank list for an hour', async () => {
    const { services: calls, advance } = setup();
    server.reply(
      { body: { count: 1, next: null, previous: null, results: [{ id: 3, name: 'Stanbic' }] } },
      { body: [{ id: 4, name: 'Equity' }] },
    );
    expect(await calls.listBanks({})).toEqual([{ id: '3', name: 'Stanbic' }]);
    advance(3599_000);
    expect(await calls.listBanks({})).toEqual([{ id: '3', name: 'Stanbic' }]);
    expect(server.requests).toHaveLength(1);
    advance(1_000);
    expect(await calls.listBanks({})).toEqual([{ id: '4', name: 'Equity' }]);
    expect(server.requests).toHaveLength(2);
  });

  it('createCollectionRequest sends the reason and asks the service to instruct the payer', async () => {
    const { services: calls } = setup();
    server.reply({
      status: 201,
      body: { id: 5, amount: '2000', currency: 'UGX', phonenumber: PHONE, status: 'pending', mfscode: '*165#' },
    });
    const made = await calls.createCollectionRequest({
      duplicateCheckKey: 'r1',
      phonenumber: PHONE,
      amount: '2000',
      currency: 'UGX',
      reason: 'fees',
      sendInstructions: true,
      metadata: { chat: 'ussd:+256' },
    });
    expect(made).toEqual({ id: '5', status: 'pending', mfscode: '*165#' });
    expect(server.requests[0]?.body).toMatchObject({ reason: 'fees', send_instructions: true });
  });

  it('latest collections are asked newest first and summarised with the sender (a role that sees all)', async () => {
    const { services: calls } = setup();
    server.reply({
      body: {
        count: 1,
        next: null,
        previous: null,
        results: [
          {
            id: 9,
            amount: 700,
            currency: 'UGX',
            phonenumber: PHONE,
            status: 'successful',
            reference: 'R',
            remote_transaction_id: 'TX',
            payment_date: '2026-01-01',
            contact: { ...contact },
          },
        ],
      },
    });
    expect(await calls.latestCollections({ limit: 3, channel: 'telegram', userId: 'boss' })).toEqual([
      {
        id: '9',
        amount: '700',
        currency: 'UGX',
        phonenumber: PHONE,
        status: 'successful',
        reference: 'R',
        remoteTransactionId: 'TX',
        paymentDate: '2026-01-01',
        // As people read it: the TZ setting's zone (UTC in tests) with its name.
        paymentTime: '2026-01-01 00:00 UTC',
        senderName: 'Jane Doe',
      },
    ]);
    expect(server.requests[0]?.url).toMatch(/^\/api\/collections\?/);
    expect(server.requests[0]?.url).toContain('ordering=-created');
    expect(server.requests[0]?.url).toContain('limit=3');
  });

  it('latest collections of a user without seeAllCollections: those of their own requests, and no read when they made none', async () => {
    const { services: calls } = setup();
    expect(await calls.latestCollections({ limit: 5, ...U1 })).toEqual([]);
    expect(server.requests).toHaveLength(0);
    server.reply({
      status: 201,
      body: { id: 5, amount: '2000', currency: 'UGX', phonenumber: PHONE, status: 'pending' },
    });
    await calls.createCollectionRequest({
      duplicateCheckKey: 'r5',
      phonenumber: PHONE,
      amount: '2000',
      currency: 'UGX',
      reason: 'fees',
      sendInstructions: false,
      metadata: {},
      ...U1,
    });
    const collection = (id: number, request: unknown) => ({
      id,
      amount: 2000,
      currency: 'UGX',
      phonenumber: PHONE,
      status: 'successful',
      collection_request: request,
    });
    const page = {
      body: {
        count: 3,
        next: null,
        previous: null,
        results: [
          collection(11, { id: 6, amount: '2000', currency: 'UGX', phonenumber: PHONE, status: 'successful' }),
          collection(12, 5),
          collection(13, null),
        ],
      },
    };
    server.reply(page, page);
    expect((await calls.latestCollections({ limit: 5, ...U1 })).map((c) => c.id)).toEqual(['12']);
    expect((await calls.latestCollections({ limit: 5, ...U2 })).map((c) => c.id)).toEqual([]);
    expect(server.requests.filter((r) => r.url.startsWith('/api/collections'))).toHaveLength(1);
  });

  it('validateCandidate returns the name and the gsmNo to buy with, or not_found', async () => {
    const { services: calls } = setup();
    const ok = (data: unknown) => ({ body: { status: 'success', message: 'Successful', code: 200, data } });
    server.reply(
      ok({ user: { name: 'JOHN PUPIL', rawOutput: { gsmNo: '08030000000' } } }),
      ok({ user: { name: null }, errorMessage: 'Invalid code' }),
    );
    const query = { serviceType: 'jamb', productCode: 'UTME', accountNumber: 'C1' };
    expect(await calls.validateCandidate(query)).toEqual({ name: 'JOHN PUPIL', gsmNo: '08030000000' });
    expect(await failureOf(calls.validateCandidate(query))).toEqual({ code: 'not_found', message: 'Invalid code' });
  });
});
