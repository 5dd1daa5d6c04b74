/**
 * The shape of a flow, read from its machine's definition (`machine.root` and its state nodes): its steps in
 * the order they are written, the service call each makes, and the moves out of each, with the event and the
 * guard. The diagrams (diagrams.ts) draw it; the funnel (funnel.ts) counts only these steps.
 *
 * Nothing is run: the definition is walked as data, so the same machine always gives the same graph.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { MENU_FLOWS } from '../../flows/menu.machine.js';
import type { FlowId, FlowModule } from '../../flows/types.js';

/** The flows in the order people meet them: the menu, then its entries as it lists them. */
export const FLOW_ORDER: readonly FlowId[] = ['menu', ...MENU_FLOWS];

/** The registered flows in {@link FLOW_ORDER}. */
export function inFlowOrder(flows: Partial<Record<FlowId, FlowModule>>): Array<[FlowId, FlowModule]> {
  return FLOW_ORDER.flatMap((flow) => {
    const module = flows[flow];
    return module ? [[flow, module] as [FlowId, FlowModule]] : [];
  });
}

/** One move out of a step. */
export interface FlowMove {
  /** `CHOSEN`, `ANSWERED`, `BACK`; `done: <call>` / `error: <call>` for a service call's answer; `always`. */
  event: string;
  /** The guard that must hold, as written (`isChosen(bank)`, `isValidAnswer(amount) and hasOneCurrency`). */
  guard?: string;
  /** The step moved to (its name). */
  target: string;
}

/** One state of the machine. */
export interface FlowStep {
  /** The step as the engine and the funnel name it (flow-runtime.ts stepName): `awaitingAmount`, `parent.child` nested. */
  name: string;
  /** The state's own key (`child` of `parent.child`). */
  key: string;
  kind: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** The service calls it makes (invoked actors, by name): the flow waits there for the answer. */
  calls: string[];
  tags: string[];
  /** Nested steps, in the order written; the first one entered is `initial`. */
  children: FlowStep[];
  initial?: string;
  /** Moves out of it, in the order written. Moves without a target (an answer refused: the step stays) are left out. */
  moves: FlowMove[];
}

/** A flow's graph: its top-level steps and the first one. */
export interface FlowGraph {
  id: string;
  initial: string;
  steps: FlowStep[];
}

type AnyNode = AnyStateNode;
type Guard = unknown;

/** A guard as written: its name with its parameters, `and`/`or`/`not` spelled out. */
export function guardLabel(guard: Guard): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const parts = ((guard as { guards?: Guard[] }).guards ?? []).map((g) => guardLabel(g) ?? '?');
    if (guard.name === 'and' || guard.name === 'or') return parts.join(` ${guard.name} `);
    if (guard.name === 'not') return `not ${parts[0] ?? '?'}`;
    return guard.name || 'guard';
  }
  const { type, params } = guard as { type?: string; params?: unknown };
  const values =
    params && typeof params === 'object'
      ? Object.values(params).filter((v) => ['string', 'number', 'boolean'].includes(typeof v))
      : [];
  return values.length > 0 ? `${type}(${values.join(', ')})` : (type ?? 'guard');
}

/** The step name of a node: its path below the root, dot-joined (as `stepName` names a nested state value). */
const nameOf = (node: AnyNode): string => node.path.join('.');

function eventLabel(eventType: string, callOf: Map<string, string>): string {
  const call = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (call) return `${call[1]}: ${callOf.get(call[2]!) ?? call[2]}`;
  // A nested state reaching its final step.
  if (eventType.startsWith('xstate.done.state.')) return 'done';
  if (eventType === '') return 'always';
  return eventType;
}

function stepOf(node: AnyNode): FlowStep {
  const callOf = new Map(node.invoke.map((i) => [i.id, typeof i.src === 'string' ? i.src : 'service'] as const));
  const moves: FlowMove[] = [];
  const transitions = [...node.transitions.values(), node.always ?? []].flat();
  for (const t of transitions) {
    for (const target of t.target ?? []) {
      const guard = guardLabel(t.guard);
      moves.push({
        event: eventLabel(t.eventType, callOf),
        ...(guard ? { guard } : {}),
        target: nameOf(target as AnyNode),
      });
    }
  }
  const children = Object.values(node.states as Record<string, AnyNode>).map(stepOf);
  const initial = node.type === 'compound' ? (node.initial.target[0] as AnyNode | undefined)?.key : undefined;
  return {
    name: nameOf(node),
    key: node.key,
    kind: node.type,
    calls: [...callOf.values()],
    tags: [...node.tags],
    children,
    ...(initial ? { initial } : {}),
    moves,
  };
}

/** The graph of a machine, from its definition. */
export function flowGraph(machine: AnyStateMachine): FlowGraph {
  const root = machine.root as AnyNode;
  const steps = Object.values(root.states as Record<string, AnyNode>).map(stepOf);
  return { id: machine.id, initial: (root.initial.target[0] as AnyNode).key, steps };
}

/** Every step the engine can name for this graph (states without nested ones: where a flow can be), in order. */
export function stepNames(graph: FlowGraph): string[] {
  const leaves = (step: FlowStep): string[] =>
    step.children.length === 0 ? [step.name] : step.children.flatMap(leaves);
  return graph.steps.flatMap(leaves);
}

/** The names of the final steps. */
export function finalSteps(graph: FlowGraph): Set<string> {
  const finals = (step: FlowStep): string[] => [
    ...(step.kind === 'final' ? [step.name] : []),
    ...step.children.flatMap(finals),
  ];
  return new Set(graph.steps.flatMap(finals));
}
