/**
 * The runner: a conversation's service calls (a busy flow's invokes, one after another until the flow waits
 * for the user again) run in ONE process at a time, wherever its messages land. This class only puts the parts
 * together: a run starts (begin: execution.ts, or finish-money.ts for a flow this release cannot read), its
 * deliveries wait (wait: deadline.ts), the sweep takes runs over (sweep: take-over.ts), and stop drains.
 *
 * - **The lease** (lease.ts, run-record.ts). A run holds `lease:conv:{u<n>}:<channel>:<id>` (its run id, with an expiry of
 *   {@link RunnerOptions.leaseMs}), renewed every third of that while it runs, and is listed in the sorted set
 *   `runs:{u<n>}` (the part of the index in its slot, keys.ts) scored by the lease's expiry. The write that
 *   makes a stored flow busy also records the run's id in the conversation (`run`, ledger.ts), in the same atomic step as the lease is taken; the write of its outcome
 *   ends the lease in the same step too. Only the holder calls the service; before each further call it stores
 *   the busy state (a compare-and-set that fails if another run's id was recorded) and renews the lease (unless
 *   it was asked for less than a third of its life ago: nobody can have taken it yet), and stops when either
 *   says the conversation is no longer its own.
 * - **Waiting** (deadline.ts). A delivery that arrives while a run is out is written to the ledger as `waiting` and waits for
 *   its answer: in the process of the run, for the run; elsewhere, reading the record. At the channel's
 *   deadline it is answered "processing" ("being confirmed" once the run is in a money state) and the ledger
 *   says so (with `run.late`), in one compare-and-set; an outcome that lands first wins and is the answer.
 * - **Late delivery** (late-outcome.ts). A run whose waiter was answered "processing", or that was taken over, hands its outcome
 *   to onLateOutcome once it is written (on USSD it is also kept for the next dial).
 * - **Taking over** (take-over.ts; its limits too-often.ts). A holder that dies stops renewing: its lease expires. Every process sweeps the `runs` set
 *   every {@link RunnerOptions.sweepEveryMs} and takes over the conversations whose lease expired, even if the
 *   user never writes again; a waiter finding the lease free does the same. The run is repeated from the
 *   stored snapshot, so a money-moving call goes out again under the same Duplicate-Check-Key. Before a money
 *   state, a run taken over {@link MAX_TAKEOVERS} times is left: its flow ends "nothing was sent, start again".
 *   In a money state, holders killed one after another must not leave the person told "being confirmed"
 *   without an outcome, and a run that kills each process taking it must not take the whole fleet down: past
 *   {@link MAX_TAKEOVERS}, each further takeover waits after the last one (`run.at`): 5, 10, 20, 30 and 30 s.
 *   A run not due yet keeps its lease, taken again under its holder's id, until it is due: listed, passed by
 *   every sweep till then, its waiters answered at their deadline. Taken over {@link MAX_MONEY_TAKEOVERS}
 *   times (about three minutes when each holder dies at once, as a poisoned run's would), it is left: its flow
 *   ends "being confirmed" (the outcome comes by notification, shown at the next USSD dial).
 * - **Failures** (run-failure.ts). Once a money-moving state was entered, a run that fails (an exception, a write Redis refused)
 *   leaves the conversation as it is stored (busy in that state) and lets its lease expire: another process, or
 *   this one's sweep, takes it over; meanwhile every answer is "being confirmed, do not send it again". Before
 *   that, a failed run ends the flow and answers "something went wrong, start again".
 */
import type { Lang, Text } from '../../../flows/types.js';
import { errorMessage } from '../../log.js';
import { randomId } from '../../store/random-id.js';
import type { LeaseChange } from '../../store/types.js';
import type { Participant, Prompt } from '../types.js';
import { waitForRun } from './deadline.js';
import { execute } from './execution.js';
import { finishMoney } from './finish-money.js';
import { followUnknown, keepForNextDial } from './late-outcome.js';
import { leaseOf, takeLease } from './lease.js';
import type { Stored } from './ledger.js';
import type { Answered, LocalRun, RunnerOptions, RunStart, Waiter } from './run.js';
import { sweepOnce, takeOver, type RunsHere } from './take-over.js';

export type { Answered, MoneyAnswer, RunnerOptions, RunStart, Waiter } from './run.js';

