/**
 * Two releases of one flow at once, as in a rolling deploy (engines of two builds on one store): a conversation
 * stored by the other release continues when its shape is the same or readable, moves to a renamed state a
 * migration declares, starts again with one line saying the service was updated otherwise, and is left alone
 * (answered "try again in a moment") when a later build wrote it. A payment in flight at a state the other
 * release removed still finishes, once, and its person is told.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { assign, setup } from 'xstate';
import { serviceActors } from '../../flows/actors.js';
import { menuFlow } from '../../flows/menu.machine.js';
import { isAlreadySubmitted, type FlowCalls, type PaymentResult } from '../../flows/calls.js';
import { flowShape } from '../../flows/shape.js';
import type { FlowEvent, FlowInput, FlowModule, Lang } from '../../flows/types.js';
import { createEngine, type ConversationEngine, type EngineOptions } from '../../src/conversation/engine/engine.js';
import type { ConversationRecord } from '../../src/conversation/engine/ledger.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { keys } from '../../src/store/keys.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Inbound, Prompt } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import { createLogger } from '../../src/log.js';
import { dyingStore } from './engine-fixtures.js';
import { until } from '../until.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

type PayInput = Parameters<FlowCalls['createPayment']>[0];

/** Amount, confirm, pay (a money call), its outcome: a release names the amount's and the payment's states. */
function payFlow(amountState: string, payState: string): FlowModule {
  return {
    id: 'pay',
    messages: {
      en: { 't.amount': 'Amount?', 't.confirm': 'Send {amount}?', 't.sent': 'Sent {id}', 't.failed': 'Not sent' },
    },
    machine: setup({
      types: {
        context: {} as { input: FlowInput; key: string; amount?: string; id?: string },
        input: {} as FlowInput,
        events: {} as FlowEvent,
      },
      actors: { createPayment: serviceActors.createPayment },
    }).createMachine({
      id: 'pay',
      context: ({ input }) => ({ input, key: `${input.runId}:pay` }),
      initial: amountState,
      states: {
        [amountState]: {
          meta: { view: () => ({ text: { key: 't.amount' }, input: 'amount' }) },
          on: { ANSWERED: { target: 'confirm', actions: assign({ amount: ({ event }) => event.value }) } },
        },
        confirm: {
          meta: {
            view: (c: { amount?: string }) => ({
              text: { key: 't.confirm', params: { amount: c.amount ?? '' } },
              choices: [{ id: 'yes', label: 'Yes' }],
            }),
          },
          on: { CHOSEN: payState, BACK: amountState },
        },
        [payState]: {
          tags: ['busy', 'money'],
          invoke: {
            src: 'createPayment',
            input: ({ context }): PayInput => ({
              duplicateCheckKey: context.key,
              paymentType: 'money',
              phonenumber: '+256772000001',
              amount: context.amount ?? '0',
              currency: 'UGX',
              description: 'test',
              metadata: { chat: context.input.chat, ref: context.key },
            }),
            onDone: [
              { guard: ({ event }) => isAlreadySubmitted(event.output), target: 'sent' },
              { target: 'sent', actions: assign({ id: ({ event }) => (event.output as PaymentResult).id }) },
            ],
            onError: 'failed',
          },
        },
        sent: {
          type: 'final',
          meta: { view: (c: { id?: string }) => ({ text: { key: 't.sent', params: { id: c.id ?? '' } } }) },
        },
        failed: { type: 'final', meta: { view: () => ({ text: { key: 't.failed' } }) } },
      },
    }),
  };
}

/** The release people are on, and the next one: the amount's state renamed, the payment's too. */
const OLD = payFlow('awaitingAmount', 'paying');
const NEW = payFlow('enteringAmount', 'submitting');

const policy = new AccessPolicy({
  roles: { clerk: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '5000' } } },
  users: { telegram: { '*': { role: 'clerk' } }, ussd: { '*': { role: 'clerk' } }, slack: {} },
});

const engines: ConversationEngine[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.stop()));
});

/** A process of one build: `pay` its flow, `build` its place in the order of releases. */
function engine(store: Store, pay: FlowModule, build: number, changes: Partial<EngineOptions> = {}) {
  const e = createEngine({
    store,
    channels: channelCapabilities,
    services: { createPayment: async () => ({ id: 'pay-1', state: 'new' }) },
    policy,
    flows: { menu: menuFlow, pay },
    build,
    migrations: {},
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: 50, telegram: 50, slack: 50 },
    runLeaseMs: 300,
    sweepEveryMs: 20,
    logger: createLogger('silent'),
    ...changes,
  });
  engines.push(e);
  return e;
}

