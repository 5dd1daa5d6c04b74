/**
 * Every step of every flow a conversation can be stored at, read from the machines (flows/index.ts), and the
 * way a person gets there by typing on USSD: for the two-builds test, so a step a flow gains is moved between
 * builds without the test naming it.
 *
 * A step is a state that waits for the person (it has a `view` and is not final) or makes a money call (tagged
 * `money`: the person waits while it is out). A walk to one reads the conversation's stored state after each
 * hop and answers what its screen asks: the choice, or the typed answer, whose step (xstate's pure transition
 * of the machine) is nearest the target on the machine's graph of transitions.
 */
import type { AnyMachineSnapshot, AnyStateMachine, AnyStateNode } from 'xstate';
import { flows } from '../../flows/index.js';
import { stateLabel } from '../../flows/migrations/index.js';
import type { FlowId } from '../../flows/types.js';
import { step as pureStep } from '../../src/conversation/flow/actor-scope.js';
import { FlowRuntime, isBusy, type StoredFlow } from '../../src/conversation/flow/flow-runtime.js';
import { currentView } from '../../src/conversation/flow/render.js';

/** One step to move a person at: a flow and one of its states (`awaitingAmount`, nested `a.b`). */
export interface Target {
  flow: FlowId;
  state: string;
  /** The state makes a money call: a person there waits for the service. */
  money: boolean;
}

const machineOf = (flow: FlowId): AnyStateMachine => flows[flow]!.machine as AnyStateMachine;

/** A state node's label as stateLabel writes a stored value (`a.b`, without the machine's id). */
const labelOf = (node: AnyStateNode): string => node.path.join('.');

function leaves(node: AnyStateNode): AnyStateNode[] {
  const children = Object.values(node.states);
  return children.length === 0 ? [node] : children.flatMap(leaves);
}

/** Every step a person can sit at, of every flow, in the flows' order. */
export function everyStep(): Target[] {
  const targets: Target[] = [];
  for (const flow of Object.keys(flows) as FlowId[]) {
    for (const node of leaves(machineOf(flow).root)) {
      const tags = [...node.tags];
      const waits = node.meta?.view !== undefined && node.type !== 'final' && !tags.includes('busy');
      const money = tags.includes('busy') && tags.includes('money');
      if (waits || money) targets.push({ flow, state: labelOf(node), money });
    }
  }
  return targets;
}

/** The leaf a transition's target enters: its initial child, down to a leaf. */
function entered(node: AnyStateNode): AnyStateNode {
  let at = node;
  while (Object.keys(at.states).length > 0) {
    const initial = at.initial?.target[0];
    at = initial ?? Object.values(at.states)[0]!;
  }
  return at;
}

/** Each leaf's hops forward (transitions of it or of a parent, not BACK) to the leaf `target`; absent: none. */
function distancesTo(flow: FlowId, target: string): Map<string, number> {
  const machine = machineOf(flow);
  const all = leaves(machine.root);
  const next = new Map<string, Set<string>>();
  for (const leaf of all) {
    const to = new Set<string>();
    for (let node: AnyStateNode | undefined = leaf; node; node = node.parent) {
      // A walk never goes back: BACK's transitions are no way forward.
      const defs = [...node.transitions.entries()]
        .filter(([event]) => event !== 'BACK')
        .flatMap(([, list]) => list)
        .concat(node.always ?? []);
      for (const def of defs) for (const t of def.target ?? []) to.add(labelOf(entered(t)));
    }
    next.set(labelOf(leaf), to);
  }
  const distance = new Map<string, number>([[target, 0]]);
  for (let changed = true; changed;) {
    changed = false;
    for (const [from, to] of next) {
      const best = Math.min(...[...to].map((t) => (distance.get(t) ?? Infinity) + 1));
      if (best < (distance.get(from) ?? Infinity)) {
        distance.set(from, best);
        changed = true;
      }
    }
  }
  return distance;
}

