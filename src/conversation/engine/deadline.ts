/**
 * The deadline wait: a delivery waiting for the run of its conversation gets the run's outcome, or at its
 * channel's deadline "processing" ("being confirmed" in a money state, with the short ref), written in the
 * ledger with `run.late` first so that a copy of it gets the same and the run tells its outcome late. It waits on
 * the run when the run is in this process, reads the record when it is elsewhere, and takes the run over when its
 * lease is free. An outcome that lands first wins and is the answer. Not here: the run itself (execution.ts),
 * taking over (take-over.ts), telling the outcome late (late-outcome.ts).
 */
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import { within } from '../../within.js';
import type { Prompt } from '../types.js';
import { answerOf, isNewest, WAITING, withAnswer, type ConversationRecord, type Stored } from './ledger.js';
import {
  CAS_ATTEMPTS,
  isMoneyRun,
  sleep,
  type Answered,
  type LocalRun,
  type RunnerOptions,
  type Waiter,
} from './run.js';
import { shortRefOfRun } from './short-ref.js';

/** How often a delivery waiting for a run in another process reads the record. */
const POLL_MS = 50;
/** How long past its deadline a delivery waits for an outcome this process is writing. */
const SETTLING_GRACE_MS = 500;

/**
 * The answer of a delivery `waiting` in the ledger of `from`: the outcome of the run it waits for, or
 * "processing" at the channel's deadline. Never throws: a failure answers "processing" (or "being
 * confirmed"), which never invites the user to start again.
 */
export async function waitForRun(
  o: RunnerOptions,
  waiter: Waiter,
  from: Stored,
  here: { local(): LocalRun | undefined; takeOver(): Promise<LocalRun | undefined> },
): Promise<Answered> {
  const { records, answers, logger } = o;
  const deadline = waiter.answerBy ?? o.now() + o.deadlineOf(waiter.participant.channel);
  let stored = from;
  try {
    for (;;) {
      // What this process wrote since (a run of its own settling) is newer than what the loop last read.
      const kept = records.peek(waiter.key);
      if (kept && kept.version > stored.version) stored = kept;
      const { record } = stored;
      const entry = answerOf(record, waiter.id);
      if (entry !== undefined && entry !== WAITING) return await keptAnswer(o, waiter, stored, entry);
      if (entry === undefined || !record.run) return currentAnswer(o, waiter, record);
      const run = here.local() ?? (await here.takeOver());
      // An outcome being written at the deadline is waited for, briefly: answering "processing" instead
      // would race its write (whichever lands first is the answer, for every copy alike).
      const left = deadline - o.now() + (run?.settling ? SETTLING_GRACE_MS : 0);
      if (left <= 0) return await lateAnswer(o, waiter, stored);
      if (run) {
        await within(run.settled, left);
        continue;
      }
      await sleep(Math.min(POLL_MS, left));
      const read = await records.read(waiter.key);
      if (!read) return currentAnswer(o, waiter, record);
      stored = read;
    }
  } catch (error) {
    logger.error(
      { ...logged(waiter.participant), err: errorMessage(error) },
      'engine: a delivery waiting for a run failed; answered processing',
    );
    const prompt = answers.withNotes(
      answers.processing(waiter.participant.channel, waiter.lang, isMoneyRun(o, stored.record.session)),
      waiter.notes,
    );
    return { prompt, state: waiter.after?.(prompt) };
  }
}

/** The answer of a delivery nothing will resolve (no run due, or dropped from the ledger): where the conversation is. */
function currentAnswer(o: RunnerOptions, waiter: Waiter, record: ConversationRecord): Answered {
  const { answers } = o;
  const prompt = record.session
    ? answers.screen(record.session, waiter.lang, waiter.participant.channel)
    : answers.notice('common.busy', waiter.lang, false);
  return { prompt, state: waiter.after?.(prompt) };
}

/**
 * A delivery's answer from the ledger, and its channel state kept with the conversation while it is the
 * newest delivery (one write, only when another answer's state is there). The answer stands even when that
 * write fails.
 */
async function keptAnswer(o: RunnerOptions, waiter: Waiter, from: Stored, prompt: Prompt): Promise<Answered> {
  if (!waiter.after) return { prompt, state: undefined };
  const state = waiter.after(prompt);
  try {
    let stored = from;
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const { record } = stored;
      if (!isNewest(record, waiter.id) || JSON.stringify(record.channel) === JSON.stringify(state)) break;
      if (await o.records.write(waiter.key, { ...record, channel: state }, stored.version)) break;
      const read = await o.records.read(waiter.key);
      if (!read) break;
      stored = read;
    }
  } catch (error) {
    o.logger.warn(
      { ...logged(waiter.participant), err: errorMessage(error) },
      'engine: the channel state of an answer was not kept',
    );
  }
  return { prompt, state };
}

/**
 * The deadline passed: the delivery is answered "processing" ("being confirmed" in a money state), written
 * to the ledger first with `run.late`, so a copy gets the same and the run delivers its outcome late. A
 * write refused because the outcome landed meanwhile makes the outcome the answer.
 */
async function lateAnswer(o: RunnerOptions, waiter: Waiter, from: Stored): Promise<Answered> {
  const { answers, records, logger } = o;
  const money = isMoneyRun(o, from.record.session);
  const ref = money ? await shortRefOfRun(o, from.record.session) : undefined;
  const prompt = answers.withNotes(
    answers.processing(waiter.participant.channel, waiter.lang, money, ref),
    waiter.notes,
  );
  const state = waiter.after?.(prompt);
  let stored = from;
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const { record } = stored;
    const entry = answerOf(record, waiter.id);
    if (entry !== undefined && entry !== WAITING) return keptAnswer(o, waiter, stored, entry);
    if (entry === undefined || !record.run) return currentAnswer(o, waiter, record);
    const next: ConversationRecord = {
      ...record,
      ledger: withAnswer(record.ledger, waiter.id, prompt),
      run: { ...record.run, late: true },
      ...(waiter.after && isNewest(record, waiter.id) ? { channel: state } : {}),
    };
    if (await records.write(waiter.key, next, stored.version)) {
      logger.info(logged(waiter.participant), 'engine: past the deadline, answering processing');
      return { prompt, state };
    }
    const read = await records.read(waiter.key);
    if (!read) break;
    stored = read;
  }
  logger.warn(logged(waiter.participant), 'engine: a "processing" answer was not recorded after repeated conflicts');
  return { prompt, state };
}