let ids = 0;
function chat(channel: 'telegram' | 'ussd' = 'telegram') {
  const conversationId = channel === 'ussd' ? `+2567720${String(++ids).padStart(5, '0')}` : `chat-${++ids}`;
  const userId = channel === 'ussd' ? conversationId : `u${ids}`;
  return (fields: Partial<Inbound> = {}): Inbound => ({
    channel,
    conversationId,
    userId,
    messageId: `m-${++ids}`,
    ...fields,
  });
}

async function recordOf(store: Store, msg: () => Inbound): Promise<ConversationRecord> {
  return (await store.get(keys.conversation(msg())))!.snapshot as ConversationRecord;
}

const UPDATED: Record<Lang, string> = {
  en: 'The service was updated, so we started again.',
  sw: 'Huduma imesasishwa, kwa hiyo tumeanza upya.',
  fr: 'Le service a été mis à jour, nous avons donc recommencé.',
};
const TRY_AGAIN = 'The service is being updated. Please try again in a moment; nothing you confirmed is lost.';

describe('a conversation stored by another release', () => {
  it.each(Object.entries(UPDATED) as Array<[Lang, string]>)(
    "at a state this release does not have: one line in the person's language (%s), then the start; never an error or a loop",
    async (lang, line) => {
      const store = new MemoryStore();
      const msg = chat();
      await store.set(keys.profile('telegram', msg().userId), { lang }, null, 3600);
      const old = engine(store, OLD, 1);
      expect((await old.handle(msg({ start: 'pay' }))).text).toBe('Amount?');
      const next = engine(store, NEW, 2);
      const prompt = await next.handle(msg({ text: '100' }));
      const [first, ...rest] = prompt.text.split('\n');
      expect(first).toBe(line);
      expect(rest.join('\n')).not.toContain(line);
      expect(prompt.final).toBe(false);
      expect(prompt.choices?.map((c) => c.id)).toContain('pay');
      // The conversation is this release's now: the menu, in its shape; the next message goes on without the line.
      const record = await recordOf(store, msg);
      expect(record.session).toMatchObject({ flow: 'menu', shape: flowShape(menuFlow.machine), build: 2 });
      const paying = await next.handle(msg({ choice: 'pay' }));
      expect(paying.text).toBe('Amount?');
      expect((await recordOf(store, msg)).session).toMatchObject({ shape: flowShape(NEW.machine) });
    },
  );

  it('on a USSD dial at a state this release does not have: the line and the menu, not "Continue where you left off?"', async () => {
    const store = new MemoryStore();
    const msg = chat('ussd');
    const old = engine(store, OLD, 1);
    await old.handle(msg({ newSession: true, start: 'pay' }));
    const next = engine(store, NEW, 2);
    let offered: boolean | undefined;
    const state = await next.turn<string>(msg(), (_state, view) => {
      offered = view?.waiting;
      return { kind: 'step', inbound: msg({ newSession: true }), after: (p) => p.text };
    });
    expect(offered).toBe(false);
    expect(state.split('\n')[0]).toBe(UPDATED.en);
  });

  it('at a state a declared migration renamed: continues at the renamed state, with its answer', async () => {
    const store = new MemoryStore();
    const msg = chat();
    const old = engine(store, OLD, 1);
    await old.handle(msg({ start: 'pay' }));
    const migrations = { pay: { [flowShape(OLD.machine)]: { awaitingAmount: 'enteringAmount' } } };
    const next = engine(store, NEW, 2, { migrations });
    expect((await next.handle(msg({ text: '100' }))).text).toBe('Send 100?');
    const record = await recordOf(store, msg);
    expect(record.session).toMatchObject({ flow: 'pay', shape: flowShape(NEW.machine), build: 2 });
    expect((record.session!.snapshot as { value: unknown }).value).toBe('confirm');
    // Back goes to the renamed state: the conversation is wholly the new machine's.
    expect((await next.handle(msg({ nav: 'back' }))).text).toBe('Amount?');
    expect(((await recordOf(store, msg)).session!.snapshot as { value: unknown }).value).toBe('enteringAmount');
  });

  it('of the same shape by another build: continues, whichever build is newer', async () => {
    const store = new MemoryStore();
    const msg = chat();
    await engine(store, OLD, 2).handle(msg({ start: 'pay' }));
    expect((await engine(store, OLD, 1).handle(msg({ text: '7' }))).text).toBe('Send 7?');
  });

  it('by a later build, at a state this build does not have: left alone and answered "try again in a moment"', async () => {
    const store = new MemoryStore();
    const msg = chat();
    const next = engine(store, NEW, 2);
    await next.handle(msg({ start: 'pay' }));
    const key = keys.conversation(msg());
    const before = await store.get(key);
    const old = engine(store, OLD, 1);
    const prompt = await old.handle(msg({ text: '100' }));
    expect(prompt.text).toBe(TRY_AGAIN);
    expect(await store.get(key)).toEqual(before);
    // A Home or a dial is not a way round it: still left alone.
    expect((await old.handle(msg({ nav: 'home' }))).text).toBe(TRY_AGAIN);
    expect(await store.get(key)).toEqual(before);
    // Its own build takes it on.
    expect((await next.handle(msg({ text: '100' }))).text).toBe('Send 100?');
  });

  it('by a later build whose flow is over (expired): started again by this build', async () => {
    let clock = Date.now();
    const store = new MemoryStore({ now: () => clock });
    const msg = chat();
    await engine(store, NEW, 2, { now: () => clock }).handle(msg({ start: 'pay' }));
    clock += 601_000;
    const prompt = await engine(store, OLD, 1, { now: () => clock }).handle(msg({ text: '100' }));
    expect(prompt.text).not.toBe(TRY_AGAIN);
    expect((await recordOf(store, msg)).session).toMatchObject({ flow: 'menu', build: 1 });
  });
});