/** What a person types on USSD for an input kind, in the order tried: the first the flow takes is typed. */
const TYPED: Record<string, string[]> = {
  text: ['Sarah', 'School fees'],
  phone: ['0772000001'],
  amount: ['1500'],
  pin: ['1234', '7391'],
  // The sandbox's exam candidate's confirmation code first.
  code: ['1234567890', '4012345678', 'TX123'],
};

const runtime = new FlowRuntime(flows, {});

/**
 * What a walk to a step types instead of the usual, where the step needs a particular answer of the service's:
 * the answers by input kind (a number the network does not know).
 */
export interface Steer {
  typed?: Partial<Record<string, string[]>>;
}

/**
 * The answer that takes a conversation stored at `storedFlow` (a flow of this build) towards `target`: the USSD
 * text (a choice's number, or typed words) and the state the flow goes to with it (pure, before any service
 * answers), leaving out those `refused` names (a service refused them there). Undefined when the screen asks
 * nothing this walk can answer, or nothing leads there.
 */
export function answerTowards(
  storedFlow: StoredFlow,
  target: Target,
  refused: (text: string) => boolean = () => false,
  steer: Steer = {},
): Answer | undefined {
  const distance =
    storedFlow.flow === target.flow ? distancesTo(target.flow, target.state) : new Map<string, number>([['', 0]]);
  return nearest(storedFlow, target.flow, distance, refused, steer);
}

/** The answer a person goes on with at a stored step: the one nearest the end of its flow (a final state). */
export function forwardAnswer(storedFlow: StoredFlow): Answer | undefined {
  const finals = leaves(machineOf(storedFlow.flow).root).filter((node) => node.type === 'final');
  const distance = new Map<string, number>();
  for (const final of finals)
    for (const [state, hops] of distancesTo(storedFlow.flow, labelOf(final)))
      distance.set(state, Math.min(hops, distance.get(state) ?? Infinity));
  return nearest(storedFlow, storedFlow.flow, distance);
}

/** A USSD answer, the event it is to the flow, and the state the flow takes with it (before any service answers). */
export interface Answer {
  text: string;
  to: string;
  event: { type: string };
}

/** The answer whose pure step is nearest (by `distance`) among the screen's choices and typed answers. */
function nearest(
  storedFlow: StoredFlow,
  towards: FlowId,
  distance: Map<string, number>,
  refused: (text: string) => boolean = () => false,
  steer: Steer = {},
): Answer | undefined {
  const machine = machineOf(storedFlow.flow);
  const snapshot = runtime.restore(storedFlow);
  const view = currentView(snapshot);
  if (!view || isBusy(snapshot)) return undefined;
  const target = { flow: towards };
  const here = stateLabel(snapshot.value);
  const candidates: Array<{ text: string; event: { type: string; [k: string]: unknown } }> = [
    ...(view.choices ?? []).map((choice, i) => ({ text: String(i + 1), event: { type: 'CHOSEN', id: choice.id } })),
    ...(view.input ? (steer.typed?.[view.input] ?? TYPED[view.input] ?? []) : []).map((value) => ({
      text: value,
      event: { type: 'ANSWERED', value },
    })),
  ];
  let best: { text: string; to: string; event: { type: string }; score: number } | undefined;
  for (const candidate of candidates) {
    if (refused(candidate.text)) continue;
    const [after] = pureStep(machine, snapshot, candidate.event) as [AnyMachineSnapshot, unknown];
    const to = stateLabel(after.value);
    // The menu: the target's flow (or, for the menu's own steps, the step nearest).
    const score =
      storedFlow.flow === 'menu' && target.flow !== 'menu'
        ? (candidate.event as { id?: string }).id === target.flow
          ? 0
          : Infinity
        : to === here && (after.context as { error?: unknown }).error !== undefined
          ? Infinity
          : (distance.get(to) ?? Infinity);
    if (!best || score < best.score) best = { ...candidate, to, score };
  }
  return best && best.score < Infinity ? best : undefined;
}

/** The label of a stored flow's state. */
export const storedState = (storedFlow: StoredFlow): string =>
  stateLabel((storedFlow.snapshot as { value: unknown }).value);
