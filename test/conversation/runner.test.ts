/**
 * One runner per conversation across processes (engines on one real Redis): the lease, the sweep that takes
 * over a run whose holder died, a run that lost the conversation stopping before its next call, and what
 * the user is told when Redis refuses the write after a payment was accepted. The waits between the takeovers
 * of a money run taken over more than five times run on engines sharing one MemoryStore on the test's clock.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { assign, setup } from 'xstate';
import { serviceActors } from '../../flows/actors.js';
import { menuFlow } from '../../flows/menu.machine.js';
import { isAlreadySubmitted, type FlowCalls, type PaymentResult } from '../../flows/calls.js';
import type { FlowEvent, FlowInput, FlowModule } from '../../flows/types.js';
import { createEngine, type ConversationEngine, type EngineOptions } from '../../src/conversation/engine/engine.js';
import { keys } from '../../src/store/keys.js';
import { deliveryId, WAITING, type ConversationRecord, type OpenRun } from '../../src/conversation/engine/ledger.js';
import { addPending } from '../../src/conversation/channels/ussd-inbox.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { NotCalled } from '../../src/conversation/flow/flow-runtime.js';
import type { Address, Channel, ConversationView, Inbound, Prompt } from '../../src/conversation/types.js';
import type { Lease, LeaseChange, Store } from '../../src/store/types.js';
import { createLogger } from '../../src/log.js';
import { dyingStore, gate, overriding, paymentsService } from './engine-fixtures.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';
import { until } from '../until.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

const prefix = uniquePrefix('runner');
const raw = inspector(prefix);
const stores: Store[] = [];
const engines: ConversationEngine[] = [];
/**
 * Each test is a deployment of its own (its own key prefix): the processes of one test sweep each other's
 * runs, never another test's.
 */
let deployment = '';
beforeEach(() => {
  deployment = `${prefix}${randomUUID().slice(0, 8)}:`;
});
function redisStore(): RedisStore {
  const store = new RedisStore({ url: REDIS_URL, keyPrefix: deployment });
  stores.push(store);
  return store;
}
afterAll(async () => {
  await Promise.all(engines.map((e) => e.stop()));
  await Promise.all(stores.map((s) => s.close()));
  await raw.cleanup();
});

/** The payment both test flows make. */
const paymentInput = ({ context }: { context: { input: FlowInput; key: string } }) => ({
  duplicateCheckKey: context.key,
  paymentType: 'money' as const,
  phonenumber: '+256772000001',
  amount: '100',
  currency: 'UGX',
  description: 'test',
  metadata: { chat: context.input.chat, ref: context.key },
});

/** Confirm, reserve the spend, pay: the chain a payment's confirmation runs. */
const payFlow: FlowModule = {
  id: 'pay',
  messages: {
    en: { 't.confirm': 'Pay 100?', 't.sent': 'Sent {id}', 't.already': 'Sent earlier', 't.failed': 'Not sent' },
    sw: {},
  },
  machine: setup({
    types: {
      context: {} as { input: FlowInput; key: string; id?: string },
      input: {} as FlowInput,
      events: {} as FlowEvent,
    },
    actors: { reserveSpend: serviceActors.reserveSpend, createPayment: serviceActors.createPayment },
  }).createMachine({
    context: ({ input }) => ({ input, key: `${input.runId}:pay` }),
    initial: 'confirming',
    states: {
      confirming: {
        meta: { view: () => ({ text: { key: 't.confirm' }, choices: [{ id: 'yes', label: 'Yes' }] }) },
        on: { CHOSEN: 'reserving' },
      },
      reserving: {
        tags: ['busy'],
        invoke: {
          src: 'reserveSpend',
          input: ({ context }) => ({
            channel: context.input.channel,
            userId: context.input.userId,
            flow: 'pay',
            amount: '100',
            currency: 'UGX',
            duplicateCheckKey: context.key,
          }),
          onDone: 'paying',
          onError: 'failed',
        },
      },
      paying: {
        tags: ['busy', 'money'],
        invoke: {
          src: 'createPayment',
          input: paymentInput,
          onDone: [
            { guard: ({ event }) => isAlreadySubmitted(event.output), target: 'already' },
            { target: 'sent', actions: assign({ id: ({ event }) => (event.output as PaymentResult).id }) },
          ],
          onError: 'failed',
        },
      },
      sent: {
        type: 'final',
        meta: { view: (c: { id?: string }) => ({ text: { key: 't.sent', params: { id: c.id ?? '' } } }) },
      },
      already: { type: 'final', meta: { view: () => ({ text: { key: 't.already' } }) } },
      failed: { type: 'final', meta: { view: () => ({ text: { key: 't.failed' } }) } },
    },
  }),
};

