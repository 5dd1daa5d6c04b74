import { afterAll, describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { serviceActors } from '../../flows/actors.js';
import { menuFlow } from '../../flows/menu.machine.js';
import type { PaymentResult } from '../../flows/calls.js';
import type { FlowEvent, FlowInput, FlowModule, View } from '../../flows/types.js';
import { createEngine } from '../../src/conversation/engine/engine.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { createLogger } from '../../src/log.js';
import { answerOf, deliveryId, readRecord, WAITING } from '../../src/conversation/engine/ledger.js';
import { keys as storeKeys } from '../../src/store/keys.js';
import { until } from '../until.js';
import { gate } from './engine-fixtures.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

const PIN = '80357';
const prefix = uniquePrefix('secret');
const raw = inspector(prefix);
const store = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
afterAll(async () => {
  await store.close();
  await raw.cleanup();
});

/** Every value stored under our prefix, as text. */
async function everythingStored(): Promise<string> {
  const keys = await raw.redis.keys(`${prefix}*`);
  const read = async (k: string) => {
    const type = await raw.redis.type(k);
    if (type === 'hash') return JSON.stringify(await raw.redis.hgetall(k));
    if (type === 'zset') return JSON.stringify(await raw.redis.zrange(k, 0, -1));
    return String(await raw.redis.get(k));
  };
  const values = await Promise.all(keys.map(read));
  return values.join('\n');
}

const answer = (e: FlowEvent) => (e.type === 'ANSWERED' ? e.value : '');
const policy = new AccessPolicy({
  roles: { r: { flows: ['pay'], perPaymentLimit: {}, dailyLimit: {} } },
  users: { ussd: { '*': { role: 'r' } }, telegram: {}, slack: {} },
});

function engineWith(
  flow: FlowModule,
  services: Parameters<typeof createEngine>[0]['services'],
  clock: { now?: () => number; deadlineMs?: number } = {},
) {
  const deadline = clock.deadlineMs ?? 5000;
  return createEngine({
    store,
    channels: channelCapabilities,
    services,
    policy,
    flows: { menu: menuFlow, pay: flow },
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: deadline, telegram: deadline, slack: deadline },
    ...(clock.now ? { now: clock.now } : {}),
    logger: createLogger('silent'),
  });
}

/** PIN check (secret), then a payment: the chain a confirmation runs. */
const payAfterPin: FlowModule = {
  id: 'pay',
  messages: { en: { 't.ask': 'PIN?', 't.paid': 'Paid {id}' }, sw: {} },
  machine: setup({
    types: {
      context: {} as { input: FlowInput; key: string; id?: string },
      input: {} as FlowInput,
      events: {} as FlowEvent,
    },
    actors: { verifyPin: serviceActors.verifyPin, createPayment: serviceActors.createPayment },
  }).createMachine({
    context: ({ input }) => ({ input, key: `${input.runId}:pay` }),
    initial: 'asking',
    states: {
      asking: { meta: { view: (): View => ({ text: { key: 't.ask' }, input: 'pin' }) }, on: { ANSWERED: 'checking' } },
      checking: {
        tags: ['busy', 'secret'],
        invoke: {
          src: 'verifyPin',
          input: ({ context, event }) => ({
            channel: context.input.channel,
            userId: context.input.userId,
            pin: answer(event),
          }),
          onDone: 'paying',
          onError: 'asking',
        },
      },
      paying: {
        tags: ['busy'],
        invoke: {
          src: 'createPayment',
          input: ({ context }) => ({
            duplicateCheckKey: context.key,
            paymentType: 'money' as const,
            phonenumber: '+256772000001',
            amount: '10',
            currency: 'UGX',
            description: 'x',
            metadata: { chat: context.input.chat, ref: context.key },
          }),
          onDone: { target: 'done', actions: assign({ id: ({ event }) => (event.output as PaymentResult).id }) },
        },
      },
      done: {
        type: 'final',
        meta: {
          view: (c: { id?: string }): View => ({ text: { key: 't.paid', params: { id: c.id ?? '' } }, final: true }),
        },
      },
    },
  }),
};

const pinFlow: FlowModule = {
  id: 'pay',
  messages: { en: { 't.ask': 'PIN?', 't.ok': 'PIN accepted', 't.no': 'Wrong PIN' }, sw: {} },
  machine: setup({
    types: { context: {} as { input: FlowInput; ok?: boolean }, input: {} as FlowInput, events: {} as FlowEvent },
    actors: { verifyPin: serviceActors.verifyPin },
  }).createMachine({
    context: ({ input }) => ({ input }),
    initial: 'asking',
    states: {
      asking: { meta: { view: (): View => ({ text: { key: 't.ask' }, input: 'pin' }) }, on: { ANSWERED: 'checking' } },
      checking: {
        tags: ['busy', 'secret'],
        invoke: {
          src: 'verifyPin',
          input: ({ context, event }) => ({
            channel: context.input.channel,
            userId: context.input.userId,
            pin: answer(event),
          }),
          onDone: { target: 'done', actions: assign({ ok: true }) },
          onError: { target: 'done', actions: assign({ ok: false }) },
        },
      },
      done: {
        type: 'final',
        meta: { view: (c: { ok?: boolean }): View => ({ text: { key: c.ok ? 't.ok' : 't.no' }, final: true }) },
      },
    },
  }),
};

