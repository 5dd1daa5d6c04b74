import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { Writable } from 'node:stream';
import { setup } from 'xstate';
import { menuFlow } from '../../flows/menu.machine.js';
import type { FlowCalls } from '../../flows/calls.js';
import { createEngine, type EngineOptions } from '../../src/conversation/engine/engine.js';
import { createLogger } from '../../src/log.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Address, Inbound, Prompt, TurnDecision } from '../../src/conversation/types.js';
import type { LeaseChange, Store } from '../../src/store/types.js';
import { deliveryId, WAITING } from '../../src/conversation/engine/ledger.js';
import {
  dyingStore,
  fakePayments,
  gate,
  holdingStore,
  overriding,
  racingStore,
  testNotesFlow,
  testPayFlow,
} from './engine-fixtures.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';
import { keys } from '../../src/store/keys.js';
import { addPending, ussdInbox } from '../../src/conversation/channels/ussd-inbox.js';
import { rememberProfile } from '../../src/conversation/engine/profile.js';
import { notifyText } from '../../src/notifications/messages.js';
import { until } from '../until.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

const prefix = uniquePrefix('engine');
const raw = inspector(prefix);
const stores: Store[] = [];
function redisStore(): RedisStore {
  const store = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
  stores.push(store);
  return store;
}
afterEach(() => {
  vi.useRealTimers();
});
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await raw.cleanup();
});

const policy = new AccessPolicy({
  roles: {
    clerk: { flows: ['pay', 'request'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '5000' } },
    viewer: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} },
  },
  users: {
    telegram: { u1: { role: 'clerk' }, u2: { role: 'clerk' }, v1: { role: 'viewer' } },
    ussd: { '*': { role: 'clerk' } },
    slack: {},
  },
});

let ids = 0;
/** A conversation of its own per test, and message ids that never repeat unless a test repeats one. */
function conversation(channel: Inbound['channel'] = 'telegram', userId = 'u1') {
  const conversationId = `${channel === 'ussd' ? '+256772' : 'chat-'}${String(++ids).padStart(6, '0')}`;
  return (fields: Partial<Inbound> = {}): Inbound => ({
    channel,
    conversationId,
    userId: channel === 'ussd' ? conversationId : userId,
    messageId: `m-${++ids}`,
    ...fields,
  });
}

function engine(store: Store, services: Partial<FlowCalls>, changes: Partial<EngineOptions> = {}) {
  return createEngine({
    store,
    channels: channelCapabilities,
    services,
    policy,
    flows: { menu: menuFlow, pay: testPayFlow, request: testNotesFlow },
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: 10_000, telegram: 10_000, slack: 10_000 },
    logger: createLogger('silent'),
    ...changes,
  });
}

/** The outcome screen of the test pay flow: it follows a money-moving call, so it is marked `money`. */
const sent = (id: string): Prompt => ({ text: `Sent ${id}`, final: true, money: true });
/** "Processing" once the flow is in its money-moving state: "being confirmed, do not send it again". */
const CONFIRMING =
  'We are still working on it: it is being confirmed. Do not send it again; you will be notified of the result.';

/** Opens the menu and picks pay: the prompt asking the amount. */
async function toAmount(e: ReturnType<typeof engine>, msg: ReturnType<typeof conversation>): Promise<Prompt> {
  await e.handle(msg({ text: 'hi' }));
  return e.handle(msg({ choice: 'pay' }));
}

