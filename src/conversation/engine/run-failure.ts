/**
 * A run that failed (an exception, a write the store refused). After a money-moving call it is left as stored,
 * to be taken over once its lease expires: the payment may have been made. Before one its flow ends "nothing
 * was sent, start again", written with its waiters answered so; when that cannot be written because the write
 * that started the run is gone, its waiters are told so late. Not here: the calls (run-calls.ts), a run taken
 * over too often (too-often.ts), the record's writes (run-record.ts).
 */
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import { transition } from '../flow/flow-runtime.js';
import { deliverLate, keepForNextDial, nothingSent } from './late-outcome.js';
import type { Progress } from './run-calls.js';
import type { RunnerOptions, RunStart } from './run.js';
import { answerWaiting, startLost, write } from './run-record.js';

/** What a run's failure leaves: the run to be taken over (after a money call), or its flow ended. */
export async function runFailed(o: RunnerOptions, start: RunStart, run: Progress, error: unknown): Promise<void> {
  const { key, participant } = start;
  const log = logged(participant);
  if (run.money) {
    // The payment may have been made: nothing may say otherwise. The stored state repeats the call under
    // the same key when the lease (no longer renewed) expires and a sweep takes the run over.
    o.logger.error(
      { ...log, err: errorMessage(error) },
      'engine: a run failed after its money-moving call; it is left to be taken over',
    );
    return;
  }
  o.logger.error({ ...log, err: errorMessage(error) }, 'engine: a run failed');
  if (await endFailedFlow(o, start, run)) {
    const { storedFlow } = run;
    o.onTransition?.(
      transition(storedFlow, { channel: participant.channel, at: o.now() }, o.runtime.mark(storedFlow), {
        end: 'error',
      }),
    );
  } else if (!start.stored.record.run?.takeovers && (await startLost(o, key, run.current.version))) {
    // Its end not written because the write that started it, from a delivery here, is gone (a failover
    // dropped it, after reads from the old master had shown it): nobody else will end it, and its waiters
    // may have been told "being confirmed" (its state a money one, its call not made). A takeover's lost
    // write leaves the run it took over, to be taken over again.
    await nothingSent(o, participant, run.storedFlow, o.runtime.restore(run.storedFlow), run.profile.lang);
  }
}

/**
 * A run that failed before any money-moving call: the flow ends and its waiters are told that nothing was
 * sent and to start again. True when that was written.
 */
async function endFailedFlow(o: RunnerOptions, start: RunStart, run: Progress): Promise<boolean> {
  const { key, token, participant, starter } = start;
  const { current: from, storedFlow } = run;
  const prompt = o.answers.notice('common.runFailed', from.record.profile?.lang ?? 'en', true);
  const log = logged(participant);
  try {
    const written = await write(
      o,
      key,
      token,
      from,
      (record) => ({
        ...record,
        session: { ...storedFlow, ended: true },
        ...answerWaiting(o, record, prompt, starter),
        run: undefined,
      }),
      { release: true },
    );
    if (!written) return false;
    // Its waiters may have been told "still working on it, you will be notified" (late; or, when that answer
    // could not be recorded, unknown to this run): where answers are kept for the next dial (USSD) the failure
    // is kept there, and pushed to a chat whose waiter was answered so.
    const words = { key: 'common.runFailed' };
    const kept =
      o.capabilitiesOf(participant.channel).keepsForNextDial && (await keepForNextDial(o, participant, prompt, words));
    if (written.late) await deliverLate(o, participant, prompt, kept, words);
    return true;
  } catch (error) {
    // Not written: the run stays due and is taken over once the lease expires; its waiters answer "processing".
    o.logger.error({ ...log, err: errorMessage(error) }, 'engine: a failed run could not end its flow');
    return false;
  }
}
