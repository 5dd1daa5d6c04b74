/**
 * A conversation's flow as stored (the `session` of its record) and the pure steps over it, each one xstate's
 * pure transition with the machine's one actor scope (./actor-scope.ts: as `initialTransition()` and
 * `transition()`, without a new scope per call): start a flow, send it an event,
 * feed it the outcome of its invoke, follow a finished flow to the next one. Nothing here runs a service on
 * its own: a step into a `busy` state leaves the invoke it asks for as an unstarted child of the snapshot
 * (the spawn action xstate returns, which no one executes), and the runner calls the service that invoke names
 * (flows/calls.ts) with the child's input ({@link FlowRuntime.call}) and feeds the done or error event back
 * ({@link FlowRuntime.resolve}). A restored snapshot holds the same child, so a run taken over repeats the
 * call from the stored snapshot (flows keep idempotency keys in context).
 */
import { createActor, type AnyActorRef, type AnyMachineSnapshot, type AnyStateMachine, type EventObject } from 'xstate';
import { finalOutcome } from '../../../flows/outcome.js';
import type {
  FlowEvent,
  FlowId,
  FlowInput,
  FlowModule,
  FlowOutcome,
  FlowOutput,
  Text,
  UserProfile,
} from '../../../flows/types.js';
import type { FlowCalls, CallName } from '../../../flows/calls.js';
import { flowShape, hasState, requiredContextKeys } from '../../../flows/shape.js';
import { migrateValue, stateLabel, type FlowMigrations } from '../../../flows/migrations/index.js';
import { initialStep, step as pureStep } from './actor-scope.js';
import { currentView } from './render.js';
import type { Channel } from '../types.js';

export interface StoredFlow {
  flow: FlowId;
  runId: string;
  /** The machine's persisted snapshot (JSON). */
  snapshot: unknown;
  /** Milliseconds since the epoch after which the conversation counts as expired. */
  expiresAt: number;
  /** The flow showed its final screen: the next message starts the menu. */
  ended: boolean;
  /** An engine screen shown instead of the flow's (a cancelled flow). */
  notice?: Text;
  /** When the flow entered its current step (ms since the epoch): the funnel's time per step. */
  enteredAt?: number;
  /**
   * The shape of the machine that wrote the snapshot (flows/shape.ts). Absent in stored flows from before shapes
   * were written: read as any shape this release cannot vouch for ({@link FlowRuntime.admit}).
   */
  shape?: string;
  /**
   * The build that wrote it (FlowRuntimeOptions.build: ordered, later builds larger): a stored flow of a shape this
   * release does not know, written by a later build, is left alone ({@link FlowRuntime.admit}).
   */
  build?: number;
  /**
   * The stored step is a money-moving call's (tags `busy` and `money`): known without the machine, so a run whose
   * state a later release removed still finishes (its call and input are the snapshot's `children`).
   */
  money?: true;
}

/**
 * What a release does with a stored flow ({@link FlowRuntime.admit}), in this order: the same shape, or one
 * it can read (its state exists, its context has every key this machine starts with), or one a declared
 * migration (flows/migrations/) moves to a state that exists: `continue`, with the stored flow to use (a migrated
 * one carries this release's shape). A shape it cannot read, written by a later build: `newer` (the record is
 * left alone, never written over with this release's shape). Otherwise `updated`: the person is told the
 * service was updated, and the flow starts again (unless a money call may have reached the service: the run
 * finishes, runner.ts).
 */
export type Admission = { kind: 'continue'; storedFlow: StoredFlow } | { kind: 'newer' } | { kind: 'updated' };

/** What a FlowRuntime knows of the build it runs in. */
export interface FlowRuntimeOptions {
  /**
   * The build's place in the order of releases (src/conversation/flow/build.ts: when it was built, ms since the
   * epoch). Written into every stored flow; default 0 (older than any build).
   */
  build?: number;
  /** The declared migrations (flows/migrations/): per flow, per stored shape, old state -> new state. */
  migrations?: FlowMigrations;
}

