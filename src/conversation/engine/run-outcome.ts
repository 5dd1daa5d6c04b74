/**
 * A run's outcome, once its flow waits for the user again: what it says (with "nothing was sent" first where a
 * failover may have undone an answer), kept for the next dial where a money call's answer may not reach the
 * phone, written with every waiting delivery answered, then told: the flow's ends and moves, the money answer,
 * the profile remembered, and told late to a waiter answered "processing". Not here: the calls before it
 * (run-calls.ts), the write itself (run-record.ts settle), pushing and keeping late (late-outcome.ts).
 */
import type { Text } from '../../../flows/types.js';
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import type { Prompt } from '../types.js';
import { deliverLate, keepForNextDial } from './late-outcome.js';
import { rememberProfile } from './profile.js';
import type { Progress } from './run-calls.js';
import type { RunnerOptions, RunStart } from './run.js';
import { settle } from './run-record.js';

/** The outcome as it is written and told, and why. */
interface Told {
  outcome: Prompt;
  /** A chat's question said again after "nothing was sent" (see {@link outcomeOf}). */
  retold: boolean;
  /** It says a taken-over PIN check sent nothing (common.secretLost). */
  secretLost: boolean;
  /** Kept for the next dial before it was written. */
  kept: boolean;
  /** Its words as catalogue text (Answers.words). */
  words: Text | undefined;
  /** A question on a channel that cannot push: shown to nobody once late. */
  question: boolean;
}

/** Writes the run's outcome (then calls `written`) and tells it; logs and returns when another run holds it. */
export async function writeOutcome(
  o: RunnerOptions,
  start: RunStart,
  run: Progress,
  written: () => void,
): Promise<void> {
  const { participant } = start;
  const can = o.capabilitiesOf(participant.channel);
  const { outcome, retold } = outcomeOf(o, start, run, can.pushes);
  // A USSD answer after a money call, or saying a taken-over PIN check sent nothing, may never reach the
  // phone (the process or the network dropping it), so it is kept for the next dial first: a user who
  // missed it does not pay again, nor wait for news that will not come.
  const secretLost = run.storedFlow.notice?.key === 'common.secretLost';
  const keep = can.keepsForNextDial && outcome.final === true && ((run.money && run.called) || secretLost);
  const words = o.answers.words(run.storedFlow);
  const kept = keep && (await keepForNextDial(o, participant, outcome, words));
  const question = !can.pushes && !outcome.final && !run.money;
  const settled = await settle(
    o,
    start.key,
    start.token,
    run.current,
    { session: run.storedFlow, profile: run.profile },
    outcome,
    start.starter,
    question,
  );
  if (!settled) {
    o.logger.warn(logged(participant), 'engine: the conversation moved to another run; this outcome was not written');
    return;
  }
  written();
  const told = { outcome, retold, secretLost, kept, words, question };
  await tellWritten(o, start, run, told);
  if (settled.late) await tellLate(o, start, run, told);
}

/**
 * The screen the flow waits at. A chat's run taken over that ends at a question with no money state in it,
 * where a money call's state is held by a replica before the call (durable: Sentinel, cluster): a failover may
 * have put the record back to this run after the person had answered past that question (a Confirm answered
 * "still working on it", its run's start dropped, its holder gone: nothing else says what became of it). No
 * money call was made since (none before its state is held, and a held write is not dropped), so the question
 * comes after saying so (`retold`). On one server a takeover follows a holder's death, and a write lost in a
 * crash could have been a payment's state: the question alone. A channel that cannot push (USSD) shows no
 * question late: "nothing was sent" instead ({@link tellLate}).
 */
function outcomeOf(
  o: RunnerOptions,
  start: RunStart,
  run: Progress,
  pushes: boolean,
): { outcome: Prompt; retold: boolean } {
  const { answers } = o;
  const { lang } = run.profile;
  const screen = answers.screen(run.storedFlow, lang, start.participant.channel);
  const retold =
    pushes &&
    !run.money &&
    !screen.final &&
    (start.stored.record.run?.takeovers ?? 0) > 0 &&
    o.store.replicated !== undefined;
  const outcome = run.money
    ? { ...screen, money: true }
    : retold
      ? answers.withNotes(screen, [answers.text({ key: 'common.answerAgain' }, lang)])
      : screen;
  return { outcome, retold };
}

/** What follows a written outcome: the flow's ends, the money answer, the moves, the profile remembered. */
async function tellWritten(o: RunnerOptions, start: RunStart, run: Progress, told: Told): Promise<void> {
  const { participant } = start;
  const { logger } = o;
  for (const end of run.ended) o.onFlowEnd?.(end);
  if (run.moneyRef && run.called)
    o.onMoneyAnswer?.({
      ref: run.moneyRef,
      channel: participant.channel,
      conversationId: participant.conversationId,
      // What the record keeps: secrets on the screen (exam pins) are the owner's, never an operator's.
      text: told.outcome.masked ?? told.outcome.text,
    });
  for (const move of run.moves) o.onTransition?.(move);
  await rememberProfile(o.store, participant, run.remember, logger).catch((error: unknown) =>
    logger.warn({ err: errorMessage(error) }, 'engine: profile not saved'),
  );
  if (told.retold)
    logger.warn(
      logged(participant),
      'engine: a chat run taken over ended at a question; told first that nothing was sent',
    );
}

/**
 * An outcome written after a waiter was answered "processing" (or after a takeover): told late when a call was
 * made or a PIN check's loss is said. A question reached late (its waiters told "still working on it", or the
 * run taken over from a holder that died: a failover may have put the record back to this run after the person
 * answered past it) on a channel that cannot push (USSD) is shown to nobody: the next dial would offer to take
 * the flow up there, as if nothing had been said. No money call was made: that dial says plainly that nothing
 * was sent (and offers no resume while kept). Unless the person answers that question first: a holder that was
 * only slow (its lease taken over) still shows it to its waiter, and the dial then shows no such note (`about`).
 */
async function tellLate(o: RunnerOptions, start: RunStart, run: Progress, told: Told): Promise<void> {
  const { participant } = start;
  if (run.called || told.secretLost) await deliverLate(o, participant, told.outcome, told.kept, told.words);
  if (!told.question) return;
  o.logger.warn(logged(participant), 'engine: a late run ended at a question on USSD; told that nothing was sent');
  const notice = o.answers.notice('common.runFailed', run.profile.lang, true);
  await deliverLate(o, participant, notice, false, undefined, start.token);
}
