/**
 * A tiny payment-like flow and a note-taking flow for the engine tests, so they do not depend on the real
 * flows; fake services with a gate the test opens; a store wrapper that makes racing reads meet.
 */
import { assign, setup } from 'xstate';
import { serviceActors } from '../../flows/actors.js';
import { isAlreadySubmitted, type Created, type FlowCalls, type PaymentResult } from '../../flows/calls.js';
import type { FlowEvent, FlowInput, FlowModule } from '../../flows/types.js';
import type { LeaseChange, Store } from '../../src/store/types.js';

type PayInput = Parameters<FlowCalls['createPayment']>[0];

const payMachine = setup({
  types: {
    context: {} as {
      runId: string;
      chat: string;
      requirePin: boolean;
      amount?: string;
      paymentId?: string;
      error?: string;
    },
    input: {} as FlowInput,
    events: {} as FlowEvent,
  },
  actors: { createPayment: serviceActors.createPayment },
}).createMachine({
  id: 'pay',
  context: ({ input }) => ({ runId: input.runId, chat: input.chat, requirePin: input.requirePin }),
  initial: 'askAmount',
  states: {
    askAmount: {
      meta: {
        view: (c: { chat: string; requirePin: boolean; error?: string }) => ({
          text: { key: 'pay.askAmount', params: { chat: c.chat, pin: String(c.requirePin) } },
          ...(c.error ? { error: { key: c.error } } : {}),
          input: 'amount',
        }),
      },
      on: {
        ANSWERED: [
          {
            guard: ({ event }) => /^\d+$/.test(event.value),
            target: 'confirm',
            actions: assign({ amount: ({ event }) => event.value, error: undefined }),
          },
          { actions: assign({ error: 'pay.badAmount' }) },
        ],
      },
    },
    confirm: {
      meta: {
        view: (c: { amount: string }) => ({
          text: { key: 'pay.confirm', params: { amount: c.amount } },
          choices: [{ id: 'yes', text: { key: 'common.yes' } }],
        }),
      },
      on: { CHOSEN: { target: 'paying' }, BACK: 'askAmount' },
    },
    paying: {
      invoke: {
        src: 'createPayment',
        input: ({ context }): PayInput => ({
          duplicateCheckKey: `${context.runId}:pay`,
          paymentType: 'money',
          phonenumber: '+256772123456',
          amount: context.amount ?? '0',
          currency: 'UGX',
          description: 'test',
          metadata: { chat: context.chat },
        }),
        onDone: [
          { guard: ({ event }) => isAlreadySubmitted(event.output), target: 'already' },
          { target: 'sent', actions: assign({ paymentId: ({ event }) => (event.output as PaymentResult).id }) },
        ],
        onError: 'failed',
      },
      tags: ['busy', 'money'],
    },
    sent: {
      type: 'final',
      meta: { view: (c: { paymentId: string }) => ({ text: { key: 'pay.sent', params: { id: c.paymentId } } }) },
    },
    already: { type: 'final', meta: { view: () => ({ text: { key: 'pay.already' } }) } },
    failed: { type: 'final', meta: { view: () => ({ text: { key: 'pay.failed' } }) } },
  },
});

export const testPayFlow: FlowModule = {
  id: 'pay',
  machine: payMachine,
  messages: {
    en: {
      'pay.askAmount': 'Amount? ({chat}, pin {pin})',
      'pay.badAmount': 'Digits only.',
      'pay.confirm': 'Send {amount}?',
      'pay.sent': 'Sent {id}',
      'pay.already': 'Sent earlier',
      'pay.failed': 'Not sent',
    },
    sw: {
      'pay.askAmount': 'Kiasi? ({chat}, pin {pin})',
      'pay.badAmount': 'Tarakimu tu.',
      'pay.confirm': 'Tuma {amount}?',
      'pay.sent': 'Imetumwa {id}',
      'pay.already': 'Ilitumwa awali',
      'pay.failed': 'Haikutumwa',
    },
  },
};

const notesMachine = setup({ types: { context: {} as { notes: string[] }, events: {} as FlowEvent } }).createMachine({
  id: 'request',
  context: { notes: [] },
  initial: 'collecting',
  states: {
    collecting: {
      meta: {
        view: (c: { notes: string[] }) => ({
          text: { key: 'request.notes', params: { notes: c.notes.join(',') } },
          input: 'text',
        }),
      },
      on: { ANSWERED: { actions: assign({ notes: ({ context, event }) => [...context.notes, event.value] }) } },
    },
  },
});

export const testNotesFlow: FlowModule = {
  id: 'request',
  machine: notesMachine,
  messages: { en: { 'request.notes': 'Notes: {notes}' }, sw: { 'request.notes': 'Maelezo: {notes}' } },
};

