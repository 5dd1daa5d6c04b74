/**
 * Runs a flow live for its tests: fake services bound through
 * provideServices record every call and either answer at once (an outcome given up front) or wait until
 * the test settles them (to stop a flow in a busy state, persist it and restore it). Also replays a path
 * found by xstate/graph (the model) on such a live actor (the implementation).
 */
import { expect } from 'vitest';
import { createActor, type AnyMachineSnapshot, type AnyStateMachine, type EventObject } from 'xstate';
import type { StatePath } from 'xstate/graph';
import { provideServices, serviceActors } from '../../flows/actors.js';
import type { FlowCalls, CallName } from '../../flows/calls.js';
import type { FlowEvent, FlowInput, ServiceFailure } from '../../flows/types.js';
import { sampleInput } from './coverage.js';

/** How a call ends: resolved with an output, or rejected with an error (a ServiceFailure). */
export type Outcome = { output: unknown } | { error: unknown };

/** One call a fake service received. */
export interface Call {
  service: CallName;
  input: Record<string, unknown>;
}

export interface LiveOptions {
  /** Changes to the sample FlowInput. */
  input?: Partial<FlowInput>;
  /** A persisted snapshot to restore instead of starting fresh. */
  snapshot?: unknown;
  /** Services answering at once, with an outcome or a function of the call's input. Others wait for settle(). */
  answers?: Partial<Record<CallName, Outcome | ((input: Record<string, unknown>) => Outcome)>>;
}

/** A live flow. */
export interface Live {
  /** Every call made, in order. */
  calls: Call[];
  snapshot(): AnyMachineSnapshot;
  /** Sends one event and returns the snapshot once the flow is idle. */
  send(event: FlowEvent): Promise<AnyMachineSnapshot>;
  /** Settles the oldest waiting call of `service` and returns the snapshot once the flow is idle. */
  settle(service: CallName, outcome: Outcome): Promise<AnyMachineSnapshot>;
  /** The persisted snapshot through a JSON round trip, as the store would keep it. */
  persisted(): unknown;
  stop(): void;
}

/** The events the engine sends (flows/types.ts). */
export const chosen = (id: string): FlowEvent => ({ type: 'CHOSEN', id });
export const answered = (value: string): FlowEvent => ({ type: 'ANSWERED', value });
export const BACK: FlowEvent = { type: 'BACK' };

/** Each path, replayed live with {@link replay}, reaches the model's state and context at every step. */
export async function expectReplaysFollow(
  machine: AnyStateMachine,
  paths: Array<StatePath<AnyMachineSnapshot, EventObject>>,
  input: Partial<FlowInput> = {},
): Promise<void> {
  for (const path of paths) {
    for (const step of await replay(machine, path, input)) {
      expect(step.live.value, JSON.stringify(step.event)).toEqual(step.model.value);
      expect(step.live.context).toEqual(step.model.context);
    }
  }
}

/** A ServiceFailure outcome. */
export const failure = (code: ServiceFailure['code'], extra: Partial<ServiceFailure> = {}): Outcome => ({
  error: { code, ...extra },
});

/** Lets every settled promise and the actors it wakes run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Held extends Call {
  resolve: (output: unknown) => void;
  reject: (error: unknown) => void;
}

/** Starts (or restores) the machine with recording fakes of every service. */
export function live(machine: AnyStateMachine, options: LiveOptions = {}): Live {
  const calls: Call[] = [];
  const held: Held[] = [];
  const fake = (service: CallName) => (input: Record<string, unknown>) =>
    new Promise((resolve, reject) => {
      calls.push({ service, input });
      const given = options.answers?.[service];
      const outcome = typeof given === 'function' ? given(input) : given;
      if (!outcome) held.push({ service, input, resolve, reject });
      else if ('output' in outcome) resolve(outcome.output);
      else reject(outcome.error);
    });
  const services = Object.fromEntries((Object.keys(serviceActors) as CallName[]).map((name) => [name, fake(name)]));
  const actor = createActor(
    machine.provide({ actors: provideServices(services as unknown as Partial<FlowCalls>) }),
    options.snapshot ? { snapshot: options.snapshot as never } : { input: sampleInput(options.input) },
  );
  actor.start();
  const snapshot = () => actor.getSnapshot() as AnyMachineSnapshot;

  /** Runs until the flow waits for the user, has ended, or waits on a held call. */
  const idle = async (): Promise<AnyMachineSnapshot> => {
    for (let round = 0; round < 100; round++) {
      await flush();
      if (!snapshot().hasTag('busy') || held.length > 0) return snapshot();
    }
    throw new Error(`the flow stays busy in ${JSON.stringify(snapshot().value)}`);
  };
  return {
    calls,
    snapshot,
    async send(event) {
      await idle();
      actor.send(event);
      return idle();
    },
    async settle(service, outcome) {
      await idle();
      const index = held.findIndex((h) => h.service === service);
      if (index < 0)
        throw new Error(`no ${service} call is waiting (calls: ${calls.map((c) => c.service).join(', ')})`);
      const [call] = held.splice(index, 1);
      if ('output' in outcome) call!.resolve(outcome.output);
      else call!.reject(outcome.error);
      return idle();
    },
    persisted: () => JSON.parse(JSON.stringify(actor.getPersistedSnapshot())),
    stop: () => actor.stop(),
  };
}

/**
 * Replays a path of the model on a live actor: user events are sent as they are; an invoke's done or
 * error event settles the live call of the same service with the same outcome. Returns the model's and
 * the live snapshot after each step, for the caller to compare.
 */
export async function replay(
  machine: AnyStateMachine,
  path: StatePath<AnyMachineSnapshot, EventObject>,
  input: Partial<FlowInput> = {},
): Promise<Array<{ event: EventObject; model: AnyMachineSnapshot; live: AnyMachineSnapshot }>> {
  const flow = live(machine, { input });
  const compared: Array<{ event: EventObject; model: AnyMachineSnapshot; live: AnyMachineSnapshot }> = [];
  for (let i = 1; i < path.steps.length; i++) {
    const { event, state } = path.steps[i]!;
    const settled = /^xstate\.(done|error)\.actor\./.exec(event.type);
    let after: AnyMachineSnapshot;
    if (settled) {
      const child = (path.steps[i - 1]!.state.children as Record<string, { src?: unknown }>)[
        (event as { actorId?: string }).actorId ?? ''
      ];
      const outcome =
        settled[1] === 'done'
          ? { output: (event as { output?: unknown }).output }
          : { error: (event as { error?: unknown }).error };
      after = await flow.settle(child?.src as CallName, outcome);
    } else {
      after = await flow.send(event as FlowEvent);
    }
    compared.push({ event, model: state, live: after });
  }
  flow.stop();
  return compared;
}
