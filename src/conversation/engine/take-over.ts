/**
 * Taking over: a run whose holder died (its lease expired, never renewed) is run again by another process, under
 * the same Duplicate-Check-Key, from the stored snapshot. Every process sweeps the open runs for expired leases;
 * a waiter finding the lease free does the same. Here, top to bottom: the sweep, the lease a takeover takes, the
 * record read and what it calls for, what a takeover records (the run's new id, the count and time of
 * takeovers), the run begun here, and the lease given back when no run was begun. Not here: a run taken over
 * too often, left or waiting before a further takeover (too-often.ts); a run of a flow this release cannot read
 * before any money call (unreadable-run.ts); running it (execution.ts, finish-money.ts); the lease itself
 * (lease.ts).
 */
import { logged, userOfAddress } from '../../store/chat-address.js';
import { errorMessage } from '../../log.js';
import { keys } from '../../store/keys.js';
import { randomId } from '../../store/random-id.js';
import { isBusy, stepName, type Admission, type StoredFlow } from '../flow/flow-runtime.js';
import type { Participant } from '../types.js';
import type { ConversationRecord, OpenRun, Stored } from './ledger.js';
import { leaseOf, releaseLease } from './lease.js';
import { CAS_ATTEMPTS, isMoneyRun, type LocalRun, type RunnerOptions, type RunStart } from './run.js';
import { leftAlone, notDueFor, park, tellLeft, tooOften } from './too-often.js';
import { takeUnreadable } from './unreadable-run.js';

/** Expired leases taken per sweep. */
const SWEEP_BATCH = 20;

/** What a takeover needs of the runner: the runs going on in this process, starting one, and whether it stopped. */
export interface RunsHere {
  readonly runs: ReadonlyMap<string, LocalRun>;
  stopped(): boolean;
  begin(start: RunStart): void;
}

/** A takeover under way: the run's conversation, the lease it took, and what becomes of that lease after it. */
interface Taking {
  key: string;
  participant: Participant;
  /** The new run's id, held in the lease this takeover took. */
  token: string;
  /** When that lease was asked for (RunStart.leasedAt). */
  leasedAt: number;
  /** From the sweep: nobody waits for the outcome here. */
  late: boolean;
  /** Nothing is left to run: the conversation comes off the open runs when the lease is given back. */
  unlist: boolean;
  /** The lease was taken again under the holder's id, to expire when the run is due (too-often.ts park): kept. */
  parked: boolean;
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
 * the stored flow. Undefined when another process holds the lease, when nothing is due (the conversation
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
  const token = randomId();
  const leasedAt = o.now();
  if (here.stopped() || !(await o.store.lease(leaseOf(key), token, o.leaseMs))) return undefined;
  const taking: Taking = { key, participant, token, leasedAt, late, unlist: false, parked: false };
  try {
    return await takeDue(o, here, taking);
  } catch (error) {
    o.logger.warn(
      { ...logged(participant), err: errorMessage(error) },
      'engine: a run could not be taken over; a later sweep tries again',
    );
    return undefined;
  } finally {
    if (!taking.parked && (!here.runs.has(key) || here.runs.get(key)?.token !== token))
      await releaseLease(o, key, token, taking.unlist);
  }
}

/**
 * The record read and acted on: nothing due (unlisted); a flow this release cannot read, before any money call
 * (unreadable-run.ts); a run taken over too often (left) or not due yet (parked: too-often.ts); else the
 * takeover recorded and the run begun here. A write lost to another writer reads again, up to
 * {@link CAS_ATTEMPTS} reads in all.
 */
async function takeDue(o: RunnerOptions, here: RunsHere, t: Taking): Promise<LocalRun | undefined> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const fresh = await o.records.read(t.key);
    const run = fresh?.record.run;
    if (!fresh || !run) {
      t.unlist = true;
      return undefined;
    }
    const storedFlow = fresh.record.session;
    const money = isMoneyRun(o, storedFlow);
    const admitted = storedFlow && !money ? o.runtime.admit(storedFlow) : undefined;
    if (storedFlow && admitted && admitted.kind !== 'continue') {
      t.unlist = await takeUnreadable(o, t.key, fresh, storedFlow, admitted.kind, t.participant);
      return undefined;
    }
    if (tooOften(run, money) || !storedFlow) {
      const left = leftAlone(o, fresh.record, t.participant, money);
      t.unlist = (await o.records.write(t.key, left.record, fresh.version)) !== null;
      if (t.unlist && storedFlow) await tellLeft(o, storedFlow, t.participant, money, left.prompt, run.late === true);
      return undefined;
    }
    const dueInMs = notDueFor(o, run);
    if (dueInMs !== undefined) {
      t.parked = true;
      await park(o, t.key, t.token, run.id, dueInMs, t.participant, run.takeovers ?? 0);
      return undefined;
    }
    const written = await o.records.write(t.key, takenBy(o, t, fresh.record, run), fresh.version);
    if (written) return begin(o, here, t, written, storedFlow, money, admitted);
  }
  return undefined;
}

/** The record with this takeover in its run: the new id, one more takeover and its time (`late` kept). */
function takenBy(o: RunnerOptions, t: Taking, record: ConversationRecord, run: OpenRun): ConversationRecord {
  return {
    ...record,
    run: {
      id: t.token,
      ...(t.late || run.late ? { late: true as const } : {}),
      takeovers: (run.takeovers ?? 0) + 1,
      at: o.now(),
    },
  };
}

/**
 * The run taken over begun here, from the stored flow as this release admits it. A money run of a flow this
 * release cannot read runs from what its record carries (finish-money.ts, chosen by Runner.begin).
 */
function begin(
  o: RunnerOptions,
  here: RunsHere,
  t: Taking,
  written: Stored,
  storedFlow: StoredFlow,
  money: boolean,
  admitted: Admission | undefined,
): LocalRun | undefined {
  const { key, participant, token, leasedAt } = t;
  if (money && !o.runtime.readsAsIs(storedFlow)) {
    const migrated = o.runtime.admit(storedFlow);
    const fromRecord = migrated.kind === 'continue' ? migrated.storedFlow : storedFlow;
    o.logger.warn(
      logged(participant),
      "engine: took over a money run of another build's flow; it finishes from its record",
    );
    here.begin({ key, participant, token, leasedAt, storedFlow: fromRecord, stored: written });
    return here.runs.get(key);
  }
  const resumed = admitted?.kind === 'continue' ? admitted.storedFlow : storedFlow;
  const snapshot = o.runtime.restore(resumed);
  o.logger.warn(
    { ...logged(participant), step: stepName(snapshot) },
    'engine: took over a run whose holder stopped renewing its lease',
  );
  // Nothing busy stored: a run recorded around a PIN check by an engine before this one (a rolling deploy; this
  // one checks PINs before it records a run, secret-check.ts checkSecrets). The check cannot be repeated, and no
  // money call was made under it (the state of one is stored before its call, and that write fails once this
  // run's id replaced the holder's), so the flow ends saying so.
  const startFrom = isBusy(snapshot) ? resumed : { ...resumed, ended: true, notice: { key: 'common.secretLost' } };
  here.begin({ key, participant, token, leasedAt, storedFlow: startFrom, stored: written });
  return here.runs.get(key);
}
