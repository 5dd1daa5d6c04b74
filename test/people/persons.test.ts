/**
 * One person, several identities: the attacks of issue 34 on the access policy and the approval desk, each of
 * which worked when every channel account was a user of its own (a policy with `person` was refused then, and
 * nothing grouped them): a second identity approving its own payment; the daily limit doubled by a second
 * channel; the PIN tries of one person multiplied by their channels. Against real Redis and the memory store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalDesk, type ApprovalBoard, type HeldPayment } from '../../src/approvals/desk.js';
import { HELD, type FlowCalls } from '../../flows/calls.js';
import { AccessPolicy, hashPin, type PolicyDocument } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store } from '../../src/store/types.js';
import { Directory } from '../../src/people/directory.js';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import { createLogger } from '../../src/log.js';
import { REDIS_URL, inspector, uniquePrefix } from '../conversation/redis-helper.js';
import { pgliteDump } from '../journal/templates.js';

const prefix = uniquePrefix('people-persons');
const redis = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
afterAll(async () => {
  await redis.close();
  await inspector(prefix).cleanup();
});

const pin = hashPin('4821');
const POLICY: PolicyDocument = {
  roles: {
    teller: {
      flows: ['pay', 'check'],
      perPaymentLimit: { UGX: '300000' },
      dailyLimit: { UGX: '500000' },
      approvalAbove: { UGX: '100000' },
      approve: true,
    },
    finance: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {}, approve: true },
  },
  users: {
    ussd: { '+256772000001': { role: 'teller', person: 'amina', pin }, '+256772000009': { role: 'teller', pin } },
    whatsapp: { '256772000001': { role: 'teller', person: 'amina' } },
    telegram: { '101': { role: 'teller', person: 'amina' } },
    slack: { UAMINA: { role: 'teller', person: 'amina' }, UFIN: { role: 'finance' } },
  },
};

const rejection = async (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

describe('persons in the access policy', () => {
  it('groups the entries of one person and keeps every other entry a person of its own', () => {
    const policy = new AccessPolicy(POLICY);
    expect(policy.personOf('ussd', '+256772000001')).toBe('amina');
    expect(policy.personOf('whatsapp', '256772000001')).toBe('amina');
    expect(policy.personOf('slack', 'UAMINA')).toBe('amina');
    expect(policy.personOf('ussd', '+256772000009')).toBe('ussd:+256772000009');
    expect(policy.personOf('slack', 'UFIN')).toBe('slack:UFIN');
    expect(policy.personOf('slack', 'UNOBODY')).toBeUndefined();
    expect(
      policy.directory
        .identitiesOf('amina')
        .map((i) => `${i.channel}:${i.userId}`)
        .sort(),
    ).toEqual(['slack:UAMINA', 'telegram:101', 'ussd:+256772000001', 'whatsapp:256772000001']);
  });

  it('refuses a person with two roles or two PINs, and a * entry naming a person', () => {
    const twoRoles = { ...POLICY, users: { ...POLICY.users, slack: { UAMINA: { role: 'finance', person: 'amina' } } } };
    expect(() => new AccessPolicy(twoRoles)).toThrow(/person amina has role teller .*a person has one role/);
    const twoPins = {
      ...POLICY,
      users: { ...POLICY.users, telegram: { '101': { role: 'teller', person: 'amina', pin: hashPin('5930') } } },
    };
    expect(() => new AccessPolicy(twoPins)).toThrow(/a person has one PIN/);
    const star = { ...POLICY, users: { ...POLICY.users, telegram: { '*': { role: 'finance', person: 'all' } } } };
    expect(() => new AccessPolicy(star)).toThrow(/a \* entry is everyone else/);
  });

  for (const [name, store] of [
    ['memory', () => new MemoryStore()],
    ['redis', () => redis],
  ] as Array<[string, () => Store]>) {
    it(`shares one daily total among all of a person's channels, atomically (${name})`, async () => {
      const policy = new AccessPolicy(POLICY, { now: () => Date.parse('2026-11-26T10:00:00Z') });
      const s = store();
      const run = `${name}-${Date.now()}`;
      const pay = (channel: 'ussd' | 'whatsapp' | 'telegram' | 'slack', userId: string, i: number) =>
        rejection(
          policy.reserveSpend(s, {
            channel,
            userId,
            flow: 'pay',
            amount: '100000',
            currency: 'UGX',
            duplicateCheckKey: `${run}-${channel}-${i}`,
          }),
        );
      // Eight payments of 100,000 at once over four channels: the person's 500,000 a day lets five through.
      const results = await Promise.all([
        ...[0, 1].map((i) => pay('ussd', '+256772000001', i)),
        ...[0, 1].map((i) => pay('whatsapp', '256772000001', i)),
        ...[0, 1].map((i) => pay('telegram', '101', i)),
        ...[0, 1].map((i) => pay('slack', 'UAMINA', i)),
      ]);
      expect(results.filter((r) => r === 'resolved')).toHaveLength(5);
      expect(results.filter((r) => r !== 'resolved')).toEqual(
        Array(3).fill({
          code: 'limit_exceeded',
          message: 'more than 500000 UGX today',
          // What is left of the day, for the person's screen: nothing, the whole 500,000 already spent.
          limit: { currency: 'UGX', max: '0', per: 'day', spent: '500000' },
        }),
      );
      // Another person's total is their own.
      expect(await pay('ussd', '+256772000009', 0)).toBe('resolved');
    });
  }

  it('counts PIN tries per person: a second identity does not buy more guesses', async () => {
    const policy = new AccessPolicy({
      ...POLICY,
      users: { ...POLICY.users, whatsapp: { '256772000001': { role: 'teller', person: 'amina' } } },
    });
    const s = new MemoryStore();
    expect(
      await rejection(policy.verifyPin(s, { channel: 'ussd', userId: '+256772000001', pin: '0000' })),
    ).toMatchObject({ code: 'pin_wrong' });
    expect(
      await rejection(policy.verifyPin(s, { channel: 'whatsapp', userId: '256772000001', pin: '0000' })),
    ).toMatchObject({ code: 'pin_wrong' });
    expect(await rejection(policy.verifyPin(s, { channel: 'telegram', userId: '101', pin: '0000' }))).toMatchObject({
      code: 'pin_locked',
    });
    expect(
      await rejection(policy.verifyPin(s, { channel: 'ussd', userId: '+256772000001', pin: '4821' })),
    ).toMatchObject({ code: 'pin_locked' });
  });

  it('refuses a suspended person on every channel at once, and money to a person whose PIN was reset', async () => {
    const policy = new AccessPolicy(POLICY);
    const s = new MemoryStore();
    const { persons, identities } = { persons: policy.directory.persons(), identities: policy.directory.identities() };
    const suspend = persons.map((p) => (p.id === 'amina' ? { ...p, status: 'suspended' as const } : p));
    policy.useDirectory(new Directory(1, suspend, identities, policy.directory.wildcards));
    for (const [channel, userId] of [
      ['ussd', '+256772000001'],
      ['whatsapp', '256772000001'],
      ['slack', 'UAMINA'],
    ] as const) {
      expect(policy.role(channel, userId)).toBeUndefined();
      expect(policy.allowedFlows(channel, userId)).toEqual([]);
      const input = { channel, userId, flow: 'pay', amount: '10', currency: 'UGX', duplicateCheckKey: `s-${channel}` };
      expect(await rejection(policy.reserveSpend(s, input))).toMatchObject({ code: 'not_allowed' });
    }
    expect(
      await rejection(policy.verifyPin(s, { channel: 'ussd', userId: '+256772000001', pin: '4821' })),
    ).toMatchObject({ code: 'not_allowed' });
    const reset = persons.map((p) => (p.id === 'amina' ? { ...p, pinMustChange: true } : p));
    policy.useDirectory(new Directory(2, reset, identities, policy.directory.wildcards));
    expect(policy.allowedFlows('ussd', '+256772000001')).toEqual(['pay', 'check']);
    const input = {
      channel: 'telegram' as const,
      userId: '101',
      flow: 'pay',
      amount: '10',
      currency: 'UGX',
      duplicateCheckKey: 'r-1',
    };
    expect(await rejection(policy.reserveSpend(s, input))).toMatchObject({
      code: 'not_allowed',
      message: 'the PIN was reset: set a new one first',
    });
    expect(
      await rejection(policy.verifyPin(s, { channel: 'ussd', userId: '+256772000001', pin: '4821' })),
    ).toMatchObject({ code: 'not_allowed' });
  });
});

describe('maker and checker are persons', () => {
  // Holds and decisions are rows of the database (an embedded one here).
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase({ dataDir: 'memory://', dump: pgliteDump() });
    await migrate(database.db);
  }, 120_000);
  afterAll(async () => {
    await database.close();
  });
  class Board implements ApprovalBoard {
    readonly posts: HeldPayment[] = [];
    async post(held: HeldPayment) {
      this.posts.push(held);
      return { channel: 'C1', ts: String(this.posts.length) };
    }
    async update() {}
  }

  const setUp = (document: PolicyDocument = POLICY) => {
    const policy = new AccessPolicy(document);
    const store = new MemoryStore();
    const creates: string[] = [];
    const calls = {
      reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: input.channel as 'slack' }),
      createPayment: async (input) => {
        creates.push(input.duplicateCheckKey);
        return { id: String(creates.length), state: 'new' };
      },
    } as Pick<FlowCalls, 'reserveSpend' | 'createPayment'> as FlowCalls;
    const desk = new ApprovalDesk({
      db: database.db,
      policy,
      calls,
      ttlHours: 24,
      tell: async () => {},
      logger: createLogger('silent'),
    });
    const board = new Board();
    desk.attach(board);
    return { policy, desk, board, creates, guarded: desk.guard(calls) };
  };
  const held = (channel: string, userId: string, key: string) => ({
    channel,
    userId,
    duplicateCheckKey: key,
    paymentType: 'money' as const,
    phonenumber: '+256772999999',
    amount: '150000',
    currency: 'UGX',
    description: 'rent',
    metadata: { chat: `${channel}:${userId}`, ref: key },
  });

  it('refuses every identity of the maker, and lets another person decide', async () => {
    const { desk, board, creates, guarded } = setUp();
    expect(await guarded.createPayment(held('ussd', '+256772000001', 'k-1'))).toEqual(HELD);
    const id = board.posts[0]!.id;
    expect(board.posts[0]!.maker).toMatchObject({ person: 'amina' });
    // Amina's Slack account may approve (her role says so), but not her own payment made on USSD.
    expect(await desk.decide(id, { channel: 'slack', userId: 'UAMINA' }, 'approve')).toMatchObject({
      ok: false,
      refusal: 'own_payment',
    });
    expect(await desk.decide(id, { channel: 'telegram', userId: '101' }, 'reject', 'mine')).toMatchObject({
      ok: false,
      refusal: 'own_payment',
    });
    expect(creates).toEqual([]);
    expect(await desk.decide(id, { channel: 'slack', userId: 'UFIN' }, 'approve')).toMatchObject({ ok: true });
    expect(creates).toEqual(['k-1']);
  });

  it('sends nothing approved for a maker suspended while it waited', async () => {
    const { policy, desk, board, creates, guarded } = setUp();
    await guarded.createPayment(held('telegram', '101', 'k-2'));
    const persons = policy.directory
      .persons()
      .map((p) => (p.id === 'amina' ? { ...p, status: 'suspended' as const } : p));
    policy.useDirectory(new Directory(1, persons, policy.directory.identities(), policy.directory.wildcards));
    const result = await desk.decide(board.posts[0]!.id, { channel: 'slack', userId: 'UFIN' }, 'approve');
    expect(result).toMatchObject({ ok: true, held: { outcome: { kind: 'refused' } } });
    expect(creates).toEqual([]);
  });
});
