/**
 * Runs the data and pin flows live for their tests, with fake services bound through provideServices
 * whose calls wait until the test settles them; and replays a path found by xstate/graph (the model) on
 * such a live actor (the implementation), settling each call with the outcome the path took.
 */
import { createActor, type AnyActorRef, type AnyMachineSnapshot, type AnyStateMachine, type EventObject } from 'xstate';
import type { StatePath } from 'xstate/graph';
import { provideServices } from '../../flows/actors.js';
import type { FlowServices, ServiceName } from '../../flows/services.js';
import type { FlowEvent, FlowInput } from '../../flows/types.js';
import { sampleInput } from './coverage.js';

/** One call a fake service received. */
export interface Call {
  service: ServiceName;
  input: Record<string, unknown>;
}

/** A call waiting for the test to settle it. */
interface Pending extends Call {
  resolve: (output: unknown) => void;
  reject: (error: unknown) => void;
}

/** A live flow whose service calls wait until the test settles them. */
export interface Live {
  actor: AnyActorRef;
  /** Every call made, in order. */
  calls: Call[];
  snapshot(): AnyMachineSnapshot;
  /** Sends one event. */
  send(event: FlowEvent): void;
  /** Settles the oldest unsettled call of `service` and lets the flow react. */
  settle(service: ServiceName, outcome: { output: unknown } | { error: unknown }): Promise<AnyMachineSnapshot>;
}

const SERVICES: ServiceName[] = [
  'verifyPin',
  'reserveSpend',
  'listDataBundles',
  'purchaseData',
  'listPinBundles',
  'validateCandidate',
  'purchasePin',
];

/** Lets every settled promise and the actors it wakes run. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Starts the machine with held fakes of every vending, PIN and spend service: each call is recorded and
 * waits for {@link Live.settle}. `snapshot` restores a persisted snapshot instead of starting fresh.
 */
export function live(machine: AnyStateMachine, input: Partial<FlowInput> = {}, snapshot?: unknown): Live {
  const calls: Call[] = [];
  const pending: Pending[] = [];
  const fake = (service: ServiceName) => (callInput: Record<string, unknown>) =>
    new Promise((resolve, reject) => {
      calls.push({ service, input: callInput });
      pending.push({ service, input: callInput, resolve, reject });
    });
  const services = Object.fromEntries(SERVICES.map((name) => [name, fake(name)])) as unknown as Partial<FlowServices>;
  const actor = createActor(machine.provide({ actors: provideServices(services) }), snapshot ? { snapshot: snapshot as never } : { input: sampleInput(input) });
  actor.start();
  return {
    actor,
    calls,
    snapshot: () => actor.getSnapshot() as AnyMachineSnapshot,
    send: (event) => actor.send(event),
    async settle(service, outcome) {
      await flush();
      const index = pending.findIndex((p) => p.service === service);
      if (index < 0) throw new Error(`no ${service} call is waiting (calls: ${calls.map((c) => c.service).join(', ')})`);
      const [call] = pending.splice(index, 1);
      if ('output' in outcome) call!.resolve(outcome.output);
      else call!.reject(outcome.error);
      await flush();
      return actor.getSnapshot() as AnyMachineSnapshot;
    },
  };
}

/**
 * Replays a path of the model on a live actor: user events are sent as they are; an invoke's done or
 * error event settles the live call of the same service with the same outcome. Returns the live
 * snapshot after each step, beside the model's, for the caller to compare.
 */
export async function replay(
  machine: AnyStateMachine,
  path: StatePath<AnyMachineSnapshot, EventObject>,
  input: Partial<FlowInput>,
): Promise<Array<{ model: AnyMachineSnapshot; live: AnyMachineSnapshot }>> {
  const flow = live(machine, input);
  const compared: Array<{ model: AnyMachineSnapshot; live: AnyMachineSnapshot }> = [];
  for (let i = 1; i < path.steps.length; i++) {
    const { event, state } = path.steps[i]!;
    const settled = /^xstate\.(done|error)\.actor\./.exec(event.type);
    if (settled) {
      const before = path.steps[i - 1]!.state;
      const child = (before.children as Record<string, { src?: unknown }>)[(event as { actorId?: string }).actorId ?? ''];
      const outcome = settled[1] === 'done' ? { output: (event as { output?: unknown }).output } : { error: (event as { error?: unknown }).error };
      await flow.settle(child?.src as ServiceName, outcome);
    } else {
      await flush();
      flow.send(event as FlowEvent);
      await flush();
    }
    compared.push({ model: state, live: flow.snapshot() });
  }
  flow.actor.stop();
  return compared;
}