/** What a flow run needs besides its machine: the FlowInput of any flow started. */
export interface StepContext {
  input(runId: string, profile: UserProfile): FlowInput;
  allowedFlows: FlowId[];
  /**
   * The flow a conversation starts with (a dial, a first message, Home): the menu, or Change PIN for a person
   * whose PIN was reset (they set their own before anything else).
   */
  home: FlowId;
  newRunId(): string;
  expiresAt: number;
  /** The channel and the time of this step (ms since the epoch), for the transitions it makes. */
  channel: Channel;
  at: number;
}

/** The result of a pure step: the stored flow to store, profile changes and notes shown above the prompt. */
export interface Step {
  storedFlow: StoredFlow;
  /** The profile with `remember` applied. */
  profile: UserProfile;
  /** What finished flows asked to remember, to merge into the stored profile. */
  remember: Partial<UserProfile>;
  notes: Text[];
  /** Flows this step finished or left, for metrics. */
  ended?: FlowEnd[];
  /** The moves between steps this step made, for the funnel (EngineOptions.onTransition). */
  moves?: FlowTransition[];
}

/** A flow run that ended: finished (reached its outcome) or abandoned (left, cancelled, expired), and where. */
export interface FlowEnd {
  flow: FlowId;
  outcome: 'finished' | 'abandoned';
  step: string;
}

/** Where a run is: its step and when it entered it (unknown for stored flows written before steps were timed). */
export interface StepMark {
  step: string;
  enteredAt?: number;
}

/**
 * A run moving between steps, for the funnel (src/ops/funnel.ts): plain data, nothing of the user's.
 * A run starts (no `from`), moves (`from` and `to`), reaches a final step (`to`, with `end` its outcome), or
 * stops where it is (no `to`; `end` says why: `abandoned` when the user left it, it expired or the
 * network ended it; `error` when the engine failed it).
 */
export interface FlowTransition {
  flow: FlowId;
  channel: Channel;
  /** The run (FlowInput.runId, random): lets a run left twice (a gateway report, then the next dial) count once. */
  runId: string;
  from?: string;
  to?: string;
  end?: FlowOutcome | 'abandoned' | 'error';
  /** When the move happened, ms since the epoch. */
  at: number;
  /** When `from` was entered, ms since the epoch (so `at - enteredAt` is the time spent there). */
  enteredAt?: number;
}

/** The move of a run from `from` to where `snapshot` is, or to its stop (`end`) when there is no snapshot. */
export function transition(
  run: Pick<StoredFlow, 'flow' | 'runId'>,
  ctx: Pick<StepContext, 'channel' | 'at'>,
  from: StepMark | undefined,
  to: AnyMachineSnapshot | { end: 'abandoned' | 'error' },
): FlowTransition {
  const move: FlowTransition = { flow: run.flow, channel: ctx.channel, runId: run.runId, at: ctx.at };
  if (from) {
    move.from = from.step;
    if (from.enteredAt !== undefined) move.enteredAt = from.enteredAt;
  }
  if (isStop(to)) {
    move.end = to.end;
    return move;
  }
  move.to = stepName(to);
  const end = finalOutcome(to);
  if (end) move.end = end;
  return move;
}

const isStop = (to: AnyMachineSnapshot | { end: 'abandoned' | 'error' }): to is { end: 'abandoned' | 'error' } =>
  (to as { end?: unknown }).end !== undefined;

/** A state value as a label: `awaitingAmount`, or `parent.child` for nested states. */
export function stepName(snapshot: AnyMachineSnapshot): string {
  return stateLabel(snapshot.value);
}

/**
 * A service call that did not happen because our own store failed before it (the record of a payment's intent
 * could not be written). Not the service's answer, so not the flow's to handle: {@link FlowRuntime.call} throws
 * it to the runner, which leaves a money-moving step to be taken over and repeated under the same key (an
 * earlier attempt under that key may have reached the service: ending the flow could make the user pay again).
 */
