/**
 * A run's execution, top to bottom: its lease held, the invokes of its busy flow one after another until it
 * waits for the user again (run-calls.ts), then its outcome written and told (run-outcome.ts); a run that fails
 * is left to be taken over after a money call, else its flow ends (run-failure.ts). Not here: a money run of a
 * flow this release cannot read (finish-money.ts), the record's writes (run-record.ts), the lease (lease.ts),
 * taking a run over (take-over.ts).
 */
import { logged } from '../../store/chat-address.js';
import { holdLease } from './lease.js';
import { callUntilWaiting, progressOf } from './run-calls.js';
import { runFailed } from './run-failure.js';
import { writeOutcome } from './run-outcome.js';
import type { LocalRun, RunnerOptions, RunStart } from './run.js';

/**
 * Runs the stored flow's calls until it waits for the user, then writes the outcome (and calls `written`).
 * Never throws.
 */
export async function execute(o: RunnerOptions, start: RunStart, local: LocalRun, written: () => void): Promise<void> {
  const lease = holdLease(o, start.key, start.token, start.leasedAt, logged(start.participant));
  const run = progressOf(o, start);
  try {
    if (!(await callUntilWaiting(o, start, run, lease))) return;
    local.settling = true;
    await writeOutcome(o, start, run, written);
  } catch (error) {
    await runFailed(o, start, run, error);
  } finally {
    lease.stop();
  }
}
