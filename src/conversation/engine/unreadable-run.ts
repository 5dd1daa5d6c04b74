/**
 * A run taken over whose flow this release cannot read, before any money call (nothing was sent). A later
 * build's, not over: left to a process of that build (listed still, its lease given back). Else its flow starts
 * again (the conversation's start: the menu, or Change PIN after a reset) with one line saying the service was
 * updated. Not here: a money run of such a flow (finished from its record: finish-money.ts), deciding which
 * runs are taken over (take-over.ts), what a release admits (flow-runtime.ts admit).
 */
import { logged } from '../../store/chat-address.js';
import type { StoredFlow } from '../flow/flow-runtime.js';
import type { Participant } from '../types.js';
import type { Stored } from './ledger.js';
import { deliverLate } from './late-outcome.js';
import type { RunnerOptions } from './run.js';
import { answerWaiting } from './run-record.js';

/**
 * The run of `fresh`, whose stored flow this release admits as `kind`: left to a later build while not over,
 * else started again. True when nothing is left to run (the conversation comes off the open runs).
 */
export async function takeUnreadable(
  o: RunnerOptions,
  key: string,
  fresh: Stored,
  storedFlow: StoredFlow,
  kind: 'newer' | 'updated',
  participant: Participant,
): Promise<boolean> {
  if (kind === 'newer' && storedFlow.expiresAt > o.now()) {
    o.logger.info(logged(participant), "engine: a run of a later build's flow left to that build");
    return false;
  }
  return restartUpdated(o, key, fresh, participant);
}

/**
 * The flow starts again with one line saying the service was updated. Its waiters get that screen; one told
 * "still working on it" is sent it. True when written (nothing is left to run).
 */
async function restartUpdated(
  o: RunnerOptions,
  key: string,
  fresh: Stored,
  participant: Participant,
): Promise<boolean> {
  const { runtime, answers, records, logger } = o;
  const { record } = fresh;
  const profile = record.profile ?? { lang: 'en' };
  const ctx = { ...o.context(participant), at: o.now() };
  const step = runtime.start(ctx.home, { profile, remember: {}, notes: [{ key: 'common.updated' }] }, ctx);
  const screen = answers.withNotes(
    answers.screen(step.storedFlow, profile.lang, participant.channel),
    step.notes.map((note) => answers.text(note, profile.lang)),
  );
  const written = await records.write(
    key,
    { ...record, session: step.storedFlow, ...answerWaiting(o, record, screen), run: undefined },
    fresh.version,
  );
  if (!written) return false;
  logger.warn(logged(participant), 'engine: a run of a flow this build cannot read started again; told so');
  if (record.run?.late) await deliverLate(o, participant, screen, false);
  return true;
}
