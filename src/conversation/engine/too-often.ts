/**
 * A run taken over too often. Before a money state, a run taken over {@link MAX_TAKEOVERS} times is left: its
 * flow ends "nothing was sent, start again". In a money state, past that each further takeover waits longer
 * after the last (parked under its holder's id until it is due), and a run taken over
 * {@link MAX_MONEY_TAKEOVERS} times is left: its flow ends "being confirmed", the outcome coming by
 * notification. Here: the limits, the wait, parking, and what leaving a run writes and tells. Not here: the
 * sweep and the takeover itself (take-over.ts), the lease (lease.ts).
 */
import { logged } from '../../store/chat-address.js';
import { transition, type StoredFlow } from '../flow/flow-runtime.js';
import type { Participant, Prompt } from '../types.js';
import type { ConversationRecord, OpenRun } from './ledger.js';
import { leaseOf } from './lease.js';
import { deliverLate } from './late-outcome.js';
import type { RunnerOptions } from './run.js';
import { answerWaiting } from './run-record.js';

/**
 * Takeovers of one run before it is left alone (before a money state), or before each further one waits
 * ({@link takeoverWait}: in a money state).
 */
const MAX_TAKEOVERS = 5;
/**
 * Takeovers of a run in a money state in all: the run taken over this often is left (its outcome comes by
 * notification). Past {@link MAX_TAKEOVERS}, five more, after waits of 5, 10, 20, 30 and 30 s.
 */
const MAX_MONEY_TAKEOVERS = 10;
/** The first of the waits before a takeover past {@link MAX_TAKEOVERS}, and the longest. */
const TAKEOVER_WAIT_FIRST_MS = 5_000;
const TAKEOVER_WAIT_MAX_MS = 30_000;

/**
 * How long after its last takeover (OpenRun.at) a money run taken over `takeovers` times may be taken over
 * again: none up to {@link MAX_TAKEOVERS}, then 5 s doubled each time, at most 30 s.
 */
const takeoverWait = (takeovers: number): number =>
  takeovers < MAX_TAKEOVERS
    ? 0
    : Math.min(TAKEOVER_WAIT_MAX_MS, TAKEOVER_WAIT_FIRST_MS * 2 ** (takeovers - MAX_TAKEOVERS));

/** The run was taken over as often as a run may be (in a money state, or before one). */
export const tooOften = (run: OpenRun, money: boolean): boolean =>
  (run.takeovers ?? 0) >= (money ? MAX_MONEY_TAKEOVERS : MAX_TAKEOVERS);

/**
 * Past {@link MAX_TAKEOVERS} (a money run: its holders killed one after another, or a run that kills each
 * process taking it), each further takeover waits longer after the last: how long until this one is due, or
 * undefined when it is. A record without the time (an older engine's) is due.
 */
export function notDueFor(o: Pick<RunnerOptions, 'now'>, run: OpenRun): number | undefined {
  const waited = o.now() - (typeof run.at === 'number' ? run.at : -Infinity);
  const wait = takeoverWait(run.takeovers ?? 0);
  return waited < wait ? Math.min(wait - waited, wait) : undefined;
}

/**
 * A run not yet due for its next takeover (`dueInMs`) stays listed and is looked at again when it is due: the
 * lease this takeover took is given back and taken again under the id of the run in the record (`runId`,
 * its holder's), to expire when the run is due. Until then every sweep passes it by (it is listed with that
 * expiry) and a waiter finds its lease held, waits and is answered at its deadline ("being confirmed"). A
 * holder that was only slow, not dead, renews that lease as its own, and the write of its outcome ends it.
 * A failure here leaves the conversation listed with this takeover's expiry, for a later sweep.
 */
export async function park(
  o: RunnerOptions,
  key: string,
  token: string,
  runId: string,
  dueInMs: number,
  participant: Participant,
  takeovers: number,
): Promise<void> {
  const { store, logger } = o;
  await store.releaseLease(leaseOf(key), token, false);
  if (await store.lease(leaseOf(key), runId, dueInMs))
    logger.warn(
      { ...logged(participant), takeovers, dueInMs },
      'engine: a money run taken over often is taken over again only after a wait',
    );
}

/**
 * A run left alone (taken over too often, or a run with no stored flow), logged: in a money state every
 * delivery waiting gets "being confirmed" and the outcome comes by notification; before one nothing was sent,
 * and they are told to start again. Its flow ends saying so, or the conversation would stay busy with no run
 * to end it: every later message answered "being confirmed", the pending outcome never shown (a new USSD dial
 * shows it once the flow ended). The record to write, and what its waiters are answered.
 */
export function leftAlone(
  o: RunnerOptions,
  record: ConversationRecord,
  participant: Participant,
  money: boolean,
): { record: ConversationRecord; prompt: Prompt } {
  o.logger.error(
    { ...logged(participant), takeovers: record.run?.takeovers ?? 0 },
    'engine: a run taken over too often was left; its outcome comes by notification',
  );
  const lang = record.profile?.lang ?? 'en';
  const prompt = money
    ? o.answers.processing(participant.channel, lang, true)
    : o.answers.notice('common.runFailed', lang, true);
  const ended = record.session && {
    ...record.session,
    ended: true,
    notice: { key: money ? 'common.confirming' : 'common.runFailed' },
  };
  return { record: { ...record, session: ended, ...answerWaiting(o, record, prompt), run: undefined }, prompt };
}

/**
 * A left run's end written: its move counted, and a person told "still working on it, you will be notified"
 * (`late`) told that nothing was sent, where nothing comes by notification (before a money state).
 */
export async function tellLeft(
  o: RunnerOptions,
  storedFlow: StoredFlow,
  participant: Participant,
  money: boolean,
  prompt: Prompt,
  late: boolean,
): Promise<void> {
  // The funnel counts the step of a flow this release reads (another build's is not its to count).
  if (o.runtime.readsAsIs(storedFlow))
    o.onTransition?.(
      transition(storedFlow, { channel: participant.channel, at: o.now() }, o.runtime.mark(storedFlow), {
        end: 'error',
      }),
    );
  if (!money && late) await deliverLate(o, participant, prompt, false);
}
