/**
 * The flow runtime's one actor scope per machine (src/conversation/flow/actor-scope.ts) against xstate's public
 * pure functions: every path of every registered flow (xstate/graph's shortest paths, as the flows' own tests
 * walk them, on USSD with a PIN and on a chat without) is stepped through both, from the start, and at every
 * step the two must give the same persisted snapshot and the same actions (type and params). After the walk the
 * shared scope must hold nothing: no actor in its system, its `self` as it was made.
 */
import { initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine, type EventObject } from 'xstate';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { flows } from '../../flows/index.js';
import type { FlowId, FlowInput, FlowModule } from '../../flows/types.js';
import { actorScope, initialStep, step } from '../../src/conversation/flow/actor-scope.js';
import { sampleInput, walkFlow } from '../flows/coverage.js';

const USSD: Partial<FlowInput> = { channel: 'ussd', chat: 'ussd:+256772123456', requirePin: true };

/** The inputs each flow is walked with: every state of every flow is reached by one of them. */
const INPUTS: Array<Partial<FlowInput>> = [USSD, {}, { ...USSD, pinReset: true }];

/** More inputs for some flows: exam pins offers the candidates a person bought for before. */
const MORE: Partial<Record<FlowId, Array<Partial<FlowInput>>>> = {
  pin: [
    {
      ...USSD,
      profile: {
        lang: 'en',
        candidates: [
          {
            serviceType: 'waec',
            productCode: 'de',
            accountNumber: '4250123456',
            name: 'IBRAHIM BELLO',
            gsmNo: '08000000000',
          },
        ],
      },
    },
  ],
};

/** An actor in an action's params or a snapshot, as what can be compared: its id, its logic's name, its state. */
function plain(value: unknown, seen = new Set<unknown>()): unknown {
  if (typeof value === 'function') return `function ${value.name}`;
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return '(cycle)';
  seen.add(value);
  const actor = value as { sessionId?: unknown; getSnapshot?: unknown; getPersistedSnapshot?: () => unknown };
  if (typeof actor.sessionId === 'string' && typeof actor.getSnapshot === 'function') {
    const ref = value as { id: string; src: unknown; getPersistedSnapshot: () => unknown };
    return {
      actor: ref.id,
      src: typeof ref.src === 'string' ? ref.src : '(logic)',
      snapshot: plain(ref.getPersistedSnapshot(), seen),
    };
  }
  if (Array.isArray(value)) return value.map((item) => plain(item, seen));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item, seen)]));
}

interface Stepped {
  snapshot: AnyMachineSnapshot;
  actions: unknown[];
}

const asActions = (actions: unknown[]): unknown[] =>
  (actions as Array<{ type: string; params: unknown }>).map(({ type, params }) => ({ type, params: plain(params) }));

/** A step reached by a path from the start: both sides' results, and the steps taken from it, by event. */
interface Reached {
  ours: Stepped;
  theirs: Stepped;
  next: Map<string, Reached>;
}

