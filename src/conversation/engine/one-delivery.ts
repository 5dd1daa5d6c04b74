/**
 * One delivery: read the record, let the channel decide, then answer: the channel's own reply, the answer the
 * ledger holds for a delivery seen before (resend.ts), or a new step written (step.ts). A lost
 * compare-and-set reads again and decides again, up to {@link CAS_ATTEMPTS} times, then answers "busy". A
 * failure is answered from the record last read.
 */
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import { keys } from '../../store/keys.js';
import type { Decide, Participant, Prompt, TurnDecision } from '../types.js';
import { EMPTY, CONFLICT, type Delivered, type TurnOptions } from './delivery.js';
import { answerOf, deliveryId, isNewest, WAITING, type ConversationRecord, type Stored } from './ledger.js';
import { answerAgain } from './resend.js';
import { RunUnknown } from './start-run.js';
import { step } from './step.js';
import { readForStep, readRecord, type Alongside } from './turn-read.js';
import { viewOf } from './view.js';

/** Compare-and-sets one delivery may lose to other messages of the conversation before it answers "busy". */
const CAS_ATTEMPTS = 5;

/**
 * One delivery: read the record, decide, step, write; with the decision it acted on. With `follows`, only
 * while that delivery is the latest the conversation holds (else `stopped`: nothing decided or written).
 * `answerBy`: the channel's deadline for its answer (kept outcomes shown later are not counted as seen).
 */
export async function deliverOne<S>(
  o: TurnOptions,
  participant: Participant,
  decide: Decide<S>,
  follows?: string,
  answerBy?: number,
): Promise<Delivered<S> & { decision?: TurnDecision<S>; stopped?: true }> {
  const { records, answers, logger } = o;
  const key = keys.conversation(participant);
  /** The record kept in memory (a guess, proved by this message's write) or, once undefined, read. */
  let stored: Stored | null | undefined = records.peek(key);
  let guessed = stored !== undefined;
  /**
   * The profile and pending outcomes, read with the record when it is read: what a conversation starting over
   * needs (a new USSD dial, where the record is mostly not kept here), in the same round trip.
   */
  let alongside: Alongside | undefined;
  /** What the channel answered on its own (TurnEngine.toldLate) is read only where a next dial explains it. */
  const { keepsForNextDial } = o.capabilitiesOf(participant.channel);
  /** The record last read, and the channel state of the decision on it: what a failure is answered from. */
  let known: ConversationRecord | undefined;
  let after: ((prompt: Prompt) => S) | undefined;
  try {
    // Only a lost compare-and-set counts as a try. A record kept in memory that cannot be acted on (stale, or
    // an answer that must come from a record just read) is read again without counting: a read has no guess
    // to refute, so that happens at most once.
    let lost = 0;
    while (lost < CAS_ATTEMPTS) {
      if (stored === undefined) {
        ({ stored, alongside } = await readRecord(o, key, participant, keepsForNextDial));
        guessed = false;
      }
      const record = stored?.record ?? EMPTY;
      known = record;
      if (follows !== undefined && !isNewest(record, follows)) {
        if (guessed) {
          stored = undefined;
          continue;
        }
        return { state: record.channel as S, stopped: true };
      }
      const decision = decide(
        record.channel as S | undefined,
        viewOf(o, record, alongside?.pending, participant, alongside?.toldLate),
      );
      // An answer without a step comes only from a record just read, with the outcomes kept for the user (the
      // view's notes): a kept one is read and decided on again (not a try).
      if (decision.kind === 'reply') {
        after = () => decision.state;
        if (guessed) {
          stored = undefined;
          continue;
        }
        if (!decision.changed) return { state: decision.state, decision };
        if (await records.write(key, { ...record, channel: decision.state }, stored?.version ?? null))
          return { state: decision.state, decision };
        lost += 1;
        stored = undefined;
        continue;
      }
      const { inbound } = decision;
      after = (prompt) => decision.after(prompt, 0);
      const id = deliveryId(inbound.messageId);
      const entry = answerOf(record, id);
      if (entry !== undefined) {
        if (guessed) {
          stored = undefined;
          continue;
        }
        return { ...(await answerAgain(o, key, inbound, id, entry, stored!, after)), decision };
      }
      const read = await readForStep(o, inbound, record, alongside, keepsForNextDial);
      const delivery = { inbound, id, key, stored: stored ?? null, record, after, answerBy };
      const outcome = await step(o, delivery, read);
      if (outcome !== CONFLICT) return { ...outcome, decision };
      lost += 1;
      stored = undefined;
    }
    logger.warn({ channel: participant.channel }, 'engine: gave up after repeated conflicts');
    const prompt = answers.notice('common.busy', known?.profile?.lang ?? 'en', false);
    return { prompt, state: after ? after(prompt) : (undefined as S) };
  } catch (error) {
    logger.error({ ...logged(participant), err: errorMessage(error) }, 'engine: message failed');
    if (!after) throw error;
    return failed(o, error, known, participant, after);
  }
}

/**
 * A failure's answer, from the record last read: "processing" ("being confirmed") for a run that may be out,
 * else what the flow's state allows ("start again" only before money moved); unavailable when nothing was read.
 */
function failed<S>(
  o: Pick<TurnOptions, 'answers'>,
  error: unknown,
  known: ConversationRecord | undefined,
  participant: Participant,
  after: (prompt: Prompt) => S,
): Delivered<S> {
  const { answers } = o;
  const lang = known?.profile?.lang ?? 'en';
  const latest = known?.ledger.at(-1)?.[1];
  const afterMoney = latest !== undefined && latest !== WAITING && latest.money === true;
  const prompt =
    error instanceof RunUnknown
      ? answers.failure(error.storedFlow, true, afterMoney, lang, participant.channel)
      : known
        ? answers.failure(known.session, known.run !== undefined, afterMoney, lang, participant.channel)
        : answers.notice('common.unavailable', lang, true);
  return { prompt, state: after(prompt) };
}
