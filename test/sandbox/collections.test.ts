/**
 * Collection requests (create rules, expiry text, statuses on the clock), collections (matching, versions,
 * list shapes), claim rules 1 to 4, and collection verification, over real HTTP.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { parseWhen } from '../../src/sandbox/when.js';
import { startReceiver, startSandbox, type RunningSandbox } from './harness.js';

const SARAH = TEST_NUMBERS.find((t) => t.nameOnNetwork === 'Sarah Nakato')!.phonenumber;
const KENYA = TEST_NUMBERS.find((t) => t.phonenumber.startsWith('+254') && t.behaviour === 'registered')!.phonenumber;

let sb: RunningSandbox;
beforeEach(async () => {
  sb = await startSandbox();
});
afterEach(async () => {
  await sb.close();
});

const request = (json: Record<string, unknown>) =>
  sb.api('POST', '/collectionrequests', { json: { phonenumber: SARAH, amount: '20000', currency: 'UGX', ...json } });
const seconds = (a: string, b: string) => (Date.parse(a) - Date.parse(b)) / 1000;

describe('parseWhen', () => {
  const now = Date.UTC(2026, 10, 22, 10, 0, 0);
  it.each([
    ['tomorrow', now + 86_400_000],
    ['24 hours', now + 86_400_000],
    ['2 minutes', now + 120_000],
    ['in 1 day', now + 86_400_000],
    ['1 week', now + 7 * 86_400_000],
    ['25/12/2026', Date.UTC(2026, 11, 25)],
    ['25/12/2026 13:45:10', Date.UTC(2026, 11, 25, 13, 45, 10)],
    ['2026-12-25T13:45:10Z', Date.UTC(2026, 11, 25, 13, 45, 10)],
  ])('reads %s', (text, expected) => {
    expect(parseWhen(text, now)).toBe(expected);
  });
  it.each(['yesterday', '31/02/2026', '12/25/2026', '2 fortnights', ''])('refuses %j', (text) => {
    expect(parseWhen(text, now)).toBeUndefined();
  });
});

describe('collection requests', () => {
  it('creates a pending request with the defaults and a verified contact', async () => {
    const res = await request({});
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'pending',
      amount: '20000.00',
      currency: 'UGX',
      account: 2,
      reason: 'Sandbox Pay',
      max_attempts: 3,
      send_instructions: false,
      collection: null,
      contact: { first_name: 'Anonymous', last_name: 'Contact', phone_number: SARAH, name_on_network: 'Sarah Nakato' },
    });
    expect(res.body.mfscode).toMatch(/^\d{6}$/);
    expect(seconds(res.body.expiry_date, res.body.created)).toBe(86_400);
    const events = sb.controls.events().map((e) => e.type);
    expect(events).toEqual(['contact.created']);
  });

  it('reads expiry text', async () => {
    const twoMinutes = await request({ expiry_date: '2 minutes' });
    expect(seconds(twoMinutes.body.expiry_date, twoMinutes.body.created)).toBe(120);
    const tomorrow = await request({ expiry_date: 'tomorrow' });
    expect(seconds(tomorrow.body.expiry_date, tomorrow.body.created)).toBe(86_400);
    const exact = await request({ expiry_date: '01/01/2099 08:30:00' });
    expect(exact.body.expiry_date).toBe('2099-01-01T08:30:00Z');
  });

  it('checks every create rule', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ amount: undefined }, 'amount', /required/],
      [{ currency: undefined }, 'currency', /required/],
      [{ currency: 'BXC' }, 'currency', /outgoing payments/],
      [{ currency: 'KES' }, 'currency', /does not suit/],
      [{ phonenumber: '+2567' }, 'phonenumber', /international/],
      [{ account: 1 }, 'account', /currency/],
      [{ expiry_date: 'yesterday' }, 'expiry_date', /Enter a date/],
      [{ expiry_date: '01/01/2020' }, 'expiry_date', /later than the creation/],
      [{ start_date: '10 minutes', expiry_date: '5 minutes' }, 'expiry_date', /later than start_date/],
      [{ retry_interval_minutes: 5 }, 'retry_interval_minutes', /10/],
      [{ max_attempts: 4 }, 'max_attempts', /between 0 and 3/],
      [{ success_message: 'x'.repeat(141) }, 'success_message', /140/],
      [{ instructions: 'x'.repeat(141) }, 'instructions', /140/],
      [{ send_instructions: 'maybe' }, 'send_instructions', /boolean/],
      [{ subscription_settings: { start_date: '01/01/2099 00:00:00' } }, 'subscription_settings.end_date', /required/],
      [
        { subscription_settings: '{"start_date": "01/01/2099 00:00:00", "end_date": "01/01/2098 00:00:00"}' },
        'subscription_settings.end_date',
        /later/,
      ],
      [
        {
          subscription_settings: {
            start_date: '01/01/2099 00:00:00',
            end_date: '01/02/2099 00:00:00',
            frequency: 'fortnightly',
          },
        },
        'subscription_settings.frequency',
        /daily/,
      ],
      [
        {
          subscription_settings: {
            start_date: '01/01/2099 00:00:00',
            end_date: '01/02/2099 00:00:00',
            weekdays: 'monday,funday',
          },
        },
        'subscription_settings.weekdays',
        /day names/,
      ],
    ];
    for (const [body, field, message] of cases) {
      const res = await request(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body[field]?.join(' '), JSON.stringify(body)).toMatch(message);
    }
    const recurring = await request({
      subscription_settings: {
        start_date: '01/01/2099 00:00:00',
        end_date: '01/02/2099 00:00:00',
        frequency: 'monthly',
        months: 'January,March',
      },
    });
    expect(recurring.status).toBe(201);
    expect(JSON.parse(recurring.body.subscription_settings)).toMatchObject({ frequency: 'monthly' });
    expect(sb.controls.collectionRequests()).toHaveLength(1);
  });

  it('accepts form fields, subscription_settings.<key> included', async () => {
    const res = await sb.api('POST', '/collectionrequests', {
      form: {
        phonenumber: SARAH,
        amount: '500',
        currency: 'UGX',
        send_instructions: 'False',
        'metadata.chat': 'ussd:+256772000001',
        'subscription_settings.start_date': '01/01/2099 00:00:00',
        'subscription_settings.end_date': '01/01/2100 00:00:00',
        'subscription_settings.frequency': 'yearly',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.metadata).toEqual({ chat: 'ussd:+256772000001' });
    expect(JSON.parse(res.body.subscription_settings)).toEqual({
      start_date: '01/01/2099 00:00:00',
      end_date: '01/01/2100 00:00:00',
      frequency: 'yearly',
    });
  });

  it('expires at expiry_date and retries after retry_interval_minutes while retries remain', async () => {
    const res = await request({ expiry_date: '2 minutes', retry_interval_minutes: 10, max_attempts: 1 });
    const status = async () => (await sb.api('GET', `/collectionrequests/${res.body.id}`)).body.status;
    await sb.controls.advanceClock(119);
    expect(await status()).toBe('pending');
    await sb.controls.advanceClock(2);
    expect(await status()).toBe('expired');
    await sb.controls.advanceClock(600);
    expect(await status()).toBe('pending');
    await sb.controls.advanceClock(120);
    expect(await status()).toBe('expired');
    await sb.controls.advanceClock(3600);
    expect(await status()).toBe('expired');
    const changes = sb.controls
      .events()
      .filter((e) => e.type === 'collectionrequest.status.changed')
      .map((e: any) => e.data.status);
    expect(changes).toEqual(['expired', 'pending', 'expired']);
  });

  it('starts at start_date and sends instructions by SMS when asked', async () => {
    const res = await request({ start_date: '1 hour', send_instructions: true, instructions: 'Dial *165# to pay' });
    expect(res.body.status).toBe('new');
    expect(sb.controls.sms()).toHaveLength(0);
    await sb.controls.advanceClock(3600);
    expect((await sb.api('GET', `/collectionrequests/${res.body.id}`)).body.status).toBe('pending');
    await sb.controls.advanceClock(1);
    expect((await sb.api('GET', `/collectionrequests/${res.body.id}`)).body.status).toBe('instructions_sent');
    expect(sb.controls.sms()).toEqual([expect.objectContaining({ to: SARAH, text: 'Dial *165# to pay' })]);
    const skipped = await request({ send_instructions: true, instructions: 'skip' });
    await sb.controls.advanceClock(60);
    expect(sb.controls.sms()).toHaveLength(1);
    expect((await sb.api('GET', `/collectionrequests/${skipped.body.id}`)).body.status).toBe('pending');
  });
});

describe('collections', () => {
  it('matches a collection to the request by amount, number and currency', async () => {
    const req = await request({ success_message: 'Thanks {customer}, got {amount}', metadata: { chat: 'telegram:9' } });
    const before = Number(sb.controls.balances().UGX);
    const other = await sb.controls.sendCollection({
      phonenumber: SARAH,
      amount: '19999',
      currency: 'UGX',
      reference: 'other',
    });
    expect(other.collection_request).toBeNull();
    const c = await sb.controls.sendCollection({
      phonenumber: SARAH,
      amount: '20000.00',
      currency: 'UGX',
      reference: 'rent',
    });
    expect(c).toMatchObject({
      status: 'successful',
      organization: 1,
      reference: 'rent',
      collection_request: { id: req.body.id },
    });
    expect(c.remote_transaction_id).toMatch(/^SBXC\d{10}$/);
    const done = (await sb.api('GET', `/collectionrequests/${req.body.id}`)).body;
    expect(done).toMatchObject({ status: 'successful', collection: c.id });
    expect(Number(sb.controls.balances().UGX) - before).toBe(39_999);
    expect(sb.controls.sms().map((s) => s.text)).toEqual([
      'Thanks Anonymous Contact, got UGX 20000.00 - sent by Sandbox Pay',
    ]);
    const byCollection = await sb.api('GET', `/collectionrequests?collection=${c.id}`);
    expect(byCollection.body.results.map((r: any) => r.id)).toEqual([req.body.id]);
    const types = sb.controls.events().map((e) => e.type);
    expect(types.filter((t) => t === 'collection.received')).toHaveLength(2);
    expect(types).toContain('collectionrequest.status.changed');
  });

  it('shapes collections by version and lists them as an envelope, or a bare list when filtered', async () => {
    await request({});
    const c = await sb.controls.sendCollection({
      phonenumber: SARAH,
      amount: '20000',
      currency: 'UGX',
      reference: 'x',
    });
    const get = (v: string) => sb.api('GET', `/collections/${c.id}`, { headers: { 'Service-Version': v } });
    expect((await get('v2')).body.collection_request).toBe(1);
    expect((await get('v2')).body).not.toHaveProperty('transaction');
    expect((await get('v3')).body.collection_request).toMatchObject({ id: 1, status: 'successful' });
    expect((await get('v3')).body).not.toHaveProperty('transaction');
    expect((await get('v4')).body.transaction).toMatchObject({
      amount: '20000.00',
      type: 'mobile_collection',
      account: { id: 2, currency: 'UGX' },
    });

    const all = await sb.api('GET', '/collections');
    expect(all.body).toMatchObject({ count: 1, next: null, previous: null });
    const filtered = await sb.api('GET', `/collections?phonenumber=${SARAH.slice(1)}&currency=UGX`);
    expect(Array.isArray(filtered.body)).toBe(true);
    expect(filtered.body.map((x: any) => x.id)).toEqual([c.id]);
    expect((await sb.api('GET', '/collections?currency=KES')).body).toEqual([]);
  });

  it('claims by rules 1 to 4', async () => {
    const loose = await sb.controls.sendCollection({
      phonenumber: SARAH,
      amount: '7000',
      currency: 'UGX',
      reference: 'paid at agent',
      remote_transaction_id: 'MTN123',
      organization: null,
    });
    expect(loose.organization).toBeNull();
    expect((await sb.api('GET', '/collections')).body.count).toBe(0);

    // Rule 1: amount, remote_transaction_id and phonenumber together.
    const missing = await sb.api('GET', '/collections?claim=True&amount=7000&remote_transaction_id=MTN123');
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toMatch(/phonenumber/);
    // Rule 2: the full number only.
    const partial = await sb.api(
      'GET',
      `/collections?claim=True&amount=7000&remote_transaction_id=MTN123&phonenumber=${SARAH.slice(0, -1)}`,
    );
    expect(partial.body).toEqual([]);
    // Rule 4: a list; the `+` is added when missing; the match is assigned.
    const before = Number(sb.controls.balances().UGX);
    const claimed = await sb.api(
      'GET',
      `/collections?claim=True&amount=7000&remote_transaction_id=MTN123&phonenumber=${SARAH.slice(1)}`,
    );
    expect(claimed.status).toBe(200);
    expect(claimed.body).toHaveLength(1);
    expect(claimed.body[0]).toMatchObject({ id: loose.id, organization: 1, contact: { phone_number: SARAH } });
    expect(Number(sb.controls.balances().UGX) - before).toBe(7000);
    expect((await sb.api('GET', `/collections/${loose.id}`)).status).toBe(200);

    // Rule 3: more than one match fails.
    for (let i = 0; i < 2; i++) {
      await sb.controls.sendCollection({
        phonenumber: KENYA,
        amount: '300',
        currency: 'KES',
        remote_transaction_id: 'DUP1',
        organization: null,
      });
    }
    const twice = await sb.api(
      'GET',
      `/collections?claim=True&amount=300&remote_transaction_id=DUP1&phonenumber=${KENYA}`,
    );
    expect(twice.status).toBe(400);
    expect(twice.body.detail).toMatch(/more than one/);
    expect((await sb.api('GET', '/collections?claim=perhaps')).status).toBe(400);
  });

  it("does not claim another organization's collection", async () => {
    const other = sb.controls.addOrganization({ apiKey: 'other-key' });
    await sb.controls.sendCollection({
      phonenumber: SARAH,
      amount: '100',
      currency: 'UGX',
      remote_transaction_id: 'T9',
      organization: other.id,
    });
    const res = await sb.api('GET', `/collections?claim=True&amount=100&remote_transaction_id=T9&phonenumber=${SARAH}`);
    expect(res.body).toEqual([]);
  });

  it('is created over HTTP by POST /sandbox/collections, with 400 for bad input', async () => {
    const headers = { authorization: 'Token test-key', 'content-type': 'application/json' };
    const ok = await sb.raw('/sandbox/collections', {
      method: 'POST',
      headers,
      body: JSON.stringify({ phonenumber: SARAH, amount: 50, currency: 'UGX', reference: 'r' }),
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ organization: 1, amount: '50.00', status: 'successful' });
    const bad = await sb.raw('/sandbox/collections', {
      method: 'POST',
      headers,
      body: JSON.stringify({ phonenumber: SARAH, amount: 50, currency: 'BXC' }),
    });
    expect(bad.status).toBe(400);
    expect(bad.body.currency[0]).toMatch(/outgoing/);
    const unauth = await sb.raw('/sandbox/collections', { method: 'POST', body: '{}' });
    expect(unauth.status).toBe(401);
    const clock = await sb.raw('/sandbox/clock/advance', {
      method: 'POST',
      headers,
      body: JSON.stringify({ seconds: 3600 }),
    });
    expect(seconds(clock.body.now, new Date(Date.now()).toISOString())).toBeGreaterThan(3000);
  });
});

describe('collection verification', () => {
  it('posts each new collection to the verification URL; ACCEPT and REJECT decide', async () => {
    const receiver = await startReceiver({
      reply: (body) =>
        body.reference === 'bad'
          ? `REJECT ${body.remote_transaction_id} not expected`
          : `ACCEPT ${body.remote_transaction_id}`,
    });
    try {
      sb.controls.setOrganization({ verificationUrl: `${receiver.url}/verify` });
      await request({ amount: '900' });
      const rejected = await sb.controls.sendCollection({
        phonenumber: SARAH,
        amount: '900',
        currency: 'UGX',
        reference: 'bad',
      });
      expect(rejected).toMatchObject({ status: 'failed', collection_request: null });
      expect(sb.controls.collectionRequests()[0]!.status).toBe('pending');
      const accepted = await sb.controls.sendCollection({
        phonenumber: SARAH,
        amount: '900',
        currency: 'UGX',
        reference: 'good',
      });
      expect(accepted).toMatchObject({ status: 'successful', collection_request: { status: 'successful' } });
      expect(receiver.received.map((r) => r.body)).toEqual([
        {
          phonenumber: SARAH,
          amount: '900.00',
          currency_code: 'UGX',
          reference: 'bad',
          remote_transaction_id: rejected.remote_transaction_id,
        },
        {
          phonenumber: SARAH,
          amount: '900.00',
          currency_code: 'UGX',
          reference: 'good',
          remote_transaction_id: accepted.remote_transaction_id,
        },
      ]);
      expect(receiver.received[0]!.headers.authorization).toBeUndefined();
      // With notification credentials set, verification carries them too (VERIFICATION_SENDS_WEBHOOK_AUTH).
      sb.controls.setOrganization({ webhookAuth: { username: 'momo', password: 's3cret' } });
      await sb.controls.sendCollection({ phonenumber: SARAH, amount: '901', currency: 'UGX', reference: 'good' });
      expect(receiver.received.at(-1)!.headers.authorization).toBe(
        `Basic ${Buffer.from('momo:s3cret').toString('base64')}`,
      );
    } finally {
      await receiver.close();
    }
  });

  it('applies "Accept Collections By Default" when the URL fails or answers nonsense', async () => {
    const broken = await startReceiver({ fallback: 500 });
    try {
      sb.controls.setOrganization({ verificationUrl: broken.url, acceptCollectionsByDefault: false });
      const refused = await sb.controls.sendCollection({ phonenumber: SARAH, amount: '10', currency: 'UGX' });
      expect(refused.status).toBe('failed');
      sb.controls.setOrganization({ acceptCollectionsByDefault: true });
      const taken = await sb.controls.sendCollection({ phonenumber: SARAH, amount: '10', currency: 'UGX' });
      expect(taken.status).toBe('successful');
      expect(broken.received).toHaveLength(2);
    } finally {
      await broken.close();
    }
    const gibberish = await startReceiver({ reply: () => 'OK THEN' });
    try {
      sb.controls.setOrganization({ verificationUrl: gibberish.url, acceptCollectionsByDefault: false });
      expect((await sb.controls.sendCollection({ phonenumber: SARAH, amount: '10', currency: 'UGX' })).status).toBe(
        'failed',
      );
    } finally {
      await gibberish.close();
    }
  });
});
