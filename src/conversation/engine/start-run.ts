/**
 * A step into a busy state (a service call): written with a run id, the run's lease taken by the same atomic
 * write, then handed to the runner (runner.ts) and waited for up to the channel's deadline (deadline.ts). The
 * write may fail after Redis applied it: the record is read to tell whether the run is out.
 */
import type { Lang } from '../../../flows/types.js';
import { errorMessage } from '../../log.js';
import type { StoredSnapshot } from '../../store/types.js';
import { rideOut } from '../../store/ride-out.js';
import type { Step, StoredFlow } from '../flow/flow-runtime.js';
import type { Inbound } from '../types.js';
import { afterStep, forgetToldLate } from './after-step.js';
import { CONFLICT, who, type Delivered, type Delivery, type TurnOptions } from './delivery.js';
import { WAITING, withAnswer, type ConversationRecord, type Stored } from './ledger.js';
import type { Waiter } from './runner.js';
import type { StepNotes } from './step-notes.js';

/**
 * The write that starts a run failed and the record could not be read to tell whether it landed: the run
 * may be out (a sweep takes it over once its lease expires). `storedFlow` is the busy stored flow it was to
 * run.
 */
export class RunUnknown extends Error {
  constructor(
    readonly storedFlow: StoredFlow,
    cause: unknown,
  ) {
    super(`a run may have started: ${errorMessage(cause)}`);
  }
}

/** The step into a busy state written with its run, the run begun, and the delivery's wait for its outcome. */
export async function startRun<S>(
  o: TurnOptions,
  delivery: Delivery<S>,
  planned: Step,
  read: { pending: StoredSnapshot | null; toldLate: StoredSnapshot | null },
  shown: StepNotes,
  lang: Lang,
): Promise<Delivered<S> | typeof CONFLICT> {
  const { runner } = o;
  const { inbound, id, key, stored, record, after, answerBy } = delivery;
  const { ledger, shownPending, notes, marked, seen } = shown;
  const token = runner.newToken();
  const next: ConversationRecord = {
    session: planned.storedFlow,
    ledger: withAnswer(ledger, id, WAITING),
    ...(record.channel !== undefined ? { channel: record.channel } : {}),
    profile: planned.profile,
    run: { id: token },
    ...marked,
  };
  // The run's lease is taken by the write that records it, in one atomic step: the run is listed for the
  // sweep exactly when its busy state is stored. A lease another run still holds is a conflict: read again.
  const leasedAt = o.now();
  const written = await writeRun(o, inbound, key, next, stored?.version ?? null, token, planned.storedFlow);
  if (written === null) return CONFLICT;
  if (read.toldLate && inbound.newSession) await forgetToldLate(o, inbound);
  const starter: Waiter = { key, participant: inbound, id, lang, notes, after, answerBy };
  runner.begin({
    key,
    participant: inbound,
    token,
    leasedAt,
    storedFlow: planned.storedFlow,
    stored: written,
    starter,
  });
  const saving = afterStep(o, inbound, planned, read.pending, shown.live, shownPending.length > 0, seen);
  if (saving) await saving;
  return runner.wait(starter, written) as Promise<Delivered<S>>;
}

/**
 * The write that starts a run (its lease taken in the same step). A failure may come after Redis applied it
 * (the connection dropped with the answer on its way): then the run is recorded, its lease is this process's,
 * and a sweep would take it over once the lease expires, so the delivery must not be told to start again.
 * The record is read to tell, a dropped connection ridden out (ride-out.ts: the delivery gets the truth rather
 * than "processing"). Holding this run's
 * id, the write landed: the run starts here. Otherwise it did not and never will (a command ioredis gave up
 * on is not sent again): when another write came between (a copy of this message may have started the run),
 * the step is redone on the record as it is now (a conflict), and only on a record left as it was does the
 * failure stand. Unreadable all along: {@link RunUnknown}, answered "processing" ("being confirmed" in a
 * money state), and the runner reads the record again until it can tell (Runner.followUnknown: a write that
 * did not land is told late).
 */
async function writeRun(
  o: TurnOptions,
  inbound: Inbound,
  key: string,
  next: ConversationRecord,
  expected: number | null,
  token: string,
  storedFlow: StoredFlow,
): Promise<Stored | null> {
  const { records, runner } = o;
  try {
    return await records.write(key, next, expected, runner.take(key, token));
  } catch (error) {
    let read: Stored | null;
    try {
      read = await rideOut(() => records.read(key));
    } catch {
      runner.followUnknown(key, inbound, token, expected, next.profile?.lang ?? 'en');
      throw new RunUnknown(storedFlow, error);
    }
    if (read?.record.run?.id === token) {
      o.logger.warn(
        { ...who(inbound), err: errorMessage(error) },
        'engine: the write that started a run failed after it landed; the run goes on',
      );
      return read;
    }
    if ((read?.version ?? null) !== expected) return null;
    throw error;
  }
}