export class NotCalled extends Error {
  override name = 'NotCalled';
}

/** The service call a busy snapshot waits for: its invoke, not started. */
export interface Invocation {
  /** The invoke's id: its done and error events are `xstate.done.actor.<id>` and `xstate.error.actor.<id>`. */
  id: string;
  /** The service the invoke names (its `src`, one of flows/calls.ts). */
  service: CallName;
  /** The invoke's input, as the unstarted child holds it. */
  input: unknown;
}

/** What a stored snapshot leaves out when it holds just that (FlowRuntime.persist), put back on restore. */
const PERSISTED_DEFAULTS = { status: 'active', children: {}, historyValue: {} };

/** No own field (or none at all). */
function isEmpty(value: object | undefined): boolean {
  for (const field in value) if (Object.hasOwn(value, field)) return false;
  return true;
}

/** A persisted field holding what a restore puts back anyway. */
function isDefault(field: string, value: unknown): boolean {
  if (field === 'status') return value === PERSISTED_DEFAULTS.status;
  return field in PERSISTED_DEFAULTS && typeof value === 'object' && value !== null && isEmpty(value);
}

/**
 * The flows' machines and the services their invokes name. The machines keep their stub actors
 * (flows/actors.ts): an invoke is never started here, its child only holds the service's name and input.
 */
export class FlowRuntime {
  /** Restoring builds an actor: done once per stored flow object. */
  private readonly restored = new WeakMap<StoredFlow, AnyMachineSnapshot>();
  /** What {@link admit} said of a stored flow object (one that is not this release's shape). */
  private readonly admitted = new WeakMap<StoredFlow, Admission>();
  /** Each flow's shape, made once. */
  private readonly shapes = new Map<FlowId, string>();
  /** This build's place in the order of releases (FlowRuntimeOptions.build). */
  readonly build: number;
  private readonly migrations: FlowMigrations;

  constructor(
    private readonly flows: Partial<Record<FlowId, FlowModule>>,
    private readonly services: Partial<FlowCalls>,
    options: FlowRuntimeOptions = {},
  ) {
    this.build = options.build ?? 0;
    this.migrations = options.migrations ?? {};
  }

  /** The shape of `flow`'s machine (flows/shape.ts). */
  shape(flow: FlowId): string {
    let shape = this.shapes.get(flow);
    if (shape === undefined) {
      shape = flowShape(this.machine(flow));
      this.shapes.set(flow, shape);
    }
    return shape;
  }

  /**
   * What this release does with a stored flow ({@link Admission}): `continue` (with the stored flow to use),
   * `newer` or `updated`. Never throws.
   */
  admit(storedFlow: StoredFlow): Admission {
    if (this.has(storedFlow.flow) && storedFlow.shape === this.shape(storedFlow.flow))
      return { kind: 'continue', storedFlow };
    let admission = this.admitted.get(storedFlow);
    if (!admission) {
      admission = this.admitOther(storedFlow);
      this.admitted.set(storedFlow, admission);
    }
    return admission;
  }

  /** {@link admit} for a stored flow of another shape than this release's (or of a flow it does not have). */
  private admitOther(storedFlow: StoredFlow): Admission {
    if (storedFlow.build !== undefined && storedFlow.build > this.build) return { kind: 'newer' };
    if (!this.has(storedFlow.flow)) return { kind: 'updated' };
    if (this.readable(storedFlow)) return { kind: 'continue', storedFlow };
    const moves = storedFlow.shape === undefined ? undefined : this.migrations[storedFlow.flow]?.[storedFlow.shape];
    const snapshot = storedFlow.snapshot as { value?: unknown } | null;
    if (moves && typeof snapshot === 'object' && snapshot !== null) {
      const value = migrateValue(snapshot.value, moves);
      if (value !== undefined) {
        const migrated: StoredFlow = {
          ...storedFlow,
          snapshot: { ...snapshot, value },
          shape: this.shape(storedFlow.flow),
          build: this.build,
        };
        if (this.readable(migrated)) return { kind: 'continue', storedFlow: migrated };
      }
    }
    return { kind: 'updated' };
  }