/** Asks for a PIN, checks it in a `secret` step (the check the test holds open), then pays. */
const pinChecks: Array<() => Promise<void>> = [];
const pinFlow: FlowModule = {
  id: 'pay',
  messages: { en: { 't.pin': 'PIN?', 't.sent': 'Sent {id}', 't.failed': 'Not sent' }, sw: {} },
  machine: setup({
    types: {
      context: {} as { input: FlowInput; key: string; id?: string },
      input: {} as FlowInput,
      events: {} as FlowEvent,
    },
    actors: {
      verifyPin: serviceActors.verifyPin,
      createPayment: serviceActors.createPayment,
    },
  }).createMachine({
    context: ({ input }) => ({ input, key: `${input.runId}:pay` }),
    initial: 'awaitingPin',
    states: {
      awaitingPin: { meta: { view: () => ({ text: { key: 't.pin' } }) }, on: { ANSWERED: 'verifyingPin' } },
      verifyingPin: {
        tags: ['busy', 'secret'],
        invoke: {
          src: 'verifyPin',
          input: ({ context, event }) => ({
            channel: context.input.channel,
            userId: context.input.userId,
            pin: (event as { value?: string }).value ?? '',
          }),
          onDone: 'paying',
          onError: 'failed',
        },
      },
      paying: {
        tags: ['busy', 'money'],
        invoke: {
          src: 'createPayment',
          input: paymentInput,
          onDone: { target: 'sent', actions: assign({ id: ({ event }) => (event.output as PaymentResult).id }) },
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

/** Asks whom to pay, looks it up (a busy step, the test's reserveSpend), then asks to confirm: a run ending at a question. */
const lookupFlow: FlowModule = {
  id: 'pay',
  messages: { en: { 't.whom': 'Whom?', 't.confirm': 'Pay them?' }, sw: {} },
  machine: setup({
    types: { context: {} as { input: FlowInput }, input: {} as FlowInput, events: {} as FlowEvent },
    actors: { reserveSpend: serviceActors.reserveSpend },
  }).createMachine({
    context: ({ input }) => ({ input }),
    initial: 'asking',
    states: {
      asking: { meta: { view: () => ({ text: { key: 't.whom' } }) }, on: { ANSWERED: 'looking' } },
      looking: {
        tags: ['busy'],
        invoke: {
          src: 'reserveSpend',
          input: ({ context }) => ({
            channel: context.input.channel,
            userId: context.input.userId,
            flow: 'pay',
            amount: '100',
            currency: 'UGX',
            duplicateCheckKey: `${context.input.runId}:look`,
          }),
          onDone: 'confirming',
          onError: 'confirming',
        },
      },
      confirming: { meta: { view: () => ({ text: { key: 't.confirm' } }) } },
    },
  }),
};

/**
 * Asks the amount, checks it (a busy step, the test's checkSpend), asks to confirm, then reserves the spend and
 * pays: the chat payment whose Confirm's run a failover can drop, the record back at the amount's run.
 */
const checkedPayFlow: FlowModule = {
  id: 'pay',
  messages: {
    en: { 't.amount': 'Amount?', 't.confirm': 'Pay 100?', 't.sent': 'Sent {id}', 't.failed': 'Not sent' },
    sw: {},
  },
  machine: setup({
    types: {
      context: {} as { input: FlowInput; key: string; id?: string },
      input: {} as FlowInput,
      events: {} as FlowEvent,
    },
    actors: {
      checkSpend: serviceActors.checkSpend,
      reserveSpend: serviceActors.reserveSpend,
      createPayment: serviceActors.createPayment,
    },
  }).createMachine({
    context: ({ input }) => ({ input, key: `${input.runId}:pay` }),
    initial: 'asking',
    states: {
      asking: { meta: { view: () => ({ text: { key: 't.amount' } }) }, on: { ANSWERED: 'checking' } },
      checking: {
        tags: ['busy'],
        invoke: {
          src: 'checkSpend',
          input: ({ context }) => ({
            channel: context.input.channel,
            userId: context.input.userId,
            flow: 'pay',
            amount: '100',
            currency: 'UGX',
            pin: false,
          }),
          onDone: 'confirming',
          onError: 'confirming',
        },
      },
      confirming: {
        meta: { view: () => ({ text: { key: 't.confirm' }, choices: [{ id: 'yes', label: 'Yes' }] }) },
        on: { CHOSEN: 'reserving' },
      },
      reserving: {
        tags: ['busy'],
        invoke: {
          src: 'reserveSpend',
          input: ({ context }) => ({
            channel: context.input.channel,
            userId: context.input.userId,
            flow: 'pay',
            amount: '100',
            currency: 'UGX',
            duplicateCheckKey: context.key,
          }),
          onDone: 'paying',
          onError: 'failed',
        },
      },
      paying: {
        tags: ['busy', 'money'],
        invoke: {
          src: 'createPayment',
          input: paymentInput,
          onDone: { target: 'sent', actions: assign({ id: ({ event }) => (event.output as PaymentResult).id }) },
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

/** Pays, then asks whether to pay another (a question after a money call). */
const payThenAskFlow: FlowModule = {
  id: 'pay',
  messages: { en: { 't.confirm': 'Pay 100?', 't.another': 'Paid. Pay another?' }, sw: {} },
  machine: setup({
    types: { context: {} as { input: FlowInput; key: string }, input: {} as FlowInput, events: {} as FlowEvent },
    actors: { createPayment: serviceActors.createPayment },
  }).createMachine({
    context: ({ input }) => ({ input, key: `${input.runId}:pay` }),
    initial: 'confirming',
    states: {
      confirming: {
        meta: { view: () => ({ text: { key: 't.confirm' }, choices: [{ id: 'yes', label: 'Yes' }] }) },
        on: { CHOSEN: 'paying' },
      },
      paying: {
        tags: ['busy', 'money'],
        invoke: { src: 'createPayment', input: paymentInput, onDone: 'another', onError: 'another' },
      },
      another: { meta: { view: () => ({ text: { key: 't.another' } }) }, on: { ANSWERED: 'confirming' } },
    },
  }),
};

const policy = new AccessPolicy({
  roles: { clerk: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '5000' } } },
  users: { telegram: { '*': { role: 'clerk' } }, ussd: { '*': { role: 'clerk' } }, slack: {} },
});

/**
 * A process: an engine on `store` with short leases and a quick sweep, so a dead holder is found in the test's
 * time (a lease of 1.5 s outlives the event-loop stalls of a loaded test machine). One that will "die"
 * (`live: false`) holds its leases 300 ms, the lapse the test waits for, and is not drained at the end: its
 * call out never returns. A live one's deadline, counted from a delivery's arrival, is 2 s: a loaded machine's
 * reads and writes before a quick run's outcome fit in it; a case about the deadline passing sets {@link SHORT}.
 * One that will die answers by {@link SHORT}, "processing" while its lease is still its own.
 */
/** The deadline of a case that waits for it to pass (fake time moved past it, or a call held beyond it). */
const SHORT = { ussd: 50, telegram: 50, slack: 50 };

function engine(
  store: Store,
  services: Partial<FlowCalls>,
  { live = true, ...changes }: Partial<EngineOptions> & { live?: boolean } = {},
): ConversationEngine {
  const e = createEngine({
    store,
    channels: channelCapabilities,
    services: {
      reserveSpend: async () => undefined,
      // pinFlow's check: each waits on the next of pinChecks, if any.
      verifyPin: () => (pinChecks.shift() ?? (() => Promise.resolve()))(),
      ...services,
    },
    policy,
    flows: { menu: menuFlow, pay: payFlow },
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: live ? { ussd: 2000, telegram: 2000, slack: 2000 } : SHORT,
    runLeaseMs: live ? 1500 : 300,
    sweepEveryMs: 50,
    logger: createLogger(process.env.RUNNER_LOG ? 'debug' : 'silent'),
    ...changes,
  });
  if (live) engines.push(e);
  return e;
}

let ids = 0;
function chat() {
  const conversationId = `chat-${process.pid}-${++ids}`;
  return (fields: Partial<Inbound> = {}): Inbound => ({
    channel: 'telegram',
    conversationId,
    userId: 'u1',
    messageId: `m-${++ids}`,
    ...fields,
  });
}

/** Deliveries of one USSD caller, a number of its own. */
function ussd() {
  const phone = `+2567720${String(++ids).padStart(5, '0')}`;
  return (fields: Partial<Inbound> = {}): Inbound => ({
    channel: 'ussd',
    conversationId: phone,
    userId: phone,
    messageId: `m-${++ids}`,
    ...fields,
  });
}

/** `store` whose conversation writes fail while `refusing` (Redis refusing writes for a moment). */
function refusingWrites(store: Store): Store & { refusing: boolean } {
  const wrapper = overriding(store, {
    refusing: false,
    async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
      if (wrapper.refusing && key.startsWith('conv:'))
        throw new Error("READONLY You can't write against a read only replica.");
      return store.set(key, snapshot, expected, ttl, lease);
    },
  });
  return wrapper;
}

const PROCESSING = 'We are still working on it. You will be notified of the result.';
const CONFIRMING =
  'We are still working on it: it is being confirmed. Do not send it again; you will be notified of the result.';

/**
 * A PIN check opened past its deadline has answered, and every run of `engines` has settled. The turn stopped
 * waiting for the check at the deadline, so its answer reaches nothing; a run it started by mistake is one
 * drain() waits for, and the test's next assertions see.
 */
async function lateCheckAnswered(checking: Promise<void>, ...engines: Array<{ drain(): Promise<void> }>) {
  await checking;
  await Promise.all(engines.map((e) => e.drain()));
}

/**
 * Fake timers and Date for the engines made after it (vitest's fake timers; the engine's clock is Date.now):
 * their deadlines, lease renewals and sweeps move only when the test moves time, so an answer at a deadline
 * never races the run's own progress on a loaded machine. Redis keeps its own clock (leases lapse in real time).
 */
function fakeTime(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
}
afterEach(() => {
  vi.useRealTimers();
});

/**
 * Nothing left for a sweep to take over: the conversation holds no run lease and is not in the index of open
 * runs (what a sweep reads), so no process will ever run it.
 */
async function nothingToTakeOver(key: string): Promise<void> {
  expect(await raw.redis.exists(`${deployment}${keys.runLease(key)}`)).toBe(0);
  expect(await raw.redis.zscore(`${deployment}${keys.openRuns(key)}`, key)).toBeNull();
}

/** The pace of {@link until} here: the runs' small steps (Redis answering, its leases lapsing), within 20 s. */
const PACE = { timeoutMs: 20_000, everyMs: 10 };

/**
 * A probe of `check` for {@link until}: under {@link fakeTime} fake time moves 10 ms along with each real pause,
 * unless `frozen` (the run must get there before any deadline).
 */
function advancing(check: () => boolean | Promise<boolean>, { frozen = false } = {}): () => Promise<boolean> {
  return async () => {
    if (await check()) return true;
    if (vi.isFakeTimers() && !frozen) await vi.advanceTimersByTimeAsync(10);
    return false;
  };
}

/**
 * A Redis store whose conversation writes, while `stalling`, land 5 s after they were sent (Redis stalled in a
 * master fault: past any channel's deadline), on the clock `now` the engine is given.
 */
function stallingStore() {
  let clock = Date.now();
  const base = redisStore();
  const stalls = {
    stalling: false,
    now: () => clock,
    store: overriding(base, {
      async set(...args: Parameters<Store['set']>) {
        const written = await base.set(...args);
        if (stalls.stalling && args[0].startsWith('conv:')) clock += 5_000;
        return written;
      },
    }),
  };
  return stalls;
}

describe('one runner per conversation', () => {
  it('a holder that dies before its payment call is taken over by another process’s sweep, without a message from the user: one payment call in all', async () => {
    const service = paymentsService();
    const reserving = gate<void>();
    const dies = dyingStore(redisStore());
    const first = engine(dies, { ...service.services, reserveSpend: () => reserving.promise }, { live: false }); // hangs in the spend reservation
    const told: Array<{ address: Address; prompt: Prompt }> = [];
    // The other process: its sweep takes the run over.
    engine(redisStore(), service.services, { onLateOutcome: (address, prompt) => void told.push({ address, prompt }) });
    const msg = chat();
    await first.handle(msg({ start: 'pay' }));
    expect((await first.handle(msg({ choice: 'yes' }))).text).toBe(
      'We are still working on it. You will be notified of the result.',
    );
    expect(service.calls).toHaveLength(0);
    dies.die(); // stopped without cleanup: its lease is left to expire
    let stopped = false; // its sweep ends now; its drain waits for what it has in flight
    void first.stop().then(() => void (stopped = true));
    await until(
      'the outcome told by the other process',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told).toEqual([
      {
        address: { channel: 'telegram', conversationId: msg().conversationId },
        prompt: { text: 'Sent pay-1', final: true, money: true },
      },
    ]);
    expect(service.calls).toHaveLength(1);
    expect(service.payments).toHaveLength(1);
    reserving.open(); // the dead process's call "returns": it writes nothing and calls nothing more
    await until('the dead process drained', () => stopped, PACE);
    expect(service.calls).toHaveLength(1);
    // The index of open runs is left empty.
    expect(
      await raw.redis.zscore(`${deployment}${keys.openRuns(keys.conversation(msg()))}`, keys.conversation(msg())),
    ).toBeNull();
  });

  it('a sweep whose other parts fail (their slots moving on a cluster) still takes over the run of the part that answers', async () => {
    const service = paymentsService();
    const reserving = gate<void>();
    const dies = dyingStore(redisStore());
    const first = engine(dies, { ...service.services, reserveSpend: () => reserving.promise }, { live: false });
    const msg = chat();
    const part = keys.openRuns(keys.conversation(msg()));
    const store = redisStore();
    const moving = new Proxy(store, {
      get: (target, name) =>
        name === 'expiredLeases'
          ? async (index: string, limit: number) => {
              if (index !== part) throw new Error('MOVED 4442 127.0.0.1:7091');
              return target.expiredLeases(index, limit);
            }
          : (Reflect.get(target, name) as (...args: unknown[]) => unknown)?.bind(target),
    });
    const told: Prompt[] = [];
    engine(moving, service.services, { onLateOutcome: (_address, prompt) => void told.push(prompt) });
    await first.handle(msg({ start: 'pay' }));
    await first.handle(msg({ choice: 'yes' }));
    dies.die();
    void first.stop();
    await until(
      'the outcome told by the process whose sweep partly fails',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told).toEqual([{ text: 'Sent pay-1', final: true, money: true }]);
    expect(service.payments).toHaveLength(1);
    reserving.open();
  });

  it('a holder that dies while its payment call is out: the sweep repeats it under the same key, the service makes one payment, the chat is told', async () => {
    const never = new Promise<void>(() => {});
    let firstCall = true;
    const service = paymentsService(() => (firstCall ? ((firstCall = false), never) : Promise.resolve()));
    const dies = dyingStore(redisStore());
    const first = engine(dies, service.services, { live: false });
    const told: Prompt[] = [];
    engine(redisStore(), service.services, { onLateOutcome: (_address, prompt) => void told.push(prompt) });
    const msg = chat();
    await first.handle(msg({ start: 'pay' }));
    await first.handle(msg({ choice: 'yes' }));
    await until(
      'the payment call',
      advancing(() => service.calls.length === 1),
      PACE,
    );
    dies.die();
    void first.stop();
    await until(
      'the outcome told by the other process',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told.map((p) => p.text)).toEqual(['Sent earlier']);
    expect(service.calls).toHaveLength(2);
    expect(new Set(service.calls.map((c) => c.duplicateCheckKey)).size).toBe(1);
    expect(service.payments).toHaveLength(1);
  });

  it('a run that lost the conversation to another (its lease lapsed) stops before its next service call', async () => {
    const service = paymentsService();
    const reserving = gate<void>();
    // The first process takes the run's lease, then stalls in the reservation and cannot renew it (but is alive).
    const base = redisStore();
    let leases = 0;
    const stalled = overriding(redisStore(), {
      renewLease: (lease: Lease, token: string, ttlMs: number) =>
        ++leases === 1 ? base.renewLease(lease, token, ttlMs) : Promise.resolve(false),
    });
    const first = engine(
      stalled,
      { ...service.services, reserveSpend: () => reserving.promise },
      { sweepEveryMs: 60_000, runLeaseMs: 300, deadlineMs: SHORT },
    );
    const msg = chat();
    const key = keys.conversation(msg());
    await first.handle(msg({ start: 'pay' }));
    const confirmed = first.handle(msg({ choice: 'yes' }));
    // Its lease expires: another process's sweep takes the run over and finishes it.
    const told: Prompt[] = [];
    engine(base, service.services, { onLateOutcome: (_address, prompt) => void told.push(prompt) });
    await until(
      'the run finished by the other process',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told.map((p) => p.text)).toEqual(['Sent pay-1']);
    reserving.open(); // the stalled run's reservation returns: it finds the conversation moved on
    expect((await confirmed).text).toMatch(/still working on it/);
    await first.drain();
    expect(service.calls).toHaveLength(1);
    expect(((await base.get(key))?.snapshot as { run?: unknown }).run).toBeUndefined();
  });

  it('a slow holder whose renewals land after the taker finished and released the lease takes nothing: the next step runs, never "too many messages at once"', async () => {
    const service = paymentsService();
    const reserving = gate<void>();
    const renewing = gate<void>();
    // Let go however the test ends: a run left out would keep the file's engines from stopping.
    onTestFinished(() => {
      renewing.open();
      reserving.open();
    });
    // The first process: stalled in the reservation, its lease renewals held on their way to Redis (slow, not
    // dead), then let through late, each sent to the store as it was asked.
    const base = redisStore();
    let asked = 0;
    let landed = 0;
    const renewal =
      <A extends unknown[]>(send: (...args: A) => Promise<boolean>) =>
      async (...args: A) => {
        asked += 1;
        await renewing.promise;
        const held = await send(...args);
        landed += 1;
        return held;
      };
    const slow = overriding(base, {
      lease: renewal((...args: Parameters<Store['lease']>) => base.lease(...args)),
      renewLease: renewal((...args: Parameters<Store['renewLease']>) => base.renewLease(...args)),
    });
    const first = engine(
      slow,
      { ...service.services, reserveSpend: () => reserving.promise },
      { sweepEveryMs: 60_000, runLeaseMs: 300, deadlineMs: SHORT },
    );
    const msg = chat();
    const key = keys.conversation(msg());
    await first.handle(msg({ start: 'pay' }));
    const confirmed = first.handle(msg({ choice: 'yes' }));
    // Its lease lapses: another process's sweep takes the run over, finishes it and releases the lease.
    const told: Prompt[] = [];
    const second = engine(base, service.services, {
      deadlineMs: { ussd: 10_000, telegram: 10_000, slack: 10_000 },
      onLateOutcome: (_address, prompt) => void told.push(prompt),
    });
    await until('the run finished by the other process', () => told.length > 0, PACE);
    expect(told.map((p) => p.text)).toEqual(['Sent pay-1']);
    await nothingToTakeOver(key);
    // The slow holder's renewals land now (its run still out): they find the lease free and leave it so.
    const late = asked;
    expect(late).toBeGreaterThan(0);
    renewing.open();
    await until('the late renewals landed', () => landed >= late, PACE);
    await nothingToTakeOver(key);
    // The person's next step starts a run at once.
    expect((await second.handle(msg({ start: 'pay' }))).text).toBe('Pay 100?');
    expect((await second.handle(msg({ choice: 'yes' }))).text).toBe('Sent pay-2');
    reserving.open(); // the stalled run's reservation returns: it finds the conversation moved on
    expect((await confirmed).text).toMatch(/still working on it/);
    await first.drain();
    expect(service.payments).toHaveLength(2);
  });
});

describe('after money was sent, never "start again"', () => {
  it('a payment step whose call could not be made (our store refused the intent: NotCalled) is not ended as a failure: "being confirmed", then repeated under the same key', async () => {
    const service = paymentsService();
    let refuse = true;
    const told: Prompt[] = [];
    fakeTime();
    const e = engine(
      redisStore(),
      {
        ...service.services,
        async createPayment(input) {
          if (refuse) {
            refuse = false;
            throw new NotCalled('the intent could not be recorded');
          }
          return service.services.createPayment!(input);
        },
        // The deadline passes (fake time) once the run has made the payment's call: the answer is the deadline's,
        // "being confirmed", never "still working on it" from a run not there yet.
      },
      {
        deadlineMs: { ussd: 1000, telegram: 1000, slack: 1000 },
        onLateOutcome: (_a, prompt) => void told.push(prompt),
      },
    );
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    const answering = e.handle(msg({ choice: 'yes' }));
    await until(
      'the payment call our store refused',
      advancing(() => !refuse, { frozen: true }),
      PACE,
    );
    await vi.advanceTimersByTimeAsync(1000);
    const answer = await answering;
    expect(answer.text).toBe(CONFIRMING);
    await until(
      'the step repeated once its lease expired',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told.map((p) => p.text)).toEqual(['Sent pay-1']);
    expect(service.payments).toHaveLength(1);
  });

  it('USSD: the outcome of a money call is also kept for the next dial (its answer may never have reached the phone), under the note header', async () => {
    const service = paymentsService();
    const e = engine(redisStore(), service.services, { deadlineMs: { ussd: 10_000, telegram: 50, slack: 50 } });
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    const answer = await e.handle(msg({ choice: 'yes' }));
    expect(answer).toMatchObject({ text: 'Sent pay-1', final: true, money: true });
    // The answer is lost on its way (the process dies after writing it, the network drops it): the next dial says it.
    const next = await e.handle(msg({ newSession: true }));
    expect(next.text.split('\n').slice(0, 2)).toEqual(['Update on your last request:', 'Sent pay-1']);
    // Shown at two dials (the answer to the first may be lost too), then no more.
    expect((await e.handle(msg({ newSession: true }))).text).toMatch(/Sent pay-1/);
    expect((await e.handle(msg({ newSession: true }))).text).not.toMatch(/Sent pay-1/);
  });

  it('a money run taken over ten times (each holder dying with its payment call out; past five, each after a longer wait) is left, its flow ended "being confirmed": the next dial shows the outcome the notification left, never "being confirmed" for ever', async () => {
    const calls: unknown[] = [];
    const hangs: Partial<FlowCalls> = { createPayment: (input) => (calls.push(input), new Promise(() => {})) };
    const phone = `+2567721${String(++ids).padStart(5, '0')}`;
    const address: Address = { channel: 'ussd', conversationId: phone };
    const msg = (fields: Partial<Inbound>): Inbound => ({
      ...address,
      userId: phone,
      messageId: `m-${++ids}`,
      ...fields,
    });
    const key = keys.conversation(msg({}));
    fakeTime();
    const process = () => {
      const store = dyingStore(redisStore());
      // 250 ms (fake) to answer, passed once the run made the payment's call, inside the 300 ms lease.
      return {
        store,
        engine: engine(store, hangs, {
          live: false,
          runLeaseMs: 300,
          deadlineMs: { ussd: 250, telegram: 250, slack: 250 },
        }),
      };
    };
    let holder = process();
    await holder.engine.handle(msg({ start: 'pay', newSession: true }));
    const answering = holder.engine.handle(msg({ choice: 'yes' }));
    await until(
      'the payment call',
      advancing(() => calls.length === 1, { frozen: true }),
      PACE,
    );
    await vi.advanceTimersByTimeAsync(250);
    expect((await answering).text).toBe(CONFIRMING);
    const index = `${deployment}${keys.openRuns(key)}`;
    const lease = `${deployment}${keys.runLease(key)}`;
    const run = async () =>
      ((await redisStore().get(key))?.snapshot as { run: { id: string; takeovers?: number } }).run;
    // The first holder and ten takers-over each die with the call out (under the same key every time). Past five
    // takeovers, the next waits 5 s after the last, then 10, 20, 30 and 30 s: the clock is moved on by that
    // before the next process starts, its sweep finding the run due once the lease lapses (in Redis' time).
    const waits = [5_000, 10_000, 20_000, 30_000, 30_000];
    for (let call = 1; call <= 11; call++) {
      await until(
        `payment call ${call}`,
        advancing(() => calls.length === call),
        PACE,
      );
      holder.store.die();
      void holder.engine.stop();
      const wait = waits[call - 6];
      if (call === 6) {
        // Not moved on the first time: the next process finds the run taken over five times not due yet. It is
        // neither taken over nor unlisted: its lease is taken again under the dead holder's run id for the 5 s
        // (a holder's own lease lasts 300 ms), and it is listed with that expiry, so no sweep looks at it before.
        const dead = (await run()).id;
        holder = process();
        await until(
          'the run not yet due, its lease kept',
          advancing(async () => (await raw.redis.pttl(lease)) > 1_000),
          PACE,
        );
        expect(await raw.redis.get(lease)).toBe(dead);
        const [seconds] = await raw.redis.time();
        expect(Number(await raw.redis.zscore(index, key))).toBeGreaterThan((Number(seconds) + 1) * 1_000);
        expect(calls).toHaveLength(6);
        expect(await run()).toMatchObject({ id: dead, takeovers: 5 });
        // The wait passes: on the engines' clock, and in Redis' (the kept lease lapsing, its index entry due).
        vi.setSystemTime(Date.now() + wait!);
        await raw.redis.del(lease);
        await raw.redis.zadd(index, 0, key);
        continue;
      }
      if (wait !== undefined) vi.setSystemTime(Date.now() + wait);
      holder = process();
    }
    // The next process's sweep leaves the run: no run recorded, nothing left listed, no twelfth call.
    const last = holder.engine;
    engines.push(last);
    await until(
      'the run left',
      advancing(async () => (await raw.redis.zscore(`${deployment}${keys.openRuns(key)}`, key)) === null),
      PACE,
    );
    const stored = (await redisStore().get(key))?.snapshot as { run?: unknown; session?: { ended?: boolean } };
    expect(stored.run).toBeUndefined();
    expect(stored.session?.ended).toBe(true);
    expect(calls).toHaveLength(11);
    expect(new Set(calls.map((c) => (c as { duplicateCheckKey: string }).duplicateCheckKey)).size).toBe(1);
    // The webhook's outcome, kept for the next dial (as the notifier keeps it), is what that dial shows.
    await addPending(redisStore(), address, 'Done: 100 UGX reached +256772000001 (payment 7).');
    const dial = await last.handle(msg({ newSession: true }));
    expect(dial.text.split('\n').slice(0, 2)).toEqual([
      'Update on your last request:',
      'Done: 100 UGX reached +256772000001 (payment 7).',
    ]);
    expect(dial.text).not.toContain(CONFIRMING);
    expect(dial.final).not.toBe(true);
  });

  it('USSD: a money outcome whose keeping for the next dial fails at first (Redis refusing a moment) is kept all the same', async () => {
    const service = paymentsService();
    const base = redisStore();
    let refusals = 2;
    const store = overriding(base, {
      async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
        if (key.startsWith('pending:') && refusals > 0) {
          refusals -= 1;
          throw new Error("OOM command not allowed when used memory > 'maxmemory'.");
        }
        return base.set(key, snapshot, expected, ttl, lease);
      },
    });
    const e = engine(store, service.services, { deadlineMs: { ussd: 10_000, telegram: 50, slack: 50 } });
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe('Sent pay-1');
    expect(refusals).toBe(0);
    // The answer is lost on its way: the next dial says it, once.
    const next = await e.handle(msg({ newSession: true }));
    expect(next.text.split('\n').slice(0, 2)).toEqual(['Update on your last request:', 'Sent pay-1']);
    expect(next.text.split('\n').filter((line) => line === 'Sent pay-1')).toHaveLength(1);
  });

  it('a message failing (Redis refusing writes) after a payment was answered is never told to start again', async () => {
    const service = paymentsService();
    const flaky = refusingWrites(redisStore());
    const e = engine(flaky, service.services, { deadlineMs: { ussd: 10_000, telegram: 10_000, slack: 10_000 } });
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe('Sent pay-1');
    flaky.refusing = true;
    const failed = await e.handle(msg({ text: 'did it go?' }));
    expect(failed.text).toBe(
      'We cannot reach your conversation right now. Please try again in a minute; nothing you confirmed is lost.',
    );
    flaky.refusing = false;
    expect(service.payments).toHaveLength(1);
  });

  it('a run that fails before any money call, after its waiter was told "you will be notified": the failure is told', async () => {
    const service = paymentsService();
    let refuse!: (error: Error) => void;
    const reserving = new Promise<void>((_resolve, reject) => (refuse = reject));
    const told: Prompt[] = [];
    const e = engine(
      redisStore(),
      { ...service.services, reserveSpend: () => reserving },
      { onLateOutcome: (_a, prompt) => void told.push(prompt) },
    );
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe(
      'We are still working on it. You will be notified of the result.',
    );
    refuse(new NotCalled('our store refused'));
    await until(
      'the failure told',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told).toEqual([
      { text: 'Nothing was sent: something went wrong on our side. Please start again.', final: true },
    ]);
    expect(service.calls).toHaveLength(0);
  });

  it('the write that started a run lost after it was acknowledged (a failover dropping it): the run stops before its payment call, and the user told "still working on it" is told plainly that nothing was sent', async () => {
    const service = paymentsService();
    const reserving = gate<void>();
    const told: Prompt[] = [];
    const store = redisStore();
    const reserved: string[] = [];
    const e = engine(
      store,
      {
        ...service.services,
        // The spend really reserved (as the product's services do), then held until the record is put back.
        reserveSpend: async (input) => {
          await policy.reserveSpend(store, { ...input, channel: input.channel as Channel });
          reserved.push(input.duplicateCheckKey);
          await reserving.promise;
        },
      },
      { onLateOutcome: (_a, prompt) => void told.push(prompt) },
    );
    const msg = chat();
    const key = keys.conversation(msg());
    await e.handle(msg({ start: 'pay' }));
    const before = (await store.get(key))!;
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe(
      'We are still working on it. You will be notified of the result.',
    );
    // The old master's last writes are gone: the record is as it was before the run started (no run in it).
    const now = (await store.get(key))!;
    expect((now.snapshot as { run?: unknown }).run).toBeDefined();
    expect(await store.set(key, before.snapshot, now.version, 600)).not.toBeNull();
    reserving.open();
    await until(
      'the user told',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told).toEqual([
      { text: 'Nothing was sent: something went wrong on our side. Please start again.', final: true },
    ]);
    await e.drain();
    expect(service.calls).toHaveLength(0);
    // Its reservation was given back already (a second give-back finds nothing): the day's total is whole.
    expect(reserved).toHaveLength(1);
    expect(await policy.giveBackSpend(store, reserved[0]!)).toBe(false);
  });

  it("on Sentinel, the state of a payment call is held by a replica before the call: a failover dropping the run's start before the wait, the run calls nothing and tells that nothing was sent; held, it pays once", async () => {
    const service = paymentsService();
    const told: Prompt[] = [];
    const plain = redisStore();
    let before: unknown;
    const waits: string[] = [];
    // The wait is answered on a connection made anew after a failover (so it proves nothing), and the old
    // master's last writes are gone: the record is back as it was before the run.
    const store = overriding(plain, {
      replicated: async () => {
        const now = (await plain.get(key))!;
        waits.push((now.snapshot as { run?: unknown }).run ? 'run' : 'none');
        // Put back whatever another write of this conversation (the delivery's answer past its deadline, on a
        // loaded machine) made meanwhile: the failover drops them all.
        for (let current = now; before !== undefined; current = (await plain.get(key))!) {
          if ((await plain.set(key, before, current.version, 600)) !== null) break;
        }
        return true;
      },
    });
    const e = engine(store, service.services, { onLateOutcome: (_a, prompt) => void told.push(prompt) });
    const msg = chat();
    let key = keys.conversation(msg());
    await e.handle(msg({ start: 'pay' }));
    before = (await plain.get(key))!.snapshot;
    await e.handle(msg({ choice: 'yes' }));
    await until(
      'the user told',
      advancing(() => told.length > 0),
      PACE,
    );
    await e.drain();
    expect(waits).toEqual(['run']);
    expect(told).toEqual([
      { text: 'Nothing was sent: something went wrong on our side. Please start again.', final: true },
    ]);
    expect(service.calls).toHaveLength(0);

    // Held (no failover): the call is made, once.
    before = undefined;
    const other = chat();
    key = keys.conversation(other());
    await e.handle(other({ start: 'pay' }));
    await e.handle(other({ choice: 'yes' }));
    await e.drain();
    expect(service.calls).toHaveLength(1);
  });

  it("on Sentinel, a failover putting the record back to an earlier run's (an older version): the run calls nothing and tells that nothing was sent", async () => {
    const service = paymentsService();
    const told: Prompt[] = [];
    const plain = redisStore();
    const msg = chat();
    const key = keys.conversation(msg());
    // The old master's last writes are gone: the record is an older one, with another run's id in it.
    const store = overriding(plain, {
      replicated: async () => {
        const now = (await plain.get(key))!;
        const older = { ...(now.snapshot as object), run: { id: 'an-earlier-run' } };
        // A fresh write's version is a random step from nothing: written again until it is older than the run's
        // last write, as the record a failover leaves always is (one history, versions only grow).
        for (let tries = 0; tries < 100; tries++) {
          await plain.delete(key);
          if ((await plain.set(key, older, null, 600))! < now.version) break;
        }
        return true;
      },
    });
    const e = engine(store, service.services, { onLateOutcome: (_a, prompt) => void told.push(prompt) });
    await e.handle(msg({ start: 'pay' }));
    await e.handle(msg({ choice: 'yes' }));
    await until(
      'the user told',
      advancing(() => told.length > 0),
      PACE,
    );
    await e.drain();
    expect(told).toEqual([
      { text: 'Nothing was sent: something went wrong on our side. Please start again.', final: true },
    ]);
    expect(service.calls).toHaveLength(0);
  });

  it("on Sentinel, a replica not holding the state of a payment call for several seconds (a planned failover's window): the call waits for it, then is made once, not refused", async () => {
    const service = paymentsService();
    const told: Prompt[] = [];
    let asked = 0;
    const store = overriding(redisStore(), { replicated: () => Promise.resolve(++asked > 8) });
    const e = engine(store, service.services, { onLateOutcome: (_a, prompt) => void told.push(prompt) });
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    await e.handle(msg({ choice: 'yes' }));
    await e.drain();
    expect(asked).toBe(9);
    expect(service.calls).toHaveLength(1);
    expect(told.map((prompt) => prompt.text)).not.toContain(
      'Nothing was sent: something went wrong on our side. Please start again.',
    );
  });

  it('on Sentinel, a run whose start a failover dropped while reads still came from the old master (never held): its end finds no run to end, and the person told "still working on it" is told nothing was sent', async () => {
    const service = paymentsService();
    const told: Prompt[] = [];
    const plain = redisStore();
    const msg = chat();
    const key = keys.conversation(msg());
    let before: { snapshot: unknown; version: number } | undefined;
    /** The old master's record, with the run, read until the first write goes to the new master. */
    let stale: Awaited<ReturnType<typeof plain.get>> = null;
    const store = overriding(plain, {
      replicated: async () => {
        if (!stale) {
          stale = await plain.get(key);
          // The new master never had the run's start: the record as before it.
          await plain.delete(key);
          await plain.set(key, before!.snapshot, null, 600);
        }
        return false;
      },
      get: (k: string) => (k === key && stale ? Promise.resolve(stale) : plain.get(k)),
      set: (...args: Parameters<typeof plain.set>) => {
        const [k, snapshot, expected] = args;
        if (k !== key || !stale) return plain.set(...args);
        // Writes keeping the run (a "being confirmed" answer) land on the old master; the one ending it, later,
        // on the new master.
        if ((snapshot as { run?: unknown }).run === undefined) {
          stale = null;
          return plain.set(...args);
        }
        if (expected !== stale.version) return Promise.resolve(null);
        stale = { snapshot, version: stale.version + 1 };
        return Promise.resolve(stale.version);
      },
    });
    const e = engine(store, service.services, {
      onLateOutcome: (_a, prompt) => void told.push(prompt),
      deadlineMs: { ussd: 200, telegram: 200, slack: 200 },
    });
    await e.handle(msg({ start: 'pay' }));
    before = (await plain.get(key))!;
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe(CONFIRMING);
    await until(
      'the user told',
      advancing(() => told.length > 0),
      PACE,
    );
    await e.drain();
    expect(told).toEqual([
      { text: 'Nothing was sent: something went wrong on our side. Please start again.', final: true },
    ]);
    expect(service.calls).toHaveLength(0);
  });

  it('a PIN check still out at the deadline: the user is told nothing was sent, only that answer is recorded, and its late answer pays nothing', async () => {
    const service = paymentsService();
    const checking = gate<void>();
    fakeTime();
    const store = redisStore();
    const e = engine(store, service.services, { flows: { menu: menuFlow, pay: pinFlow }, deadlineMs: SHORT });
    pinChecks.push(() => checking.promise);
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    const before = (await store.get(keys.conversation(msg({}))))!.snapshot as { session: unknown };
    const answering = e.handle(msg({ text: '1234' }));
    await until(
      'the check started',
      advancing(() => pinChecks.length === 0, { frozen: true }),
      PACE,
    );
    await vi.advanceTimersByTimeAsync(50); // the deadline, the check still out
    expect((await answering).text).toBe('Nothing was sent: something went wrong on our side. Please start again.');
    // The flow is where it was: only the delivery's answer is recorded.
    const after = (await store.get(keys.conversation(msg({}))))!.snapshot as { session: unknown; run?: unknown };
    expect(after.session).toEqual(before.session);
    expect(after.run).toBeUndefined();
    checking.open(); // the check answers late: its answer is dropped
    await lateCheckAnswered(checking.promise, e);
    expect(service.calls).toHaveLength(0);
    // The flow is where it was: the PIN again pays, once.
    expect((await e.handle(msg({ text: '1234' }))).text).toBe('Sent pay-1');
    expect(service.calls).toHaveLength(1);
  });

  it('USSD: a PIN check still out at the deadline, its answer kept for the next dial (the gateway may have answered "dial again to see the result" before it)', async () => {
    const service = paymentsService();
    const checking = gate<void>();
    fakeTime();
    const e = engine(redisStore(), service.services, { flows: { menu: menuFlow, pay: pinFlow }, deadlineMs: SHORT });
    pinChecks.push(() => checking.promise);
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    const answering = e.handle(msg({ text: '1234' }));
    await until(
      'the check started',
      advancing(() => pinChecks.length === 0, { frozen: true }),
      PACE,
    );
    await vi.advanceTimersByTimeAsync(50); // the deadline, the check still out
    const nothingSent = 'Nothing was sent: something went wrong on our side. Please start again.';
    expect((await answering).text).toBe(nothingSent);
    checking.open(); // the check answers late: its answer is dropped
    await lateCheckAnswered(checking.promise, e);
    // That answer never reached the phone: the next dial says it, before anything else, rather than offering the
    // PIN screen again as if nothing had been said.
    const dial = await e.handle(msg({ newSession: true }));
    // Shortened whole to the room a dial's notes have: what happened comes first.
    expect(dial.text.split('\n').slice(0, 2)).toEqual([
      'Update on your last request:',
      'Nothing was sent: something went wrong on our side.',
    ]);
    expect(service.calls).toHaveLength(0);
  });

  it("a PIN delivered twice to two processes, one copy's check past the deadline: told nothing was sent, the other copy answers the same and pays nothing", async () => {
    const service = paymentsService();
    const checking = gate<void>();
    fakeTime();
    const store = redisStore();
    const first = engine(store, service.services, { flows: { menu: menuFlow, pay: pinFlow }, deadlineMs: SHORT });
    const second = engine(redisStore(), service.services, { flows: { menu: menuFlow, pay: pinFlow } });
    pinChecks.push(() => checking.promise);
    const msg = chat();
    await first.handle(msg({ start: 'pay' }));
    const pin = msg({ text: '1234' });
    const answering = first.handle(pin);
    await until(
      'the check started',
      advancing(() => pinChecks.length === 0, { frozen: true }),
      PACE,
    );
    await vi.advanceTimersByTimeAsync(50); // the deadline, the check still out
    expect((await answering).text).toBe('Nothing was sent: something went wrong on our side. Please start again.');
    // The copy, in the other process, its check in time: the same answer, no payment.
    expect((await second.handle(pin)).text).toBe(
      'Nothing was sent: something went wrong on our side. Please start again.',
    );
    checking.open();
    await lateCheckAnswered(checking.promise, first, second);
    expect(service.calls).toHaveLength(0);
    // A new PIN pays, once.
    expect((await second.handle(msg({ text: '1234' }))).text).toBe('Sent pay-1');
    expect(service.calls).toHaveLength(1);
  });

  it('a process dying during a PIN check leaves the flow at the PIN: nothing recorded, and another process pays once on the next PIN', async () => {
    const service = paymentsService();
    const checking = gate<void>();
    const slow = {
      deadlineMs: { ussd: 10_000, telegram: 10_000, slack: 10_000 },
      flows: { menu: menuFlow, pay: pinFlow },
    };
    const dies = dyingStore(redisStore());
    const first = engine(dies, service.services, { ...slow, live: false });
    const second = engine(redisStore(), service.services, slow);
    pinChecks.push(() => checking.promise);
    const msg = chat();
    await first.handle(msg({ start: 'pay' }));
    const dying = first.handle(msg({ text: '1234' })); // its check is held: the process dies with it out
    await until(
      'the check started',
      advancing(() => pinChecks.length === 0),
      PACE,
    );
    dies.die();
    expect(await raw.redis.keys(`${deployment}lease:*`)).toEqual([]);
    expect((await second.handle(msg({ text: '1234' }))).text).toBe('Sent pay-1');
    checking.open(); // the dead process's check "returns": its write loses to the second's, it pays nothing
    await dying.catch(() => undefined);
    await Promise.all([first.drain(), second.drain()]);
    expect(service.calls).toHaveLength(1);
  });

  it('Redis refusing the write right after the service accepted the payment: "being confirmed", and a later message pays nothing again', async () => {
    const service = paymentsService();
    // Every conversation write fails while refusing (Redis down for a moment), starting just after the payment.
    const flaky = refusingWrites(redisStore());
    const told: Prompt[] = [];
    // The engine's error lines: the run's failure is waited for on its line, not on the deadline.
    const errors: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        errors.push(chunk.toString());
        done();
      },
    });
    const e = engine(
      flaky,
      {
        ...service.services,
        async createPayment(input) {
          const made = await service.services.createPayment!(input);
          flaky.refusing = service.calls.length === 1; // the first payment was accepted: now Redis refuses writes
          return made;
        },
      },
      {
        // Past the payment call (the run in its money state), whether the run's write has failed yet or not.
        deadlineMs: { ussd: 2000, telegram: 2000, slack: 2000 },
        onLateOutcome: (_a, prompt) => void told.push(prompt),
        logger: createLogger('error', sink),
      },
    );
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    const answer = await e.handle(msg({ choice: 'yes' }));
    expect(answer.text).toBe(CONFIRMING);
    expect(answer.text).not.toMatch(/start again|try again/i);
    expect(answer.money).toBe(true);
    // Redis refuses until the run gave up its write (its tries ridden out): it is left to be taken over.
    await until(
      'the run left to be taken over',
      () => errors.some((line) => line.includes('a run failed after its money-moving call')),
      PACE,
    );
    flaky.refusing = false; // Redis is back
    await until(
      'the outcome once Redis is back',
      advancing(() => told.length > 0),
      PACE,
    );
    // The run was taken over and repeated under the same key: the service holds one payment.
    expect(told.map((p) => p.text)).toEqual(['Sent earlier']);
    expect(service.payments).toHaveLength(1);
    const calls = service.calls.length;
    // A later message does not pay again.
    const later = await e.handle(msg({ text: 'did it go?' }));
    expect(later.text).not.toMatch(/start again/i);
    expect(service.calls).toHaveLength(calls);
    expect(service.payments).toHaveLength(1);
  });
});

/**
 * Processes ("engines") sharing one MemoryStore, on the test's clock (the engines' and the store's): a lease
 * lapses and a wait passes only when the test moves `clock`, while the sweeps run on real timers (every 50 ms),
 * counted in `sweeps`. `services.createPayment` hangs until call `answered` (then answers "pay-1").
 */
function fleet({ answered = Infinity, ...changes }: { answered?: number } & Partial<FlowCalls> = {}) {
  let clock = Date.now();
  const shared = new MemoryStore({ now: () => clock });
  const calls: Array<{ duplicateCheckKey: string }> = [];
  const told: Prompt[] = [];
  const f = {
    calls,
    told,
    sweeps: 0,
    now: () => clock,
    move: (ms: number) => void (clock += ms),
    msg: chat(),
    key: '',
    /** A process on the shared store, telling late outcomes to `told`; kill() is its death (nothing drained). */
    process() {
      const counted = overriding(shared, {
        expiredLeases: (index: string, limit: number) => (f.sweeps++, shared.expiredLeases(index, limit)),
      });
      const store = dyingStore(counted);
      const services: Partial<FlowCalls> = {
        createPayment: (input) => {
          calls.push(input);
          return calls.length < answered ? new Promise(() => {}) : Promise.resolve({ id: 'pay-1', state: 'new' });
        },
        ...changes,
      };
      const e = engine(store, services, {
        live: false,
        runLeaseMs: 300,
        now: f.now,
        onLateOutcome: (_address, prompt) => void told.push(prompt),
      });
      return { engine: e, kill: () => (store.die(), void e.stop()) };
    },
    async record(): Promise<ConversationRecord> {
      return (await shared.get(f.key))!.snapshot as ConversationRecord;
    },
    /** The run in the record changed (as if taken over `takeovers` times, the last at `at`). */
    async seed(run: Partial<OpenRun>): Promise<void> {
      const stored = (await shared.get(f.key))!;
      const record = stored.snapshot as ConversationRecord;
      const next = { ...record, run: { ...record.run!, ...run } };
      expect(await shared.set(f.key, next, stored.version, 3600)).not.toBeNull();
    },
    /**
     * The run as if taken over `takeovers` times, the last now; its holder `first` killed and its lease lapsed:
     * another process takes it up, and the record once it has left the run.
     */
    async leftAfter(first: { kill: () => void }, takeovers: number) {
      await f.seed({ takeovers, at: f.now() });
      first.kill();
      f.move(300);
      const second = f.process();
      await until(
        'the run left',
        advancing(async () => (await f.record()).run === undefined),
        PACE,
      );
      return { record: await f.record(), second };
    },
    /** Conversations whose lease lapsed, as a sweep would find them now. */
    expired: () => shared.expiredLeases(keys.openRuns(f.key), 10),
    /** Until `n` more sweeps of the processes alive have looked at the index. */
    async sweepsPass(n = 3): Promise<void> {
      const from = f.sweeps;
      await until(
        `${n} sweeps`,
        advancing(() => f.sweeps >= from + n),
        PACE,
      );
    },
    /**
     * The first process: the person confirms, the payment's call goes out and hangs, and they are answered
     * "being confirmed" at the deadline (the clock moved past it). Returns the process.
     */
    async paying() {
      const first = f.process();
      await first.engine.handle(f.msg({ start: 'pay' }));
      const answering = first.engine.handle(f.msg({ choice: 'yes' }));
      await until(
        'the payment call',
        advancing(() => calls.length === 1),
        PACE,
      );
      f.move(60);
      expect((await answering).text).toBe(CONFIRMING);
      return first;
    },
  };
  f.key = keys.conversation(f.msg());
  return f;
}

describe('a money run taken over five times (its holders killed one after another)', () => {
  it('is taken over again only after a wait (5 s after the fifth takeover, 10 s after the sixth), its waiters answered "being confirmed" meanwhile; the outcome then reaches the person', async () => {
    const f = fleet({ answered: 3 });
    const first = await f.paying();
    // As if five holders had died in the call already: the last took the run over now.
    const fifth = f.now();
    await f.seed({ takeovers: 5, at: fifth });
    first.kill();
    f.move(300); // its lease lapses
    const second = f.process();
    // Its sweep finds the lease lapsed but the run not due: kept listed, with its lease now lasting till due.
    await until(
      'the run looked at',
      advancing(async () => (await f.expired()).length === 0),
      PACE,
    );
    await f.sweepsPass();
    expect(f.calls).toHaveLength(1);
    expect((await f.record()).run).toMatchObject({ takeovers: 5, at: fifth });
    // A message meanwhile waits, takes nothing over, and is answered at its deadline as any waiter is.
    const later = f.msg({ text: 'did it go?' });
    const asking = second.engine.handle(later);
    await until(
      'the message waiting',
      advancing(async () =>
        (await f.record()).ledger.some(([id, answer]) => id === deliveryId(later.messageId) && answer === WAITING),
      ),
      PACE,
    );
    f.move(60);
    expect((await asking).text).toBe(CONFIRMING);
    expect(f.calls).toHaveLength(1);
    // Just before the 5 s: still not taken over, whatever the sweeps.
    f.move(fifth + 4_999 - f.now());
    await f.sweepsPass();
    expect(f.calls).toHaveLength(1);
    // Due: taken over, the call repeated under its key, the time of this takeover recorded.
    f.move(1);
    await until(
      'the sixth takeover',
      advancing(() => f.calls.length === 2),
      PACE,
    );
    const sixth = f.now();
    expect((await f.record()).run).toMatchObject({ takeovers: 6, at: sixth });
    // Its holder killed too: the next waits 10 s after it.
    second.kill();
    f.move(300);
    const third = f.process();
    await until(
      'the run looked at again',
      advancing(async () => (await f.expired()).length === 0),
      PACE,
    );
    f.move(sixth + 9_999 - f.now());
    await f.sweepsPass();
    expect(f.calls).toHaveLength(2);
    f.move(1);
    await until(
      'the outcome told',
      advancing(() => f.told.length > 0),
      PACE,
    );
    expect(f.told).toEqual([{ text: 'Sent pay-1', final: true, money: true }]);
    expect(f.calls).toHaveLength(3);
    expect(new Set(f.calls.map((c) => c.duplicateCheckKey)).size).toBe(1);
    expect((await f.record()).run).toBeUndefined();
    f.move(3_600_000);
    expect(await f.expired()).toEqual([]); // unlisted
    await third.engine.stop();
  });

  it("an older engine's record (no time of its last takeover) is due at once", async () => {
    const f = fleet();
    const first = await f.paying();
    await f.seed({ takeovers: 5 });
    first.kill();
    f.move(300);
    const second = f.process();
    await until(
      'the sixth takeover',
      advancing(() => f.calls.length === 2),
      PACE,
    );
    expect((await f.record()).run).toMatchObject({ takeovers: 6, at: f.now() });
    second.kill();
  });

  it('taken over ten times, it is left as before: its flow ended "being confirmed", nothing called again', async () => {
    const f = fleet();
    const first = await f.paying();
    const { record, second } = await f.leftAfter(first, 10);
    expect(record.session?.ended).toBe(true);
    expect(record.session?.notice).toEqual({ key: 'common.confirming' });
    expect(f.calls).toHaveLength(1);
    expect(await f.expired()).toEqual([]);
    await second.engine.stop();
  });

  it('before a money state, a run taken over five times is left as before, no wait: "nothing was sent, start again", told to the person answered "still working on it"', async () => {
    const f = fleet({ reserveSpend: () => new Promise(() => {}) });
    const first = f.process();
    await first.engine.handle(f.msg({ start: 'pay' }));
    const answering = first.engine.handle(f.msg({ choice: 'yes' }));
    await until(
      'the run out',
      advancing(async () => (await f.record()).run !== undefined),
      PACE,
    );
    f.move(60);
    expect((await answering).text).toBe(PROCESSING);
    const { record, second } = await f.leftAfter(first, 5);
    expect(record.session?.ended).toBe(true);
    expect(record.session?.notice).toEqual({ key: 'common.runFailed' });
    expect(f.calls).toHaveLength(0);
    // Told "still working on it, you will be notified": nothing else would come, so they are told now.
    await until(
      'nothing sent told',
      advancing(() => f.told.length > 0),
      PACE,
    );
    expect(f.told).toEqual([
      { text: 'Nothing was sent: something went wrong on our side. Please start again.', final: true },
    ]);
    await second.engine.stop();
  });
});

describe("a chat whose Confirm's run start a failover dropped", () => {
  const NOTHING_SENT = 'Nothing was sent: something went wrong on our side. Please answer again.';

  /**
   * The amount answered in time by the first process with the question; the Confirm pressed on a second one,
   * answered "still working on it" past the deadline, and that process killed in its run; then a failover drops
   * the last writes: the record is back at the amount's run, whose end (and the Confirm's start) are gone. The
   * first process's sweep takes that run over and runs it to the Confirm question again, pushed to the chat.
   */
  async function dropConfirm(plain: RedisStore, store: Store) {
    const service = paymentsService();
    const checking = gate<void>();
    const told: Prompt[] = [];
    const first = engine(
      store,
      { ...service.services, checkSpend: () => checking.promise },
      {
        flows: { menu: menuFlow, pay: checkedPayFlow },
        deadlineMs: { telegram: 10_000 },
        onLateOutcome: (_a, prompt) => void told.push(prompt),
      },
    );
    const dies = dyingStore(plain);
    const second = engine(
      overriding(dies, { replicated: store.replicated }),
      { ...service.services, reserveSpend: () => new Promise(() => {}) },
      { live: false, flows: { menu: menuFlow, pay: checkedPayFlow } },
    );
    const msg = chat();
    const key = keys.conversation(msg());
    expect((await first.handle(msg({ start: 'pay' }))).text).toBe('Amount?');
    const answering = first.handle(msg({ text: '100' }));
    let atAmountRun: Awaited<ReturnType<Store['get']>> = null;
    await until(
      "the amount's run out",
      advancing(async () => ((atAmountRun = await plain.get(key))?.snapshot as ConversationRecord)?.run !== undefined),
      PACE,
    );
    checking.open();
    expect((await answering).text).toBe('Pay 100?');
    expect((await second.handle(msg({ choice: 'yes' }))).text).toBe(PROCESSING);
    dies.die();
    void second.stop();
    // The failover: the new master has the record as it was while the amount's run was out.
    await plain.delete(key);
    await plain.set(key, atAmountRun!.snapshot, null, 600);
    await until(
      'the run taken over told',
      advancing(() => told.length > 0),
      PACE,
    );
    await first.drain();
    return { told, service, first, msg };
  }

  it('on Sentinel, the run taken over ends at the Confirm question again: the chat is told first that nothing was sent, then asked; answered, it pays once', async () => {
    const plain = redisStore();
    const store = overriding(plain, { replicated: () => Promise.resolve(true) });
    const { told, service, first, msg } = await dropConfirm(plain, store);
    expect(told).toHaveLength(1);
    expect(told[0]!.text.split('\n')).toEqual([NOTHING_SENT, 'Pay 100?']);
    expect(told[0]!.final).not.toBe(true);
    expect(service.calls).toHaveLength(0);
    // The question is the flow's: answered, the payment is made once.
    expect((await first.handle(msg({ choice: 'yes' }))).text).toBe('Sent pay-1');
    expect(service.calls).toHaveLength(1);
  });

  it("on one server (no replica: a lost write there is a crashed server's, which may have been a payment's), the question alone, as before", async () => {
    const plain = redisStore();
    const { told, service } = await dropConfirm(plain, plain);
    expect(told.map((prompt) => prompt.text)).toEqual(['Pay 100?']);
    expect(service.calls).toHaveLength(0);
  });

  it('a run taken over after its payment call that ends at a question says nothing of "nothing was sent": the payment may have been made', async () => {
    const never = new Promise<void>(() => {});
    let firstCall = true;
    const service = paymentsService(() => (firstCall ? ((firstCall = false), never) : Promise.resolve()));
    const plain = redisStore();
    const replicated = () => Promise.resolve(true);
    const dies = dyingStore(plain);
    const flows = { menu: menuFlow, pay: payThenAskFlow };
    const holder = engine(overriding(dies, { replicated }), service.services, { live: false, flows });
    const told: Prompt[] = [];
    engine(overriding(plain, { replicated }), service.services, {
      flows,
      onLateOutcome: (_a, prompt) => void told.push(prompt),
    });
    const msg = chat();
    await holder.handle(msg({ start: 'pay' }));
    expect((await holder.handle(msg({ choice: 'yes' }))).text).toBe(CONFIRMING);
    await until(
      'the payment call',
      advancing(() => service.calls.length === 1),
      PACE,
    );
    dies.die();
    void holder.stop();
    await until(
      'the run taken over told',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told.map((prompt) => prompt.text)).toEqual(['Paid. Pay another?']);
    expect(service.payments).toHaveLength(1);
  });
});

describe('after the USSD guard answered "dial again to see the result"', () => {
  const NOTHING_SENT = /^Nothing was sent: something went wrong on our side\./;
  const pinEngine = (service: ReturnType<typeof paymentsService>) =>
    engine(redisStore(), service.services, {
      flows: { menu: menuFlow, pay: pinFlow },
      deadlineMs: { ussd: 10_000, telegram: 10_000, slack: 10_000 },
    });
  /** The view the last decision of a new dial saw (the hop offers to take a flow up only when it has no notes). */
  async function viewAtDial(e: ConversationEngine, dial: Inbound): Promise<ConversationView | undefined> {
    let seen: ConversationView | undefined;
    await e.turn(dial, (_state, view) => {
      seen = view;
      return { kind: 'reply', state: undefined, changed: false };
    });
    return seen;
  }

  it('a PIN whose work left no trace (dropped by a failover, or stuck): the next dial says nothing was sent, offers no resume, and the PIN coming late pays nothing', async () => {
    const service = paymentsService();
    const e = pinEngine(service);
    const msg = ussd();
    expect((await e.handle(msg({ start: 'pay', newSession: true }))).text).toBe('PIN?');
    const pin = msg({ text: '1234' });
    // The router's guard answered this PIN "Sorry, this is taking longer than expected. Dial again shortly to see
    // the result."; its turn wrote nothing (a failover dropped it, or it is stuck behind a stalled Redis).
    await e.toldLate(pin, pin.messageId);
    const dial = msg({ newSession: true });
    expect(await viewAtDial(e, dial)).toMatchObject({ notes: true });
    const shown = (await e.handle(dial)).text.split('\n');
    expect(shown[0]).toBe('Update on your last request:');
    expect(shown[1]).toMatch(NOTHING_SENT);
    // The PIN's turn, coming late, finds its answer recorded: the same words, and nothing is paid.
    expect((await e.handle(pin)).text).toMatch(NOTHING_SENT);
    await e.drain();
    expect(service.calls).toHaveLength(0);
    // Said once.
    expect((await e.handle(msg({ newSession: true }))).text).not.toMatch(/Nothing was sent/);
  });

  it('a delivery answered after the guard with a screen never seen (a run taken over ending at the PIN again): the next dial says nothing was sent, not "Continue where you left off?"', async () => {
    const service = paymentsService();
    const e = pinEngine(service);
    const msg = ussd();
    const start = msg({ start: 'pay', newSession: true });
    // Answered "PIN?" by the engine, after the guard had already answered "dial again to see the result".
    expect((await e.handle(start)).text).toBe('PIN?');
    await e.toldLate(start, start.messageId);
    const dial = msg({ newSession: true });
    expect(await viewAtDial(e, dial)).toMatchObject({ notes: true });
    expect((await e.handle(dial)).text.split('\n')[1]).toMatch(NOTHING_SENT);
    expect(service.calls).toHaveLength(0);
  });

  it('a PIN check past the deadline answered after the guard, its copy kept for the dial lost in a failover: the next dial still says nothing was sent', async () => {
    const service = paymentsService();
    const checking = gate<void>();
    fakeTime();
    const store = redisStore();
    const e = engine(store, service.services, { flows: { menu: menuFlow, pay: pinFlow }, deadlineMs: SHORT });
    pinChecks.push(() => checking.promise);
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    const pin = msg({ text: '1234' });
    const answering = e.handle(pin);
    await until(
      'the check started',
      advancing(() => pinChecks.length === 0, { frozen: true }),
      PACE,
    );
    await vi.advanceTimersByTimeAsync(50); // the deadline, the check still out
    // Recorded for the delivery, but it came after the router's guard had answered "dial again to see the result".
    expect((await answering).text).toMatch(NOTHING_SENT);
    await e.toldLate(pin, pin.messageId);
    // Its copy kept for the next dial was on the old master when a failover came (the 12:45 UTC chaos run).
    await store.delete(keys.pending(pin));
    checking.open();
    await lateCheckAnswered(checking.promise, e);
    const dial = msg({ newSession: true });
    expect(await viewAtDial(e, dial)).toMatchObject({ notes: true });
    expect((await e.handle(dial)).text.split('\n')[1]).toMatch(NOTHING_SENT);
    expect(service.calls).toHaveLength(0);
  });

  it('a PIN that paid, answered after the guard, or a dial after the payment answered by it: no dial says "nothing was sent"', async () => {
    const service = paymentsService();
    const store = redisStore();
    const e = engine(store, service.services, {
      flows: { menu: menuFlow, pay: pinFlow },
      deadlineMs: { ussd: 10_000, telegram: 10_000, slack: 10_000 },
    });
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    const pin = msg({ text: '1234' });
    expect((await e.handle(pin)).text).toBe('Sent pay-1');
    await e.toldLate(pin, pin.messageId);
    // The dial shows the outcome kept for it, and nothing of "nothing was sent".
    const shown = (await e.handle(msg({ newSession: true }))).text;
    expect(shown).toContain('Sent pay-1');
    expect(shown).not.toMatch(/Nothing was sent/);
    // The outcome seen (no longer kept), a later dial, waiting for the payment's news, is answered by the guard:
    // its turn left no trace. The dial after it is no news of the payment: it must not say nothing was sent
    // (the Sentinel chaos run of 12:30 UTC told four payers so, their payments made).
    await store.delete(keys.pending(pin));
    await e.handle(msg({ newSession: true }));
    const stuck = msg({ newSession: true });
    await e.toldLate(stuck, stuck.messageId);
    expect((await e.handle(msg({ newSession: true }))).text).not.toMatch(/Nothing was sent/);
    expect(service.payments).toHaveLength(1);
  });

  it('a run answered "still working on it" that ends at a question: the next dial says nothing was sent, rather than offering that question again', async () => {
    const looking = gate<void>();
    let looked = 0;
    const e = engine(
      redisStore(),
      {
        // The look-up before the question (a contact's name, a repeat check): held past the deadline.
        reserveSpend: async () => {
          looked++;
          await looking.promise;
        },
      },
      { flows: { menu: menuFlow, pay: lookupFlow } },
    );
    const msg = ussd();
    expect((await e.handle(msg({ start: 'pay', newSession: true }))).text).toBe('Whom?');
    // Past the deadline: "still working on it", as the router's guard would say "dial again to see the result".
    expect((await e.handle(msg({ text: 'Sarah' }))).text).toBe(PROCESSING);
    looking.open();
    await e.drain();
    expect(looked).toBe(1);
    // The question the run ended at reached nobody: the dial says nothing was sent, and offers no resume.
    const dial = msg({ newSession: true });
    let view: ConversationView | undefined;
    await e.turn(dial, (_state, seen) => {
      view = seen;
      return { kind: 'reply', state: undefined, changed: false };
    });
    expect(view).toMatchObject({ notes: true });
    expect((await e.handle(dial)).text.split('\n')[1]).toMatch(/^Nothing was sent: something went wrong on our side\./);
  });

  it('an outcome kept for the dial, shown by a dial answered past the deadline (the guard in its place): two later dials still show it', async () => {
    const service = paymentsService();
    const stalls = stallingStore();
    const e = engine(stalls.store, service.services, { flows: { menu: menuFlow, pay: pinFlow }, now: stalls.now });
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    expect((await e.handle(msg({ text: '1234' }))).text).toBe('Sent pay-1'); // kept for the next dial too
    stalls.stalling = true;
    const stalled = msg({ newSession: true });
    expect((await e.handle(stalled)).text).toContain('Sent pay-1'); // written, but the guard answered the phone
    await e.toldLate(stalled, stalled.messageId);
    stalls.stalling = false;
    // Seen at two dials, as any kept outcome; the stalled one does not count.
    expect((await e.handle(msg({ newSession: true }))).text).toContain('Sent pay-1');
    expect((await e.handle(msg({ newSession: true }))).text).toContain('Sent pay-1');
    expect((await e.handle(msg({ newSession: true }))).text).not.toContain('Sent pay-1');
    expect(service.payments).toHaveLength(1);
  });

  it('the dial saying nothing was sent, itself answered past the deadline (the guard in its place): the next dial says it', async () => {
    const service = paymentsService();
    const stalls = stallingStore();
    const e = engine(stalls.store, service.services, { flows: { menu: menuFlow, pay: pinFlow }, now: stalls.now });
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    const pin = msg({ text: '1234' });
    await e.toldLate(pin, pin.messageId); // its work left no trace
    stalls.stalling = true;
    const stalled = msg({ newSession: true });
    expect((await e.handle(stalled)).text.split('\n')[1]).toMatch(NOTHING_SENT); // the guard answered the phone
    await e.toldLate(stalled, stalled.messageId);
    stalls.stalling = false;
    // That dial left the flow for the menu: the next one has no flow waiting, and says it from what was kept.
    const shown = (await e.handle(msg({ newSession: true }))).text.split('\n');
    expect(shown[0]).toBe('Update on your last request:');
    expect(shown[1]).toMatch(NOTHING_SENT);
    expect(service.calls).toHaveLength(0);
  });

  it('while a run is out, the dial waits for it as before: its outcome is the result', async () => {
    const service = paymentsService();
    const paying = gate<void>();
    const e = engine(
      redisStore(),
      {
        ...service.services,
        async createPayment(input) {
          await paying.promise;
          return service.services.createPayment!(input);
        },
      },
      { flows: { menu: menuFlow, pay: pinFlow } },
    );
    const msg = ussd();
    await e.handle(msg({ start: 'pay', newSession: true }));
    const pin = msg({ text: '1234' });
    const answering = e.handle(pin); // the run is out: answered "processing" at the deadline
    expect((await answering).text).not.toMatch(/Nothing was sent/);
    await e.toldLate(pin, pin.messageId);
    const dial = await e.handle(msg({ newSession: true }));
    expect(dial.text).not.toMatch(/Nothing was sent/);
    paying.open();
    await e.drain();
    expect(service.payments).toHaveLength(1);
  });
});

describe('a run taken over that ends at a question on USSD (its call no money one)', () => {
  const NOTHING_SENT = /Nothing was sent/;
  const LONG = { ussd: 10_000, telegram: 10_000, slack: 10_000 };
  /** checkedPayFlow on `store`, its amount check `checkSpend`. */
  const checkedEngine = (
    store: Store,
    checkSpend: FlowCalls['checkSpend'],
    changes: Partial<EngineOptions> & { live?: boolean } = {},
  ) =>
    engine(
      store,
      { ...payments.services, checkSpend },
      { flows: { menu: menuFlow, pay: checkedPayFlow }, deadlineMs: LONG, ...changes },
    );
  let payments = paymentsService();
  beforeEach(() => {
    payments = paymentsService();
  });
  /** checkedPayFlow's look-up and Confirm, then a question after it (no money call). */
  const checkedAskFlow: FlowModule = {
    id: 'pay',
    messages: { en: { 't.amount': 'Amount?', 't.confirm': 'Pay 100?', 't.note': 'Note?' }, sw: {} },
    machine: setup({
      types: { context: {} as { input: FlowInput }, input: {} as FlowInput, events: {} as FlowEvent },
      actors: { checkSpend: serviceActors.checkSpend },
    }).createMachine({
      context: ({ input }) => ({ input }),
      initial: 'asking',
      states: {
        asking: { meta: { view: () => ({ text: { key: 't.amount' } }) }, on: { ANSWERED: 'checking' } },
        checking: {
          tags: ['busy'],
          invoke: {
            src: 'checkSpend',
            input: ({ context }) => ({
              channel: context.input.channel,
              userId: context.input.userId,
              flow: 'pay',
              amount: '100',
              currency: 'UGX',
              pin: false,
            }),
            onDone: 'confirming',
            onError: 'confirming',
          },
        },
        confirming: {
          meta: { view: () => ({ text: { key: 't.confirm' }, choices: [{ id: 'yes', label: 'Yes' }] }) },
          on: { CHOSEN: 'noting' },
        },
        noting: { meta: { view: () => ({ text: { key: 't.note' } }) } },
      },
    }),
  };
  /** The pending notes kept for the caller of `msg`. */
  const pendingOf = async (store: Store, msg: () => Inbound) =>
    JSON.stringify((await store.get(keys.pending(msg())))?.snapshot ?? []);

  it('from a holder only slow (its lease renewal held, then late): its waiter shows the question, the person answers it and goes on, and the next dial shows no "nothing was sent"', async () => {
    const base = redisStore();
    const checking = gate<void>();
    const renewing = gate<void>();
    // The first process: its amount check held, and its lease renewals with it (too slow to renew, not dead);
    // once let go they find the lease another's.
    const slow = overriding(base, {
      async renewLease() {
        await renewing.promise;
        return false;
      },
    });
    const flows = { flows: { menu: menuFlow, pay: checkedAskFlow } };
    const first = checkedEngine(slow, () => checking.promise, { ...flows, runLeaseMs: 300, sweepEveryMs: 60_000 });
    // The other process: its sweep takes the run over once that lease lapsed, and checks at once.
    const second = checkedEngine(redisStore(), async () => undefined, flows);
    const msg = ussd();
    const key = keys.conversation(msg());
    expect((await first.handle(msg({ start: 'pay', newSession: true }))).text).toBe('Amount?');
    const answering = first.handle(msg({ text: '100' }));
    // The taker kept "nothing was sent" for the next dial (a sweep's takeover: nobody waits for it there).
    await until(
      'the run taken over and ended at the question',
      async () => {
        const record = (await base.get(key))?.snapshot as ConversationRecord | undefined;
        return record?.run === undefined && (await pendingOf(base, msg)).includes('Nothing was sent');
      },
      PACE,
    );
    renewing.open();
    checking.open();
    // The slow holder's check returns: its outcome is not written (the run is another's), and its waiter shows
    // the taker's: the question, within the deadline. The person answers it.
    expect((await answering).text).toBe('Pay 100?');
    expect((await second.handle(msg({ choice: 'yes' }))).text).toBe('Note?');
    await first.drain();
    const dial = msg({ newSession: true });
    let view: ConversationView | undefined;
    await second.turn(dial, (_state, seen) => {
      view = seen;
      return { kind: 'reply', state: undefined, changed: false };
    });
    expect(view).toEqual({ waiting: true, notes: false });
    expect((await second.handle(dial)).text).not.toMatch(NOTHING_SENT);
  });

  it('from a holder that died with its waiter (nobody shown the question): the next dial says nothing was sent, and offers no resume', async () => {
    const checking = gate<void>();
    const dies = dyingStore(redisStore());
    const first = checkedEngine(dies, () => checking.promise, { live: false, runLeaseMs: 300, sweepEveryMs: 60_000 });
    const second = checkedEngine(redisStore(), async () => undefined);
    const base = redisStore();
    const msg = ussd();
    const key = keys.conversation(msg());
    expect((await first.handle(msg({ start: 'pay', newSession: true }))).text).toBe('Amount?');
    void first.handle(msg({ text: '100' })); // never answered: its process dies with the check out
    await until(
      'the run out',
      async () => ((await base.get(key))?.snapshot as ConversationRecord).run !== undefined,
      PACE,
    );
    dies.die();
    void first.stop();
    await until(
      'the run taken over and ended at the question, the note kept',
      async () => (await pendingOf(base, msg)).includes('Nothing was sent'),
      PACE,
    );
    const dial = msg({ newSession: true });
    let view: ConversationView | undefined;
    await second.turn(dial, (_state, seen) => {
      view = seen;
      return { kind: 'reply', state: undefined, changed: false };
    });
    expect(view).toMatchObject({ notes: true });
    expect((await second.handle(dial)).text.split('\n')[1]).toMatch(
      /^Nothing was sent: something went wrong on our side\./,
    );
    checking.open();
    expect(payments.calls).toHaveLength(0);
  });
});

describe('the write that starts a run, its answer lost', () => {
  /**
   * `base` whose next write that takes a lease fails with the connection: after it landed (`lose`, its answer
   * lost on the way) or before (`drop`, it never reached Redis).
   */
  function losingAnswer(base: Store) {
    const wrapper = overriding(base, {
      lose: false,
      drop: false,
      /**
       * Until when (Date.now()) every read fails: the connection still down when the record is read to tell. A
       * window, not a count of reads: the sweep reads the record too once the lease expires, at a time the
       * machine's speed decides.
       */
      blindUntil: 0,
      async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
        const taking = lease !== undefined && 'take' in lease;
        if (wrapper.drop && taking) {
          wrapper.drop = false;
          throw new Error('Connection is closed.');
        }
        const version = await base.set(key, snapshot, expected, ttl, lease);
        if (wrapper.lose && taking) {
          wrapper.lose = false;
          throw new Error('Connection is closed.');
        }
        return version;
      },
      async get(key: string) {
        if (Date.now() < wrapper.blindUntil) throw new Error('Connection is closed.');
        return base.get(key);
      },
    });
    return wrapper;
  }

  it('the run goes on here when the record, read again through a connection made anew, shows it landed: the payment is made once and is the answer, never "start again"', async () => {
    const service = paymentsService();
    const store = losingAnswer(redisStore());
    const e = engine(store, service.services, { deadlineMs: { ussd: 5000, telegram: 5000, slack: 5000 } });
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    store.lose = true;
    store.blindUntil = Date.now() + 250; // the first reads fail too (at 0 and 100 ms): ridden out
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe('Sent pay-1');
    expect(service.calls).toHaveLength(1);
  });

  /**
   * A payment confirmed while the write that starts its run fails with the connection (`lose`: after it landed;
   * `drop`: before) and every read back fails too, for 2.5 s; then the record reads again.
   */
  async function confirmedUnreadable(failure: 'lose' | 'drop') {
    const service = paymentsService();
    const store = losingAnswer(redisStore());
    const told: Prompt[] = [];
    const e = engine(store, service.services, { onLateOutcome: (_address, prompt) => void told.push(prompt) });
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    store[failure] = true;
    store.blindUntil = Date.now() + 2500; // past the read-back's five tries (1.5 s of pauses)
    return { service, told, e, msg, answer: await e.handle(msg({ choice: 'yes' })) };
  }

  it('the record unreadable too: "we are still working on it", and the run recorded is taken over, pays once and is told', async () => {
    const { service, told, answer } = await confirmedUnreadable('lose');
    expect(answer.text).toBe('We are still working on it. You will be notified of the result.');
    await until(
      'the run taken over once its lease expired',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told.map((p) => p.text)).toEqual(['Sent pay-1']);
    expect(service.calls).toHaveLength(1);
  });

  it('the record unreadable and the write found later not to have landed: "we are still working on it", then told late that nothing was sent', async () => {
    const { service, told, e, msg, answer } = await confirmedUnreadable('drop');
    expect(answer.text).toBe('We are still working on it. You will be notified of the result.');
    await until(
      'the late word that nothing was sent',
      advancing(() => told.length > 0),
      PACE,
    );
    expect(told).toEqual([
      { text: 'Nothing was sent: something went wrong on our side. Please start again.', final: true },
    ]);
    await e.drain();
    await nothingToTakeOver(keys.conversation(msg()));
    expect(service.calls).toHaveLength(0);
  });

  it('a write that did not land while a copy of the message started the run: the copy\'s outcome is the answer, never "start again"', async () => {
    const service = paymentsService();
    const base = redisStore();
    const copies = engine(redisStore(), service.services, { deadlineMs: { ussd: 5000, telegram: 5000, slack: 5000 } });
    let copy: Inbound | undefined;
    const store = overriding(base, {
      async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
        if (copy && lease && 'take' in lease) {
          // The copy, delivered to another process, wins; this write is lost with the connection.
          const delivered = copy;
          copy = undefined;
          await copies.handle(delivered);
          throw new Error('Connection is closed.');
        }
        return base.set(key, snapshot, expected, ttl, lease);
      },
    });
    const e = engine(store, service.services, { deadlineMs: { ussd: 5000, telegram: 5000, slack: 5000 } });
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    const confirm = msg({ choice: 'yes' });
    copy = confirm;
    expect((await e.handle(confirm)).text).toBe('Sent pay-1');
    expect(service.calls).toHaveLength(1);
  });

  it('a write that did not land (Redis refusing it) is the failure it says: "start again", and nothing runs', async () => {
    const service = paymentsService();
    const base = redisStore();
    let refuse = false;
    const store = overriding(base, {
      async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
        if (refuse && lease && 'take' in lease)
          throw new Error("OOM command not allowed when used memory > 'maxmemory'.");
        return base.set(key, snapshot, expected, ttl, lease);
      },
    });
    const e = engine(store, service.services);
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    refuse = true;
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe('Something went wrong on our side. Please start again.');
    await e.drain();
    await nothingToTakeOver(keys.conversation(msg()));
    expect(service.calls).toHaveLength(0);
  });
});

describe('while a run is out, never "start again"', () => {
  it('a message that fails (Redis refusing its write) while a payment is under way is told it is being processed', async () => {
    const reserving = gate<void>();
    const flaky = refusingWrites(redisStore());
    const service = paymentsService();
    const e = engine(flaky, { ...service.services, reserveSpend: () => reserving.promise });
    const msg = chat();
    await e.handle(msg({ start: 'pay' }));
    expect((await e.handle(msg({ choice: 'yes' }))).text).toBe(
      'We are still working on it. You will be notified of the result.',
    );
    flaky.refusing = true;
    const answer = await e.handle(msg({ text: 'hello?' }));
    expect(answer.text).toBe('We are still working on it. You will be notified of the result.');
    flaky.refusing = false;
    reserving.open();
    await e.drain();
    expect(service.payments).toHaveLength(1);
  });
});

describe('the ledger of answers', () => {
  it('a resend of an older delivery gets its own answer, not the latest and not a new step', async () => {
    const service = paymentsService();
    const e = engine(redisStore(), service.services);
    const msg = chat();
    const first = msg({ start: 'pay' });
    expect((await e.handle(first)).text).toBe('Pay 100?');
    const confirm = msg({ choice: 'yes' });
    expect((await e.handle(confirm)).text).toBe('Sent pay-1');
    const menu = await e.handle(msg({ text: 'hello' }));
    expect(menu.text).toBe('What would you like to do?');
    // The first delivery again, after two others: its answer, and the flow is not started again.
    expect((await e.handle(first)).text).toBe('Pay 100?');
    expect((await e.handle(confirm)).text).toBe('Sent pay-1');
    expect(service.calls).toHaveLength(1);
    // The ledger holds each delivery once, oldest first, by an 11-character digest of its id.
    const record = (await raw.redis.get(`${deployment}${keys.conversation(msg())}`)) ?? '';
    const { ledger } = JSON.parse(record.slice(record.indexOf('{'))) as { ledger: [string, unknown][] };
    expect(ledger.map(([id]) => id).slice(0, 2)).toEqual([deliveryId(first.messageId), deliveryId(confirm.messageId)]);
    expect(ledger).toHaveLength(3);
    expect(record).not.toContain(first.messageId);
  });
});
