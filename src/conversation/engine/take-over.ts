/**
 * Taking over: a run whose holder died (its lease expired, never renewed) is run again by another process, under
 * the same Duplicate-Check-Key, from the stored snapshot. Every process sweeps the open runs for expired leases;
 * a waiter finding the lease free does the same. Here: the sweep, what a takeover records (the run's new id, the
 * count and time of takeovers), leaving a run taken over too often (its flow ends saying so), waiting before a
 * further takeover of a money run (parked under its holder's id), and a run of a flow this release cannot read
 * (left to a later build, restarted, or finished from its record). Not here: running it (execution.ts), the
 * lease itself (lease.ts).
 */
import { logged, userOfAddress } from '../../store/chat-address.js';
import { errorMessage } from '../../log.js';
import { keys } from '../../store/keys.js';
import { randomId } from '../../store/random-id.js';
import { isBusy, stepName, transition } from '../flow/flow-runtime.js';
import type { Participant } from '../types.js';
import type { Stored } from './ledger.js';
import { leaseOf, releaseLease } from './lease.js';
import { deliverLate } from './late-outcome.js';
import { CAS_ATTEMPTS, isMoneyRun, type LocalRun, type RunnerOptions, type RunStart } from './run.js';
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
/** Expired leases taken per sweep. */
const SWEEP_BATCH = 20;

/**
 * How long after its last takeover (OpenRun.at) a money run taken over `takeovers` times may be taken over
 * again: none up to {@link MAX_TAKEOVERS}, then 5 s doubled each time, at most 30 s.
 */
const takeoverWait = (takeovers: number): number =>
  takeovers < MAX_TAKEOVERS
    ? 0
    : Math.min(TAKEOVER_WAIT_MAX_MS, TAKEOVER_WAIT_FIRST_MS * 2 ** (takeovers - MAX_TAKEOVERS));

/** What a takeover needs of the runner: the runs going on in this process, starting one, and whether it stopped. */
export interface RunsHere {
  readonly runs: ReadonlyMap<string, LocalRun>;
  stopped(): boolean;
  begin(start: RunStart): void;
}

