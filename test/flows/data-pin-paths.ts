/**
 * The data and pin model's paths: their phone walks in groups, each group one test (and one test timeout) on a
 * shared, busy machine; and the events of a simple-paths model, whose number of paths grows with every state,
 * walked with only the events a screen offers.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import type { StatePath } from 'xstate/graph';
import type { FlowEvent } from '../../flows/types.js';
import { currentView } from '../../src/conversation/flow/render.js';
import { leafPaths } from './coverage.js';

type Path = StatePath<AnyMachineSnapshot, EventObject>;

/** The events the engine sends a flow (flows/types.ts), for a model's paths. */
export const chosen = (id: string): FlowEvent => ({ type: 'CHOSEN', id });
export const answered = (value: string): FlowEvent => ({ type: 'ANSWERED', value });
export const BACK: FlowEvent = { type: 'BACK' };

/** Paths per walk test. */
const GROUP = 60;

/** The {@link leafPaths} in groups of {@link GROUP}, named `1/n`, `2/n`, ... */
export function leafGroups(paths: Path[]): Array<{ group: string; paths: Path[] }> {
  const leaves = leafPaths(paths);
  const count = Math.ceil(leaves.length / GROUP);
  return Array.from({ length: count }, (_, i) => ({
    group: `${i + 1}/${count}`,
    paths: leaves.slice(i * GROUP, (i + 1) * GROUP),
  }));
}

/**
 * The events among `candidates` the snapshot's screen offers: a choice it shows, an answer when it asks
 * for one, BACK. Refused answers (which only add an error to the same screen) are left out.
 */
export function offeredEvents(snapshot: AnyMachineSnapshot, candidates: FlowEvent[]): FlowEvent[] {
  const view = currentView(snapshot);
  const choices = new Set(view?.choices?.map((c) => c.id));
  return candidates.filter((e) =>
    e.type === 'CHOSEN' ? choices.has(e.id) : e.type === 'ANSWERED' ? view?.input !== undefined : true,
  );
}