/** Walks every path of `module` with `input`; returns the number of distinct steps compared and the states reached. */
function compareFlow(module: FlowModule, input: Partial<FlowInput>): { steps: number; visited: string[] } {
  const machine = module.machine as AnyStateMachine;
  const walk = walkFlow(module, { input, print: false });
  const full = sampleInput(input);
  let steps = 0;
  const compare = (where: () => string, ours: Stepped, theirs: Stepped): void => {
    steps += 1;
    const snapshots = [ours, theirs].map((side) => machine.getPersistedSnapshot(side.snapshot));
    // A persisted snapshot is plain data: strictly equal (node's deep equality, stricter than toEqual) passes at
    // once; anything else is made comparable and goes to toEqual, which decides and names the difference.
    if (!isDeepStrictEqual(snapshots[0], snapshots[1]))
      expect(plain(snapshots[0]), `${where()}: the snapshot`).toEqual(plain(snapshots[1]));
    const actions = [ours, theirs].map((side) => asActions(side.actions));
    if (!isDeepStrictEqual(actions[0], actions[1])) expect(actions[0], `${where()}: the actions`).toEqual(actions[1]);
  };
  /** The step from `from` with `event`, compared the first time a path takes it. */
  const onward = (from: Reached, event: EventObject, where: () => string): Reached => {
    const text = JSON.stringify(event);
    let next = from.next.get(text);
    if (!next) {
      const [s1, a1] = step(machine, from.ours.snapshot, event);
      const [s2, a2] = transition(machine, from.theirs.snapshot as never, event as never) as [
        AnyMachineSnapshot,
        unknown[],
      ];
      next = { ours: { snapshot: s1, actions: a1 }, theirs: { snapshot: s2, actions: a2 }, next: new Map() };
      compare(() => `${where()} ${text}`, next.ours, next.theirs);
      from.next.set(text, next);
    }
    return next;
  };
  const [s1, a1] = initialStep(machine, full);
  const [s2, a2] = initialTransition(machine, full) as [AnyMachineSnapshot, unknown[]];
  const start: Reached = {
    ours: { snapshot: s1, actions: a1 },
    theirs: { snapshot: s2, actions: a2 },
    next: new Map(),
  };
  compare(() => `${module.id} start`, start.ours, start.theirs);
  for (const path of walk.paths) {
    // The steps taken from the start, kept as a tree: paths sharing a beginning step through it once.
    const events = path.steps.slice(1).map(({ event }) => event);
    const where = (upTo: number) => () => [module.id, ...events.slice(0, upTo).map((e) => JSON.stringify(e))].join(' ');
    let at = start;
    events.forEach((event, i) => (at = onward(at, event, where(i))));
    // Every event tried in the state the path reaches, not only those on a shortest path: a move back to a
    // state reached before (BACK, a refused answer) is on no shortest path. Kept in the tree: a longer path
    // through this state steps from it with the same event, and is not compared twice.
    for (const event of walk.events(at.theirs.snapshot)) onward(at, event, where(events.length));
  }
  return { steps, visited: walk.visited };
}

describe('the actor scope', () => {
  it.each(Object.values(flows).map((module) => [module!.id, module!]))(
    'steps every path of %s as xstate transition() does: equal persisted snapshots and actions',
    (_id, module) => {
      const machine = module.machine as AnyStateMachine;
      const scope = actorScope(machine);
      const self = scope.self.getSnapshot() as unknown;
      const missing = new Set(walkFlow(module, { print: false }).states);
      let steps = 0;
      for (const input of [...INPUTS, ...(MORE[module.id] ?? [])]) {
        const compared = compareFlow(module, input);
        steps += compared.steps;
        for (const state of compared.visited) missing.delete(state);
      }
      expect([...missing], 'states no path reached').toEqual([]);
      expect(steps).toBeGreaterThan(1);
      // Nothing a step did stays in the shared scope.
      expect(scope.system.getAll()).toEqual({});
      expect(scope.self.getSnapshot()).toBe(self);
    },
    // Pay's walk is a few hundred thousand pure steps: 20 s beside the suite on two loaded cores, 32 s once.
    120_000,
  );

  it('is made once per machine', () => {
    const machine = flows.pay!.machine as AnyStateMachine;
    expect(actorScope(machine)).toBe(actorScope(machine));
    expect(actorScope(machine)).not.toBe(actorScope(flows.menu!.machine as AnyStateMachine));
  });

  it('gives each step its own actions, none carried to the next', () => {
    const machine = flows.pay!.machine as AnyStateMachine;
    const [first, actions] = initialStep(machine, sampleInput({ channel: 'ussd', requirePin: true }));
    const [, again] = step(machine, first, { type: 'BACK' } as EventObject);
    expect(again).not.toBe(actions);
    const [, theirs] = transition(machine, first as never, { type: 'BACK' } as never);
    expect(asActions(again)).toEqual(asActions(theirs as unknown[]));
  });
});