describe('engine', () => {
  it('shows the menu with the role’s flows, runs a flow to its final screen, then the menu again', async () => {
    const { calls, services } = fakePayments();
    const e = engine(redisStore(), services);
    const msg = conversation();
    const menu = await e.handle(msg({ text: 'hello' }));
    expect(menu.choices?.map((c) => c.id)).toEqual(['pay', 'request', 'lang']);
    expect(menu.text).toBe('What would you like to do?');
    expect(await e.handle(msg({ choice: 'pay' }))).toEqual({
      text: `Amount? (telegram:${msg().conversationId}, pin false)`,
      input: 'amount',
      final: false,
    });
    expect((await e.handle(msg({ text: 'abc' }))).text).toBe(
      'Digits only.\nAmount? (telegram:' + msg().conversationId + ', pin false)',
    );
    expect((await e.handle(msg({ text: '500' }))).text).toBe('Send 500?');
    expect(await e.handle(msg({ choice: 'yes' }))).toEqual(sent('pay-1'));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ amount: '500', metadata: { chat: `telegram:${msg().conversationId}` } });
    expect((await e.handle(msg({ text: 'again' }))).choices?.map((c) => c.id)).toEqual(['pay', 'request', 'lang']);
    await e.drain();
  });

  it('stop() leaves no timer of the engine behind: the sweep and the record cache purge stop with it', async () => {
    vi.useFakeTimers();
    const timers = vi.getTimerCount();
    const e = engine(new MemoryStore(), fakePayments().services);
    expect(vi.getTimerCount()).toBe(timers + 2);
    await e.stop();
    expect(vi.getTimerCount()).toBe(timers);
  });

  it('runs the same on the memory store (no REDIS_URL)', async () => {
    const { calls, services } = fakePayments();
    const e = engine(new MemoryStore(), services);
    const msg = conversation();
    await toAmount(e, msg);
    await e.handle(msg({ text: '42' }));
    const confirm = msg({ choice: 'yes' });
    expect(await e.handle(confirm)).toEqual(sent('pay-1'));
    expect(await e.handle(confirm)).toEqual(sent('pay-1'));
    expect(calls.map((c) => c.amount)).toEqual(['42']);
  });

  it('refuses a user the policy does not know, and does not offer or start flows the role may not use', async () => {
    const e = engine(redisStore(), {});
    expect(await e.handle(conversation('telegram', 'stranger')({ text: 'hi' }))).toEqual({
      text: 'Sorry, you are not allowed to use this service. Ask the operator for access.',
      final: true,
    });
    const viewer = conversation('telegram', 'v1');
    expect((await e.handle(viewer({ text: 'hi' }))).choices?.map((c) => c.id)).toEqual(['lang']);
    const started = await e.handle(viewer({ start: 'pay' }));
    expect(started.text.split('\n')[0]).toBe('You are not allowed to use that option.');
    expect(started.choices?.map((c) => c.id)).toEqual(['lang']);
  });

  it('USSD flows get requirePin and the phone; BACK, home and cancel leave the step', async () => {
    const e = engine(redisStore(), {});
    const msg = conversation('ussd');
    expect((await e.handle(msg({ newSession: true }))).choices?.[0]?.id).toBe('pay');
    expect((await e.handle(msg({ choice: 'pay' }))).text).toBe(`Amount? (ussd:${msg().conversationId}, pin true)`);
    await e.handle(msg({ text: '700' }));
    expect((await e.handle(msg({ nav: 'back' }))).text).toMatch(/^Amount\?/);
    expect((await e.handle(msg({ nav: 'home' }))).text).toBe('What would you like to do?');
    await e.handle(msg({ choice: 'pay' }));
    expect(await e.handle(msg({ nav: 'cancel' }))).toEqual({ text: 'Cancelled. Nothing was sent.', final: true });
    expect((await e.handle(msg({ text: '1' }))).text).toBe('What would you like to do?');
  });

  it('remembers the language chosen in the menu for the user, in every conversation', async () => {
    const e = engine(redisStore(), {});
    const first = conversation('telegram', 'u2');
    await e.handle(first({ text: 'hi' }));
    expect((await e.handle(first({ choice: 'lang' }))).choices?.map((c) => c.id)).toEqual(['en', 'sw', 'fr']);
    const menu = await e.handle(first({ choice: 'sw' }));
    expect(menu.text).toBe('Ungependa kufanya nini?');
    const other = conversation('telegram', 'u2');
    expect((await e.handle(other({ text: 'habari' }))).text).toBe('Ungependa kufanya nini?');
    expect((await redisStore().get(keys.profile('telegram', 'u2')))?.snapshot).toEqual({ lang: 'sw' });
  });

  it('answers a repeated delivery with the earlier prompt and calls the service once', async () => {
    const { calls, services } = fakePayments();
    const e = engine(redisStore(), services);
    const msg = conversation();
    await toAmount(e, msg);
    await e.handle(msg({ text: '300' }));
    const confirm = msg({ choice: 'yes' });
    const [first, second] = await Promise.all([e.handle(confirm), e.handle(confirm)]);
    const third = await e.handle(confirm);
    expect(first).toEqual(sent('pay-1'));
    expect(second).toEqual(first);
    expect(third).toEqual(first);
    expect(calls).toHaveLength(1);
  });

  it('a process that died mid-call is taken over by the next message elsewhere: the call again, under the same idempotency key', async () => {
    const store = dyingStore(redisStore());
    const crashed = fakePayments(new Promise(() => {})); // the first process dies while the call is out
    const before = engine(store, crashed.services, {
      deadlineMs: { ussd: 20, telegram: 20, slack: 20 },
      runLeaseMs: 300,
    });
    const msg = conversation();
    await toAmount(before, msg);
    await before.handle(msg({ text: '900' }));
    expect((await before.handle(msg({ choice: 'yes' }))).text).toBe(CONFIRMING);
    expect(crashed.calls).toHaveLength(1);
    store.die(); // its lease is no longer renewed

    const restarted = fakePayments();
    const after = engine(redisStore(), restarted.services, { runLeaseMs: 300 });
    expect(await after.handle(msg({ text: 'is it done?' }))).toEqual(sent('pay-1'));
    expect(restarted.calls).toHaveLength(1);
    expect(restarted.calls[0]?.duplicateCheckKey).toBe(crashed.calls[0]?.duplicateCheckKey);
    expect(restarted.calls[0]?.duplicateCheckKey).toMatch(/:pay$/);
    await after.drain();
  });

  it('a message arriving while a service call is out waits for that call instead of making another', async () => {
    const release = gate<{ id: string; state: string }>();
    const { calls, services } = fakePayments(release.promise);
    const store = racingStore(redisStore());
    const e = engine(store, services);
    const msg = conversation();
    await toAmount(e, msg);
    await e.handle(msg({ text: '800' }));
    const first = e.handle(msg({ choice: 'yes' }));
    await until('the payment call out', () => calls.length > 0);
    // Open the call only once the second message has found the busy conversation (read it, or marked it
    // with its delivery id from the record kept in memory).
    const secondSeen = gate<void>();
    store.onUse = () => secondSeen.open();
    const second = e.handle(msg({ text: 'hello?' }));
    await secondSeen.promise;
    release.open({ id: 'pay-once', state: 'submitted' });
    expect(await first).toEqual(sent('pay-once'));
    expect(await second).toEqual(sent('pay-once'));
    expect(calls).toHaveLength(1);
    await e.drain();
  });

  it('two messages racing on one conversation both land (compare-and-set, then retry)', async () => {
    const store = racingStore(redisStore());
    const one = engine(store, {});
    const two = engine(store, {}); // another process
    const msg = conversation();
    await one.handle(msg({ text: 'hi' }));
    await one.handle(msg({ choice: 'request' }));
    store.race(2);
    const answers = await Promise.all([one.handle(msg({ text: 'a' })), two.handle(msg({ text: 'b' }))]);
    expect(store.conflicts).toBe(1);
    expect([
      ['Notes: a', 'Notes: a,b'],
      ['Notes: b', 'Notes: b,a'],
    ]).toContainEqual(answers.map((a) => a.text).sort());
    expect((await one.handle(msg({ text: 'c' }))).text).toMatch(/^Notes: (a,b|b,a),c$/);
  });

  it('a double-tapped confirm pays once, from one process or two (one run holds the conversation)', async () => {
    for (const processes of [1, 2]) {
      const store = racingStore(redisStore());
      const release = gate<{ id: string; state: string }>();
      const { calls, services } = fakePayments(release.promise);
      const first = engine(store, services);
      const second = processes === 1 ? first : engine(store, services);
      const msg = conversation();
      await toAmount(first, msg);
      await first.handle(msg({ text: '600' }));
      // Both taps start from the confirm screen (read, or kept in memory); the loser's retry reads the
      // record after its conflict and finds the payment under way: only then is the payment answered.
      store.onUse = (use) => {
        if (use === 'read' && store.conflicts > 0)
          setImmediate(() => release.open({ id: 'pay-1', state: 'submitted' }));
      };
      store.race(2);
      const answers = await Promise.all([first.handle(msg({ choice: 'yes' })), second.handle(msg({ choice: 'yes' }))]);
      expect(answers).toEqual([sent('pay-1'), sent('pay-1')]);
      // The second tap's step loses once, is read again and found waiting on the first tap's run.
      expect(store.conflicts).toBeGreaterThanOrEqual(1);
      expect(calls).toHaveLength(1);
    }
  });

  it('past the deadline answers processing, keeps running and hands the outcome to onLateOutcome', async () => {
    const release = gate<{ id: string; state: string }>();
    const { calls, services } = fakePayments(release.promise);
    const late = gate<{ address: Address; prompt: Prompt }>();
    const e = engine(redisStore(), services, {
      deadlineMs: { ussd: 20, telegram: 20, slack: 20 },
      onLateOutcome: (address, prompt) => late.open({ address, prompt }),
    });
    const msg = conversation();
    await toAmount(e, msg);
    await e.handle(msg({ text: '250' }));
    expect(await e.handle(msg({ choice: 'yes' }))).toEqual({ text: CONFIRMING, final: false, money: true });
    release.open({ id: 'pay-late', state: 'submitted' });
    expect(await late.promise).toEqual({
      address: { channel: 'telegram', conversationId: msg().conversationId },
      prompt: sent('pay-late'),
    });
    await e.drain();
    expect(calls).toHaveLength(1);
    expect((await e.handle(msg({ text: 'next' }))).text).toBe('What would you like to do?');
  });

  /**
   * A USSD payment confirmed, answered "processing" at its 20 ms deadline (which ends the session), then paid as
   * `id` and drained: the engine and the conversation.
   */
  async function paidLateOnUssd(id: string, options: Parameters<typeof engine>[2] = {}) {
    const release = gate<{ id: string; state: string }>();
    const { services } = fakePayments(release.promise);
    // The payment is held until its hop was answered at the deadline; the hops after it must each be answered
    // within it (a dial past it answers "processing" and counts no note as shown): room for a loaded machine.
    const e = engine(redisStore(), services, { deadlineMs: { ussd: 300, telegram: 300, slack: 300 }, ...options });
    const msg = conversation('ussd');
    await e.handle(msg({ newSession: true }));
    await e.handle(msg({ choice: 'pay' }));
    await e.handle(msg({ text: '100' }));
    expect((await e.handle(msg({ choice: 'yes' }))).final).toBe(true);
    release.open({ id, state: 'submitted' });
    await e.drain();
    return { e, msg };
  }

  it('on USSD the processing answer ends the session and the outcome is shown at the next dial', async () => {
    const notified: Prompt[] = [];
    const { e, msg } = await paidLateOnUssd('pay-u', { onLateOutcome: (_a, p) => void notified.push(p) });
    expect(notified).toEqual([sent('pay-u')]);
    const dial = await e.handle(msg({ newSession: true }));
    expect(dial.text).toBe('Update on your last request:\nSent pay-u\nWhat would you like to do?');
    // Shown at two dials (the answer to a dial can be lost too), then no more.
    expect((await e.handle(msg({ newSession: true }))).text).toBe(dial.text);
    expect((await e.handle(msg({ newSession: true }))).text).toBe('What would you like to do?');
  });

  it('on USSD notes shown at a dial are dropped once the next message of that session proves the screen arrived', async () => {
    const { e, msg } = await paidLateOnUssd('pay-s');
    const dial = await e.handle(msg({ newSession: true }));
    expect(dial).toMatchObject({
      text: 'Update on your last request:\nSent pay-s\nWhat would you like to do?',
      noted: true,
    });
    // The user answers the menu: the dial's screen reached the phone, so the next dial no longer repeats it.
    expect((await e.handle(msg({ choice: 'pay' }))).noted).toBeUndefined();
    const next = await e.handle(msg({ newSession: true }));
    expect(next.text).toBe('What would you like to do?');
    expect(next.noted).toBeUndefined();
  });

  describe("the next dial's update is in the person's language at that dial", () => {
    const done = {
      key: 'notify.payment.processed',
      params: { amount: '5000', currency: 'UGX', phone: '+256772000001', ref: '7' },
    };
    const dialNote = (words: { key: string; params?: Record<string, string | number> }, lang: 'en' | 'sw' | 'fr') =>
      notifyText(lang, words.key, words.params ?? {}, { forDial: true });

    /** A USSD person in `from`, told an outcome in it while they switch to `to` in a session begun before. */
    async function switchedAfterOutcome(from: 'en' | 'fr', to: 'en' | 'fr') {
      const store = redisStore();
      const e = engine(store, {}, { dialNote });
      const msg = conversation('ussd');
      const address: Address = { channel: 'ussd', conversationId: msg().conversationId };
      await e.handle(msg({ newSession: true }));
      await e.handle(msg({ choice: 'lang' }));
      await e.handle(msg({ choice: from }));
      // A later session, at the language list, when the outcome arrives (told in the language of then).
      await e.handle(msg({ newSession: true }));
      await e.handle(msg({ choice: 'lang' }));
      await ussdInbox(store).send(address, notifyText(from, done.key, done.params, { forDial: true }), {
        ...done,
        from: 'notify',
      });
      await e.handle(msg({ choice: to }));
      return (await e.handle(msg({ newSession: true }))).text;
    }

    it('a French outcome read after switching to English is all English, and the reverse all French', async () => {
      const english = await switchedAfterOutcome('fr', 'en');
      expect(english).toBe(
        'Update on your last request:\nDone: 5,000 UGX reached +256772000001. Ref 7.\nWhat would you like to do?',
      );
      const french = await switchedAfterOutcome('en', 'fr');
      expect(french.split('\n')).toEqual([
        'Votre dernière demande :',
        notifyText('fr', done.key, done.params, { forDial: true }),
        'Que faire ?',
      ]);
      expect(french).toMatch(/\nTerminé : 5.000 UGX arrivés à \+256772000001\. Réf 7\.\n/);
    });

    it("a run's own answer kept for the dial is said again in the language switched to", async () => {
      const { e, msg } = await paidLateOnUssd('pay-l');
      const who = msg();
      await rememberProfile(
        redisStore(),
        { channel: 'ussd', userId: who.userId },
        { lang: 'sw' },
        createLogger('silent'),
      );
      expect((await e.handle(msg({ newSession: true }))).text).toBe(
        'Habari ya ombi lako la mwisho:\nImetumwa pay-l\nUngependa kufanya nini?',
      );
    });

    it('a note kept as finished words (before notes had their key) is shown as kept', async () => {
      const store = redisStore();
      const e = engine(store, {}, { dialNote });
      const msg = conversation('ussd');
      await addPending(
        store,
        { channel: 'ussd', conversationId: msg().conversationId },
        'Done: 700 KES reached Sarah.',
      );
      expect((await e.handle(msg({ newSession: true }))).text).toBe(
        'Update on your last request:\nDone: 700 KES reached Sarah.\nWhat would you like to do?',
      );
    });
  });

  it('a flow that breaks gets a plain apology, and home starts over', async () => {
    const broken = setup({}).createMachine({
      id: 'pay',
      initial: 'ask',
      states: {
        ask: {
          meta: {
            view: () => {
              throw new Error('bug');
            },
          },
        },
      },
    });
    const e = engine(redisStore(), {}, { flows: { menu: menuFlow, pay: { ...testPayFlow, machine: broken } } });
    const msg = conversation();
    expect(await e.handle(msg({ start: 'pay' }))).toEqual({
      text: 'Something went wrong on our side. Please start again.',
      final: true,
    });
    expect((await e.handle(msg({ nav: 'home' }))).text).toBe('What would you like to do?');
  });

  it('logs USSD users by masked number only, and never what they typed', async () => {
    const lines: string[] = [];
    const logger = createLogger(
      'debug',
      new Writable({ write: (chunk: Buffer, _e, done) => void (lines.push(chunk.toString()), done()) }),
    );
    const e = engine(redisStore(), fakePayments(new Promise(() => {})).services, {
      logger,
      deadlineMs: { ussd: 20, telegram: 20, slack: 20 },
    });
    const msg = conversation('ussd');
    await e.handle(msg({ newSession: true }));
    await e.handle(msg({ choice: 'pay' }));
    await e.handle(msg({ text: '31337' }));
    const confirm = msg({ choice: 'yes' });
    await e.handle(confirm);
    await e.handle(confirm);
    const log = lines.join('');
    expect(log).toContain('duplicate delivery');
    expect(log).toContain('past the deadline');
    expect(log).toContain(msg().conversationId.slice(0, 5) + '*');
    expect(log).not.toContain(msg().conversationId);
    expect(log).not.toContain('31337');
  });

  it('an expired flow starts over with a short explanation', async () => {
    let now = Date.parse('2026-05-01T08:00:00Z');
    const e = engine(redisStore(), {}, { now: () => now, sessionTtlSeconds: 60 });
    const msg = conversation();
    await toAmount(e, msg);
    now += 59_000;
    expect((await e.handle(msg({ text: 'x' }))).text).toMatch(/^Digits only\./);
    now += 61_000;
    const again = await e.handle(msg({ text: '500' }));
    expect(again.text).toBe('Your session timed out, so we started again.\nWhat would you like to do?');
    expect(again.choices?.map((c) => c.id)).toEqual(['pay', 'request', 'lang']);
  });
});

