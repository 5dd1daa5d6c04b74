/**
 * The declared migrations: where a state a release renamed or moved went, so a conversation stored at the old
 * state by an earlier release continues at the new one (src/conversation/flow/flow-runtime.ts `admit`).
 *
 * A plain map per flow and per shape (flows/shape.ts: the shape the earlier release stored, as
 * `npm run flows:check` or a stored session's `shape` names it), each an object of old state -> new state,
 * states written as the funnel labels them (`awaitingAmount`; a nested one `buying.awaitingCode`). A state
 * that is not listed keeps its name (it must still exist). Renaming `awaitingAmount` to `enteringAmount` in
 * the pay flow, whose shape was `GYYnClJus4Cf` before:
 *
 *     pay: { GYYnClJus4Cf: { awaitingAmount: 'enteringAmount' } },
 *
 * A migration moves the state only: a stored context must still have every key the machine starts with, or
 * the conversation starts again (with one line saying the service was updated). Kept for as long as a
 * conversation may be stored at the old shape (its session's lifetime, plus a run being confirmed): a release
 * or two. test/flows/migrations.test.ts holds every entry to a state that exists.
 */
import type { FlowId } from '../types.js';

/** Old state -> new state, as the funnel labels them. */
export type StateMoves = Readonly<Record<string, string>>;

/** Per flow, per stored shape, the states moved since. */
export type FlowMigrations = Partial<Record<FlowId, Readonly<Record<string, StateMoves>>>>;

/** Every migration this release declares. */
export const migrations: FlowMigrations = {};

/** A state value as a label: `awaitingAmount`, or `parent.child` for nested states (parallel ones joined by `,`). */
export function stateLabel(value: unknown): string {
  return typeof value === 'string'
    ? value
    : Object.entries(value as Record<string, unknown>)
        .map(([k, v]) => `${k}.${stateLabel(v)}`)
        .join(',');
}

/** A label of {@link stateLabel} (not a parallel one) as a state value: `a.b` is `{ a: 'b' }`. */
export function stateValue(label: string): unknown {
  const dot = label.indexOf('.');
  return dot < 0 ? label : { [label.slice(0, dot)]: stateValue(label.slice(dot + 1)) };
}

/**
 * The state value `value` is moved to: its whole label listed, else its longest listed parent (`buying` listed
 * moves `buying.awaitingCode` under the new parent). Undefined when nothing listed applies (a parallel value,
 * or one not listed: the migration does not move it).
 */
export function migrateValue(value: unknown, moves: StateMoves): unknown {
  if (value === null || (typeof value !== 'string' && typeof value !== 'object')) return undefined;
  const label = stateLabel(value);
  if (label.includes(',')) return undefined;
  const parts = label.split('.');
  for (let n = parts.length; n > 0; n--) {
    const head = parts.slice(0, n).join('.');
    const moved = Object.hasOwn(moves, head) ? moves[head] : undefined;
    if (moved !== undefined) return stateValue([moved, ...parts.slice(n)].join('.'));
  }
  return undefined;
}
