/**
 * How a flow run ended (FlowOutcome), as its final state says in `meta.outcome(context)`. Flows whose one
 * final state shows the result, a failure or a cancellation (pay, request, check) tell the outcome from the
 * text on that screen with {@link outcomeOfText}: the words were chosen from what happened, so they say it.
 */
import type { AnyMachineSnapshot } from 'xstate';
import type { FlowOutcome, StateMeta, Text } from './types.js';

/** Failure texts that are our access policy saying no rather than the service (flows/failure.ts keys). */
const POLICY_KEYS = new Set([
  'failure.not_allowed',
  'failure.limit_exceeded',
  'failure.limit_exceeded.payment',
  'failure.limit_exceeded.day',
  'failure.pin_locked',
]);
/** Failure texts after which the call may have gone through: the service already holds our key. */
const UNKNOWN_KEYS = new Set(['failure.duplicate']);

/**
 * The outcome a final screen's text tells: the flow's own keys first (`own`), then the shared failure
 * texts: the policy's refusals are `refused`, a duplicate is `processing`, any other is `failed`.
 */
export function outcomeOfText(text: Text | undefined, own: Record<string, FlowOutcome>): FlowOutcome {
  const key = text?.key ?? '';
  return own[key] ?? (POLICY_KEYS.has(key) ? 'refused' : UNKNOWN_KEYS.has(key) ? 'processing' : 'failed');
}

/** The outcome of a finished run (status `done`): its final state's `meta.outcome`; undefined otherwise. */
export function finalOutcome(snapshot: AnyMachineSnapshot): FlowOutcome | undefined {
  if (snapshot.status !== 'done') return undefined;
  const metas = Object.values(snapshot.getMeta() as Record<string, Partial<StateMeta> | undefined>);
  const outcome = metas.find((meta) => typeof meta?.outcome === 'function')?.outcome;
  return outcome?.(snapshot.context);
}