describe('engine.turn (a channel keeping its own state with the conversation)', () => {
  /** A store that counts the commands a message costs. */
  function counting(inner: Store) {
    const counts = { get: 0, set: 0 };
    const store = overriding(inner, {
      // A read of several records is one round trip: one read.
      get: (key: string) => (counts.get++, inner.get(key)),
      getMany: (keys: string[]) => (counts.get++, inner.getMany(keys)),
      set: (key: string, value: unknown, expected: number | null, ttl: number, lease?: LeaseChange) => (
        counts.set++,
        inner.set(key, value, expected, ttl, lease)
      ),
    });
    return { store, counts };
  }
  /** A channel whose state is the last answer's number and text; `n` answers the same number twice. */
  const channel =
    (msg: ReturnType<typeof conversation>, n: number, fields: Partial<Inbound>) =>
    (state: { n: number; text: string } | undefined): TurnDecision<{ n: number; text: string }> =>
      state && state.n >= n
        ? { kind: 'reply', state, changed: false }
        : {
            kind: 'step',
            inbound: msg({ messageId: `hop-${n}`, ...fields }),
            after: (prompt) => ({ n, text: prompt.text }),
          };
  // The test pay flow's payment is a money-moving state: "processing" there says it is being confirmed.
  const processing = CONFIRMING;
  /** A new USSD conversation of the test pay flow, walked to its confirmation (hop 3 confirms). */
  async function atConfirmation(e: ReturnType<typeof engine>) {
    const msg = conversation('ussd');
    const who = { channel: 'ussd' as const, conversationId: msg().conversationId, userId: msg().userId };
    await e.turn(who, channel(msg, 0, { newSession: true }));
    await e.turn(who, channel(msg, 1, { choice: 'pay' }));
    await e.turn(who, channel(msg, 2, { text: '100' }));
    return { msg, who };
  }

  it('a hop mid-flow reads nothing (the record kept in memory) and writes the flow and the channel state in one compare-and-set', async () => {
    const { store, counts } = counting(redisStore());
    const e = engine(store, {});
    const msg = conversation('ussd');
    const who = { channel: 'ussd' as const, conversationId: msg().conversationId, userId: msg().userId };
    await e.turn(who, channel(msg, 0, { newSession: true }));
    counts.get = 0;
    counts.set = 0;
    const state = await e.turn(who, channel(msg, 1, { choice: 'pay' }));
    expect(state).toEqual({ n: 1, text: `Amount? (ussd:${who.conversationId}, pin true)` });
    // The record written by the dial is kept in memory; the one write proves it current.
    expect(counts).toEqual({ get: 0, set: 1 });
    expect(
      (await store.get(keys.conversation({ channel: 'ussd', conversationId: who.conversationId })))?.snapshot,
    ).toMatchObject({ channel: state });
    // A repeat is answered from the channel's state without a write, so from a record just read: a read, no
    // write, no step.
    counts.get = 0;
    counts.set = 0;
    expect(await e.turn(who, channel(msg, 1, { choice: 'pay' }))).toEqual(state);
    expect(counts).toEqual({ get: 1, set: 0 });
  });

  it('a record another process moved on since is read again: its answer counts, not the one kept in memory', async () => {
    const { store, counts } = counting(redisStore());
    const here = engine(store, {});
    const there = engine(store, {}); // another process behind the same gateway
    const msg = conversation('ussd');
    const who = { channel: 'ussd' as const, conversationId: msg().conversationId, userId: msg().userId };
    await here.turn(who, channel(msg, 0, { newSession: true }));
    const notes = await there.turn(who, channel(msg, 1, { choice: 'request' }));
    expect(notes.text).toBe('Notes: ');
    // `here` still keeps the dial's record: a resend of hop 1 gets hop 1's answer from the store, it does not
    // step the menu again from the kept record.
    expect(await here.turn(who, channel(msg, 1, { choice: 'request' }))).toEqual(notes);
    // Each process steps from what the other wrote: its kept record, when stale, loses the compare-and-set
    // and is read again.
    expect((await here.turn(who, channel(msg, 2, { text: 'a' }))).text).toBe('Notes: a');
    counts.set = 0;
    expect((await there.turn(who, channel(msg, 3, { text: 'b' }))).text).toBe('Notes: a,b');
    expect(counts.set).toBe(2); // `there` kept hop 1's record: one conflict, then the write
    expect((await here.turn(who, channel(msg, 4, { text: 'c' }))).text).toBe('Notes: a,b,c');
  });

  it('a resend of a message answered "processing" gets "processing" again, also after the run settled', async () => {
    const release = gate<{ id: string; state: string }>();
    const { calls, services } = fakePayments(release.promise);
    const store = redisStore();
    const e = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } });
    const other = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } }); // another process
    const { msg, who } = await atConfirmation(e);
    expect(await e.turn(who, channel(msg, 3, { choice: 'yes' }))).toEqual({ n: 3, text: processing });
    expect(await other.turn(who, channel(msg, 3, { choice: 'yes' }))).toEqual({ n: 3, text: processing });
    // A new message while the call is out waits for it too, and keeps its own answer once the run settles.
    expect(await e.turn(who, channel(msg, 4, { text: 'done yet?' }))).toEqual({ n: 4, text: processing });
    release.open({ id: 'pay-r', state: 'submitted' });
    await e.drain();
    expect(await other.turn(who, channel(msg, 4, { text: 'done yet?' }))).toEqual({ n: 4, text: processing });
    expect(calls).toHaveLength(1);
  });

  it('an outcome still being written when the deadline passes is the answer, and a resend in another process gets it too', async () => {
    const { calls, services } = fakePayments();
    // Fake timers and Date (the engines' clock): the deadline passes when the test moves time, once the outcome
    // is being written, never before on a loaded machine. Redis answers in real time.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const store = holdingStore(redisStore());
    const e = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } });
    const other = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } }); // another process
    const { msg, who } = await atConfirmation(e);
    // The confirmation's own write goes through; the run's write of its outcome lands only past the deadline.
    const landed = gate<void>();
    let writing = false;
    void store.hold((record) => record.run === undefined, landed.promise).then(() => void (writing = true));
    const answer = e.turn(who, channel(msg, 3, { choice: 'yes' }));
    await until('the outcome being written', () => writing);
    await vi.advanceTimersByTimeAsync(100); // past the 20 ms deadline, within the wait for a write under way
    landed.open();
    expect(await answer).toEqual({ n: 3, text: 'Sent pay-1' });
    expect(await other.turn(who, channel(msg, 3, { choice: 'yes' }))).toEqual({ n: 3, text: 'Sent pay-1' });
    await e.drain();
    expect(calls).toHaveLength(1);
  });

  it('a copy answered "processing" in another process past its deadline makes that the answer the run keeps', async () => {
    const release = gate<{ id: string; state: string }>();
    const { calls, services } = fakePayments(release.promise);
    const store = redisStore();
    const late: Prompt[] = [];
    const e = engine(store, services, { onLateOutcome: (_address, prompt) => void late.push(prompt) });
    const other = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } }); // another process
    const { msg, who } = await atConfirmation(e);
    const first = e.turn(who, channel(msg, 3, { choice: 'yes' })); // the run waits for the payment
    await until('the payment call made', () => calls.length > 0);
    // A gateway's copy lands on the other process, waits past its deadline and is answered "processing".
    expect(await other.turn(who, channel(msg, 3, { choice: 'yes' }))).toEqual({ n: 3, text: processing });
    release.open({ id: 'pay-l', state: 'submitted' });
    await first;
    await e.drain();
    // Every later copy gets the screen the user was last shown, and the outcome comes as a late one.
    expect(await other.turn(who, channel(msg, 3, { choice: 'yes' }))).toEqual({ n: 3, text: processing });
    expect(await e.turn(who, channel(msg, 3, { choice: 'yes' }))).toEqual({ n: 3, text: processing });
    expect(late.map((p) => p.text)).toEqual(['Sent pay-l']);
    expect(calls).toHaveLength(1);
  });

  it('a copy of a message answered "processing" while it waited for a run gets "processing", while the outcome is written and after', async () => {
    const release = gate<{ id: string; state: string }>();
    const { services } = fakePayments(release.promise);
    const store = holdingStore(redisStore());
    const e = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } });
    const other = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } }); // another process
    const { msg, who } = await atConfirmation(e);
    expect(await e.turn(who, channel(msg, 3, { choice: 'yes' }))).toEqual({ n: 3, text: processing });
    // A dial while the payment is out waits for it, and is answered "processing" too: the ledger says so.
    expect(await e.turn(who, channel(msg, 4, { newSession: true }))).toEqual({ n: 4, text: processing });
    // The run settles; its outcome is written by a write that is slow to land.
    const landed = gate<void>();
    const held = store.hold((record) => record.run === undefined, landed.promise);
    release.open({ id: 'pay-k', state: 'submitted' });
    await held;
    // A gateway's copy of the dial, meanwhile and after, gets the screen the dial got.
    expect(await other.turn(who, channel(msg, 4, { newSession: true }))).toEqual({ n: 4, text: processing });
    landed.open();
    await e.drain();
    expect(await other.turn(who, channel(msg, 4, { newSession: true }))).toEqual({ n: 4, text: processing });
    expect(
      (await store.get(keys.conversation({ channel: 'ussd', conversationId: who.conversationId })))?.snapshot,
    ).not.toHaveProperty('run');
  });

  it('a copy of a message waiting for a run (in another process) waits too, and is not taken for a new message', async () => {
    const release = gate<{ id: string; state: string }>();
    const { calls, services } = fakePayments(release.promise);
    const store = redisStore();
    const e = engine(store, services, { deadlineMs: { ussd: 20, telegram: 20, slack: 20 } });
    const other = engine(store, services, { deadlineMs: { ussd: 5000, telegram: 5000, slack: 5000 } });
    const { msg, who } = await atConfirmation(e);
    await e.turn(who, channel(msg, 3, { choice: 'yes' })); // late: the run goes on
    const waiting = other.turn(who, channel(msg, 4, { newSession: true }));
    // The waiting message is listed in the ledger, waiting, before it waits.
    const marked = async () =>
      (
        (await store.get(keys.conversation({ channel: 'ussd', conversationId: who.conversationId })))?.snapshot as {
          ledger: [string, unknown][];
        }
      ).ledger.some(([id, answer]) => id === deliveryId('hop-4') && answer === WAITING);
    await until('the waiting message in the ledger', marked);
    const copy = e.turn(who, channel(msg, 4, { newSession: true }));
    release.open({ id: 'pay-c', state: 'submitted' });
    const [first, second] = await Promise.all([waiting, copy]);
    await Promise.all([e.drain(), other.drain()]);
    expect(first).toEqual({ n: 4, text: 'Sent pay-c' });
    expect(second).toEqual(first);
    // The run stayed with the process holding its lease: one call.
    expect(calls).toHaveLength(1);
  });

  it("a duplicate arriving while the first one's call is out in another process waits for its outcome", async () => {
    const release = gate<{ id: string; state: string }>();
    const { calls, services } = fakePayments(release.promise);
    const store = redisStore();
    const first = engine(store, services);
    // The other process's single reads of the record (a wait for a run polls it so).
    let reads = 0;
    const counted = overriding(store, {
      get: (key: string) => {
        if (key.startsWith('conv:')) reads += 1;
        return store.get(key);
      },
    });
    const second = engine(counted, services);
    const msg = conversation();
    await toAmount(first, msg);
    await first.handle(msg({ text: '700' }));
    const confirm = msg({ choice: 'yes' });
    const one = first.handle(confirm);
    await until('the payment call out', () => calls.length > 0);
    const readsBefore = reads;
    const two = second.handle(confirm);
    await until('the duplicate waiting for the run (polling its record)', () => reads >= readsBefore + 2);
    release.open({ id: 'pay-w', state: 'submitted' });
    expect(await one).toEqual(sent('pay-w'));
    expect(await two).toEqual(sent('pay-w'));
    expect(calls).toHaveLength(1);
  });
});

