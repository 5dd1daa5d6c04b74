/**
 * Shortest paths form a tree (each is the path to its predecessor plus one step), so replaying the paths
 * that no other path extends runs every step of every path once: the data and pin replays use these, in
 * groups, each group one test (and one test timeout) on a shared, busy machine. Simple paths, whose
 * number grows with every state, are walked with only the events a screen offers.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import type { StatePath } from 'xstate/graph';
import type { FlowEvent } from '../../flows/types.js';
import { currentView } from '../../src/conversation/flow/render.js';

type Path = StatePath<AnyMachineSnapshot, EventObject>;

/** The paths that are not a prefix of another path. */
export function leafPaths(paths: Path[]): Path[] {
  const keyOf = (path: Path) => path.steps.map((s) => JSON.stringify(s.event)).join('\n') + '\n';
  const keys = paths.map(keyOf);
  // Sorted, the keys a key is a prefix of come right after it.
  const sorted = [...keys].sort();
  const extended = new Set(sorted.filter((key, i) => sorted[i + 1]?.startsWith(key)));
  return paths.filter((_, i) => !extended.has(keys[i]!));
}

/** Paths per replay test. */
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