  /** The stored flow's state exists in this release's machine and its context has every key the machine starts with. */
  private readable(storedFlow: StoredFlow): boolean {
    const stored = storedFlow.snapshot as { value?: unknown; context?: unknown } | null;
    if (typeof stored !== 'object' || stored === null) return false;
    const machine = this.machine(storedFlow.flow);
    if (!hasState(machine, stored.value)) return false;
    const context = stored.context;
    if (typeof context !== 'object' || context === null) return false;
    for (const key of requiredContextKeys(machine)) if (!(key in context)) return false;
    try {
      const snapshot = this.restoreNew(storedFlow);
      return snapshot.status !== 'error';
    } catch {
      return false;
    }
  }

  /** The stored flow can be stepped here: {@link admit} says `continue` with this very one. */
  readsAsIs(storedFlow: StoredFlow): boolean {
    const admission = this.admit(storedFlow);
    return admission.kind === 'continue' && admission.storedFlow === storedFlow;
  }

  /**
   * A money-moving call may have reached the service in the stored flow's step: its state is tagged `money` (read
   * from the machine when this release can, else from what the stored flow says of itself).
   */
  isMoneyFlow(storedFlow: StoredFlow): boolean {
    return this.readsAsIs(storedFlow) ? isMoney(this.restore(storedFlow)) : storedFlow.money === true;
  }

  /**
   * The service call a stored busy step waits for, read from the stored snapshot alone (its one active child:
   * the invoke's id, the service's name and its input), without the machine: how a run whose state this
   * release does not have still makes its call. Undefined when the snapshot holds none.
   */
  storedInvocation(storedFlow: StoredFlow): Invocation | undefined {
    const children = (storedFlow.snapshot as { children?: unknown } | null)?.children;
    if (typeof children !== 'object' || children === null) return undefined;
    for (const [id, child] of Object.entries(children as Record<string, unknown>)) {
      const { src, snapshot } = (child ?? {}) as { src?: unknown; snapshot?: { status?: unknown; input?: unknown } };
      if (typeof src !== 'string' || snapshot?.status !== 'active') continue;
      return { id, service: src as CallName, input: snapshot.input };
    }
    return undefined;
  }

  has(flow: FlowId): boolean {
    return this.flows[flow] !== undefined;
  }

  machine(flow: FlowId): AnyStateMachine {
    const module = this.flows[flow];
    if (!module) throw new Error(`flow ${flow} is not registered`);
    return module.machine as AnyStateMachine;
  }

  /**
   * The live snapshot of a stored flow (children created, none started). Only for a stored flow this release
   * reads ({@link admit}): one of another machine throws.
   */
  restore(storedFlow: StoredFlow): AnyMachineSnapshot {
    let snapshot = this.restored.get(storedFlow);
    if (!snapshot) {
      snapshot = this.restoreNew(storedFlow);
      if (snapshot.status === 'error') throw snapshot.error;
      this.restored.set(storedFlow, snapshot);
    }
    return snapshot;
  }

  private restoreNew(storedFlow: StoredFlow): AnyMachineSnapshot {
    const stored = { ...PERSISTED_DEFAULTS, ...(storedFlow.snapshot as object) };
    // An actor that is never started: it restores the snapshot and its children, and runs nothing.
    return createActor(this.machine(storedFlow.flow), {
      snapshot: stored as never,
    }).getSnapshot() as AnyMachineSnapshot;
  }

