/**
 * A money run of a flow this release cannot read (its state renamed or removed since the call's state was
 * stored, or a later build's): finished from what its record carries, never from the machine. The stored call
 * is made (again, under the same Duplicate-Check-Key) and its outcome told in the engine's words. Not here: a
 * run of a flow this release reads (execution.ts), deciding which runs are taken over (take-over.ts).
 */
import type { EventObject } from 'xstate';
import { failureText } from '../../../flows/failure.js';
import { isAlreadySubmitted, isHeld } from '../../../flows/calls.js';
import { madeNothing, type Text, type UserProfile } from '../../../flows/types.js';
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import type { StoredFlow } from '../flow/flow-runtime.js';
import type { Prompt } from '../types.js';
import { holdLease } from './lease.js';
import { deliverLate, keepForNextDial } from './late-outcome.js';
import { refOf, type LocalRun, type RunnerOptions, type RunStart } from './run.js';
import { durable, settle } from './run-record.js';

/**
 * A money run of a flow this release cannot read (its state renamed or removed since the call's state was
 * stored, or a later build's): it finishes on this release from what its record carries, never from the
 * machine. The call the stored snapshot holds (its service and input, under the flow's Duplicate-Check-Key) is
 * made, or made again, and its outcome is told in the engine's words: sent (or held for approval), nothing
 * sent (a failure that proves nothing was made, in the words flows use), or being confirmed (already submitted
 * under the key, or no answer: the outcome comes by notification). The flow ends there: the next message starts the conversation's start. A failure leaves
 * the run to be taken over, as any money run's. Never throws.
 */
export async function finishMoney(
  o: RunnerOptions,
  start: RunStart,
  local: LocalRun,
  written: () => void,
): Promise<void> {
  const { key, participant, token, starter, storedFlow } = start;
  const { runtime, answers, logger } = o;
  const log = logged(participant);
  const lease = holdLease(o, key, token, start.leasedAt, log);
  const current = start.stored;
  const profile: UserProfile = current.record.profile ?? { lang: 'en' };
  try {
    const invocation = runtime.storedInvocation(storedFlow);
    if (!invocation) throw new Error('a money run holds no service call');
    if ((await durable(o, key, token, current.version)) !== 'ours') {
      logger.warn(log, 'engine: the conversation moved to another run; stopped before the money-moving call');
      return;
    }
    const outcome = await runtime.call(invocation);
    local.settling = true;
    const ended: StoredFlow = { ...storedFlow, ended: true, notice: moneyOutcome(outcome) };
    delete ended.money;
    const prompt: Prompt = { ...answers.screen(ended, profile.lang, participant.channel), money: true };
    const words = ended.notice;
    const kept =
      o.capabilitiesOf(participant.channel).keepsForNextDial && (await keepForNextDial(o, participant, prompt, words));
    const settled = await settle(o, key, token, current, { session: ended, profile }, prompt, starter);
    if (!settled) {
      logger.warn(log, 'engine: the conversation moved to another run; this outcome was not written');
      return;
    }
    written();
    logger.warn(log, "engine: a money run of another build's flow finished from its record");
    const ref = refOf(invocation);
    if (ref)
      o.onMoneyAnswer?.({
        ref,
        channel: participant.channel,
        conversationId: participant.conversationId,
        text: prompt.text,
      });
    if (settled.late) await deliverLate(o, participant, prompt, kept, words);
  } catch (error) {
    // The payment may have been made: nothing may say otherwise. Taken over once the lease expires.
    logger.error(
      { ...log, err: errorMessage(error) },
      'engine: a run failed after its money-moving call; it is left to be taken over',
    );
  } finally {
    lease.stop();
  }
}

/**
 * The words of a money call's outcome without its flow's machine ({@link finishMoney}): sent, or held for an
 * approver; a failure that proves nothing was made in the words flows use; anything else being confirmed. A 409
 * on our own key (already submitted) is being confirmed too: the service holds the key, which does not prove it
 * made the payment (src/momo/assumptions.ts DUPLICATE_KEY_CONFLICT); the outcome comes by notification, or the
 * owed outcome's check.
 */
export function moneyOutcome(outcome: EventObject): Text {
  if (outcome.type.startsWith('xstate.done.actor.')) {
    const output = (outcome as { output?: unknown }).output;
    if (isAlreadySubmitted(output)) return { key: 'common.confirming' };
    return isHeld(output) ? { key: 'common.updatedHeld' } : { key: 'common.updatedSent' };
  }
  const error = (outcome as { error?: unknown }).error;
  return madeNothing(error) ? failureText(error) : { key: 'common.confirming' };
}
