/**
 * Payouts over a real store: a draft checked against the maker's limits, requests of at most 100 recipients
 * each under its own key made with the draft, confirmed once, and a payout whose process died while making
 * its requests finished by the sweep under the same keys.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { FlowServices } from '../../flows/services.js';
import { AccessPolicy } from '../../src/conversation/policy.js';
import { MemoryStore } from '../../src/conversation/memory-store.js';
import { keys } from '../../src/conversation/keys.js';
import { createLogger } from '../../src/log.js';
import { Payouts, type Payout } from '../../src/payouts/payouts.js';

const POLICY = {
  roles: { teller: { flows: ['pay'], perPaymentLimit: { UGX: '50000' }, dailyLimit: { UGX: '10000000' } }, viewer: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} } },
  users: { slack: { UMAKER: { role: 'teller' }, UVIEW: { role: 'viewer' } } },
};
const MAKER = { channel: 'slack' as const, userId: 'UMAKER', chat: 'slack:T1:UMAKER' };

let store: MemoryStore;
let clock: number;
let creates: Array<{ key: string; count: number; amount: string }>;
let told: Payout[];
let payouts: Payouts;

beforeEach(() => {
  store = new MemoryStore();
  clock = Date.UTC(2026, 10, 23, 9);
  creates = [];
  told = [];
  const policy = new AccessPolicy(POLICY, { now: () => clock });
  const services: Pick<FlowServices, 'reserveSpend' | 'createPayment'> = {
    reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: 'slack' }),
    createPayment: async (input) => {
      creates.push({ key: input.duplicateCheckKey, count: input.recipients?.length ?? 0, amount: input.amount });
      return { id: String(creates.length), state: 'new' };
    },
  };
  payouts = new Payouts({ store, policy, services: services as FlowServices, currencies: ['UGX'], defaultCountry: 'UG', logger: createLogger('silent'), now: () => clock });
  payouts.tellWith(async (payout) => void told.push(payout));
});

const rows = (n: number) => Array.from({ length: n }, (_, i) => `07720${String(i).padStart(5, '0')}, 100`).join('\n');

describe('payouts', () => {
  it('refuses a maker who may not pay, and amounts over their per-payment limit by row', async () => {
    expect(await payouts.prepare({ ...MAKER, userId: 'UVIEW' }, { rows: rows(1), currency: 'UGX', description: '' })).toMatchObject({ ok: false, errors: [{ row: 0 }] });
    expect(await payouts.prepare(MAKER, { rows: '0772000001, 100\n0772000002, 50001', currency: 'UGX', description: '' })).toEqual({
      ok: false,
      errors: [{ row: 2, message: 'more than your limit of 50000 UGX per payment' }],
    });
  });

  it('makes one request per 100 recipients, each under its own key, once however often it is confirmed', async () => {
    const prepared = await payouts.prepare(MAKER, { rows: rows(250), currency: 'UGX', description: 'Wages' });
    if (!prepared.ok) throw new Error('not prepared');
    expect(await payouts.confirm(prepared.payout.id, { channel: 'slack', userId: 'UOTHER' })).toBeNull();
    const [first, second] = await Promise.all([payouts.confirm(prepared.payout.id, MAKER), payouts.confirm(prepared.payout.id, MAKER)]);
    expect([first, second].filter(Boolean)).toHaveLength(1);
    expect(creates.map((c) => [c.count, c.amount])).toEqual([[100, '10000'], [100, '10000'], [50, '5000']]);
    expect(new Set(creates.map((c) => c.key)).size).toBe(3);
    expect(told).toHaveLength(1);
    expect(told[0]!.requests.map((r) => r.result?.kind)).toEqual(['sent', 'sent', 'sent']);
  });

  it('finishes a payout cut short (its process died after the first request) from the sweep, under the same keys', async () => {
    const prepared = await payouts.prepare(MAKER, { rows: rows(150), currency: 'UGX', description: 'Wages' });
    if (!prepared.ok) throw new Error('not prepared');
    const { id, requests } = prepared.payout;
    // What confirm() wrote before its process died: confirmed, listed for the sweep, the first request made.
    const stored = await store.get(keys.payout(id));
    const cut: Payout = { ...prepared.payout, state: 'confirmed', requests: [{ ...requests[0]!, result: { kind: 'sent', id: '9', state: 'new' } }, requests[1]!] };
    await store.set(keys.payout(id), cut, stored!.version, 3600);
    await store.set(keys.payoutsOpen, { [id]: clock + 2 * 60 * 1000 }, null, 3600);
    await payouts.sweep();
    expect(creates).toEqual([]);
    clock += 3 * 60 * 1000;
    await payouts.sweep();
    expect(creates.map((c) => [c.key, c.count])).toEqual([[requests[1]!.key, 50]]);
    expect(told[0]!.requests.map((r) => r.result?.kind)).toEqual(['sent', 'sent']);
    await payouts.sweep();
    expect(creates).toHaveLength(1);
  });
});
