/**
 * One actor scope per flow machine, made once, for the flow runtime's pure steps.
 *
 * xstate 5.33's public `transition()` and `initialTransition()` build a throwaway scope on every call: a new
 * actor of the machine (whose constructor computes an initial snapshot of its own), then a second, fresh actor
 * system for it. A hop pays for both and keeps neither. Here the scope is built once per machine with xstate's
 * exported `createActor` and typed by its exported `ActorScope`, and each step calls the machine's own
 * `transition(snapshot, event, scope)` / `getInitialSnapshot(scope, input)` with it, collecting the actions the
 * step returns exactly as the public functions do (they run nowhere: an invoke stays an unstarted child of the
 * snapshot, and the runner calls its service).
 *
 * Why sharing it is safe for our flows, and what test/conversation/actor-scope.test.ts holds equal to the
 * public functions over every path of every flow (snapshots as persisted, and each action's type and params):
 * - `self` is an actor that is never started and never updated: a step does not write to it, and what a step
 *   reads of it (its id, its snapshot) is the same on every call. It differs from the public functions in one
 *   way: theirs is a new actor per call, so an action reading `self.id` or `self.sessionId` would see a new id
 *   each time, and ours sees one. The differential test fails on such a flow.
 * - `system` is that actor's own system. A child spawned or invoked by a step is made with `self` as its
 *   parent and is never started, so it is never registered in the system; only a child with a `systemId`
 *   would be (kept there, and a second one under the same id would throw). No flow gives one (flows/ keep
 *   plain services); the differential test checks the system holds no actor after every path.
 * - The scope's own `id` and `sessionId` are empty and `defer`, `emit`, `logger` and `stopChild` do nothing,
 *   as in the public functions' scope: a pure step runs no deferred work, emits to nobody and stops nothing.
 * - The actions of one step are collected into an array of that call's own (a step is synchronous and the
 *   flows' guards and assigns never step a flow themselves), so nothing carries over to the next call.
 *
 * Upstream made the pure transition's scope lazy (statelyai/xstate pull request 5632, merged August 2026) but no
 * xstate 5.x release carries it yet. When one does, this file goes: call `transition()` / `initialTransition()`
 * from 'xstate' again (flow-runtime.ts) and delete the differential test with it.
 */
import {
  createActor,
  type ActorScope,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
  type ExecutableActionObject,
} from 'xstate';

type MachineScope = ActorScope<AnyMachineSnapshot, EventObject>;

/** A machine's scope and where the actions of the step under way go (none between steps). */
interface Held {
  scope: MachineScope;
  actions: ExecutableActionObject[] | undefined;
}

const held = new WeakMap<AnyStateMachine, Held>();

const nothing = (): void => undefined;

/** The machine's one scope, made at its first step. */
function heldFor(machine: AnyStateMachine): Held {
  let found = held.get(machine);
  if (!found) {
    // Never started: its constructor's own initial snapshot (an error for a flow that needs input) is unused.
    const self = createActor(machine);
    const entry: Held = { scope: undefined as unknown as MachineScope, actions: undefined };
    entry.scope = {
      self,
      id: '',
      sessionId: '',
      system: self.system,
      logger: nothing,
      defer: nothing,
      emit: nothing,
      stopChild: nothing,
      actionExecutor: (action) => {
        entry.actions?.push(action);
      },
    };
    found = entry;
    held.set(machine, found);
  }
  return found;
}

/** The machine's one scope (for tests: what it holds after steps). */
export function actorScope(machine: AnyStateMachine): MachineScope {
  return heldFor(machine).scope;
}

/** Runs `step` with the scope, collecting the actions it returns into an array of its own. */
function collect(
  machine: AnyStateMachine,
  step: (scope: MachineScope) => AnyMachineSnapshot,
): [AnyMachineSnapshot, ExecutableActionObject[]] {
  const entry = heldFor(machine);
  const actions: ExecutableActionObject[] = [];
  entry.actions = actions;
  try {
    return [step(entry.scope), actions];
  } finally {
    entry.actions = undefined;
  }
}

/** As xstate's `initialTransition(machine, input)`: the first snapshot and the actions it returns. */
export function initialStep(machine: AnyStateMachine, input: unknown): [AnyMachineSnapshot, ExecutableActionObject[]] {
  return collect(machine, (scope) => machine.getInitialSnapshot(scope, input) as AnyMachineSnapshot);
}

/** As xstate's `transition(machine, snapshot, event)`: the next snapshot and the actions it returns. */
export function step(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  event: EventObject,
): [AnyMachineSnapshot, ExecutableActionObject[]] {
  return collect(machine, (scope) => machine.transition(snapshot, event, scope) as AnyMachineSnapshot);
}
