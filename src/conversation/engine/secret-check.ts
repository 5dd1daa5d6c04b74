/**
 * A step into a PIN check. A state tagged `secret` (a PIN check) is never stored: its invoke's input holds the
 * secret. Its check is our own (a PIN against our own store: nothing reaches the service, nothing needs
 * repeating), so it runs here, before anything is written, and the step is written as it ends: the screen of
 * a refused PIN, or the next busy state with the run it starts, in one write. A process dying meanwhile leaves
 * the flow at the PIN (a dial offers to take it up), nothing recorded and nothing sent. A copy of the message
 * racing this one checks its PIN too (a try counted twice, never less), and one of the two writes wins.
 */
import type { Lang } from '../../../flows/types.js';
import { within } from '../../within.js';
import { isSecret, type Step, type StepContext } from '../flow/flow-runtime.js';
import type { Inbound } from '../types.js';
import { CONFLICT, who, type Delivered, type Delivery, type TurnOptions } from './delivery.js';
import { withAnswer } from './ledger.js';

/** The step after the secret checks it leads into; undefined for a check still out at the channel's deadline. */
export async function checkSecrets(
  o: TurnOptions,
  inbound: Inbound,
  planned: Step,
  ctx: StepContext,
  answerBy: number | undefined,
): Promise<Step | undefined> {
  const { runtime } = o;
  let step = planned;
  const until = answerBy ?? o.now() + o.deadlineOf(inbound.channel);
  for (
    let snapshot = runtime.restore(step.storedFlow);
    isSecret(snapshot);
    snapshot = runtime.restore(step.storedFlow)
  ) {
    const outcome = await within(runtime.call(runtime.invocation(step.storedFlow.flow, snapshot)), until - o.now());
    if (!outcome) return undefined;
    step = runtime.resolve(step.storedFlow, outcome, step, { ...ctx, at: o.now() });
  }
  return step;
}

/**
 * The check took longer than the channel waits: its answer is dropped, so nothing follows from it. The
 * answer is recorded for this delivery (the flow stays where it was), so a copy of it in another process,
 * whose check came in time, answers the same and pays nothing; a copy that recorded its step first wins,
 * and this one answers as that copy does (read again). Where answers are kept for the next dial (USSD) it
 * is kept there too: the gateway's guard may have answered "dial again to see the result" before it, and
 * that dial must say it rather than offer the PIN screen again.
 */
export async function checkTooLate<S>(
  o: TurnOptions,
  delivery: Delivery<S>,
  lang: Lang,
): Promise<Delivered<S> | typeof CONFLICT> {
  const { inbound, id, key, stored, record, after } = delivery;
  const prompt = o.answers.notice('common.runFailed', lang, true);
  if (
    !(await o.records.write(key, { ...record, ledger: withAnswer(record.ledger, id, prompt) }, stored?.version ?? null))
  )
    return CONFLICT;
  o.logger.warn(who(inbound), 'engine: a secret check passed the deadline; nothing was sent');
  if (o.capabilitiesOf(inbound.channel).keepsForNextDial)
    await o.runner.keepForNextDial(inbound, prompt, { key: 'common.runFailed' });
  return { prompt, state: after(prompt) };
}