describe('a state tagged secret', () => {
  it('is never written to the store, while its check runs or after', async () => {
    const checking = gate<void>();
    const seen: string[] = [];
    const engine = engineWith(pinFlow, {
      verifyPin: async ({ pin }) => {
        seen.push(pin);
        await checking.promise;
      },
    });
    const base = { channel: 'ussd' as const, conversationId: '+256772555001', userId: '+256772555001' };
    expect((await engine.handle({ ...base, messageId: 'a', start: 'pay' })).text).toBe('PIN?');
    const answered = engine.handle({ ...base, messageId: 'b', text: PIN });
    await until('the check started', () => seen.length > 0);
    expect(seen).toEqual([PIN]);
    const during = await everythingStored();
    expect(during).toContain('asking');
    expect(during).not.toContain(PIN);
    checking.open();
    expect((await answered).text).toBe('PIN accepted');
    expect(await everythingStored()).not.toContain(PIN);
  });

  it('stores the next busy step as soon as the check passes; another process waits for the call out instead of making it again', async () => {
    const paying = gate<{ id: string; state: string }>();
    const keys: string[] = [];
    const services = {
      verifyPin: async () => undefined,
      createPayment: async ({ duplicateCheckKey }: { duplicateCheckKey: string }) => {
        keys.push(duplicateCheckKey);
        return paying.promise;
      },
    };
    const first = engineWith(payAfterPin, services);
    const base = { channel: 'ussd' as const, conversationId: '+256772555002', userId: '+256772555002' };
    await first.handle({ ...base, messageId: 'c', start: 'pay' });
    const confirmed = first.handle({ ...base, messageId: 'd', text: PIN });
    await until('the payment call out', () => keys.length > 0);
    // The payment call is out. What is stored must be the payment step (a process taking it over repeats
    // the call under the same key), never the PIN.
    const stored = await everythingStored();
    expect(stored).toContain('paying');
    expect(stored).not.toContain(PIN);

    // Another process (same store) gets a message meanwhile: it waits for the run, it does not call again.
    const second = engineWith(payAfterPin, services);
    const waiting = second.handle({ ...base, messageId: 'e', text: 'anything' });
    await until('the message written as waiting for the run', async () => {
      const stored = await store.get(storeKeys.conversation(base));
      return answerOf(readRecord(stored?.snapshot), deliveryId('e')) === WAITING;
    });
    expect(keys).toHaveLength(1);
    paying.open({ id: 'P1', state: 'new' });
    expect((await confirmed).text).toBe('Paid P1');
    expect((await waiting).text).toBe('Paid P1');
    expect(keys).toHaveLength(1);
    await Promise.all([first.stop(), second.stop()]);
  });

  it("ends the wait for the run at the delivery's deadline, the check's time counted", async () => {
    // The engine's clock, moved past the deadline while the check is out: the run it starts is waited for no
    // longer (a wait counted from its own start would last the whole minute, past the test's timeout).
    let skew = 0;
    const checking = gate<void>();
    const paying = gate<{ id: string; state: string }>();
    const keys: string[] = [];
    const asked: string[] = [];
    const engine = engineWith(
      payAfterPin,
      {
        verifyPin: ({ pin }: { pin: string }) => {
          asked.push(pin);
          return checking.promise;
        },
        createPayment: async ({ duplicateCheckKey }: { duplicateCheckKey: string }) => {
          keys.push(duplicateCheckKey);
          return paying.promise;
        },
      },
      { now: () => Date.now() + skew, deadlineMs: 60_000 },
    );
    const base = { channel: 'ussd' as const, conversationId: '+256772555003', userId: '+256772555003' };
    await engine.handle({ ...base, messageId: 'f', start: 'pay' });
    const confirmed = engine.handle({ ...base, messageId: 'g', text: PIN });
    await until('the PIN check out', () => asked.length === 1);
    skew = 60_001;
    checking.open();
    expect((await confirmed).text).toBe('We are still working on it. You will be notified of the result.');
    await until('the payment call out', () => keys.length === 1);
    paying.open({ id: 'P3', state: 'new' });
    await engine.stop();
  });
});
