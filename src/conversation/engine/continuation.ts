/**
 * The continuation rule: what one message does to the conversation's stored flow, as one pure step
 * (flow-runtime.ts). The flow goes on with the message's event; or it starts (again): a flow asked for, the
 * home flow after an ended, expired or left one, or after one another release wrote and this one cannot take
 * up; or it is cancelled. A run out, or a flow in a busy state, makes the message wait; a later build's flow
 * not over is left alone. Nothing here reads or writes: the turn writes the step (step.ts).
 */
import type { FlowEvent, UserProfile } from '../../../flows/types.js';
import { isBusy, stepName, transition, type Step, type StepContext, type StoredFlow } from '../flow/flow-runtime.js';
import type { Inbound } from '../types.js';
import type { TurnOptions } from './delivery.js';
import type { ConversationRecord } from './ledger.js';

/** The flow event a message carries: back, a choice, typed text; none for a bare dial or a start. */
function eventOf(inbound: Inbound): FlowEvent | undefined {
  if (inbound.nav === 'back') return { type: 'BACK' };
  if (inbound.choice !== undefined) return { type: 'CHOSEN', id: inbound.choice };
  if (inbound.text !== undefined) return { type: 'ANSWERED', value: inbound.text };
  return undefined;
}

/** The step leaves the flow run of `s` unfinished: counted abandoned where it is. */
function left(o: Pick<TurnOptions, 'runtime'>, s: StoredFlow, step: Omit<Step, 'storedFlow'>, ctx: StepContext): void {
  step.ended!.push({ flow: s.flow, outcome: 'abandoned', step: stepName(o.runtime.restore(s)) });
  step.moves!.push(transition(s, ctx, o.runtime.mark(s), { end: 'abandoned' }));
}

/**
 * The pure step for this message, `wait` while a run is out (messages wait for its outcome), or `newer` when
 * the conversation's flow was written by a later build in a shape this one cannot read (left alone).
 */
export function nextStep(
  o: Pick<TurnOptions, 'runtime' | 'now'>,
  inbound: Inbound,
  record: ConversationRecord,
  profile: UserProfile,
  ctx: StepContext,
): Step | 'wait' | 'newer' {
  const { runtime } = o;
  const base: Omit<Step, 'storedFlow'> = { profile, remember: {}, notes: [], ended: [], moves: [] };
  if (record.run) return 'wait';
  let storedFlow = record.session;
  if (storedFlow) {
    // Written by another release (FlowRuntime.admit): continued (migrated when declared), left alone when a
    // later build wrote it and it is not over, else started again with one line saying the service was updated.
    const admitted = runtime.admit(storedFlow);
    const over = storedFlow.ended || storedFlow.expiresAt <= o.now();
    if (admitted.kind === 'newer' && !over) return 'newer';
    if (admitted.kind === 'continue') storedFlow = admitted.storedFlow;
    else {
      if (!over) base.notes.push({ key: 'common.updated' });
      storedFlow = undefined;
    }
  }
  if (storedFlow && storedFlow.expiresAt <= o.now()) {
    if (!storedFlow.ended) left(o, storedFlow, base, ctx);
    const startsOver = inbound.newSession || inbound.start !== undefined || inbound.nav === 'home';
    if (!storedFlow.ended && !startsOver) base.notes.push({ key: 'common.expired' });
    storedFlow = undefined;
  }
  const live = storedFlow && !storedFlow.ended ? storedFlow : undefined;
  if (live && isBusy(runtime.restore(live))) return 'wait';
  // Taken up from a session that was dropped: where the flow is, untouched (its outcome, once it ended).
  if (inbound.resume && storedFlow) return { ...base, storedFlow };
  const leaving =
    inbound.start !== undefined || inbound.newSession || inbound.nav === 'home' || inbound.nav === 'cancel';
  if (live && leaving) left(o, live, base, ctx);
  // A conversation that must start elsewhere (Change PIN after a reset) does, whatever flow was asked for.
  if (inbound.start) return runtime.start(ctx.home === 'menu' ? inbound.start : ctx.home, base, ctx);
  if (live && inbound.nav === 'cancel') {
    return {
      ...base,
      storedFlow: { ...live, ended: true, notice: { key: 'common.cancelled' }, expiresAt: ctx.expiresAt },
    };
  }
  if (!live || leaving) return runtime.start(ctx.home, base, ctx);
  return runtime.send(live, eventOf(inbound), base, ctx);
}
