/**
 * Contract suite over real HTTP with raw requests: auth, contacts, payments, pagination, versions, errors.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { startSandbox, type RunningSandbox } from './harness.js';

const number = (behaviour: string, country = '+256') =>
  TEST_NUMBERS.find((t) => t.behaviour === behaviour && t.phonenumber.startsWith(country))!.phonenumber;
const SARAH = number('registered');
const UNREGISTERED = number('unregistered');
const NAME_DIFFERS = number('name_differs');
const FAILS = number('payment_fails');

let sb: RunningSandbox;
beforeEach(async () => {
  sb = await startSandbox();
});
afterEach(async () => {
  await sb.close();
});

const pay = (json: Record<string, unknown>, headers?: Record<string, string>) =>
  sb.api('POST', '/payments', { json: { currency: 'UGX', description: 'Lunch', amount: '5000', ...json }, headers });

describe('authentication', () => {
  it('answers 401 {detail} without a token or with a wrong one', async () => {
    for (const key of [null, 'wrong']) {
      const res = await sb.api('GET', '/contacts', { key });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Invalid token.' });
    }
  });
});

describe('contacts', () => {
  it('creates (201), then returns the existing contact (200) with verification when sync=1', async () => {
    const created = await sb.api('POST', '/contacts', {
      json: { phone_number: SARAH, first_name: 'Sarah', last_name: 'Nakato' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ phone_number: SARAH, first_name: 'Sarah', status: 'active', organization: 1 });
    expect(created.body).not.toHaveProperty('name_on_network');

    const again = await sb.api('POST', '/contacts', {
      form: { phone_number: SARAH, first_name: 'Someone', last_name: 'Else', 'metadata.sync': '1' },
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      id: created.body.id,
      first_name: 'Sarah',
      phone_is_supported: 'yes',
      phone_is_mm_registered: 'yes',
      name_on_network: 'Sarah Nakato',
      name_matches_network_status: 'checked',
      name_matches_network_score: 100,
      network_name: 'MTN Uganda',
    });
    const read = await sb.api('GET', `/contacts/${created.body.id}`);
    expect(read.body.name_on_network).toBe('Sarah Nakato');
  });

  it('tells an unregistered number and a name that differs from the network', async () => {
    const unregistered = await sb.api('POST', '/contacts', {
      json: { phone_number: UNREGISTERED, first_name: 'A', last_name: 'B', metadata: '{"sync": 1}' },
    });
    expect(unregistered.body).toMatchObject({ phone_is_mm_registered: 'no', name_matches_network_score: 0 });
    const differs = await sb.api('POST', '/contacts', {
      json: { phone_number: NAME_DIFFERS, first_name: 'Jeff', last_name: 'Okello', metadata: { sync: '1' } },
    });
    expect(differs.body.name_on_network).toBe('Otim Geoffrey Okwir');
    expect(differs.body.name_matches_network_score).toBeLessThan(60);
  });

  it('gives other valid numbers a deterministic generated name', async () => {
    const body = { phone_number: '+256701234567', first_name: 'X', last_name: 'Y', metadata: { sync: 1 } };
    const first = await sb.api('POST', '/contacts', { json: body });
    const other = await startSandbox();
    try {
      const second = await other.api('POST', '/contacts', { json: body });
      expect(first.body.name_on_network).toMatch(/^\S+ \S+$/);
      expect(second.body.name_on_network).toBe(first.body.name_on_network);
      expect(first.body.network_name).toBe('Airtel Uganda');
    } finally {
      await other.close();
    }
  });

  it('refuses bad input with the field -> messages map', async () => {
    const res = await sb.api('POST', '/contacts', { json: { phone_number: '0772123456', last_name: '' } });
    expect(res.status).toBe(400);
    expect(res.body.phone_number[0]).toMatch(/international format/);
    expect(res.body.first_name).toEqual(['This field is required.']);
    expect(res.body.last_name).toEqual(['This field may not be blank.']);
  });

  it('patches editable fields and refuses a bad national_id_type', async () => {
    const { body } = await sb.api('POST', '/contacts', {
      json: { phone_number: SARAH, first_name: 'S', last_name: 'N' },
    });
    const patched = await sb.api('PATCH', `/contacts/${body.id}`, {
      json: { first_name: 'Sarah', national_id: 'CM123', national_id_type: 'national' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      first_name: 'Sarah',
      last_name: 'N',
      national_id: 'CM123',
      national_id_type: 'national',
    });
    const bad = await sb.api('PATCH', `/contacts/${body.id}`, { json: { national_id_type: 'visa' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toHaveProperty('national_id_type');
    expect((await sb.api('PUT', `/contacts/${body.id}`, { json: {} })).status).toBe(405);
  });

  it('filters exactly, adding the + to phone filters', async () => {
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'Sarah', last_name: 'Nakato' } });
    await sb.api('POST', '/contacts', {
      json: { phone_number: '+256772111222', first_name: 'Sara', last_name: 'Nakato' },
    });
    const byPhone = await sb.api('GET', `/contacts?phone_number=${SARAH.slice(1)}`);
    expect(byPhone.body.results.map((c: any) => c.phone_number)).toEqual([SARAH]);
    const byName = await sb.api('GET', '/contacts?first_name=Sara&last_name=Nakato');
    expect(byName.body.count).toBe(1);
    expect(byName.body.results[0].first_name).toBe('Sara');
    const future = await sb.api('GET', '/contacts?created_after=2999-01-01%2000:00');
    expect(future.body.count).toBe(0);
    const badDate = await sb.api('GET', '/contacts?created_after=yesterday');
    expect(badDate.status).toBe(400);
    expect(badDate.body).toHaveProperty('created_after');
  });

  it('answers 404 for an unknown id and 403 for another organization', async () => {
    sb.controls.addOrganization({ apiKey: 'other-key' });
    const theirs = await sb.api('POST', '/contacts', {
      key: 'other-key',
      json: { phone_number: SARAH, first_name: 'S', last_name: 'N' },
    });
    expect((await sb.api('GET', `/contacts/${theirs.body.id}`)).status).toBe(403);
    expect(await sb.api('GET', '/contacts/999').then((r) => [r.status, r.body])).toEqual([
      404,
      { detail: 'Not found.' },
    ]);
    expect((await sb.api('GET', '/contacts')).body.count).toBe(0);
  });
});

describe('payments', () => {
  it('goes new -> validated -> approved -> processed on the sandbox clock and debits amount and fee', async () => {
    const before = sb.controls.balances().UGX!;
    const res = await pay({
      phonenumber: SARAH,
      first_name: 'Sarah',
      last_name: 'Nakato',
      metadata: { chat: 'telegram:1', ref: 'r1' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      state: 'new',
      amount: '5000.00',
      currency: 'UGX',
      metadata: { chat: 'telegram:1', ref: 'r1' },
    });
    expect(res.body.phone_nos[0]).toMatchObject({ phonenumber: SARAH, state: 'new', payment_id: res.body.id });
    expect(res.body.remote_transaction_id).toBeNull();

    await sb.controls.advanceClock(2);
    const done = await sb.api('GET', `/payments/${res.body.id}`);
    expect(done.body).toMatchObject({ state: 'processed', last_error: null, charged_fee: '500.00' });
    expect(done.body.remote_transaction_id).toMatch(/^SBXP\d{10}$/);
    expect(done.body.phone_nos[0].state).toBe('complete');
    expect(Number(before) - Number(sb.controls.balances().UGX)).toBe(5500);
    const states = sb.controls
      .events()
      .filter((e) => e.type === 'payment.status.changed')
      .map((e: any) => e.data.state);
    expect(states).toEqual(['validated', 'approved', 'processed']);
    expect(sb.controls.contacts().map((c) => c.phone_number)).toEqual([SARAH]);
  });

  it('accepts form bodies: metadata.<key> fields and True/False booleans', async () => {
    const res = await sb.api('POST', '/payments', {
      form: {
        phonenumber: SARAH,
        amount: '1000',
        currency: 'UGX',
        description: 'Hi {firstname}, {amount}',
        payment_type: 'airtime',
        send_sms_message: 'True',
        first_name: 'Sarah',
        last_name: 'Nakato',
        'metadata.chat': 'slack:T1:U1',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      payment_type: 'airtime',
      send_sms_message: true,
      metadata: { chat: 'slack:T1:U1' },
    });
    await sb.controls.advanceClock(2);
    expect((await sb.api('GET', `/payments/${res.body.id}`)).body.state).toBe('processed');
    expect(sb.controls.sms()).toEqual([expect.objectContaining({ to: SARAH, text: 'Hi Sarah, UGX 1000.00' })]);
  });

  it('ends processed_with_errors with last_error for unregistered, failing and mismatched recipients', async () => {
    const unregistered = await pay({ phonenumber: UNREGISTERED });
    const failing = await pay({ phonenumber: FAILS });
    const mismatch = await pay({ phonenumber: NAME_DIFFERS, first_name: 'Jeff', last_name: 'Okello' });
    await sb.controls.advanceClock(2);
    const read = async (id: number) => (await sb.api('GET', `/payments/${id}`)).body;
    expect(await read(unregistered.body.id)).toMatchObject({
      state: 'processed_with_errors',
      last_error: expect.stringMatching(/not registered/),
    });
    expect(await read(failing.body.id)).toMatchObject({
      state: 'processed_with_errors',
      last_error: expect.stringMatching(/network/),
    });
    const m = await read(mismatch.body.id);
    expect(m).toMatchObject({ state: 'processed_with_errors', last_error: expect.stringMatching(/does not match/) });
    expect(m.remote_transaction_id).toBeNull();
    expect(m.phone_nos[0].state).toBe('error');
  });

  it('pays a name mismatch when "Name match affects payment" is off', async () => {
    sb.controls.setOrganization({ nameMatchAffectsPayment: false });
    const res = await pay({ phonenumber: NAME_DIFFERS, first_name: 'Jeff', last_name: 'Okello' });
    await sb.controls.advanceClock(2);
    expect((await sb.api('GET', `/payments/${res.body.id}`)).body.state).toBe('processed');
  });

  it('verifies a Kenyan recipient by national id instead of by name', async () => {
    const kenya = number('registered', '+254');
    const byName = await pay({
      phonenumber: kenya,
      currency: 'KES',
      amount: '100',
      first_name: 'Jane',
      last_name: 'Doe',
    });
    const byId = await pay({
      phonenumber: kenya,
      currency: 'KES',
      amount: '100',
      first_name: 'Jane',
      last_name: 'Doe',
      national_id: 12345678,
      national_id_type: 'national',
    });
    await sb.controls.advanceClock(2);
    expect((await sb.api('GET', `/payments/${byName.body.id}`)).body.state).toBe('processed_with_errors');
    expect((await sb.api('GET', `/payments/${byId.body.id}`)).body.state).toBe('processed');
  });

  it('fails for lack of funds', async () => {
    const res = await pay({ phonenumber: number('registered', '+254'), currency: 'KES', amount: '5000000' });
    await sb.controls.advanceClock(2);
    expect((await sb.api('GET', `/payments/${res.body.id}`)).body).toMatchObject({
      state: 'processed_with_errors',
      last_error: expect.stringMatching(/Insufficient funds/),
    });
  });

  it('pays several recipients in one schedule with recipient_data as JSON text', async () => {
    const res = await pay({
      phonenumber: undefined,
      amount: '700',
      recipient_data: JSON.stringify([
        { phonenumber: SARAH, amount: '1500', description: 'first' },
        { phonenumber: UNREGISTERED },
      ]),
    });
    expect(res.status).toBe(201);
    expect(res.body.amount).toBe('2200.00');
    expect(res.body.phone_nos.map((r: any) => [r.phonenumber, r.amount, r.description])).toEqual([
      [SARAH, '1500.00', 'first'],
      [UNREGISTERED, '700.00', 'Lunch'],
    ]);
    expect(new Set(res.body.phone_nos.map((r: any) => r.batch_id)).size).toBe(1);
    await sb.controls.advanceClock(2);
    const done = (await sb.api('GET', `/payments/${res.body.id}`)).body;
    expect(done.state).toBe('processed_with_errors');
    expect(done.phone_nos.map((r: any) => r.state)).toEqual(['complete', 'error']);
    const byRecipientState = await sb.api('GET', '/payments?payment_state=error');
    expect(byRecipientState.body.results.map((p: any) => p.id)).toEqual([res.body.id]);
  });

  it('checks the rules of the create table', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ phonenumber: number('registered', '+254') }, 'phonenumber', /does not suit/],
      [{ phonenumber: SARAH, currency: undefined }, 'currency', /One of currency or account/],
      [{ phonenumber: SARAH, account: 3 }, 'account', /currency/],
      [{ phonenumber: SARAH, account: 99 }, 'account', /does not exist/],
      [{ phonenumber: SARAH, amount: '1,000' }, 'amount', /thousands/],
      [{ phonenumber: SARAH, amount: '-5' }, 'amount', /number/],
      [{ phonenumber: SARAH, description: 'x'.repeat(141) }, 'description', /140/],
      [{ phonenumber: SARAH, metadata: { n: 5 } }, 'metadata', /strings/],
      [
        { phonenumber: SARAH, metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v'])) },
        'metadata',
        /10/,
      ],
      [{ phonenumber: SARAH, payment_type: 'gold' }, 'payment_type', /valid choice/],
      [{ phonenumber: SARAH, national_id: '123' }, 'national_id_type', /national_id/],
      [{}, 'phonenumber', /required/],
    ];
    for (const [body, field, message] of cases) {
      const res = await pay(body);
      expect(res.status, field).toBe(400);
      expect(res.body[field]?.join(' '), JSON.stringify(body)).toMatch(message);
    }
    expect(sb.controls.payments()).toHaveLength(0);
  });

  it('pays BXC to any supported number without touching live balances', async () => {
    const live = sb.controls.balances();
    const res = await pay({ phonenumber: number('registered', '+254'), currency: 'BXC' });
    await sb.controls.advanceClock(2);
    expect((await sb.api('GET', `/payments/${res.body.id}`)).body.state).toBe('processed');
    expect(sb.controls.balances().UGX).toBe(live.UGX);
    expect(sb.controls.balances().KES).toBe(live.KES);
  });

  it('lists banks and pays a bank account', async () => {
    const banks = await sb.api('GET', '/banks?country=UG');
    expect(banks.body.count).toBe(4);
    const bank = banks.body.results[0];
    const incomplete = await pay({ phonenumber: SARAH, bank: bank.id, account_number: '0123456789' });
    expect(incomplete.status).toBe(400);
    expect(Object.keys(incomplete.body).sort()).toEqual(['account_name', 'email']);
    const res = await pay({
      phonenumber: SARAH,
      bank: bank.id,
      account_number: '0123456789',
      account_name: 'S Nakato',
      email: 's@example.com',
    });
    expect(res.body).toMatchObject({ bank: bank.id, account_name: 'S Nakato' });
    await sb.controls.advanceClock(2);
    expect((await sb.api('GET', `/payments/${res.body.id}`)).body).toMatchObject({
      state: 'processed',
      charged_fee: '5000.00',
    });
  });

  it('waits for a future start_date in state scheduled', async () => {
    const res = await pay({ phonenumber: SARAH, start_date: '2 hours' });
    await sb.controls.advanceClock(60);
    expect((await sb.api('GET', `/payments/${res.body.id}`)).body.state).toBe('scheduled');
    await sb.controls.advanceClock(7200);
    expect((await sb.api('GET', `/payments/${res.body.id}`)).body.state).toBe('processed');
  });

  it('filters payments by state, phone (+ added) and amount', async () => {
    const ok = await pay({ phonenumber: SARAH });
    await pay({ phonenumber: UNREGISTERED, amount: '6000' });
    await sb.controls.advanceClock(2);
    const ids = async (q: string) => (await sb.api('GET', `/payments?${q}`)).body.results.map((p: any) => p.id);
    expect(await ids('state=processed')).toEqual([ok.body.id]);
    expect(await ids(`phonenumber=${SARAH.slice(1)}`)).toEqual([ok.body.id]);
    expect(await ids('amount=5000')).toEqual([ok.body.id]);
    expect(await ids('network=MTN%20Uganda')).toHaveLength(2);
  });
});

describe('pagination and ordering', () => {
  it('pages with working next/previous links and counts every record', async () => {
    for (let i = 0; i < 25; i++) {
      await sb.api('POST', '/contacts', {
        json: { phone_number: `+2567720100${String(i).padStart(2, '0')}`, first_name: `F${i}`, last_name: 'L' },
      });
    }
    const seen: number[] = [];
    let url: string | null = `${sb.base}/api/contacts`;
    let pages = 0;
    while (url) {
      const res = await sb.raw(url.slice(sb.base.length), { headers: { authorization: 'Token test-key' } });
      expect(res.body.count).toBe(25);
      seen.push(...res.body.results.map((c: any) => c.id));
      if (pages === 1) expect(res.body.previous).toBe(`${sb.base}/api/contacts?limit=10`);
      url = res.body.next;
      pages++;
    }
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(25);
    expect(seen[0]).toBe(25);

    const asc = await sb.api('GET', '/contacts?ordering=id&limit=3&offset=5');
    expect(asc.body.results.map((c: any) => c.id)).toEqual([6, 7, 8]);
    const byName = await sb.api('GET', '/contacts?ordering=-first_name&limit=1');
    expect(byName.body.results[0].first_name).toBe('F9');
  });

  it('refuses unreadable limit, offset and ordering', async () => {
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    for (const q of ['limit=abc', 'limit=0', 'offset=-1', 'ordering=shoe_size']) {
      const res = await sb.api('GET', `/contacts?${q}`);
      expect(res.status, q).toBe(400);
      expect(Object.keys(res.body)).toEqual([q.split('=')[0]]);
    }
  });
});

describe('versions', () => {
  it('saves the latest version at the first request; path and header override it for one request', async () => {
    expect(sb.controls.organization().version).toBeNull();
    const created = await pay({ phonenumber: SARAH, callback_url: 'https://example.com/cb' });
    expect(created.headers.get('service-version')).toBe('v5');
    expect(sb.controls.organization().version).toBe('v5');
    expect(created.body).not.toHaveProperty('callback_url');

    const v2 = await sb.api('GET', `/v2/payments/${created.body.id}`);
    expect(v2.headers.get('service-version')).toBe('v2');
    expect(v2.body.phone_nos).toEqual([SARAH]);
    expect(v2.body).toHaveProperty('callback_url', null);
    const v4 = await sb.api('GET', `/payments/${created.body.id}`, { headers: { 'Service-Version': '4' } });
    expect(v4.body.phone_nos).toEqual([SARAH]);
    expect(sb.controls.organization().version).toBe('v5');
    expect((await sb.api('GET', `/payments/${created.body.id}`)).body.phone_nos[0]).toHaveProperty('state');

    sb.controls.setOrganization({ version: 'v3' });
    expect((await sb.api('GET', `/payments/${created.body.id}`)).body.phone_nos).toEqual([SARAH]);
  });

  it('refuses an unknown version', async () => {
    const header = await sb.api('GET', '/contacts', { headers: { 'Service-Version': 'v9' } });
    expect(header.status).toBe(400);
    expect(header.body.detail).toMatch(/version/);
    const path = await sb.api('GET', '/v9/contacts');
    expect(path.status).toBe(404);
    expect(path.body.detail).toMatch(/version/);
  });
});

describe('sandbox controls over HTTP', () => {
  it('reads and changes organization options with the API key', async () => {
    const headers = { authorization: 'Token test-key', 'content-type': 'application/json' };
    const read = await sb.raw('/sandbox/organization', { headers });
    expect(read.body).toMatchObject({
      id: 1,
      nameMatchAffectsPayment: true,
      acceptCollectionsByDefault: true,
      verificationUrl: null,
    });
    expect(read.body).not.toHaveProperty('apiKey');
    const changed = await sb.raw('/sandbox/organization', {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ nameMatchAffectsPayment: false, verificationUrl: 'http://localhost:3000/verify' }),
    });
    expect(changed.body).toMatchObject({
      nameMatchAffectsPayment: false,
      verificationUrl: 'http://localhost:3000/verify',
    });
    expect(sb.controls.organization().nameMatchAffectsPayment).toBe(false);
    const bad = await sb.raw('/sandbox/organization', {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ verificationUrl: 'ftp://x', colour: 'red' }),
    });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body).sort()).toEqual(['non_field_errors', 'verificationUrl']);
    const balances = await sb.raw('/sandbox/balances', { headers });
    expect(Object.keys(balances.body).sort()).toEqual(['BXC', 'KES', 'UGX']);
  });
});

describe('errors', () => {
  it('answers 405 with Allow, 404 {detail}, 400 for broken JSON, 415 and 406', async () => {
    const wrong = await sb.api('DELETE', '/payments/1');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET');
    expect(wrong.body).toEqual({ detail: 'Method "DELETE" not allowed.' });
    expect((await sb.api('POST', '/collections', { json: {} })).status).toBe(405);
    expect(await sb.api('GET', '/nothing-here').then((r) => [r.status, r.body])).toEqual([
      404,
      { detail: 'Not found.' },
    ]);
    expect((await sb.api('GET', '/contacts/')).status).toBe(200);
    expect((await sb.api('GET', '/v3/banks/')).status).toBe(200);

    const auth = { authorization: 'Token test-key' };
    const broken = await sb.raw('/api/contacts', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"a":',
    });
    expect(broken.status).toBe(400);
    expect(broken.body.detail).toMatch(/JSON parse error/);
    const list = await sb.raw('/api/contacts', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '[1]',
    });
    expect(list.body.non_field_errors[0]).toMatch(/Expected a dictionary/);
    const text = await sb.raw('/api/contacts', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'text/plain' },
      body: 'hi',
    });
    expect(text.status).toBe(415);
    expect(text.body.detail).toMatch(/text\/plain/);
    const html = await sb.raw('/api/contacts', { headers: { ...auth, accept: 'text/html' } });
    expect(html.status).toBe(406);
  });

  it('accepts multipart form bodies', async () => {
    const form = new FormData();
    form.set('phone_number', SARAH);
    form.set('first_name', 'Sarah');
    form.set('last_name', 'Nakato');
    form.set('metadata.team', 'ops');
    const res = await sb.raw('/api/contacts', {
      method: 'POST',
      headers: { authorization: 'Token test-key' },
      body: form,
    });
    expect(res.status).toBe(201);
    expect(res.body.metadata).toEqual({ team: 'ops' });
  });

  it('refuses a repeated Duplicate-Check-Key with 409 for 24 hours, and frees it after a 400', async () => {
    const key = { 'Duplicate-Check-Key': 'k-1' };
    const bad = await pay({ phonenumber: SARAH, amount: 'x' }, key);
    expect(bad.status).toBe(400);
    expect((await pay({ phonenumber: SARAH }, key)).status).toBe(201);
    const again = await pay({ phonenumber: SARAH }, key);
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('Duplicate Request Detected!');
    expect(sb.controls.payments()).toHaveLength(1);
    await sb.controls.advanceClock(24 * 3600 - 10);
    expect((await pay({ phonenumber: SARAH }, key)).status).toBe(409);
    await sb.controls.advanceClock(20);
    expect((await pay({ phonenumber: SARAH }, key)).status).toBe(201);
    expect(sb.controls.payments()).toHaveLength(2);
  });
});