  /**
   * The snapshot as stored: xstate's persisted snapshot without what {@link PERSISTED_DEFAULTS} restores (an
   * active status, no children, no history: every step but a service call's) and without undefined fields.
   * Not deep-copied: the store serialises it on write, and flow contexts are only ever replaced by `assign`,
   * never changed in place, so sharing their objects with the live snapshot is safe.
   *
   * A snapshot without children or history (every step but a service call's) is taken as it is, without
   * xstate's getPersistedSnapshot, which walks the whole context looking for actors to replace by their ids:
   * our flows keep plain data in their context (nothing is spawned); test/conversation/flow-runtime.test.ts
   * checks the two agree.
   */
  persist(flow: FlowId, snapshot: AnyMachineSnapshot): unknown {
    if (isEmpty(snapshot.children) && isEmpty(snapshot.historyValue)) {
      const { value, context, status, output, error } = snapshot;
      return {
        value,
        context,
        ...(status !== 'active' ? { status } : {}),
        ...(output !== undefined ? { output } : {}),
        ...(error !== undefined ? { error } : {}),
      };
    }
    const persisted = this.machine(flow).getPersistedSnapshot(snapshot) as Record<string, unknown>;
    const stored: Record<string, unknown> = { value: persisted.value, context: persisted.context };
    for (const field in persisted) {
      const value = persisted[field];
      if (field === 'value' || field === 'context' || value === undefined || isDefault(field, value)) continue;
      stored[field] = value;
    }
    return stored;
  }

  /** Where the stored flow's run is. */
  mark(storedFlow: StoredFlow): StepMark {
    return { step: stepName(this.restore(storedFlow)), enteredAt: storedFlow.enteredAt };
  }

  /** Starts `flow` (the menu when it is not allowed or not registered, with a note saying so). */
  start(flow: FlowId, step: Omit<Step, 'storedFlow'>, ctx: StepContext): Step {
    const allowed = flow === 'menu' || ((ctx.allowedFlows.includes(flow) || flow === ctx.home) && this.has(flow));
    if (!allowed) return this.start('menu', { ...step, notes: [...step.notes, { key: 'common.flowNotAllowed' }] }, ctx);
    const runId = ctx.newRunId();
    const [snapshot] = initialStep(this.machine(flow), ctx.input(runId, step.profile));
    return this.follow(flow, runId, snapshot, step, ctx, undefined);
  }

  /** Sends one event to the stored flow (none: the screen is shown again). */
  send(storedFlow: StoredFlow, event: FlowEvent | undefined, step: Omit<Step, 'storedFlow'>, ctx: StepContext): Step {
    const current = this.restore(storedFlow);
    const snapshot = event ? this.next(storedFlow.flow, current, event) : current;
    return this.follow(storedFlow.flow, storedFlow.runId, snapshot, step, ctx, this.mark(storedFlow));
  }

  /** The invoke a busy snapshot of `flow` waits for (the one child still active); a busy state without one throws. */
  invocation(flow: FlowId, snapshot: AnyMachineSnapshot): Invocation {
    for (const [id, child] of Object.entries(snapshot.children as Record<string, AnyActorRef | undefined>)) {
      const state = child?.getSnapshot() as { status?: string; input?: unknown } | undefined;
      if (!child || state?.status !== 'active') continue;
      if (typeof child.src !== 'string') throw new Error(`flow ${flow} invokes an unnamed actor, not a service`);
      return { id, service: child.src as CallName, input: state.input };
    }
    throw new Error(`flow ${flow} is busy in ${stepName(snapshot)} with no service call`);
  }

  /**
   * Calls the service an invocation names with the child's input. Resolves to the event the flow takes next
   * (done, or error with what it threw; a service nobody provided fails as the machine's stub would). The
   * engine never stops it: a call is settled or taken over, never cancelled.
   */
  async call(invocation: Invocation): Promise<EventObject> {
    const { id, service, input } = invocation;
    try {
      const run = this.services[service] as ((input: unknown) => Promise<unknown>) | undefined;
      if (!run) throw new Error(`service ${service} not provided`);
      const output = await run.call(this.services, input);
      return { type: `xstate.done.actor.${id}`, output, actorId: id } as EventObject;
    } catch (error) {
      if (error instanceof NotCalled) throw error;
      return { type: `xstate.error.actor.${id}`, error, actorId: id } as EventObject;
    }
  }

