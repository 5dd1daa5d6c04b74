/**
 * A flow's shape: the version of a flow made from its machine, never a number kept by hand. Two builds whose
 * machine of a flow has the same states (their ids, recursively), the same events each state takes (the event
 * types of its transitions, a service call's done and error events among them) and the same keys in its
 * initial context have the same shape; a state renamed, removed or added, an event added or dropped, a context
 * field added to the start changes it. Labels, views, guards, actions and words do not: a snapshot stored by
 * one reads in the other.
 *
 * Stored in every conversation (flow-runtime.ts `StoredFlow.shape`) and every queued job that comes from a flow,
 * so a release reading them knows whether the machine that wrote them is its own (same shape), one it can read
 * or migrate (flows/migrations/), or one it must not touch (a newer build: `StoredFlow.build`). Pure: computed
 * from the machine's definition, the same in every process; `npm run flows:check` compares the shapes of two
 * commits with it.
 */
import { hash } from 'node:crypto';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import type { FlowId, FlowInput, FlowModule } from './types.js';

/**
 * The FlowInput a shape's initial context is made from: every field set, so a context key that depends on
 * the input counts. Nothing of a person.
 */
export const SHAPE_INPUT: FlowInput = {
  runId: 'shape',
  channel: 'ussd',
  chat: 'ussd:+10000000000',
  userId: '+10000000000',
  userPhone: '+10000000000',
  requirePin: true,
  defaultCountry: 'UG',
  currencies: ['UGX'],
  testCurrencies: ['BXC'],
  testNumbers: ['+10000000001'],
  nameMatchAffectsPayment: true,
  bankEmailOptional: true,
  profile: { lang: 'en' },
  allowedFlows: [],
  pinReset: false,
};

/** What a shape is made of, in a fixed order: what `npm run flows:check` names when two differ. */
export interface ShapeParts {
  /** Every state's id (`pay.awaitingAmount`; nested: `pin.buying.x`), sorted, each with the events it takes. */
  states: Array<[id: string, events: string[]]>;
  /** The keys of the initial context (made from {@link SHAPE_INPUT}), sorted. */
  context: string[];
}

function statesOf(node: AnyStateNode, into: Array<[string, string[]]>): void {
  into.push([node.id, [...new Set(node.ownEvents.map(String))].sort()]);
  for (const child of Object.values(node.states)) statesOf(child, into);
}

/** The initial context's keys: the machine's context (a factory is given {@link SHAPE_INPUT}). */
function contextKeys(machine: AnyStateMachine): string[] {
  return Object.keys(initialContext(machine)).sort();
}

/**
 * The keys a stored context must have for this machine to read it: those its initial context sets to a value
 * (a key set to undefined is not stored).
 */
export function requiredContextKeys(machine: AnyStateMachine): string[] {
  return Object.entries(initialContext(machine))
    .filter(([, value]) => value !== undefined)
    .map(([key]) => key);
}

function initialContext(machine: AnyStateMachine): Record<string, unknown> {
  const context = machine.config.context as unknown;
  const made =
    typeof context === 'function'
      ? (context as (args: { input: FlowInput; self: unknown; spawn: unknown }) => unknown)({
          input: SHAPE_INPUT,
          self: undefined,
          spawn: () => undefined,
        })
      : context;
  return typeof made === 'object' && made !== null ? (made as Record<string, unknown>) : {};
}

/** The parts of a machine's shape. */
export function shapeParts(machine: AnyStateMachine): ShapeParts {
  const states: Array<[string, string[]]> = [];
  statesOf(machine.root, states);
  states.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { states, context: contextKeys(machine) };
}

/**
 * A machine's shape: 12 base64url characters of the SHA-256 of its {@link ShapeParts} as JSON (72 bits: two
 * shapes of one flow never meet by chance). The same in every process and build.
 */
export function flowShape(machine: AnyStateMachine): string {
  return hash('sha256', JSON.stringify(shapeParts(machine)), 'base64url').slice(0, 12);
}

/** The shape of every flow of a registry (flows/index.ts). */
export function flowShapes(flows: Partial<Record<FlowId, FlowModule>>): Partial<Record<FlowId, string>> {
  const shapes: Partial<Record<FlowId, string>> = {};
  for (const [id, module] of Object.entries(flows) as Array<[FlowId, FlowModule]>)
    shapes[id] = flowShape(module.machine);
  return shapes;
}

/** Every state id of a machine (`pay.awaitingAmount`), for a stored state's check and a migration's test. */
export function stateIds(machine: AnyStateMachine): Set<string> {
  return new Set(shapeParts(machine).states.map(([id]) => id));
}

/** The machine has the state `value` names (a state value as stored: `'awaitingAmount'`, `{ buying: 'x' }`). */
export function hasState(machine: AnyStateMachine, value: unknown): boolean {
  return hasStateUnder(machine.root, value);
}

function hasStateUnder(node: AnyStateNode, value: unknown): boolean {
  if (typeof value === 'string') return Object.hasOwn(node.states, value);
  if (typeof value !== 'object' || value === null) return false;
  const entries = Object.entries(value as Record<string, unknown>);
  return (
    entries.length > 0 &&
    entries.every(([key, child]) => Object.hasOwn(node.states, key) && hasStateUnder(node.states[key]!, child))
  );
}

/**
 * The shape of a whole release's flows: one hash of every flow's shape, stored in each queued job (the jobs
 * hold no flow's snapshot, but a later release may read them differently): equal, the job's writer runs the
 * same flows.
 */
export function releaseShape(flows: Partial<Record<FlowId, FlowModule>>): string {
  const shapes = Object.entries(flowShapes(flows)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return hash('sha256', JSON.stringify(shapes), 'base64url').slice(0, 12);
}
