/**
 * Payouts over a real store: a draft checked against the maker's limits, requests of at most 100 recipients
 * each under its own key made with the draft, confirmed once, and a payout whose process died while making
 * its requests finished by the sweep under the same keys; a request whose create ends in a failure that proves
 * nothing (a 429) left being confirmed, its outcome told later under its key.
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { FlowCalls } from '../../flows/calls.js';
import type { ServiceFailure } from '../../flows/types.js';
import { payoutMessage } from '../../adapters/slack/payout.js';
import { MadeRecords, recordMade } from '../../src/conversation/calls/made-records.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { keys } from '../../src/store/keys.js';
import { createLogger } from '../../src/log.js';
import { outcomesCsv } from '../../src/payouts/outcomes.js';
import { Payouts, type Payout } from '../../src/payouts/payouts.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';

const prefix = uniquePrefix('payouts');
afterAll(async () => {
  await inspector(prefix).cleanup();
});

const POLICY = {
  roles: {
    teller: { flows: ['pay'], perPaymentLimit: { UGX: '50000' }, dailyLimit: { UGX: '10000000' } },
    viewer: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} },
  },
  users: { slack: { UMAKER: { role: 'teller' }, UVIEW: { role: 'viewer' } } },
};
const MAKER = { channel: 'slack' as const, userId: 'UMAKER', chat: 'slack:T1:UMAKER' };

let store: MemoryStore;
let clock: number;
let creates: Array<{ key: string; count: number; amount: string }>;
let told: Payout[];
let updates: Payout[];
let payouts: Payouts;

beforeEach(() => {
  store = new MemoryStore();
  clock = Date.UTC(2026, 10, 23, 9);
  creates = [];
  told = [];
  const policy = new AccessPolicy(POLICY, { now: () => clock });
  const services: Pick<FlowCalls, 'reserveSpend' | 'createPayment'> = {
    reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: 'slack' }),
    createPayment: async (input) => {
      creates.push({ key: input.duplicateCheckKey, count: input.recipients?.length ?? 0, amount: input.amount });
      return { id: String(creates.length), state: 'new' };
    },
  };
  payouts = new Payouts({
    store,
    policy,
    calls: services as FlowCalls,
    currencies: ['UGX'],
    country: { defaultCountry: 'UG' },
    logger: createLogger('silent'),
    now: () => clock,
  });
  updates = [];
  payouts.attach({
    post: async (payout) => {
      told.push(payout);
      return { channel: 'C1', ts: '1.000100' };
    },
    update: async (payout) => void updates.push(payout),
  });
});

const rows = (n: number) => Array.from({ length: n }, (_, i) => `07720${String(i).padStart(5, '0')}, 100`).join('\n');

describe('payouts', () => {
  it('refuses a maker who may not pay, and amounts over their per-payment limit by row', async () => {
    expect(
      await payouts.prepare(
        { ...MAKER, userId: 'UVIEW' },
        { rows: { pasted: rows(1) }, currency: 'UGX', description: '' },
      ),
    ).toMatchObject({ ok: false, errors: [{ row: 0 }] });
    expect(
      await payouts.prepare(MAKER, {
        rows: { pasted: '0772000001, 100\n0772000002, 50001' },
        currency: 'UGX',
        description: '',
      }),
    ).toEqual({
      ok: false,
      errors: [{ row: 2, message: 'more than your limit of 50,000 UGX per payment' }],
    });
  });

  it("reads a row's local number in the maker's country, as their conversation does: Slack's, else the default", async () => {
    const numbers = async (country: ConstructorParameters<typeof Payouts>[0]['country']) => {
      const kenyan = new Payouts({
        store,
        policy: new AccessPolicy(POLICY, { now: () => clock }),
        calls: {} as FlowCalls,
        currencies: ['UGX'],
        country,
        logger: createLogger('silent'),
      });
      const prepared = await kenyan.prepare(MAKER, {
        rows: { pasted: '0712000001, 100' },
        currency: 'UGX',
        description: '',
      });
      if (!prepared.ok) throw new Error(JSON.stringify(prepared.errors));
      return prepared.payout.requests.flatMap((r) => r.recipients.map((x) => x.phonenumber));
    };
    expect(await numbers({ defaultCountry: 'UG', channelCountries: { slack: 'KE' } })).toEqual(['+254712000001']);
    expect(await numbers({ defaultCountry: 'KE', channelCountries: { telegram: 'UG' } })).toEqual(['+254712000001']);
    expect(await numbers({ defaultCountry: 'UG' })).toEqual(['+256712000001']);
  });

  it("offers a maker only their country's currencies that the organization allows, as the other channels do", async () => {
    const policy = new AccessPolicy(
      {
        ...POLICY,
        roles: {
          ...POLICY.roles,
          teller: {
            flows: ['pay'],
            perPaymentLimit: { UGX: '50000', KES: '5000', NGN: '50000', BXC: '100' },
            dailyLimit: { UGX: '10000000', KES: '100000', NGN: '1000000', BXC: '1000' },
          },
        },
      },
      { now: () => clock },
    );
    const of = (slack: string) =>
      new Payouts({
        store,
        policy,
        calls: {} as FlowCalls,
        currencies: ['UGX', 'KES', 'BXC'],
        countryCurrencies: { UG: ['UGX'], KE: ['KES'], NG: ['NGN'] },
        testCurrencies: ['BXC'],
        country: { defaultCountry: 'UG', channelCountries: { slack } },
        logger: createLogger('silent'),
      });
    // Never the test currency BXC, never another country's; NGN is not among the organization's CURRENCIES.
    expect(of('UG').currenciesOf(MAKER)).toEqual(['UGX']);
    expect(of('KE').currenciesOf(MAKER)).toEqual(['KES']);
    expect(of('NG').currenciesOf(MAKER)).toEqual([]);
    expect([of('UG'), of('KE'), of('NG')].map((p) => p.countryOf('slack'))).toEqual(['UG', 'KE', 'NG']);
    // A role without limits in its country's currency is offered none.
    expect(of('KE').currenciesOf({ channel: 'slack', userId: 'UVIEW' })).toEqual([]);
    // A form sent with a currency not offered (forged, or another country's) is refused, nothing drafted.
    for (const currency of ['KES', 'BXC'])
      expect(await of('UG').prepare(MAKER, { rows: { pasted: '0772000001, 100' }, currency, description: '' })).toEqual(
        { ok: false, errors: [{ row: 0, message: `${currency} is not a currency you may pay in here` }] },
      );
    expect(
      await of('KE').prepare(MAKER, { rows: { pasted: '0712000001, 100' }, currency: 'KES', description: '' }),
    ).toMatchObject({ ok: true, payout: { currency: 'KES' } });
  });

  it('makes one request per 100 recipients, each under its own key, once however often it is confirmed', async () => {
    const prepared = await payouts.prepare(MAKER, {
      rows: { pasted: rows(250) },
      currency: 'UGX',
      description: 'Wages',
    });
    if (!prepared.ok) throw new Error('not prepared');
    expect(await payouts.confirm(prepared.payout.id, { channel: 'slack', userId: 'UOTHER' })).toBeNull();
    const [first, second] = await Promise.all([
      payouts.confirm(prepared.payout.id, MAKER),
      payouts.confirm(prepared.payout.id, MAKER),
    ]);
    expect([first, second].filter(Boolean)).toHaveLength(1);
    expect(creates.map((c) => [c.count, c.amount])).toEqual([
      [100, '10000'],
      [100, '10000'],
      [50, '5000'],
    ]);
    expect(new Set(creates.map((c) => c.key)).size).toBe(3);
    expect(told).toHaveLength(1);
    expect(told[0]!.requests.map((r) => r.result?.kind)).toEqual(['sent', 'sent', 'sent']);
  });

  it('finishes a payout cut short (its process died after the first request) from the sweep, under the same keys', async () => {
    const prepared = await payouts.prepare(MAKER, {
      rows: { pasted: rows(150) },
      currency: 'UGX',
      description: 'Wages',
    });
    if (!prepared.ok) throw new Error('not prepared');
    const { id, requests } = prepared.payout;
    // What confirm() wrote before its process died: confirmed, listed for the sweep, the first request made.
    const stored = await store.get(keys.payout(id));
    const cut: Payout = {
      ...prepared.payout,
      state: 'confirmed',
      requests: [{ ...requests[0]!, result: { kind: 'sent', id: '9', state: 'new' } }, requests[1]!],
    };
    await store.set(keys.payout(id), cut, stored!.version, 3600);
    await store.set(keys.payoutsOpen(id), { [id]: clock + 2 * 60 * 1000 }, null, 3600);
    await payouts.sweep();
    expect(creates).toEqual([]);
    clock += 3 * 60 * 1000;
    await payouts.sweep();
    expect(creates.map((c) => [c.key, c.count])).toEqual([[requests[1]!.key, 50]]);
    expect(told[0]!.requests.map((r) => r.result?.kind)).toEqual(['sent', 'sent']);
    await payouts.sweep();
    expect(creates).toHaveLength(1);
  });

  it('posts the message of a payout whose process died after its requests, before its message was recorded, from the sweep', async () => {
    const prepared = await payouts.prepare(MAKER, { rows: { pasted: rows(2) }, currency: 'UGX', description: 'Wages' });
    if (!prepared.ok) throw new Error('not prepared');
    const { id, requests } = prepared.payout;
    // What confirm() wrote before its process died: confirmed, listed, every request made, no message recorded.
    const stored = await store.get(keys.payout(id));
    const made: Payout = {
      ...prepared.payout,
      state: 'confirmed',
      requests: [{ ...requests[0]!, result: { kind: 'sent', id: '9', state: 'new' } }],
    };
    await store.set(keys.payout(id), made, stored!.version, 3600);
    await store.set(keys.payoutsOpen(id), { [id]: clock + 2 * 60 * 1000 }, null, 3600);
    clock += 3 * 60 * 1000;
    await payouts.sweep();
    expect(creates).toEqual([]);
    expect(told.map((p) => p.id)).toEqual([id]);
    expect((await payouts.get(id))?.board).toEqual({ channel: 'C1', ts: '1.000100' });
    // Posted and recorded: unlisted, nothing more.
    clock += 3 * 60 * 1000;
    await payouts.sweep();
    expect(told).toHaveLength(1);
  });

  it('leaves a request whose create ends in 429 being confirmed, never "not sent": its record stays open and its report under the key completes it', async () => {
    const made = new MadeRecords({ store, logger: createLogger('silent') });
    const policy = new AccessPolicy(POLICY, { now: () => clock });
    // Our record of each create around a service answering 429 (after the client's retries under the key).
    const limited: Pick<FlowCalls, 'reserveSpend' | 'createPayment'> = {
      reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: 'slack' }),
      createPayment: async (input) => {
        creates.push({ key: input.duplicateCheckKey, count: input.recipients?.length ?? 0, amount: input.amount });
        throw { code: 'rate_limited' } satisfies ServiceFailure;
      },
    };
    const recorded = recordMade(limited as FlowCalls, made, createLogger('silent'));
    payouts = new Payouts({
      store,
      policy,
      calls: recorded,
      currencies: ['UGX'],
      country: { defaultCountry: 'UG' },
      logger: createLogger('silent'),
      now: () => clock,
    });
    payouts.attach({
      post: async (payout) => (told.push(payout), { channel: 'C1', ts: '1.000100' }),
      update: async (payout) => void updates.push(payout),
    });
    const prepared = await payouts.prepare(MAKER, {
      rows: { pasted: '0772000001, 100\n0772000002, 200' },
      currency: 'UGX',
      description: 'Wages',
    });
    if (!prepared.ok) throw new Error('not prepared');
    const { id } = prepared.payout;
    const key = prepared.payout.requests[0]!.key;
    const confirmed = (await payouts.confirm(id, MAKER))!;
    expect(confirmed.requests[0]!.result).toEqual({ kind: 'unconfirmed' });
    // Not refused anywhere: our record stays open for the follow-up, the maker reads "being confirmed".
    expect((await made.byRef(key))?.refused).toBeUndefined();
    // Its payee counts the recipients; the follow-up's list read filters by the first recipient's number.
    expect(await made.byRef(key)).toMatchObject({ payee: '2 recipients', recipient: '+256772000001' });
    expect(outcomesCsv(confirmed)).toContain('being_confirmed');
    expect(outcomesCsv(confirmed)).not.toContain('not_sent');
    const words = JSON.stringify(payoutMessage(told[0]!));
    expect(words).toContain('being confirmed (do not pay again)');
    expect(words).not.toContain('not sent');
    // Nothing makes it again under another key.
    clock += 10 * 60 * 1000;
    await payouts.sweep();
    expect(creates.map((c) => c.key)).toEqual([key]);
    // The earlier attempt was made: the service's report under the key (webhook or follow-up) completes it.
    await payouts.report(key, [
      { phone: '+256772000001', state: 'complete', error: '' },
      { phone: '+256772000002', state: 'complete', error: '' },
    ]);
    const completed = (await payouts.get(id))!;
    expect(
      outcomesCsv(completed)
        .split('\r\n')
        .slice(1, 3)
        .map((line) => line.split(',')[4]),
    ).toEqual(['complete', 'complete']);
    expect(JSON.stringify(payoutMessage(updates.at(-1)!))).toContain('Paid 2 (300 UGX)');
  });

  it.each(['approvals_unavailable', 'validation', 'limit_exceeded'] as const)(
    'marks a request whose create fails with %s (nothing was made) "not sent"',
    async (code) => {
      const policy = new AccessPolicy(POLICY, { now: () => clock });
      const services: Pick<FlowCalls, 'reserveSpend' | 'createPayment'> = {
        reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: 'slack' }),
        createPayment: async () => {
          throw { code, message: 'nothing was sent' } satisfies ServiceFailure;
        },
      };
      payouts = new Payouts({
        store,
        policy,
        calls: services as FlowCalls,
        currencies: ['UGX'],
        country: { defaultCountry: 'UG' },
        logger: createLogger('silent'),
        now: () => clock,
      });
      const prepared = await payouts.prepare(MAKER, {
        rows: { pasted: rows(1) },
        currency: 'UGX',
        description: 'Wages',
      });
      if (!prepared.ok) throw new Error('not prepared');
      const confirmed = (await payouts.confirm(prepared.payout.id, MAKER))!;
      expect(confirmed.requests[0]!.result).toEqual({ kind: 'refused', reason: 'nothing was sent' });
      expect(outcomesCsv(confirmed)).toContain('not_sent');
    },
  );

  it("keeps each recipient's reported state, never moving one back, and updates the message once per change", async () => {
    const prepared = await payouts.prepare(MAKER, {
      rows: { pasted: '0772000001, 100\n0772000002, 200\n0772000001, 300' },
      currency: 'UGX',
      description: 'Wages',
    });
    if (!prepared.ok) throw new Error('not prepared');
    await payouts.confirm(prepared.payout.id, MAKER);
    const ref = prepared.payout.requests[0]!.key;
    const report = (...states: string[]) =>
      payouts.report(ref, [
        { phone: '+256772000001', state: states[0]!, error: '' },
        { phone: '+256772000002', state: states[1]!, error: states[1] === 'error' ? 'Not registered' : '' },
        { phone: '+256772000001', state: states[2]!, error: '' },
      ]);
    await report('processing', 'processing', 'processing');
    await report('complete', 'error', 'queued');
    const statesNow = async () => (await payouts.get(prepared.payout.id))!.requests[0]!.states;
    expect(await statesNow()).toEqual([
      { state: 'complete' },
      { state: 'error', error: 'Not registered' },
      { state: 'queued' },
    ]);
    expect(updates).toHaveLength(2);
    // A redelivery and an older report change nothing and update nothing.
    await report('complete', 'error', 'queued');
    await report('processing', 'complete', 'processing');
    expect(await statesNow()).toEqual([
      { state: 'complete' },
      { state: 'error', error: 'Not registered' },
      { state: 'queued' },
    ]);
    expect(updates).toHaveLength(2);
    await report('complete', 'error', 'complete');
    expect(updates).toHaveLength(3);
    expect(updates[2]!.requests[0]!.states!.map((x) => x.state)).toEqual(['complete', 'error', 'complete']);
    // Refs that are not a payout's, or name no request of it, change nothing.
    await payouts.report('some-other-ref', []);
    await payouts.report(`${prepared.payout.id}:payout:7`, [{ phone: '+256772000001', state: 'error', error: '' }]);
    expect(updates).toHaveLength(3);
  });

  it('shows on the message, once it is posted, what was reported before it was', async () => {
    const prepared = await payouts.prepare(MAKER, {
      rows: { pasted: '0772000001, 100' },
      currency: 'UGX',
      description: 'Wages',
    });
    if (!prepared.ok) throw new Error('not prepared');
    let early: Promise<void> | undefined;
    payouts.attach({
      post: async (payout) => {
        told.push(payout);
        // A report lands between the message being drawn and its place being written.
        early ??= payouts.report(payout.requests[0]!.key, [{ phone: '+256772000001', state: 'complete', error: '' }]);
        await early;
        return { channel: 'C1', ts: '1.000200' };
      },
      update: async (payout) => void updates.push(payout),
    });
    await payouts.confirm(prepared.payout.id, MAKER);
    expect(told[0]!.requests[0]!.states).toBeUndefined();
    expect(updates.map((u) => u.requests[0]!.states)).toEqual([[{ state: 'complete' }]]);
  });

  it('on Redis, an update that lands after a newer one (Slack answered it late) is followed by the latest', async () => {
    const redis = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
    try {
      const policy = new AccessPolicy(POLICY, { now: () => clock });
      const services = {
        reserveSpend: (input: Parameters<FlowCalls['reserveSpend']>[0]) =>
          policy.reserveSpend(redis, { ...input, channel: 'slack' }),
        createPayment: async () => ({ id: '77', state: 'new' }),
      };
      const onRedis = new Payouts({
        store: redis,
        policy,
        calls: services as unknown as FlowCalls,
        currencies: ['UGX'],
        country: { defaultCountry: 'UG' },
        logger: createLogger('silent'),
        now: () => clock,
      });
      const landed: Payout[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let calls = 0;
      let firstCalled!: () => void;
      const first = new Promise<void>((resolve) => (firstCalled = resolve));
      onRedis.attach({
        post: async () => ({ channel: 'C1', ts: '1.000300' }),
        update: async (payout) => {
          calls += 1;
          // The first update hangs at Slack until a newer one has landed.
          if (calls === 1) {
            firstCalled();
            await gate;
          }
          landed.push(payout);
        },
      });
      const prepared = await onRedis.prepare(MAKER, {
        rows: { pasted: '0772000001, 100\n0772000002, 100' },
        currency: 'UGX',
        description: '',
      });
      if (!prepared.ok) throw new Error('not prepared');
      await onRedis.confirm(prepared.payout.id, MAKER);
      const ref = prepared.payout.requests[0]!.key;
      const older = onRedis.report(ref, [{ phone: '+256772000001', state: 'complete', error: '' }]);
      await first;
      await onRedis.report(ref, [{ phone: '+256772000002', state: 'error', error: 'Wallet full' }]);
      release();
      await older;
      const states = (p: Payout) => p.requests[0]!.states!.map((x) => x.state);
      // The newer update (both states), then the older one landing late, then the latest again.
      expect(landed.map(states)).toEqual([
        ['complete', 'error'],
        ['complete', 'new'],
        ['complete', 'error'],
      ]);
      const stored = await onRedis.get(prepared.payout.id);
      expect(stored!.shown).toBe(stored!.changes);
    } finally {
      await redis.close();
    }
  });
});
