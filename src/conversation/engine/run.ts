/**
 * What a run is to the parts of the runner (runner.ts): the options they share, the run a delivery starts
 * (RunStart), a delivery waiting for one (Waiter) and its answer (Answered), the handle of a run going on in
 * this process (LocalRun), and what a money-moving call carries (its ref). Types and two small readings only:
 * how a run is taken, executed, waited for or taken over is in the modules named for each (lease.ts,
 * execution.ts, deadline.ts, take-over.ts).
 */
import type {
  Invocation,
  FlowEnd,
  FlowRuntime,
  FlowTransition,
  StoredFlow,
  StepContext,
} from '../flow/flow-runtime.js';
import type { Lang } from '../../../flows/types.js';
import type { Logger } from '../../log.js';
import type { Store } from '../../store/types.js';
import type { Address, Channel, ChannelCapabilities, Participant, Prompt } from '../types.js';
import type { Answers } from './answers.js';
import type { Stored } from './ledger.js';
import type { RecordCache } from './record-cache.js';

export interface RunnerOptions {
  /** The process handed its runs on (Runner.handOn): their leases are neither renewed nor fresh. Default never. */
  handedOn?: () => boolean;
  store: Store;
  records: RecordCache;
  runtime: FlowRuntime;
  answers: Answers;
  /** The StepContext of a conversation's user (the FlowInput of a flow a run's outcome starts). */
  context(participant: Participant): StepContext;
  /** What a channel can do, as its adapter declares it (EngineOptions.channels). */
  capabilitiesOf(channel: Channel): ChannelCapabilities;
  /** Per channel, how long a delivery waits for a run before it is answered "processing". */
  deadlineOf(channel: Channel): number;
  /** Lifetime of a run's lease (EngineOptions.runLeaseMs). */
  leaseMs: number;
  /** How often the open runs are swept for leases that expired (EngineOptions.sweepEveryMs). */
  sweepEveryMs: number;
  onLateOutcome?: (address: Address, prompt: Prompt) => void | Promise<void>;
  onFlowEnd?: (end: FlowEnd) => void;
  /** Told of the screen that answered a money-moving call, once written (EngineOptions.onMoneyAnswer). */
  onMoneyAnswer?: (answer: MoneyAnswer) => void;
  /** The short ref of our ref, once its intent is written (EngineOptions.shortRefOf). Default: none. */
  shortRefOf?: (ref: string) => Promise<string | undefined>;
  /**
   * Gives back the spend reserved under a payment's key when its run was lost before the call (the access
   * policy's giveBackSpend, wherever it keeps totals). Default: nothing given back.
   */
  giveBack?: (ref: string) => Promise<unknown>;
  /**
   * Clock in milliseconds: deadlines, the lease's age, the times of the run's moves between steps. The runner
   * reads no other clock (its waits are timers, so tests run it on fake time).
   */
  now: () => number;
  /** Told of each move of the run between steps once its outcome is written (EngineOptions.onTransition). */
  onTransition?: (transition: FlowTransition) => void;
  logger: Logger;
}

/** A delivery waiting for the run of its conversation, and what its answer needs. */
export interface Waiter {
  key: string;
  participant: Participant;
  /** Its ledger id. */
  id: string;
  lang: Lang;
  /** Lines shown above its answer (the pending outcomes a new channel session shows). */
  notes: string[];
  /** Its channel's state for an answer (TurnEngine), kept with the conversation while it is the newest delivery. */
  after?: (prompt: Prompt) => unknown;
  /**
   * When its channel's deadline passes (Delivery.answerBy: from when the delivery began, a PIN check's time
   * included). Default: the channel's deadline from when the wait begins.
   */
  answerBy?: number;
}

/** An answer, and the channel state kept with it. */
export interface Answered {
  prompt: Prompt;
  state: unknown;
}

/** A run to start: the caller holds its lease and wrote its id in the record. */
export interface RunStart {
  key: string;
  participant: Participant;
  token: string;
  /** When the lease was asked for (RunnerOptions.now, before the command went out): it lasts leaseMs from then at least. */
  leasedAt: number;
  /** The busy stored flow to run (live: a secret state reached by a call is run from memory, never stored). */
  storedFlow: StoredFlow;
  /** The record as written with the run's id. */
  stored: Stored;
  /** The delivery that started the run, when it waits in this process: its answer carries its notes. */
  starter?: Waiter;
}

/** A run going on in this process: a handle to wait on. The lease, not this, is what makes it the only one. */
export interface LocalRun {
  token: string;
  /** The run has its outcome and is writing it: a waiter at its deadline waits for that write (a round trip). */
  settling: boolean;
  /** Settles once the outcome is written, or the run stopped without: what waiters wait for. */
  settled: Promise<void>;
  /** Settles when the run stopped: its outcome written (and delivered late), lost to another run, or failed. */
  stopped: Promise<void>;
}

/** The screen that answered a money-moving call (EngineOptions.onMoneyAnswer). */
export interface MoneyAnswer {
  /** Our ref: the call's Duplicate-Check-Key. */
  ref: string;
  channel: Channel;
  conversationId: string;
  text: string;
}

/** Attempts of a compare-and-set when other writers keep winning. */
export const CAS_ATTEMPTS = 5;

/** The stored flow waits in a money state (a money-moving call may have reached the service). */
export const isMoneyRun = (o: Pick<RunnerOptions, 'runtime'>, storedFlow: StoredFlow | undefined): boolean =>
  storedFlow !== undefined && o.runtime.isMoneyFlow(storedFlow);

/** The Duplicate-Check-Key a money-moving invocation carries in its input, if any. */
export function refOf(invocation: Invocation): string | undefined {
  const input = invocation.input as { duplicateCheckKey?: unknown } | undefined;
  return typeof input?.duplicateCheckKey === 'string' && input.duplicateCheckKey !== ''
    ? input.duplicateCheckKey
    : undefined;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