describe('compare-and-sets lost to other messages', () => {
  /** A memory store whose next `lost.left` writes of conversation records lose, counting every one tried. */
  function losing() {
    const inner = new MemoryStore();
    const lost = { left: 0, tried: 0 };
    const store = overriding(inner, {
      set: (key: string, value: unknown, expected: number | null, ttl: number, lease?: LeaseChange) => {
        if (!key.includes('conv:')) return inner.set(key, value, expected, ttl, lease);
        lost.tried++;
        if (lost.left > 0) return (lost.left--, Promise.resolve(null));
        return inner.set(key, value, expected, ttl, lease);
      },
    });
    return { store, lost };
  }

  it('a message whose every write loses is answered "busy" after five tries, not sooner or later', async () => {
    const { store, lost } = losing();
    const e = engine(store, {});
    const msg = conversation();
    lost.left = Infinity;
    const prompt = await e.handle(msg({ text: 'hi' }));
    expect(prompt.text).toBe('Too many messages at once. Please try again.');
    expect(lost.tried).toBe(5);
  });

  it('a record kept in memory that must be read again costs no try: four writes lost, the fifth lands', async () => {
    const { store, lost } = losing();
    const e = engine(store, {});
    const msg = conversation('ussd');
    const who = { channel: 'ussd' as const, conversationId: msg().conversationId, userId: msg().userId };
    await e.turn(who, () => ({ kind: 'step', inbound: msg({ newSession: true }), after: () => 'menu' }));
    // A reply of the channel's own is decided on a record just read: the kept one is read again first.
    lost.tried = 0;
    lost.left = 4;
    const state = await e.turn(who, () => ({ kind: 'reply', state: 'paged', changed: true }));
    expect(state).toBe('paged');
    expect(lost.tried).toBe(5);
    expect(await e.turn<string>(who, (kept) => ({ kind: 'reply', state: kept!, changed: false }))).toBe('paged');
  });
});