export class Runner {
  private readonly runs = new Map<string, LocalRun>();
  private readonly timer: NodeJS.Timeout;
  /** The sweep going on, if any (stop() waits for it). */
  private sweeping: Promise<void> | undefined;
  /** stop() was called: nothing more is taken over here. */
  private stopped = false;
  /** handOn() was called: no run of this process renews its lease (another process's sweep takes them). */
  private handedOn = false;
  /** The options its runs are run with: this runner's, and whether it handed them on. */
  private readonly running: RunnerOptions;
  /** What a takeover needs of this runner: its runs, and starting one here. */
  private readonly here: RunsHere = {
    runs: this.runs,
    stopped: () => this.stopped,
    begin: (start) => this.begin(start),
  };

  constructor(private readonly o: RunnerOptions) {
    this.running = { ...o, handedOn: () => this.handedOn };
    this.timer = setInterval(() => void this.sweep(), o.sweepEveryMs);
    this.timer.unref();
  }

  /** A new run id, for the record and the lease. */
  newToken(): string {
    return randomId();
  }

  /** The lease of `key` for `token`, taken by the write that records the run (Store.set). */
  take(key: string, token: string): LeaseChange {
    return takeLease(key, token, this.o.leaseMs);
  }

  /** Starts a run in this process. */
  begin(start: RunStart): void {
    let written!: () => void;
    const run = {
      token: start.token,
      settling: false,
      settled: new Promise<void>((resolve) => (written = resolve)),
    } as LocalRun;
    // A money call stored by a machine this release cannot read still finishes: from what the record carries.
    const blind = start.storedFlow.money === true && !this.o.runtime.readsAsIs(start.storedFlow);
    run.stopped = (
      blind ? finishMoney(this.running, start, run, written) : execute(this.running, start, run, written)
    ).finally(() => {
      if (this.runs.get(start.key) === run) this.runs.delete(start.key);
      written();
    });
    this.runs.set(start.key, run);
  }

  /**
   * The answer of a delivery `waiting` in the ledger of `from`: the outcome of the run it waits for, or
   * "processing" at the channel's deadline (deadline.ts). Never throws.
   */
  wait(waiter: Waiter, from: Stored): Promise<Answered> {
    return waitForRun(this.o, waiter, from, {
      local: () => this.runs.get(waiter.key),
      takeOver: () => takeOver(this.o, this.here, waiter.key, waiter.participant, false),
    });
  }

  /** See {@link followUnknown} (late-outcome.ts). Never throws. */
  followUnknown(key: string, participant: Participant, token: string, expected: number | null, lang: Lang): void {
    followUnknown(this.o, () => this.stopped, key, participant, token, expected, lang);
  }

  /** See {@link keepForNextDial} (late-outcome.ts). */
  keepForNextDial(participant: Participant, prompt: Prompt, words?: Text): Promise<boolean> {
    return keepForNextDial(this.o, participant, prompt, words);
  }

  /** Finds the runs whose holder died (lease expired) and takes them over. Never throws. */
  sweep(): Promise<void> {
    this.sweeping ??= sweepOnce(this.o, this.here).finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  /** Resolves when every run of this process has stopped (and delivered its late outcome). */
  async drain(): Promise<void> {
    while (this.runs.size > 0) await Promise.all([...this.runs.values()].map((run) => run.stopped));
  }

  /**
   * A stopping process's runs that did not finish within its grace (a money call held at the service) are handed
   * on: each lease is cut to end now, so another process's sweep takes the run over at once from its stored
   * state (the same Duplicate-Check-Key: the service answers the call it has), and none is renewed here again.
   * A run here that still settles first writes its outcome as usual, and the sweep then finds nothing due; one
   * that settles after the takeover finds the record holds another run's id and writes nothing. Resolves to
   * how many runs were handed on. Call after stop() (nothing taken over here since).
   */
  async handOn(): Promise<number> {
    this.handedOn = true;
    let handed = 0;
    for (const [key, run] of this.runs) {
      try {
        // Cut only while still ours: a lapsed one may be a taker's already, or free (and left free).
        if (await this.o.store.renewLease(leaseOf(key), run.token, 1)) handed += 1;
      } catch (error) {
        this.o.logger.warn({ err: errorMessage(error) }, 'engine: a run was not handed on; taken over at its expiry');
      }
    }
    if (handed > 0) this.o.logger.warn({ runs: handed }, 'engine: runs not finished by the drain handed on');
    return handed;
  }

  /** Stops sweeping (a sweep under way ends first), then drains. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.sweeping;
    await this.drain();
  }
}