/** A promise the test resolves. */
export function gate<T>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** createPayment that records each call and answers with the gate's promise (or at once). */
export function fakePayments(answer?: Promise<Created<PaymentResult>>) {
  const calls: PayInput[] = [];
  const services: Partial<FlowCalls> = {
    async createPayment(input) {
      calls.push(input);
      return answer ?? { id: 'pay-1', state: 'submitted' };
    },
  };
  return { calls, services };
}

/**
 * A payments service shared by several engines ("processes"), deduplicating by Duplicate-Check-Key as the real
 * one does: the first call under a key makes a payment (answered when `answer` resolves, at once without one),
 * a repeat is AlreadySubmitted. `calls` lists every call, `payments` the keys of payments made.
 */
export function paymentsService(answer?: () => Promise<void>) {
  const calls: PayInput[] = [];
  const payments: string[] = [];
  const services: Partial<FlowCalls> = {
    async createPayment(input) {
      calls.push(input);
      if (payments.includes(input.duplicateCheckKey)) return { kind: 'alreadySubmitted' };
      payments.push(input.duplicateCheckKey);
      await answer?.();
      return { id: `pay-${payments.length}`, state: 'new' };
    },
  };
  return { calls, payments, services };
}

/** `store` with some of its methods replaced by `overrides` (the others delegate to it). */
export function overriding<T extends object>(store: Store, overrides: T): Store & T {
  return new Proxy(overrides, {
    get: (target, name) =>
      name in target
        ? Reflect.get(target, name)
        : (Reflect.get(store, name) as (...args: unknown[]) => unknown)?.bind(store),
  }) as Store & T;
}

/**
 * Delegates to `store`. After `race(n)`, the next n uses of conversation keys wait for each other: a read
 * after reading, a compare-and-set before writing. The messages behind them then race on the same version,
 * whether they start from a read or from the record their engine kept in memory. Counts refused
 * compare-and-sets, and calls `onUse` after each read or write of a conversation key, saying which.
 */
export function racingStore(store: Store): Store & {
  conflicts: number;
  race(count: number): void;
  onUse: ((use: 'read' | 'write') => void) | undefined;
} {
  let waiting = 0;
  let met = gate<void>();
  const meet = async (key: string) => {
    if (!key.startsWith('conv:') || waiting === 0) return;
    const arrived = met.promise;
    waiting -= 1;
    if (waiting === 0) met.open();
    await arrived;
  };
  const wrapper = overriding(store, {
    conflicts: 0,
    onUse: undefined as ((use: 'read' | 'write') => void) | undefined,
    race(count: number) {
      waiting = count;
      met = gate<void>();
    },
    async get(key: string) {
      const value = await store.get(key);
      if (key.startsWith('conv:')) wrapper.onUse?.('read');
      await meet(key);
      return value;
    },
    // The engine reads a conversation with its profile and pending outcomes (the conversation first).
    async getMany(keys: string[]) {
      const values = await store.getMany(keys);
      if (keys[0]!.startsWith('conv:')) wrapper.onUse?.('read');
      await meet(keys[0]!);
      return values;
    },
    async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
      await meet(key);
      const version = await store.set(key, snapshot, expected, ttl, lease);
      if (version === null && key.startsWith('conv:')) wrapper.conflicts += 1;
      if (key.startsWith('conv:')) wrapper.onUse?.('write');
      return version;
    },
  });
  return wrapper;
}

/**
 * Delegates to `store`; `hold(which, until)` makes the next conversation write that `which` picks (by the
 * record it writes) wait for `until` before it goes to the store (a compare-and-set that is slow to land).
 */
export function holdingStore(
  store: Store,
): Store & { hold(which: (record: Record<string, unknown>) => boolean, until: Promise<void>): Promise<void> } {
  let held:
    { which: (record: Record<string, unknown>) => boolean; until: Promise<void>; reached: () => void } | undefined;
  return overriding(store, {
    /** Holds the next write `which` picks until `until`; resolves once that write is being held. */
    hold(which: (record: Record<string, unknown>) => boolean, until: Promise<void>): Promise<void> {
      return new Promise<void>((reached) => {
        held = { which, until, reached };
      });
    },
    async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
      if (held && key.startsWith('conv:') && held.which(snapshot as Record<string, unknown>)) {
        const { until, reached } = held;
        held = undefined;
        reached();
        await until;
      }
      return store.set(key, snapshot, expected, ttl, lease);
    },
  });
}

/**
 * Delegates to `store` until `die()`: from then on every command fails, as for a process that is gone (it
 * renews no lease and writes nothing more; what it had in flight never lands).
 */
export function dyingStore(store: Store): Store & { die(): void } {
  let dead = false;
  const gone = async () => {
    throw new Error('this process is gone');
  };
  return new Proxy(
    { die: () => void (dead = true) },
    {
      get: (target, name) => {
        if (name === 'die') return target.die;
        if (dead) return gone;
        return (Reflect.get(store, name) as (...args: unknown[]) => unknown)?.bind(store);
      },
    },
  ) as Store & { die(): void };
}
