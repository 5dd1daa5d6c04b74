/**
 * A run's calls: the invokes of a busy flow, one after another until it waits for the user again, and what the
 * run carries from one to the next (Progress). Before each further call the busy state is stored and the lease
 * is still ours; before a money-moving call its state is held by a replica. A run that finds the conversation
 * moved to another run stops there (and says that nothing was sent when the write that started it is gone).
 * Not here: the outcome written and told (run-outcome.ts), a run that fails (run-failure.ts), the record's
 * writes (run-record.ts), the lease (lease.ts).
 */
import type { AnyMachineSnapshot } from 'xstate';
import type { UserProfile } from '../../../flows/types.js';
import { logged } from '../../store/chat-address.js';
import {
  isBusy,
  isMoney,
  isSecret,
  type FlowEnd,
  type FlowTransition,
  type StepContext,
  type StoredFlow,
} from '../flow/flow-runtime.js';
import type { Stored } from './ledger.js';
import type { HeldLease } from './lease.js';
import { nothingSent } from './late-outcome.js';
import { isMoneyRun, refOf, type RunnerOptions, type RunStart } from './run.js';
import { durable, persist, startLost } from './run-record.js';

/** What a run carries from call to call, and what its outcome (or its failure) is written from. */
export interface Progress {
  /** The record as this run last wrote it. */
  current: Stored;
  storedFlow: StoredFlow;
  profile: UserProfile;
  /** A money-moving call may have reached the service (a call in a money state, or the stored state is one). */
  money: boolean;
  called: boolean;
  /** This run made a call in a money state. */
  moneyCalled: boolean;
  /** The Duplicate-Check-Key of the money-moving call this run made, if it made one. */
  moneyRef?: string;
  ended: FlowEnd[];
  moves: FlowTransition[];
  remember: Partial<UserProfile>;
  /** The StepContext of the conversation's user (its time is each call's). */
  readonly ctx: StepContext;
}

/** A run's progress before its first call: the record and stored flow it starts from. */
export function progressOf(o: RunnerOptions, start: RunStart): Progress {
  const current = start.stored;
  return {
    current,
    storedFlow: start.storedFlow,
    profile: current.record.profile ?? { lang: 'en' },
    money: isMoneyRun(o, start.storedFlow),
    called: false,
    moneyCalled: false,
    ended: [],
    moves: [],
    remember: {},
    ctx: o.context(start.participant),
  };
}

/**
 * The flow's calls, each checked before it goes out, until the flow waits for the user (true), or the
 * conversation moved to another run (false: this run stops, having said what it must).
 */
export async function callUntilWaiting(
  o: RunnerOptions,
  start: RunStart,
  run: Progress,
  lease: HeldLease,
): Promise<boolean> {
  for (;;) {
    const snapshot = o.runtime.restore(run.storedFlow);
    if (!isBusy(snapshot)) return true;
    if (run.called && !(await stillOurs(o, start, run, snapshot, lease))) return false;
    if (isMoney(snapshot) && !(await heldBeforeMoney(o, start, run, snapshot))) return false;
    await callOnce(o, run, snapshot);
  }
}

/**
 * Before the next call: the busy state stored (unless it holds a secret) and the lease still ours (without
 * asking while it is fresh). False when either says the conversation is no longer this run's.
 */
async function stillOurs(
  o: RunnerOptions,
  start: RunStart,
  run: Progress,
  snapshot: AnyMachineSnapshot,
  lease: HeldLease,
): Promise<boolean> {
  const { key, token } = start;
  const [kept, held] = await Promise.all([
    isSecret(snapshot) ? run.current : persist(o, key, token, run.current, run.storedFlow),
    lease.fresh() || lease.renew(),
  ]);
  if (kept && held) {
    run.current = kept;
    return true;
  }
  const lost = !kept && !run.money && (await startLost(o, key, run.current.version));
  return stop(
    o,
    start,
    run,
    snapshot,
    lost,
    'engine: the conversation moved to another run; stopped before the next service call',
  );
}

/**
 * Before a money-moving call, the state that makes it is where a failover cannot drop it: else a failover after
 * the call could put the conversation back before it, with no run left to finish it (its holder gone), its
 * intent journalled and nothing telling the person anything. False when the conversation moved.
 */
async function heldBeforeMoney(
  o: RunnerOptions,
  start: RunStart,
  run: Progress,
  snapshot: AnyMachineSnapshot,
): Promise<boolean> {
  const held = await durable(o, start.key, start.token, run.current.version);
  if (held === 'ours') return true;
  // Started by a delivery here (no run before it) and no money call made yet: nothing was sent.
  const lost = held === 'lost' && !run.moneyCalled && !start.stored.record.run?.takeovers;
  return stop(
    o,
    start,
    run,
    snapshot,
    lost,
    'engine: the conversation moved to another run; stopped before the money-moving call',
  );
}

/**
 * The run stops before a call: when the write that started it is gone (`lost`), saying that nothing was sent;
 * else the conversation moved to another run, logged as `moved`.
 */
async function stop(
  o: RunnerOptions,
  start: RunStart,
  run: Progress,
  snapshot: AnyMachineSnapshot,
  lost: boolean,
  moved: string,
): Promise<false> {
  if (lost) await nothingSent(o, start.participant, run.storedFlow, snapshot, run.profile.lang);
  else o.logger.warn(logged(start.participant), moved);
  return false;
}

/** One call of the busy state `snapshot`, and the flow's step on its outcome. */
async function callOnce(o: RunnerOptions, run: Progress, snapshot: AnyMachineSnapshot): Promise<void> {
  const { runtime } = o;
  const invocation = runtime.invocation(run.storedFlow.flow, snapshot);
  if (isMoney(snapshot)) run.moneyRef = refOf(invocation) ?? run.moneyRef;
  run.money ||= isMoney(snapshot);
  run.moneyCalled ||= isMoney(snapshot);
  run.called = true;
  const outcome = await runtime.call(invocation);
  const step = runtime.resolve(
    run.storedFlow,
    outcome,
    { profile: run.profile, remember: {}, notes: [] },
    { ...run.ctx, at: o.now() },
  );
  run.storedFlow = step.storedFlow;
  run.profile = step.profile;
  run.remember = { ...run.remember, ...step.remember };
  run.ended.push(...(step.ended ?? []));
  run.moves.push(...(step.moves ?? []));
}
