/**
 * The answers a delivery's decision typed ahead (TurnDecision `ahead`: the answers of a USSD dial string), each a
 * delivery of its own (id `<delivery>.<k>`) taken on the screen the last one answered, while the channel takes
 * it there, nothing else was delivered in between, and the channel's deadline has not passed.
 */
import type { Inbound, Participant, TurnDecision } from '../types.js';
import type { Delivered, TurnOptions } from './delivery.js';
import { deliveryId } from './ledger.js';
import { deliverOne } from './one-delivery.js';

/**
 * After the first delivery (`first`), the answers typed ahead, each by the request's deadline (`answerBy`: a PIN
 * check or a wait for a run among them ends by it); the last answer.
 */
export async function deliverAhead<S>(
  o: TurnOptions,
  participant: Participant,
  first: Delivered<S> & { decision?: TurnDecision<S> },
  answerBy: number,
): Promise<Delivered<S>> {
  const decision = first.decision;
  if (decision?.kind !== 'step' || !decision.ahead) return first;
  const { ahead, inbound } = decision;
  let last: Delivered<S> = first;
  for (let k = 1; k <= ahead.answers.length && o.now() < answerBy; k++) {
    const action = last.prompt ? ahead.take(last.prompt, ahead.answers[k - 1]!) : undefined;
    if (!action) break;
    const previous = `${inbound.messageId}${k === 1 ? '' : `.${k - 1}`}`;
    const next: Inbound = {
      ...inbound,
      newSession: undefined,
      resume: undefined,
      ...action,
      messageId: `${inbound.messageId}.${k}`,
    };
    const taken = await deliverOne<S>(
      o,
      participant,
      () => ({ kind: 'step', inbound: next, after: (prompt) => decision.after(prompt, k) }),
      deliveryId(previous),
      answerBy,
    );
    if (taken.stopped) break;
    last = taken;
  }
  return last;
}
