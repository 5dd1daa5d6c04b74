/**
 * The writes of a run's record: every compare-and-set a run makes of its conversation record (the busy state
 * before a further call, the outcome with every waiting delivery answered and the lease ended in the same step),
 * redone on the latest record when a waiter's entry or a "processing" mark came between, and refused once the
 * record holds another run's id. Also how a run tells that the write which started it was lost (a failover),
 * and that a money call's state is held by a replica before the call. Not here: what a run calls or what its
 * outcome says (run-calls.ts, run-outcome.ts), nor telling anyone late (late-outcome.ts).
 */
import { pauseAfter, STORE_TRIES } from '../../store/ride-out.js';
import type { StoredFlow } from '../flow/flow-runtime.js';
import type { Prompt } from '../types.js';
import { answerOf, isNewest, resolveWaiting, WAITING, type ConversationRecord, type Stored } from './ledger.js';
import { leaseOf } from './lease.js';
import { CAS_ATTEMPTS, sleep, type RunnerOptions, type Waiter } from './run.js';

/** Attempts to write a run's outcome when other writes keep coming between (waiters, "processing" marks). */
const SETTLE_ATTEMPTS = 8;
/** Tries of {@link durable} before a money call's state not held by a replica fails the run, and the pause between. */
const REPLICA_TRIES = 16;
const REPLICA_PAUSE_MS = 250;

/** The record holds no run, is gone, or is older than `version`: a write since `version`'s was lost. */
const wentBack = (read: Stored | null, version: number): boolean =>
  read === null || read.record.run === undefined || read.version < version;

/**
 * Compare-and-set of the run's record (`change` makes it from the record as stored), redone on the latest
 * record when another write came between (a waiter's ledger entry, a "processing" mark); null once the record
 * holds another run's id. Says whether a waiter was answered "processing" (`late`).
 */
export async function write(
  o: RunnerOptions,
  key: string,
  token: string,
  from: Stored,
  change: (record: ConversationRecord) => ConversationRecord,
  { attempts = CAS_ATTEMPTS, release = false } = {},
): Promise<(Stored & { late: boolean }) | null> {
  let stored = from;
  let failures = 0;
  for (let attempt = 0; attempt < attempts;) {
    try {
      if (stored.record.run?.id !== token) return null;
      const late = stored.record.run.late === true;
      // The write that ends the run gives up its lease in the same step (Store.set).
      const written = await o.records.write(
        key,
        change(stored.record),
        stored.version,
        release ? { release: leaseOf(key), token } : undefined,
      );
      if (written) return { ...written, late };
      attempt += 1;
      const read = await o.records.read(key);
      if (!read) return null;
      stored = read;
    } catch (error) {
      // A blip of the store (a dropped connection) is ridden out (ride-out.ts, over the whole write); a longer
      // outage fails the run (after a money-moving call: left to be taken over).
      if (++failures === STORE_TRIES) throw error;
      await pauseAfter(failures);
    }
  }
  return null;
}

/**
 * True when the record of `key` holds no run at all (or is gone), or is older than `version` (this run's last
 * write): the write that started a run, acknowledged, was lost since (a Sentinel failover drops the old
 * master's last writes; the record is back as it was before the run, perhaps with an earlier run's id in it).
 * Versions only grow: an older one is a lost write, never a newer run's. Not when a newer record holds another
 * run's id: that run answers. False when it cannot be read.
 */
export async function startLost(o: RunnerOptions, key: string, version: number): Promise<boolean> {
  try {
    return wentBack(await o.records.read(key), version);
  } catch {
    return false;
  }
}

/**
 * The write that started this run (and the state the coming money-moving call is made in) is held where a
 * failover cannot drop it (Store.replicated), and the record still holds this run: `ours`. `lost`: the
 * record holds no run at all or is older than `version`, this run's last write (the start was dropped by a
 * failover before a replica took it); `moved`: a newer record with another run's id. The record is read back after the wait: a failover between the write and the wait leaves the
 * connection on the new master, where WAIT proves nothing of the writes sent before it. Not held after
 * {@link REPLICA_TRIES} tries (each a WAIT of up to a second, about 20 s in all: a replica lagging or away):
 * throws, and the run is failed. The tries outlast a planned failover's window with one replica (the new
 * master has none until the Sentinels turn the old one into its replica and it syncs, 11 to 17 s measured,
 * docs/redis.md), so a payment started then is made late, not refused; its waiters were answered "being
 * confirmed" at their deadline.
 */
export async function durable(
  o: RunnerOptions,
  key: string,
  token: string,
  version: number,
): Promise<'ours' | 'lost' | 'moved'> {
  const { store } = o;
  if (!store.replicated) return 'ours';
  for (let tries = 1; ; tries++) {
    const held = await store.replicated(key).catch(() => false);
    const read = await o.records.read(key);
    if (wentBack(read, version)) return 'lost';
    if (read!.record.run?.id !== token) return 'moved';
    if (held) return 'ours';
    if (tries === REPLICA_TRIES) throw new Error("the run's state is not on a replica; not calling the service");
    await sleep(REPLICA_PAUSE_MS);
  }
}

/** Stores a busy state the run is about to call for. */
export function persist(
  o: RunnerOptions,
  key: string,
  token: string,
  from: Stored,
  storedFlow: StoredFlow,
): Promise<Stored | null> {
  return write(o, key, token, from, (record) => ({ ...record, session: storedFlow }));
}

/**
 * The outcome written: the settled stored flow, every waiting delivery answered with it, the run cleared and its
 * lease ended. `question`: the outcome is a question a channel that cannot push shows nobody once it is late
 * (a waiter answered "processing", or taken over by a sweep): then marked (ConversationRecord.lateQuestion).
 */
export function settle(
  o: RunnerOptions,
  key: string,
  token: string,
  from: Stored,
  settled: { session: StoredFlow; profile: ConversationRecord['profile'] },
  outcome: Prompt,
  starter?: Waiter,
  question = false,
) {
  return write(
    o,
    key,
    token,
    from,
    (record) => ({
      ...record,
      ...settled,
      ...answerWaiting(o, record, outcome, starter),
      ...(question && record.run?.late ? { lateQuestion: { run: token, flowRun: settled.session.runId } } : {}),
      run: undefined,
    }),
    {
      attempts: SETTLE_ATTEMPTS,
      release: true,
    },
  );
}

/**
 * The ledger with every waiting delivery answered `outcome` (the starter's with its notes), and the channel
 * state of the starter's answer when it is the newest delivery (the others keep theirs when they get it).
 */
export function answerWaiting(
  o: RunnerOptions,
  record: ConversationRecord,
  outcome: Prompt,
  starter?: Waiter,
): Pick<ConversationRecord, 'ledger' | 'channel'> {
  const answer = (id: string) => (starter && id === starter.id ? o.answers.withNotes(outcome, starter.notes) : outcome);
  const starts =
    starter?.after !== undefined && answerOf(record, starter.id) === WAITING && isNewest(record, starter.id);
  return {
    ledger: resolveWaiting(record.ledger, answer),
    channel: starts ? starter!.after!(answer(starter!.id)) : record.channel,
  };
}
