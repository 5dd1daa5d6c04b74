/**
 * The runner: a conversation's service calls (a busy flow's invokes, one after another until the flow waits
 * for the user again) run in ONE process at a time, wherever its messages land.
 *
 * - **The lease.** A run holds `lease:conv:{u<n>}:<channel>:<id>` (its run id, with an expiry of
 *   {@link RunnerOptions.leaseMs}), renewed every third of that while it runs, and is listed in the sorted set
 *   `runs:{u<n>}` (the part of the index in its slot, keys.ts) scored by the lease's expiry. The write that
 *   makes a session busy also records the run's id in the conversation (`run`, ledger.ts), in the same atomic step as the lease is taken; the write of its outcome
 *   ends the lease in the same step too. Only the holder calls the service; before each further call it stores
 *   the busy state (a compare-and-set that fails if another run's id was recorded) and renews the lease (unless
 *   it was asked for less than a third of its life ago: nobody can have taken it yet), and stops when either
 *   says the conversation is no longer its own.
 * - **Waiting.** A delivery that arrives while a run is out is written to the ledger as `waiting` and waits for
 *   its answer: in the process of the run, for the run; elsewhere, reading the record. At the channel's
 *   deadline it is answered "processing" ("being confirmed" once the run is in a money state) and the ledger
 *   says so (with `run.late`), in one compare-and-set; an outcome that lands first wins and is the answer.
 * - **Late delivery.** A run whose waiter was answered "processing", or that was taken over, hands its outcome
 *   to onLateOutcome once it is written (on USSD it is also kept for the next dial).
 * - **Taking over.** A holder that dies stops renewing: its lease expires. Every process sweeps the `runs` set
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
 * - **Failures.** Once a money-moving state was entered, a run that fails (an exception, a write Redis refused)
 *   leaves the conversation as it is stored (busy in that state) and lets its lease expire: another process, or
 *   this one's sweep, takes it over; meanwhile every answer is "being confirmed, do not send it again". Before
 *   that, a failed run ends the flow and answers "something went wrong, start again".
 */
import type { EventObject } from 'xstate';
import { failureText } from '../../../flows/failure.js';
import { isHeld } from '../../../flows/services.js';
import { madeNothing, type Lang, type Text, type UserProfile } from '../../../flows/types.js';
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import type { Stored } from './ledger.js';
import { rememberProfile } from './profile.js';
import { randomId } from '../../store/random-id.js';
import {
  isBusy,
  isMoney,
  isSecret,
  transition,
  type FlowEnd,
  type FlowTransition,
  type Session,
} from '../flow/flow-runtime.js';
import type { Participant, Prompt } from '../types.js';
import type { LeaseChange } from '../../store/types.js';
import { holdLease, takeLease } from './lease.js';
import { deliverLate, followUnknown, keepForNextDial, nothingSent } from './late-outcome.js';
import { waitForRun } from './deadline.js';
import { sweepOnce, takeOver, type RunsHere } from './take-over.js';
import { answerWaiting, durable, persist, settle, startLost, write } from './run-record.js';
import {
  isMoneyRun,
  refOf,
  type Answered,
  type LocalRun,
  type RunnerOptions,
  type RunStart,
  type Waiter,
} from './run.js';

export type { Answered, MoneyAnswer, RunnerOptions, RunStart, Waiter } from './run.js';

export class Runner {
  private readonly runs = new Map<string, LocalRun>();
  private readonly timer: NodeJS.Timeout;
  /** The sweep going on, if any (stop() waits for it). */
  private sweeping: Promise<void> | undefined;
  /** stop() was called: nothing more is taken over here. */
  private stopped = false;
  /** What a takeover needs of this runner: its runs, and starting one here. */
  private readonly here: RunsHere = {
    runs: this.runs,
    stopped: () => this.stopped,
    begin: (start) => this.begin(start),
  };

  constructor(private readonly o: RunnerOptions) {
    this.timer = setInterval(() => void this.sweep(), o.sweepEveryMs);
    this.timer.unref();
  }

  /** A new run id, for the record and the lease. */
  newToken(): string {
    return randomId();
  }

