/**
 * The engine's moves for the funnel (EngineOptions.onTransition) over the real menu and pay flows with fake
 * services: every step a run goes through (its service-call steps included), when each was entered, how it
 * ended, and a run left, expired or ended by the gateway (TurnEngine.sessionEnded). On Redis, a run whose hops
 * land on two engines (two processes) keeps the time its step was entered.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { flows } from '../../flows/index.js';
import type { FlowCalls } from '../../flows/calls.js';
import { createEngine, type EngineOptions } from '../../src/conversation/engine/engine.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { AccessPolicy, hashPin } from '../../src/conversation/calls/access-policy.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { FlowTransition } from '../../src/conversation/flow/flow-runtime.js';
import type { Inbound } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import { createLogger } from '../../src/log.js';
import { gate } from './engine-fixtures.js';
import { inspector, REDIS_URL, uniquePrefix } from './redis-helper.js';
import { channelCapabilities } from '../../adapters/capabilities.js';

const PIN = '2468';
const policy = new AccessPolicy({
  roles: { teller: { flows: ['pay', 'request'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '1000000' } } },
  users: { ussd: { '*': { role: 'teller', pin: hashPin(PIN) } }, telegram: { '*': { role: 'teller' } }, slack: {} },
});

/** Fake services: a known payee, the PIN checked against PIN, a spend that `limit` may refuse, a payment made. */
function services(options: { limit?: boolean; held?: Promise<void> } = {}): Partial<FlowCalls> {
  return {
    lookupContact: async () => ({ known: true, registered: true, firstName: 'Mary', lastName: 'Akello' }),
    verifyPin: async ({ pin }) => {
      if (pin !== PIN) throw { code: 'pin_wrong' };
    },
    reserveSpend: async () => {
      await options.held;
      if (options.limit) throw { code: 'limit_exceeded' };
    },
    createPayment: async () => ({ id: 'pay-1', state: 'new' }),
  };
}

const prefix = uniquePrefix('transitions');
const stores: RedisStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await inspector(prefix).cleanup();
});

let clock = Date.parse('2026-11-20T08:00:00Z');
/** Each reading of the clock is a second later: every move has its own time. */
const tick = () => (clock += 1000);

function engine(store: Store, moves: FlowTransition[], changes: Partial<EngineOptions> = {}) {
  return createEngine({
    store,
    channels: channelCapabilities,
    services: services(),
    policy,
    flows,
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    // A delivery's deadline counts from its arrival, and its clock moves a second at each reading: an hour is
    // never reached within one delivery.
    deadlineMs: { ussd: 3_600_000, telegram: 3_600_000, slack: 3_600_000 },
    logger: createLogger('silent'),
    now: tick,
    onTransition: (move) => moves.push(move),
    ...changes,
  });
}

let numbers = 0;
function ussd() {
  const phone = `+2567720${String(++numbers).padStart(5, '0')}`;
  let hop = 0;
  const session = `s-${numbers}`;
  return {
    phone,
    msg: (fields: Partial<Inbound> = {}): Inbound => ({
      channel: 'ussd',
      conversationId: phone,
      userId: phone,
      phoneNumber: phone,
      messageId: `${session}:${hop++}`,
      ...fields,
    }),
  };
}

/** The moves as `from -> to (end)`, for reading. */
const path = (moves: FlowTransition[]) =>
  moves.map((m) => `${m.flow}:${m.from ?? '∅'}->${m.to ?? '∅'}${m.end ? ` (${m.end})` : ''}`);

/** Dial, pay, mobile money, a known number, 5000: at the summary. */
async function toSummary(e: ReturnType<typeof engine>, msg: ReturnType<typeof ussd>['msg']) {
  await e.handle(msg({ newSession: true }));
  await e.handle(msg({ choice: 'pay' }));
  await e.handle(msg({ choice: 'money' }));
  await e.handle(msg({ text: '0772999001' }));
  await e.handle(msg({ text: '5000' }));
}