describe('a payment in flight at a state the next release removed', () => {
  it('finishes on the next release from its record, once, and its person is told the outcome', async () => {
    let clock = Date.now();
    const shared = new MemoryStore({ now: () => clock });
    const calls: PayInput[] = [];
    const made = new Set<string>();
    const createPayment = async (input: PayInput) => {
      calls.push(input);
      if (made.has(input.duplicateCheckKey)) return { kind: 'alreadySubmitted' as const };
      made.add(input.duplicateCheckKey);
      return { id: 'pay-1', state: 'new' };
    };
    const msg = chat();
    // The old release's process: the person confirms, the call goes out and hangs; "being confirmed" at the deadline.
    const dying = dyingStore(shared);
    const hanging = vi.fn((input: PayInput) => (calls.push(input), new Promise<never>(() => {})));
    const old = engine(dying, OLD, 1, { now: () => clock, services: { createPayment: hanging } });
    engines.pop(); // never drained: its call never returns
    await old.handle(msg({ start: 'pay' }));
    await old.handle(msg({ text: '100' }));
    const answering = old.handle(msg({ choice: 'yes' }));
    await until('the payment call', () => calls.length === 1);
    clock += 60;
    expect((await answering).text).toMatch(/being confirmed/);
    expect((await recordOf(shared, msg)).session).toMatchObject({ money: true, shape: flowShape(OLD.machine) });
    // It dies (a deploy), and the new release, which has no `paying`, takes the run over.
    dying.die();
    void old.stop();
    clock += 300;
    const told: Prompt[] = [];
    const next = engine(shared, NEW, 2, {
      now: () => clock,
      services: { createPayment },
      onLateOutcome: (_address, prompt) => void told.push(prompt),
    });
    await until('the outcome told', () => told.length > 0);
    expect(told).toEqual([
      expect.objectContaining({
        text: 'Your request was sent; you will be notified of the result. The service was updated while it was being sent.',
        final: true,
        money: true,
      }),
    ]);
    // The same call, under the same key: one payment.
    expect(calls.map((c) => c.duplicateCheckKey)).toEqual([calls[0]!.duplicateCheckKey, calls[0]!.duplicateCheckKey]);
    expect(made.size).toBe(1);
    const record = await recordOf(shared, msg);
    expect(record.run).toBeUndefined();
    expect(record.session).toMatchObject({ ended: true, notice: { key: 'common.updatedSent' } });
    // The next message starts the new release's menu: no error, no loop.
    const after = await next.handle(msg({ text: 'hi' }));
    expect(after.choices?.map((c) => c.id)).toContain('pay');
    expect((await recordOf(shared, msg)).session).toMatchObject({ flow: 'menu', build: 2 });
  });

  it.each([
    {
      answer: 'answered 409 (the first reached the service)',
      service: { kind: 'alreadySubmitted' as const },
      // A 409 on our own key says the service holds the key, not that it made the payment: never "sent".
      note: 'We are still working on it: it is being confirmed.',
    },
    {
      answer: 'made (the first never reached the service)',
      service: { id: 'pay-1', state: 'new' },
      note: 'Your request was sent; you will be notified of the result.',
    },
  ])('made again under its key and $answer, on USSD: the next dial says the outcome', async ({ service, note }) => {
    let clock = Date.now();
    const shared = new MemoryStore({ now: () => clock });
    const calls: PayInput[] = [];
    const msg = chat('ussd');
    // The old release's process sends the payment and dies before its answer.
    const dying = dyingStore(shared);
    const hanging = (input: PayInput) => (calls.push(input), new Promise<never>(() => {}));
    const old = engine(dying, OLD, 1, { now: () => clock, services: { createPayment: hanging } });
    engines.pop(); // never drained: its call never returns
    await old.handle(msg({ newSession: true, start: 'pay' }));
    await old.handle(msg({ text: '100' }));
    const answering = old.handle(msg({ choice: 'yes' }));
    await until('the payment call', () => calls.length === 1);
    clock += 60;
    expect((await answering).text).toMatch(/being confirmed/);
    dying.die();
    void old.stop();
    clock += 300;
    // The new release takes the run over while nobody waits, and makes the call again.
    const next = engine(shared, NEW, 2, {
      now: () => clock,
      services: { createPayment: async (input) => (calls.push(input), service) },
    });
    await until('the run over', async () => (await recordOf(shared, msg)).run === undefined);
    expect(calls.map((c) => c.duplicateCheckKey)).toEqual([calls[0]!.duplicateCheckKey, calls[0]!.duplicateCheckKey]);
    // The next dial: the outcome first (the note is shortened whole to the room a dial leaves), above the menu.
    const dial = await next.handle(msg({ newSession: true }));
    expect(dial.text.split('\n').slice(0, 2)).toEqual(['Update on your last request:', note]);
  });

  it("names the payment's short ref on the next release while the old one still waits for the service", async () => {
    const shared = new MemoryStore();
    const calls: PayInput[] = [];
    const hanging = vi.fn((input: PayInput) => (calls.push(input), new Promise<never>(() => {})));
    const shortRefOf = async (ref: string) => (ref === calls[0]?.duplicateCheckKey ? 'MC-7K2QX' : undefined);
    const msg = chat();
    // The old release holds its lease for the whole test: a slow machine's pause longer than the tests' 300 ms lease
    // would let the next release take the run over, with a call that never returns either, and never stop.
    const held = { runLeaseMs: 60_000 };
    const old = engine(shared, OLD, 1, { services: { createPayment: hanging }, shortRefOf, ...held });
    engines.pop(); // never drained: its call never returns
    await old.handle(msg({ start: 'pay' }));
    await old.handle(msg({ text: '100' }));
    void old.handle(msg({ choice: 'yes' }));
    await until('the payment call', () => calls.length === 1);
    // The person writes again and a process of the next release, which has no `paying`, answers.
    const next = engine(shared, NEW, 2, { services: { createPayment: hanging }, shortRefOf, ...held });
    const answer = await next.handle(msg({ text: 'hi' }));
    expect(answer.text).toMatch(/being confirmed/);
    expect(answer.text).toContain('MC-7K2QX');
    void old.stop();
  });

  it('by a later build, taken over by an earlier one: finishes there too, never restarted', async () => {
    let clock = Date.now();
    const shared = new MemoryStore({ now: () => clock });
    const calls: PayInput[] = [];
    const msg = chat();
    const dying = dyingStore(shared);
    const hanging = (input: PayInput) => (calls.push(input), new Promise<never>(() => {}));
    const next = engine(dying, NEW, 2, { now: () => clock, services: { createPayment: hanging } });
    engines.pop();
    await next.handle(msg({ start: 'pay' }));
    await next.handle(msg({ text: '100' }));
    const answering = next.handle(msg({ choice: 'yes' }));
    await until('the payment call', () => calls.length === 1);
    clock += 60;
    await answering;
    dying.die();
    void next.stop();
    clock += 300;
    const told: Prompt[] = [];
    engine(shared, OLD, 1, {
      now: () => clock,
      services: {
        createPayment: async (input) => (calls.push(input), { kind: 'alreadySubmitted' }),
      },
      onLateOutcome: (_address, prompt) => void told.push(prompt),
    });
    await until('the outcome told', () => told.length > 0);
    // A 409 on our own key: the service holds the key, which does not prove it made the payment.
    expect(told[0]!.text).toMatch(/being confirmed/);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.duplicateCheckKey).toBe(calls[0]!.duplicateCheckKey);
  });
});
