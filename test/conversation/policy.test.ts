import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { MemoryStore } from '../../src/store/memory-store.js';
import {
  AccessPolicy,
  hashPin,
  loadAccessPolicy,
  PIN_MAX_ATTEMPTS,
  type PolicyDocument,
} from '../../src/conversation/calls/access-policy.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store } from '../../src/store/types.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';

const prefix = uniquePrefix('policy');
const raw = inspector(prefix);
const redisStore = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
afterAll(async () => {
  await redisStore.close();
  await raw.cleanup();
});

const tellerPin = hashPin('4821');
const document: PolicyDocument = {
  roles: {
    teller: { flows: ['pay', 'check'], perPaymentLimit: { UGX: '1000.50' }, dailyLimit: { UGX: '2000' } },
    viewer: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} },
  },
  users: {
    telegram: { '111': { role: 'teller' } },
    slack: { '*': { role: 'viewer' } },
    ussd: { '+256772123456': { role: 'teller', pin: tellerPin } },
    whatsapp: { '256772123456': { role: 'teller' }, '+256772999999': { role: 'viewer' } },
  },
};

const rejection = async (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

describe('AccessPolicy', () => {
  const policy = new AccessPolicy(document);

  it('knows listed users, matches `*`, and refuses the unknown', () => {
    expect(policy.allowedFlows('telegram', '111')).toEqual(['pay', 'check']);
    expect(policy.allowedFlows('slack', 'U-anyone')).toEqual(['check']);
    expect(policy.role('telegram', '222')).toBeUndefined();
    expect(policy.allowedFlows('telegram', '222')).toEqual([]);
    expect(policy.role('ussd', '+256700000000')).toBeUndefined();
  });

  it('keys WhatsApp users by wa_id, an entry written with its + matching too', () => {
    expect(policy.allowedFlows('whatsapp', '256772123456')).toEqual(['pay', 'check']);
    expect(policy.allowedFlows('whatsapp', '256772999999')).toEqual(['check']);
    expect(policy.role('whatsapp', '256700000000')).toBeUndefined();
    // A policy written before WhatsApp existed knows no WhatsApp user.
    expect(
      new AccessPolicy({ ...document, users: { telegram: {}, slack: {}, ussd: {} } }).role('whatsapp', '256772123456'),
    ).toBeUndefined();
  });

  it('refuses a flow the role does not list', async () => {
    const store = new MemoryStore();
    const input = {
      channel: 'slack' as const,
      userId: 'U1',
      flow: 'pay',
      amount: '1',
      currency: 'UGX',
      duplicateCheckKey: 'r1:pay',
    };
    expect(await rejection(policy.reserveSpend(store, input))).toMatchObject({ code: 'not_allowed' });
    expect(
      await rejection(policy.reserveSpend(store, { ...input, channel: 'telegram', userId: 'nobody' })),
    ).toMatchObject({ code: 'not_allowed' });
  });

  it('enforces the per-payment limit with decimals and refuses a currency without a limit', async () => {
    const store = new MemoryStore();
    const input = { channel: 'telegram' as const, userId: '111', flow: 'pay', currency: 'UGX' };
    expect(
      await rejection(policy.reserveSpend(store, { ...input, amount: '1000.51', duplicateCheckKey: 'r1:pay' })),
    ).toMatchObject({ code: 'limit_exceeded' });
    await expect(
      policy.reserveSpend(store, { ...input, amount: '1000.50', duplicateCheckKey: 'r2:pay' }),
    ).resolves.toBeUndefined();
    expect(
      await rejection(
        policy.reserveSpend(store, { ...input, amount: '1', currency: 'KES', duplicateCheckKey: 'r3:pay' }),
      ),
    ).toMatchObject({ code: 'limit_exceeded' });
  });

  it('keeps a daily total per UTC day, atomically', async () => {
    let now = Date.parse('2026-03-01T10:00:00Z');
    const dated = new AccessPolicy(document, { now: () => now });
    const store = new MemoryStore({ now: () => now });
    const input = { channel: 'telegram' as const, userId: '111', flow: 'pay', amount: '300', currency: 'ugx' };
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        rejection(dated.reserveSpend(store, { ...input, duplicateCheckKey: `r${i}:pay` })),
      ),
    );
    expect(results.filter((r) => r === 'resolved')).toHaveLength(6); // 6 x 300 = 1800 <= 2000
    expect(results.filter((r) => r !== 'resolved')).toEqual(
      Array(4).fill({
        code: 'limit_exceeded',
        message: 'more than 2000 UGX today',
        limit: { per: 'day', max: '200', spent: '1800', currency: 'UGX' },
      }),
    );
    await expect(
      dated.reserveSpend(store, { ...input, amount: '200', duplicateCheckKey: 'r10:pay' }),
    ).resolves.toBeUndefined();
    expect(
      await rejection(dated.reserveSpend(store, { ...input, amount: '0.01', duplicateCheckKey: 'r11:pay' })),
    ).toMatchObject({ code: 'limit_exceeded' });
    now = Date.parse('2026-03-02T00:00:01Z');
    await expect(
      dated.reserveSpend(store, { ...input, amount: '300', duplicateCheckKey: 'r12:pay' }),
    ).resolves.toBeUndefined();
  });

  it.each<[string, () => Store]>([
    ['memory', () => new MemoryStore()],
    ['Redis', () => redisStore],
  ])('reserves once per Duplicate-Check-Key and gives it back once (%s)', async (_name, make) => {
    const store = make();
    const userId = '111';
    const run = randomUUID();
    const dated = new AccessPolicy(document, { now: () => Date.parse('2026-03-05T10:00:00Z') });
    // Daily limit 2000 UGX.
    const input = {
      channel: 'telegram' as const,
      userId,
      flow: 'pay',
      amount: '1000',
      currency: 'UGX',
      duplicateCheckKey: `${run}-1:pay`,
    };
    // The same payment's reservation repeated (a resend, a restored step, a run taken over): counted once.
    await Promise.all(Array.from({ length: 5 }, () => dated.reserveSpend(store, input)));
    const second = { ...input, amount: '1000.50', duplicateCheckKey: `${run}-2:pay` };
    expect(await rejection(dated.reserveSpend(store, second))).toMatchObject({ code: 'limit_exceeded' });
    // Given back (the service refused the payment, or it failed): the day's total drops, once.
    expect(await dated.giveBackSpend(store, input.duplicateCheckKey)).toBe(true);
    expect(await dated.giveBackSpend(store, input.duplicateCheckKey)).toBe(false);
    await expect(dated.reserveSpend(store, second)).resolves.toBeUndefined();
    // A key given back does not reserve again: its payment is over.
    await expect(dated.reserveSpend(store, input)).resolves.toBeUndefined();
    expect(await rejection(dated.reserveSpend(store, { ...input, duplicateCheckKey: `${run}-3:pay` }))).toMatchObject({
      code: 'limit_exceeded',
    });
    expect(await dated.giveBackSpend(store, `${run}-never-reserved`)).toBe(false);
  });

  it.each<[string, () => Store]>([
    ['memory', () => new MemoryStore()],
    ['Redis', () => redisStore],
  ])('checks an amount when it is entered, with the figures, reserving nothing (%s)', async (_name, make) => {
    const store = make();
    const run = randomUUID();
    // Its own day: the other cases' totals do not count here.
    const dated = new AccessPolicy(document, { now: () => Date.parse('2026-04-07T10:00:00Z') });
    const ask = { channel: 'telegram' as const, userId: '111', flow: 'pay', currency: 'UGX' };
    // Per payment: 1000.50 UGX.
    expect(await rejection(dated.checkSpend(store, { ...ask, amount: '1000.51' }))).toMatchObject({
      code: 'limit_exceeded',
      limit: { per: 'payment', max: '1000.50', currency: 'UGX' },
    });
    await expect(dated.checkSpend(store, { ...ask, amount: '1000.50' })).resolves.toBeUndefined();
    // Checking reserves nothing: the whole day (2000 UGX) is still there.
    await expect(
      dated.reserveSpend(store, { ...ask, amount: '1000', duplicateCheckKey: `${run}-1:pay` }),
    ).resolves.toBeUndefined();
    await expect(
      dated.reserveSpend(store, { ...ask, amount: '600', duplicateCheckKey: `${run}-2:pay` }),
    ).resolves.toBeUndefined();
    // 1600 sent today: 400 left, said with what was sent.
    expect(await rejection(dated.checkSpend(store, { ...ask, amount: '500' }))).toMatchObject({
      code: 'limit_exceeded',
      limit: { per: 'day', max: '400', spent: '1600', currency: 'UGX' },
    });
    await expect(dated.checkSpend(store, { ...ask, amount: '400' })).resolves.toBeUndefined();
    // The reservation after the PIN says the same figures when the day filled meanwhile.
    expect(
      await rejection(dated.reserveSpend(store, { ...ask, amount: '500', duplicateCheckKey: `${run}-3:pay` })),
    ).toMatchObject({
      limit: { per: 'day', max: '400', spent: '1600' },
    });
    // The role is checked as well.
    expect(await rejection(dated.checkSpend(store, { ...ask, flow: 'request', amount: '1' }))).toMatchObject({
      code: 'not_allowed',
    });
    expect(await rejection(dated.checkSpend(store, { ...ask, userId: 'nobody', amount: '1' }))).toMatchObject({
      code: 'not_allowed',
    });
  });

  it('stores PINs as scrypt$salt$hash with a fresh salt and verifies them', async () => {
    expect(tellerPin).toMatch(/^scrypt\$[\w-]{22}\$[\w-]{43}$/);
    const again = hashPin('4821');
    expect(again).not.toBe(tellerPin);
    expect(() => hashPin('12a4')).toThrow();
    await expect(
      policy.verifyPin(new MemoryStore(), { channel: 'ussd', userId: '+256772123456', pin: '4821' }),
    ).resolves.toBeUndefined();
  });

  it('locks the PIN after 3 wrong tries, even for the right PIN, for 15 minutes', async () => {
    let now = 0;
    const store = new MemoryStore({ now: () => now });
    const who = { channel: 'ussd' as const, userId: '+256772123456' };
    expect(await rejection(policy.verifyPin(store, { ...who, pin: '0000' }))).toEqual({
      code: 'pin_wrong',
      message: '2 attempts left',
    });
    expect(await rejection(policy.verifyPin(store, { ...who, pin: '0000' }))).toEqual({
      code: 'pin_wrong',
      message: '1 attempts left',
    });
    expect(await rejection(policy.verifyPin(store, { ...who, pin: '0000' }))).toMatchObject({ code: 'pin_locked' });
    expect(await rejection(policy.verifyPin(store, { ...who, pin: '4821' }))).toMatchObject({ code: 'pin_locked' });
    // Told when the amount is entered, before every other screen, where a PIN will be asked.
    const amount = { ...who, flow: 'pay', amount: '100', currency: 'UGX' };
    expect(await rejection(policy.checkSpend(store, { ...amount, pin: true }))).toMatchObject({ code: 'pin_locked' });
    await expect(policy.checkSpend(store, amount)).resolves.toBeUndefined();
    now += 15 * 60 * 1000;
    await expect(policy.checkSpend(store, { ...amount, pin: true })).resolves.toBeUndefined();
    await expect(policy.verifyPin(store, { ...who, pin: '4821' })).resolves.toBeUndefined();
    expect(PIN_MAX_ATTEMPTS).toBe(3);
  });

  it('a right PIN resets the count of wrong tries', async () => {
    const store = new MemoryStore();
    const who = { channel: 'ussd' as const, userId: '+256772123456' };
    await rejection(policy.verifyPin(store, { ...who, pin: '0000' }));
    await rejection(policy.verifyPin(store, { ...who, pin: '0000' }));
    await policy.verifyPin(store, { ...who, pin: '4821' });
    expect(await rejection(policy.verifyPin(store, { ...who, pin: '0000' }))).toEqual({
      code: 'pin_wrong',
      message: '2 attempts left',
    });
  });

  it('refuses a PIN check for a user without a PIN', async () => {
    expect(
      await rejection(policy.verifyPin(new MemoryStore(), { channel: 'telegram', userId: '111', pin: '1234' })),
    ).toMatchObject({ code: 'not_allowed' });
  });

  it('rejects a bad document naming the problems', () => {
    expect(() => new AccessPolicy({ roles: {}, users: { telegram: { '1': { role: 'ghost' } } } })).toThrow(
      /unknown role ghost/,
    );
    expect(() => new AccessPolicy({ roles: {}, users: { telgram: {} } })).toThrow(/Invalid access policy/);
    expect(
      () =>
        new AccessPolicy({
          roles: { r: { flows: ['pay'], perPaymentLimit: { UGX: '1e5' }, dailyLimit: {} } },
          users: {},
        }),
    ).toThrow(/decimal string/);
    expect(() => new AccessPolicy({ roles: {}, users: { ussd: { '+1': { role: 'r', pin: '1234' } } } })).toThrow(
      /scrypt\$salt\$hash/,
    );
  });
});

describe('loadAccessPolicy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'policy-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads JSON text, a file path in either setting, or falls back to the demo policy', async () => {
    const file = join(dir, 'policy.json');
    writeFileSync(file, JSON.stringify(document));
    expect(loadAccessPolicy({ policy: JSON.stringify(document) }).allowedFlows('telegram', '111')).toEqual([
      'pay',
      'check',
    ]);
    expect(loadAccessPolicy({ policy: file }).allowedFlows('telegram', '222')).toEqual([]);
    expect(loadAccessPolicy({ file }).allowedFlows('slack', 'U9')).toEqual(['check']);
    const demo = loadAccessPolicy();
    expect(demo.allowedFlows('telegram', 'anyone')).toEqual(['pay', 'request', 'check', 'data', 'pin']);
    await expect(
      demo.verifyPin(new MemoryStore(), { channel: 'ussd', userId: '+256700000001', pin: '1234' }),
    ).resolves.toBeUndefined();
  });
});
