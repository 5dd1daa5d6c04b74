/**
 * `npm run flows:check -- --against <git ref>`: may every conversation a build of `<ref>` stored continue on
 * the flows of this working tree? For each flow at `<ref>`, every state a stored conversation may hold there
 * (each leaf state: a snapshot's value names one, or one per region of a parallel state) needs a path here:
 * the same state id, or a declared migration (flows/migrations/, keyed by the shape `<ref>`'s build wrote)
 * that moves it to a state that exists. The same rule as the runtime's (FlowRuntime.admit), read from the
 * machines instead of stored records.
 *
 * Exits 1 naming each flow and state without a path, 0 with one line otherwise, 2 when it cannot compare
 * (no such ref, no flows there). The tree at `<ref>` is unpacked with `git archive` into a temp dir (no
 * worktree registered, nothing of the repository changed) and removed afterwards. The working tree is the
 * repository around the current directory. A new key in a flow's initial context is a note, not a failure:
 * the conversations stored before it start again with one line (docs/running.md, "Releasing").
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { migrateValue, stateValue, type FlowMigrations } from '../flows/migrations/index.js';
import { hasState, requiredContextKeys, shapeParts } from '../flows/shape.js';

/** The flows of one tree, as its own modules make them. */
export interface Release {
  flows: Record<string, { machine: AnyStateMachine }>;
  /** The shape each flow's stored conversations carry: undefined before shapes were written (no migration applies). */
  shapes: Record<string, string | undefined>;
  migrations: FlowMigrations;
}

/** A state of the earlier release a stored conversation may hold and that has no path here. */
export interface Stranded {
  flow: string;
  state: string;
  shape: string | undefined;
  /** Why: the flow is gone, or the state is gone and no migration moves it. */
  reason: 'flow removed' | 'no state and no migration';
}

export interface Comparison {
  stranded: Stranded[];
  flows: number;
  states: number;
  same: number;
  migrated: number;
  /** Per flow, the keys this release's machine starts with that the earlier one did not. */
  newKeys: Array<{ flow: string; keys: string[] }>;
}

/** The states a snapshot of `machine` may hold, labelled as the funnel labels them (`buying.awaitingCode`). */
export function heldStates(machine: AnyStateMachine): string[] {
  const held: string[] = [];
  const walk = (node: AnyStateNode): void => {
    if (node.type === 'atomic' || node.type === 'final') held.push(node.path.join('.'));
    else for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root);
  return held;
}

/** Compare the flows of an earlier release with today's: each state it may have stored, and its path here. */
export function compare(earlier: Release, today: Release): Comparison {
  const result: Comparison = { stranded: [], flows: 0, states: 0, same: 0, migrated: 0, newKeys: [] };
  for (const [flow, { machine }] of Object.entries(earlier.flows)) {
    result.flows++;
    const shape = earlier.shapes[flow];
    const now = today.flows[flow]?.machine;
    const moves = shape === undefined ? undefined : today.migrations[flow as keyof FlowMigrations]?.[shape];
    for (const state of heldStates(machine)) {
      result.states++;
      if (now === undefined) {
        result.stranded.push({ flow, state, shape, reason: 'flow removed' });
        continue;
      }
      const value = stateValue(state);
      if (hasState(now, value)) {
        result.same++;
        continue;
      }
      const moved = moves === undefined ? undefined : migrateValue(value, moves);
      if (moved !== undefined && hasState(now, moved)) {
        result.migrated++;
        continue;
      }
      result.stranded.push({ flow, state, shape, reason: 'no state and no migration' });
    }
    if (now !== undefined) {
      const had = new Set(shapeParts(machine).context);
      const keys = requiredContextKeys(now).filter((key) => !had.has(key));
      if (keys.length > 0) result.newKeys.push({ flow, keys });
    }
  }
  return result;
}

/** Import the flows of the tree at `dir` with that tree's own modules. */
export async function loadRelease(dir: string): Promise<Release> {
  const load = (file: string): Promise<Record<string, unknown>> =>
    import(pathToFileURL(path.join(dir, file)).href) as Promise<Record<string, unknown>>;
  if (!existsSync(path.join(dir, 'flows/index.ts'))) throw new Error(`no flows/index.ts in ${dir}`);
  const flows = (await load('flows/index.ts')).flows as Release['flows'];
  const flowShape = existsSync(path.join(dir, 'flows/shape.ts'))
    ? ((await load('flows/shape.ts')).flowShape as ((m: AnyStateMachine) => string) | undefined)
    : undefined;
  const migrations = existsSync(path.join(dir, 'flows/migrations/index.ts'))
    ? (((await load('flows/migrations/index.ts')).migrations as FlowMigrations | undefined) ?? {})
    : {};
  const shapes: Release['shapes'] = {};
  for (const [flow, module] of Object.entries(flows)) shapes[flow] = flowShape?.(module.machine);
  return { flows, shapes, migrations };
}

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** The tree at `ref` unpacked into a temp dir (its node_modules this tree's), for `use`; removed afterwards. */
export async function atRef<T>(root: string, ref: string, use: (dir: string) => Promise<T>): Promise<T> {
  const commit = git(root, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  const dir = mkdtempSync(path.join(tmpdir(), 'flows-check-'));
  try {
    const archive = path.join(dir, '.tree.tar');
    git(root, ['archive', '--format=tar', '-o', archive, commit]);
    execFileSync('tar', ['-xf', archive, '-C', dir]);
    rmSync(archive);
    symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    return await use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The lines `npm run flows:check` prints, and its exit code. */
export function report(ref: string, c: Comparison): { lines: string[]; code: 0 | 1 } {
  const notes = c.newKeys.map(
    ({ flow, keys }) =>
      `flows:check: note: ${flow} starts with ${keys.join(', ')}, which ${ref} did not: its stored conversations start again`,
  );
  if (c.stranded.length === 0)
    return {
      lines: [
        ...notes,
        `flows:check: every state of ${c.flows} flows at ${ref} has a path here (${c.states} states: ${c.same} same id, ${c.migrated} migrated)`,
      ],
      code: 0,
    };
  return {
    lines: [
      ...notes,
      ...c.stranded.map(
        (s) =>
          `flows:check: ${s.flow} state ${s.state} (shape ${s.shape ?? 'unwritten'} at ${ref}) has no path: ${
            s.reason === 'flow removed'
              ? 'the flow is gone'
              : 'no such state here and no migration in flows/migrations/ moves it'
          }`,
      ),
      `flows:check: ${c.stranded.length} of ${c.states} states at ${ref} have no path here`,
    ],
    code: 1,
  };
}

async function main(argv: string[]): Promise<number> {
  const at = argv.indexOf('--against');
  const ref = at >= 0 ? argv[at + 1] : undefined;
  if (ref === undefined || ref.startsWith('-')) {
    console.error('usage: npm run flows:check -- --against <git ref>');
    return 2;
  }
  let root: string;
  try {
    root = git(process.cwd(), ['rev-parse', '--show-toplevel']);
    git(root, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  } catch {
    console.error(`flows:check: ${ref} is not a commit of this repository`);
    return 2;
  }
  const today = await loadRelease(root);
  let earlier: Release;
  try {
    earlier = await atRef(root, ref, loadRelease);
  } catch (error) {
    console.error(`flows:check: cannot read the flows at ${ref}: ${(error as Error).message}`);
    return 2;
  }
  const { lines, code } = report(ref, compare(earlier, today));
  for (const line of lines) (code === 0 ? console.log : console.error)(line);
  return code;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = await main(process.argv.slice(2));