export async function sweepOnce(o: RunnerOptions, here: RunsHere): Promise<void> {
  try {
    // Every part of the index (keys.ts), asked together: one write on one Redis, one per master on a cluster.
    // A part that fails (its slot moving) leaves the others swept.
    const parts = keys.openRunsParts();
    const found = await Promise.allSettled(parts.map((part) => o.store.expiredLeases(part, SWEEP_BATCH)));
    for (const [i, result] of found.entries()) {
      if (result.status === 'rejected') continue;
      for (const key of result.value) {
        if (here.stopped()) return;
        // Ours, its lease lapsed while it renewed late: its renewal no longer holds it, so the run stops before
        // its next call (or writes its outcome) and a sweep after that takes the run over.
        if (here.runs.has(key)) continue;
        const address = keys.conversationOf(key);
        if (!address || keys.openRuns(key) !== parts[i]) {
          await releaseLease(o, key, '', true, parts[i]);
          continue;
        }
        await takeOver(o, here, key, { ...address, userId: userOfAddress(address) }, true);
      }
    }
    const failed = found.find((f): f is PromiseRejectedResult => f.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (error) {
    o.logger.warn({ err: errorMessage(error) }, 'engine: sweep for runs to take over failed');
  }
}

/**
 * Takes over the run of `key` when its lease is free and a run is due: records this run's id, the time and
 * the count of takeovers (and, from the sweep, `late`: nobody waits for the outcome here) and starts it from
 * the stored session. Undefined when another process holds the lease, when nothing is due (the conversation
 * is then unlisted), when the run is not due yet (parked: see {@link park}), or when the takeover could not
 * be recorded (the conversation stays listed for a later sweep).
 */
export async function takeOver(
  o: RunnerOptions,
  here: RunsHere,
  key: string,
  participant: Participant,
  late: boolean,
): Promise<LocalRun | undefined> {
  const { store, records, logger, answers } = o;
  const token = randomId();
  const leasedAt = o.now();
  if (here.stopped() || !(await store.lease(leaseOf(key), token, o.leaseMs))) return undefined;
  let unlist = false;
  let parked = false;
  try {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const fresh = await records.read(key);
      const run = fresh?.record.run;
      if (!fresh || !run) {
        unlist = true;
        return undefined;
      }
      const { record } = fresh;
      const takeovers = run.takeovers ?? 0;
      const money = isMoneyRun(o, record.session);
      const admitted = record.session && !money ? o.runtime.admit(record.session) : undefined;
      if (admitted && admitted.kind !== 'continue') {
        // A run of a flow this release cannot read, before any money call. A later build's, not over: left
        // to a process of that build (listed still, its lease given back). Else it ends here, the flow
        // started again with one line saying the service was updated.
        if (admitted.kind === 'newer' && record.session!.expiresAt > o.now()) {
          logger.info(logged(participant), "engine: a run of a later build's flow left to that build");
          return undefined;
        }
        unlist = await restartUpdated(o, key, fresh, participant);
        return undefined;
      }
      if (takeovers >= (money ? MAX_MONEY_TAKEOVERS : MAX_TAKEOVERS) || !record.session) {
        // Left alone: in a money state every delivery waiting gets "being confirmed" and the outcome comes by
        // notification; before one nothing was sent, and they are told to start again. Its flow ends saying
        // so, or the conversation would stay busy with no run to end it: every later message answered "being
        // confirmed", the pending outcome never shown (a new USSD dial shows it once the flow ended).
        logger.error(
          { ...logged(participant), takeovers },
          'engine: a run taken over too often was left; its outcome comes by notification',
        );
        const lang = record.profile?.lang ?? 'en';
        const prompt = money
          ? answers.processing(participant.channel, lang, true)
          : answers.notice('common.runFailed', lang, true);
        const session = record.session && {
          ...record.session,
          ended: true,
          notice: { key: money ? 'common.confirming' : 'common.runFailed' },
        };
        unlist =
          (await records.write(
            key,
            { ...record, session, ...answerWaiting(o, record, prompt), run: undefined },
            fresh.version,
          )) !== null;
        if (unlist && record.session) {
          // The funnel counts the step of a flow this release reads (another build's is not its to count).
          if (o.runtime.readsAsIs(record.session))
            o.onTransition?.(
              transition(
                record.session,
                { channel: participant.channel, at: o.now() },
                o.runtime.mark(record.session),
                { end: 'error' },
              ),
            );
          // Someone was told "still working on it, you will be notified" (run.late): before a money state
          // nothing comes by notification, so they are told here that nothing was sent.
          if (!money && run.late) await deliverLate(o, participant, prompt, false);
        }
        return undefined;
      }
      // Past MAX_TAKEOVERS (a money run: its holders killed one after another, or a run that kills each
      // process taking it), each further takeover waits longer after the last. A record without the time (an
      // older engine's) is due.
      const waited = o.now() - (typeof run.at === 'number' ? run.at : -Infinity);
      const wait = takeoverWait(takeovers);
      if (waited < wait) {
        parked = true;
        await park(o, key, token, run.id, Math.min(wait - waited, wait), participant, takeovers);
        return undefined;
      }
      const taken = {
        ...record,
        run: {
          id: token,
          ...(late || run.late ? { late: true as const } : {}),
          takeovers: takeovers + 1,
          at: o.now(),
        },
      };
      const written = await records.write(key, taken, fresh.version);
      if (!written) continue;
      // A money run of a flow this release cannot read runs from what its record carries (finishMoney).
      if (money && !o.runtime.readsAsIs(record.session)) {
        const migrated = o.runtime.admit(record.session);
        const storedFlow = migrated.kind === 'continue' ? migrated.storedFlow : record.session;
        logger.warn(
          logged(participant),
          "engine: took over a money run of another build's flow; it finishes from its record",
        );
        here.begin({ key, participant, token, leasedAt, storedFlow, stored: written });
        return here.runs.get(key);
      }
      const resumed = admitted?.kind === 'continue' ? admitted.storedFlow : record.session;
      const stored = o.runtime.restore(resumed);
      logger.warn(
        { ...logged(participant), step: stepName(stored) },
        'engine: took over a run whose holder stopped renewing its lease',
      );
      // Nothing busy stored: a run recorded around a PIN check by an engine before this one (a rolling
      // deploy; this one checks PINs before it records a run, turn.ts checkSecrets). The check cannot be
      // repeated, and no money call was made under it (the state of one is stored before its call, and that
      // write fails once this run's id replaced the holder's), so the flow ends saying so.
      const storedFlow = isBusy(stored) ? resumed : { ...resumed, ended: true, notice: { key: 'common.secretLost' } };
      here.begin({ key, participant, token, leasedAt, storedFlow, stored: written });
      return here.runs.get(key);
    }
    return undefined;
  } catch (error) {
    logger.warn(
      { ...logged(participant), err: errorMessage(error) },
      'engine: a run could not be taken over; a later sweep tries again',
    );
    return undefined;
  } finally {
    if (!parked && (!here.runs.has(key) || here.runs.get(key)?.token !== token))
      await releaseLease(o, key, token, unlist);
  }
}

/**
 * A run not yet due for its next takeover (`dueInMs`) stays listed and is looked at again when it is due: the
 * lease this takeover took is given back and taken again under the id of the run in the record (`runId`,
 * its holder's), to expire when the run is due. Until then every sweep passes it by (it is listed with that
 * expiry) and a waiter finds its lease held, waits and is answered at its deadline ("being confirmed"). A
 * holder that was only slow, not dead, renews that lease as its own, and the write of its outcome ends it.
 * A failure here leaves the conversation listed with this takeover's expiry, for a later sweep.
 */
async function park(
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
 * A run whose flow this release cannot read, before any money call: nothing was sent, and its flow starts
 * again (the conversation's start: the menu, or Change PIN after a reset) with one line saying the service was
 * updated. Its waiters get that screen; one told "still working on it" is sent it. True when written (nothing is
 * left to run).
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