  /** The lease of `key` for `token`, taken by the write that records the run (SessionStore.set). */
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
    const blind = start.session.money === true && !this.o.runtime.readsAsIs(start.session);
    run.stopped = (blind ? this.finishMoney(start, run, written) : this.execute(start, run, written)).finally(() => {
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

  /** Stops sweeping (a sweep under way ends first), then drains. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.sweeping;
    await this.drain();
  }

  /**
   * Runs the session's calls until its flow waits for the user, then writes the outcome (and calls `written`).
   * Never throws.
   */
  private async execute(start: RunStart, local: LocalRun, written: () => void): Promise<void> {
    const { key, participant, token, starter } = start;
    const { store, runtime, answers, logger } = this.o;
    const log = logged(participant);
    const lease = holdLease(this.o, key, token, start.leasedAt, log);
    let current = start.stored;
    let session = start.session;
    let profile: UserProfile = current.record.profile ?? { lang: 'en' };
    /** A money-moving call may have reached the service (a call in a money state, or the stored state is one). */
    let money = isMoneyRun(this.o, session);
    let called = false;
    /** This run made a call in a money state. */
    let moneyCalled = false;
    /** The Duplicate-Check-Key of the money-moving call this run made, if it made one. */
    let moneyRef: string | undefined;
    const ended: FlowEnd[] = [];
    const moves: FlowTransition[] = [];
    let remember: Partial<UserProfile> = {};
    const ctx = this.o.context(participant);
    try {
      for (let first = true; isBusy(runtime.restore(session)); first = false) {
        const snapshot = runtime.restore(session);
        if (!first) {
          // Before the next call: the busy state stored (unless it holds a secret) and the lease still ours
          // (without asking while it is fresh).
          const [kept, held] = await Promise.all([
            isSecret(snapshot) ? current : persist(this.o, key, token, current, session),
            lease.fresh() || lease.renew(),
          ]);
          if (!kept || !held) {
            if (!kept && !money && (await startLost(this.o, key, current.version))) {
              await nothingSent(this.o, participant, session, snapshot, profile.lang);
              return;
            }
            logger.warn(log, 'engine: the conversation moved to another run; stopped before the next service call');
            return;
          }
          current = kept;
        }
        if (isMoney(snapshot)) {
          // Before a money-moving call, the state that makes it is where a failover cannot drop it: else a
          // failover after the call could put the conversation back before it, with no run left to finish it
          // (its holder gone), its intent journalled and nothing telling the person anything.
          const held = await durable(this.o, key, token, current.version);
          if (held !== 'ours') {
            // Started by a delivery here (no run before it) and no money call made yet: nothing was sent.
            if (held === 'lost' && !moneyCalled && !start.stored.record.run?.takeovers) {
              await nothingSent(this.o, participant, session, snapshot, profile.lang);
              return;
            }
            logger.warn(log, 'engine: the conversation moved to another run; stopped before the money-moving call');
            return;
          }
        }
        const invocation = runtime.invocation(session.flow, snapshot);
        if (isMoney(snapshot)) moneyRef = refOf(invocation) ?? moneyRef;
        money ||= isMoney(snapshot);
        moneyCalled ||= isMoney(snapshot);
        called = true;
        const outcome = await runtime.call(invocation);
        const step = runtime.resolve(
          session,
          outcome,
          { profile, remember: {}, notes: [] },
          { ...ctx, at: this.o.now() },
        );
        session = step.session;
        profile = step.profile;
        remember = { ...remember, ...step.remember };
        ended.push(...(step.ended ?? []));
        moves.push(...(step.moves ?? []));
      }
      local.settling = true;
      const can = this.o.capabilitiesOf(participant.channel);
      const screen = answers.screen(session, profile.lang, participant.channel);
      // A chat's run taken over that ends at a question with no money state in it, where a money call's state is
      // held by a replica before the call (durable: Sentinel, cluster): a failover may have put the record back
      // to this run after the person had answered past that question (a Confirm answered "still working on it",
      // its run's start dropped, its holder gone: nothing else says what became of it). No money call was made
      // since (none before its state is held, and a held write is not dropped), so the question comes after
      // saying so. On one server a takeover follows a holder's death, and a write lost in a crash could have
      // been a payment's state: the question alone. A channel that cannot push (USSD) shows no question late:
      // "nothing was sent" instead (below).
      const retold =
        can.pushes &&
        !money &&
        !screen.final &&
        (start.stored.record.run?.takeovers ?? 0) > 0 &&
        store.replicated !== undefined;
      const outcome = money
        ? { ...screen, money: true }
        : retold
          ? answers.withNotes(screen, [answers.text({ key: 'common.answerAgain' }, profile.lang)])
          : screen;
      // A USSD answer after a money call, or saying a taken-over PIN check sent nothing, may never reach the
      // phone (the process or the network dropping it), so it is kept for the next dial first: a user who
      // missed it does not pay again, nor wait for news that will not come.
      const secretLost = session.notice?.key === 'common.secretLost';
      const keep = can.keepsForNextDial && outcome.final === true && ((money && called) || secretLost);
      const words = answers.words(session);
      const kept = keep && (await keepForNextDial(this.o, participant, outcome, words));
      const settled = await settle(this.o, key, token, current, { session, profile }, outcome, starter);
      if (!settled) {
        logger.warn(log, 'engine: the conversation moved to another run; this outcome was not written');
        return;
      }
      written();
      for (const end of ended) this.o.onFlowEnd?.(end);
      if (moneyRef && called)
        this.o.onMoneyAnswer?.({
          ref: moneyRef,
          channel: participant.channel,
          conversationId: participant.conversationId,
          // What the record keeps: secrets on the screen (exam pins) are the owner's, never an operator's.
          text: outcome.masked ?? outcome.text,
        });
      for (const move of moves) this.o.onTransition?.(move);
      await rememberProfile(store, participant, remember, logger).catch((error: unknown) =>
        logger.warn({ err: errorMessage(error) }, 'engine: profile not saved'),
      );
      if (retold)
        logger.warn(log, 'engine: a chat run taken over ended at a question; told first that nothing was sent');
      if (settled.late && (called || secretLost)) await deliverLate(this.o, participant, outcome, kept, words);
      // A question reached late (its waiters told "still working on it", or the run taken over from a holder
      // that died: a failover may have put the record back to this run after the person answered past it) on a
      // channel that cannot push (USSD) is shown to nobody: the next dial would offer to take the flow up there,
      // as if nothing had been said. No money call was made: that dial says plainly that nothing was sent (and
      // offers no resume while kept).
      if (settled.late && !can.pushes && !outcome.final && !money) {
        logger.warn(log, 'engine: a late run ended at a question on USSD; told that nothing was sent');
        await deliverLate(this.o, participant, answers.notice('common.runFailed', profile.lang, true), false);
      }
    } catch (error) {
      if (money) {
        // The payment may have been made: nothing may say otherwise. The stored state repeats the call under
        // the same key when the lease (no longer renewed) expires and a sweep takes the run over.
        logger.error(
          { ...log, err: errorMessage(error) },
          'engine: a run failed after its money-moving call; it is left to be taken over',
        );
      } else {
        logger.error({ ...log, err: errorMessage(error) }, 'engine: a run failed');
        if (await this.fail(key, token, current, session, participant, starter)) {
          this.o.onTransition?.(
            transition(session, { channel: participant.channel, at: this.o.now() }, runtime.mark(session), {
              end: 'error',
            }),
          );
        } else if (!start.stored.record.run?.takeovers && (await startLost(this.o, key, current.version))) {
          // Its end not written because the write that started it, from a delivery here, is gone (a failover
          // dropped it, after reads from the old master had shown it): nobody else will end it, and its waiters
          // may have been told "being confirmed" (its state a money one, its call not made). A takeover's lost
          // write leaves the run it took over, to be taken over again.
          await nothingSent(this.o, participant, session, runtime.restore(session), profile.lang);
        }
      }
    } finally {
      lease.stop();
    }
  }

  /**
   * A money run of a flow this release cannot read (its state renamed or removed since the call's state was
   * stored, or a later build's): it finishes on this release from what its record carries, never from the
   * machine. The call the stored snapshot holds (its service and input, under the flow's Duplicate-Check-Key) is
   * made, or made again, and its outcome is told in the engine's words: sent (or held for approval), nothing
   * sent (a failure that proves nothing was made, in the words flows use), or being confirmed (the outcome comes
   * by notification). The flow ends there: the next message starts the conversation's start. A failure leaves
   * the run to be taken over, as any money run's. Never throws.
   */
  private async finishMoney(start: RunStart, local: LocalRun, written: () => void): Promise<void> {
    const { key, participant, token, starter, session } = start;
    const { runtime, answers, logger } = this.o;
    const log = logged(participant);
    const lease = holdLease(this.o, key, token, start.leasedAt, log);
    const current = start.stored;
    const profile: UserProfile = current.record.profile ?? { lang: 'en' };
    try {
      const invocation = runtime.storedInvocation(session);
      if (!invocation) throw new Error('a money run holds no service call');
      if ((await durable(this.o, key, token, current.version)) !== 'ours') {
        logger.warn(log, 'engine: the conversation moved to another run; stopped before the money-moving call');
        return;
      }
      const outcome = await runtime.call(invocation);
      local.settling = true;
      const ended: Session = { ...session, ended: true, notice: moneyOutcome(outcome) };
      delete ended.money;
      const prompt: Prompt = { ...answers.screen(ended, profile.lang, participant.channel), money: true };
      const words = ended.notice;
      const kept =
        this.o.capabilitiesOf(participant.channel).keepsForNextDial &&
        (await keepForNextDial(this.o, participant, prompt, words));
      const settled = await settle(this.o, key, token, current, { session: ended, profile }, prompt, starter);
      if (!settled) {
        logger.warn(log, 'engine: the conversation moved to another run; this outcome was not written');
        return;
      }
      written();
      logger.warn(log, "engine: a money run of another build's flow finished from its record");
      const ref = refOf(invocation);
      if (ref)
        this.o.onMoneyAnswer?.({
          ref,
          channel: participant.channel,
          conversationId: participant.conversationId,
          text: prompt.text,
        });
      if (settled.late) await deliverLate(this.o, participant, prompt, kept, words);
    } catch (error) {
      // The payment may have been made: nothing may say otherwise. Taken over once the lease expires.
      logger.error(
        { ...log, err: errorMessage(error) },
        'engine: a run failed after its money-moving call; it is left to be taken over',
      );
    } finally {
      lease.stop();
    }
  }

  /**
   * A run that failed before any money-moving call: the flow ends and its waiters are told that nothing was
   * sent and to start again. True when that was written.
   */
  private async fail(
    key: string,
    token: string,
    from: Stored,
    session: Session,
    participant: Participant,
    starter?: Waiter,
  ): Promise<boolean> {
    const prompt = this.o.answers.notice('common.runFailed', from.record.profile?.lang ?? 'en', true);
    const log = logged(participant);
    try {
      const written = await write(
        this.o,
        key,
        token,
        from,
        (record) => ({
          ...record,
          session: { ...session, ended: true },
          ...answerWaiting(this.o, record, prompt, starter),
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
        this.o.capabilitiesOf(participant.channel).keepsForNextDial &&
        (await keepForNextDial(this.o, participant, prompt, words));
      if (written.late) await deliverLate(this.o, participant, prompt, kept, words);
      return true;
    } catch (error) {
      // Not written: the run stays due and is taken over once the lease expires; its waiters answer "processing".
      this.o.logger.error({ ...log, err: errorMessage(error) }, 'engine: a failed run could not end its flow');
      return false;
    }
  }
}

/**
 * The words of a money call's outcome without its flow's machine (Runner.finishMoney): sent, or held for an
 * approver; a failure that proves nothing was made in the words flows use; anything else being confirmed.
 */
export function moneyOutcome(outcome: EventObject): Text {
  if (outcome.type.startsWith('xstate.done.actor.')) {
    return isHeld((outcome as { output?: unknown }).output)
      ? { key: 'common.updatedHeld' }
      : { key: 'common.updatedSent' };
  }
  const error = (outcome as { error?: unknown }).error;
  return madeNothing(error) ? failureText(error) : { key: 'common.confirming' };
}