  /**
   * The outcome of the stored flow's invoke (FlowRuntime.call) fed to its flow, followed to the next flow when it
   * finished.
   */
  resolve(storedFlow: StoredFlow, outcome: EventObject, step: Omit<Step, 'storedFlow'>, ctx: StepContext): Step {
    const snapshot = this.next(storedFlow.flow, this.restore(storedFlow), outcome);
    return this.follow(storedFlow.flow, storedFlow.runId, snapshot, step, ctx, this.mark(storedFlow));
  }

  /** The snapshot `event` takes `current` to (xstate's pure transition: the actions it returns run nowhere). */
  private next(flow: FlowId, current: AnyMachineSnapshot, event: EventObject): AnyMachineSnapshot {
    const [snapshot] = pureStep(this.machine(flow), current, event);
    return snapshot;
  }

  /**
   * A finished flow: remembers its `remember`, starts its `next`; without `next` its final screen stays
   * (the stored flow ends) or, when it has none, the menu starts.
   */
  private follow(
    flow: FlowId,
    runId: string,
    snapshot: AnyMachineSnapshot,
    previous: Omit<Step, 'storedFlow'>,
    ctx: StepContext,
    from: StepMark | undefined,
  ): Step {
    const moved = from?.step !== stepName(snapshot);
    const enteredAt = moved ? ctx.at : from.enteredAt;
    const storedFlow: StoredFlow = {
      flow,
      runId,
      snapshot: this.persist(flow, snapshot),
      expiresAt: ctx.expiresAt,
      ended: false,
      enteredAt,
      shape: this.shape(flow),
      build: this.build,
      ...(isMoney(snapshot) ? { money: true as const } : {}),
    };
    this.restored.set(storedFlow, snapshot);
    const moves = moved ? [...(previous.moves ?? []), transition(storedFlow, ctx, from, snapshot)] : previous.moves;
    if (snapshot.status !== 'done') return { ...previous, moves, storedFlow };
    const step = { ...previous, moves };
    const output = (snapshot.output ?? {}) as FlowOutput;
    // A flow other than the menu that hands back to the menu was left (backed out of), not finished.
    const outcome = flow !== 'menu' && output.next === 'menu' ? 'abandoned' : 'finished';
    const done: Omit<Step, 'storedFlow'> = {
      ...step,
      ended: [...(step.ended ?? []), { flow, outcome, step: stepName(snapshot) }],
    };
    const next: Omit<Step, 'storedFlow'> = output.remember
      ? {
          ...done,
          profile: { ...done.profile, ...output.remember },
          remember: { ...done.remember, ...output.remember },
        }
      : done;
    if (output.next) return this.start(output.next, next, ctx);
    if (currentView(snapshot)) {
      const ended = { ...storedFlow, ended: true };
      this.restored.set(ended, snapshot);
      return { ...next, storedFlow: ended };
    }
    return this.start('menu', next, ctx);
  }
}

/** The stored flow is running a service call. */
export function isBusy(snapshot: AnyMachineSnapshot): boolean {
  return snapshot.status === 'active' && snapshot.hasTag('busy');
}

/** The stored flow is making a money-moving call: once entered, the call may have reached the service. */
export function isMoney(snapshot: AnyMachineSnapshot): boolean {
  return isBusy(snapshot) && snapshot.hasTag('money');
}

/**
 * The stored flow is checking a secret (a PIN): never stored, run by the step into it (secret-check.ts
 * checkSecrets).
 */
export function isSecret(snapshot: AnyMachineSnapshot): boolean {
  return isBusy(snapshot) && snapshot.hasTag('secret');
}