describe('the engine tells the funnel every move of a run', () => {
  it('through every step of a USSD payment, service calls included, each with when its step was entered', async () => {
    const moves: FlowTransition[] = [];
    const e = engine(new MemoryStore(), moves);
    const { msg, phone } = ussd();
    await toSummary(e, msg);
    await e.handle(msg({ choice: 'confirm' }));
    expect((await e.handle(msg({ text: PIN }))).final).toBe(true);
    expect(path(moves)).toEqual([
      'menu:∅->choosing',
      'menu:choosing->flowChosen (done)',
      'pay:∅->loadingPayees',
      'pay:loadingPayees->choosingKind',
      'pay:choosingKind->awaitingPhone',
      'pay:awaitingPhone->lookingUpContact',
      'pay:lookingUpContact->awaitingAmount',
      'pay:awaitingAmount->checkingAmount',
      'pay:checkingAmount->confirming',
      'pay:confirming->checkingRepeat',
      'pay:checkingRepeat->awaitingPin',
      'pay:awaitingPin->verifyingPin',
      'pay:verifyingPin->reserving',
      'pay:reserving->submitting',
      'pay:submitting->done (paid)',
    ]);
    expect(new Set(moves.map((m) => m.channel))).toEqual(new Set(['ussd']));
    const payRuns = new Set(moves.filter((m) => m.flow === 'pay').map((m) => m.runId));
    expect(payRuns.size).toBe(1);
    // Each move but a run's first says when the step it leaves was entered: the time of the move into it.
    for (const [i, m] of moves.entries()) {
      if (!m.from) continue;
      const into = moves.slice(0, i).findLast((p) => p.runId === m.runId && p.to === m.from)!;
      expect(m.enteredAt, `${m.from}`).toBe(into.at);
      expect(m.at).toBeGreaterThan(m.enteredAt!);
    }
    // Nothing of the user's (number, PIN, amount): names of steps and flows, a random run id and times only.
    for (const m of moves) {
      expect(
        Object.keys(m).every((k) => ['flow', 'channel', 'runId', 'from', 'to', 'end', 'at', 'enteredAt'].includes(k)),
      ).toBe(true);
      expect([m.flow, m.channel, m.from, m.to, m.end].filter(Boolean).join(' ')).toMatch(/^[A-Za-z ]+$/);
      expect(m.runId).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(JSON.stringify(moves)).not.toContain(phone.slice(4));
    await e.drain();
  });

  it('a wrong PIN goes back to the PIN step; a refused spend fails at reserving', async () => {
    const moves: FlowTransition[] = [];
    const e = engine(new MemoryStore(), moves, { services: services({ limit: true }) });
    const { msg } = ussd();
    await toSummary(e, msg);
    await e.handle(msg({ choice: 'confirm' }));
    await e.handle(msg({ text: '0000' }));
    await e.handle(msg({ text: PIN }));
    expect(path(moves).slice(-5)).toEqual([
      'pay:awaitingPin->verifyingPin',
      'pay:verifyingPin->awaitingPin',
      'pay:awaitingPin->verifyingPin',
      'pay:verifyingPin->reserving',
      'pay:reserving->done (refused)',
    ]);
    await e.drain();
  });

  it('a run left for a new dial, or expired, is abandoned at its step', async () => {
    const moves: FlowTransition[] = [];
    let now = Date.parse('2026-11-20T09:00:00Z');
    const e = engine(new MemoryStore(), moves, { now: () => now });
    const first = ussd();
    await e.handle(first.msg({ newSession: true }));
    await e.handle(first.msg({ choice: 'pay' }));
    await e.handle(first.msg({ choice: 'money' }));
    now += 30_000;
    await e.handle(first.msg({ newSession: true }));
    expect(moves.filter((m) => m.end === 'abandoned').map((m) => [m.flow, m.from, m.at - m.enteredAt!])).toEqual([
      ['pay', 'awaitingPhone', 30_000],
    ]);

    const second = ussd();
    await e.handle(second.msg({ newSession: true }));
    await e.handle(second.msg({ choice: 'pay' }));
    now += 601_000;
    await e.handle(second.msg({ choice: 'money' }));
    expect(path(moves.filter((m) => m.end === 'abandoned'))).toEqual([
      'pay:awaitingPhone->∅ (abandoned)',
      'pay:choosingKind->∅ (abandoned)',
    ]);
    await e.drain();
  });

  it('a gateway ending the session counts where the flow waited, only for that session and a waiting flow', async () => {
    const moves: FlowTransition[] = [];
    const held = gate<void>();
    const e = engine(new MemoryStore(), moves, {
      services: services({ held: held.promise }),
      deadlineMs: { ussd: 50, telegram: 50, slack: 50 },
    });
    const { msg, phone } = ussd();
    const who = { channel: 'ussd' as const, conversationId: phone, userId: phone };
    await toSummary(e, msg);
    expect(await e.sessionEnded(who, () => false)).toEqual({
      counted: false,
      reason: "not the conversation's current session",
    });
    expect(moves.some((m) => m.end === 'abandoned')).toBe(false);
    expect(await e.sessionEnded(who, () => true)).toEqual({ counted: true });
    expect(moves.at(-1)).toMatchObject({ flow: 'pay', from: 'confirming', end: 'abandoned', channel: 'ussd' });
    // While its service call is out (past the deadline: "processing"), the run is not abandoned.
    await e.handle(msg({ choice: 'confirm' }));
    await e.handle(msg({ text: PIN }));
    const before = moves.length;
    expect(await e.sessionEnded(who, () => true)).toEqual({ counted: false, reason: 'a service call is running' });
    expect(moves).toHaveLength(before);
    held.open();
    await e.drain();
    // Ended on its final screen: nothing to abandon.
    expect(await e.sessionEnded(who, () => true)).toEqual({ counted: false, reason: 'no flow in progress' });
  });

  it('on Redis, a step entered on one engine and left on another keeps its time', async () => {
    const store = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
    const other = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
    stores.push(store, other);
    const moves: FlowTransition[] = [];
    const a = engine(store, moves);
    const b = engine(other, moves);
    const { msg } = ussd();
    await a.handle(msg({ newSession: true }));
    await a.handle(msg({ choice: 'pay' }));
    await b.handle(msg({ choice: 'money' }));
    const entered = moves.find((m) => m.to === 'choosingKind')!;
    const left = moves.find((m) => m.from === 'choosingKind')!;
    expect(left.enteredAt).toBe(entered.at);
    expect(left.runId).toBe(entered.runId);
    await Promise.all([a.drain(), b.drain()]);
  });
});
