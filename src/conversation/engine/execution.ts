/**
 * A run's execution: the invokes of a busy flow, one after another until it waits for the user again (before
 * each further call the busy state stored and the lease still ours; before a money-moving call its state held
 * by a replica), then its outcome: the screen written with every waiting delivery answered, kept for the next
 * dial where a money call's answer may not reach the phone, told late to a waiter answered "processing". A run
 * that fails before a money call ends its flow ("nothing was sent, start again"); after one it is left to be
 * taken over. Not here: a money run of a flow this release cannot read (finish-money.ts), the record's writes
 * (run-record.ts), the lease (lease.ts).
 */
import type { UserProfile } from '../../../flows/types.js';
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import {
  isBusy,
  isMoney,
  isSecret,
  transition,
  type FlowEnd,
  type FlowTransition,
  type StoredFlow,
} from '../flow/flow-runtime.js';
import type { Participant } from '../types.js';
import type { Stored } from './ledger.js';
import { holdLease } from './lease.js';
import { deliverLate, keepForNextDial, nothingSent } from './late-outcome.js';
import { rememberProfile } from './profile.js';
import { isMoneyRun, refOf, type LocalRun, type RunnerOptions, type RunStart, type Waiter } from './run.js';
import { answerWaiting, durable, persist, settle, startLost, write } from './run-record.js';

/**
 * Runs the session's calls until its flow waits for the user, then writes the outcome (and calls `written`).
 * Never throws.
 */
export async function execute(o: RunnerOptions, start: RunStart, local: LocalRun, written: () => void): Promise<void> {
  const { key, participant, token, starter } = start;
  const { store, runtime, answers, logger } = o;
  const log = logged(participant);
  const lease = holdLease(o, key, token, start.leasedAt, log);
  let current = start.stored;
  let storedFlow = start.storedFlow;
  let profile: UserProfile = current.record.profile ?? { lang: 'en' };
  /** A money-moving call may have reached the service (a call in a money state, or the stored state is one). */
  let money = isMoneyRun(o, storedFlow);
  let called = false;
  /** This run made a call in a money state. */
  let moneyCalled = false;
  /** The Duplicate-Check-Key of the money-moving call this run made, if it made one. */
  let moneyRef: string | undefined;
  const ended: FlowEnd[] = [];
  const moves: FlowTransition[] = [];
  let remember: Partial<UserProfile> = {};
  const ctx = o.context(participant);
  try {
    for (let first = true; isBusy(runtime.restore(storedFlow)); first = false) {
      const snapshot = runtime.restore(storedFlow);
      if (!first) {
        // Before the next call: the busy state stored (unless it holds a secret) and the lease still ours
        // (without asking while it is fresh).
        const [kept, held] = await Promise.all([
          isSecret(snapshot) ? current : persist(o, key, token, current, storedFlow),
          lease.fresh() || lease.renew(),
        ]);
        if (!kept || !held) {
          if (!kept && !money && (await startLost(o, key, current.version))) {
            await nothingSent(o, participant, storedFlow, snapshot, profile.lang);
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
        const held = await durable(o, key, token, current.version);
        if (held !== 'ours') {
          // Started by a delivery here (no run before it) and no money call made yet: nothing was sent.
          if (held === 'lost' && !moneyCalled && !start.stored.record.run?.takeovers) {
            await nothingSent(o, participant, storedFlow, snapshot, profile.lang);
            return;
          }
          logger.warn(log, 'engine: the conversation moved to another run; stopped before the money-moving call');
          return;
        }
      }
      const invocation = runtime.invocation(storedFlow.flow, snapshot);
      if (isMoney(snapshot)) moneyRef = refOf(invocation) ?? moneyRef;
      money ||= isMoney(snapshot);
      moneyCalled ||= isMoney(snapshot);
      called = true;
      const outcome = await runtime.call(invocation);
      const step = runtime.resolve(storedFlow, outcome, { profile, remember: {}, notes: [] }, { ...ctx, at: o.now() });
      storedFlow = step.storedFlow;
      profile = step.profile;
      remember = { ...remember, ...step.remember };
      ended.push(...(step.ended ?? []));
      moves.push(...(step.moves ?? []));
    }
    local.settling = true;
    const can = o.capabilitiesOf(participant.channel);
    const screen = answers.screen(storedFlow, profile.lang, participant.channel);
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
    const secretLost = storedFlow.notice?.key === 'common.secretLost';
    const keep = can.keepsForNextDial && outcome.final === true && ((money && called) || secretLost);
    const words = answers.words(storedFlow);
    const kept = keep && (await keepForNextDial(o, participant, outcome, words));
    // A question on a channel that cannot push: shown to nobody once late (below).
    const question = !can.pushes && !outcome.final && !money;
    const settled = await settle(o, key, token, current, { session: storedFlow, profile }, outcome, starter, question);
    if (!settled) {
      logger.warn(log, 'engine: the conversation moved to another run; this outcome was not written');
      return;
    }
    written();
    for (const end of ended) o.onFlowEnd?.(end);
    if (moneyRef && called)
      o.onMoneyAnswer?.({
        ref: moneyRef,
        channel: participant.channel,
        conversationId: participant.conversationId,
        // What the record keeps: secrets on the screen (exam pins) are the owner's, never an operator's.
        text: outcome.masked ?? outcome.text,
      });
    for (const move of moves) o.onTransition?.(move);
    await rememberProfile(store, participant, remember, logger).catch((error: unknown) =>
      logger.warn({ err: errorMessage(error) }, 'engine: profile not saved'),
    );
    if (retold) logger.warn(log, 'engine: a chat run taken over ended at a question; told first that nothing was sent');
    if (settled.late && (called || secretLost)) await deliverLate(o, participant, outcome, kept, words);
    // A question reached late (its waiters told "still working on it", or the run taken over from a holder
    // that died: a failover may have put the record back to this run after the person answered past it) on a
    // channel that cannot push (USSD) is shown to nobody: the next dial would offer to take the flow up there,
    // as if nothing had been said. No money call was made: that dial says plainly that nothing was sent (and
    // offers no resume while kept). Unless the person answers that question first: a holder that was only slow
    // (its lease taken over) still shows it to its waiter, and the dial then shows no such note (`about`).
    if (settled.late && question) {
      logger.warn(log, 'engine: a late run ended at a question on USSD; told that nothing was sent');
      await deliverLate(
        o,
        participant,
        answers.notice('common.runFailed', profile.lang, true),
        false,
        undefined,
        token,
      );
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
      if (await fail(o, key, token, current, storedFlow, participant, starter)) {
        o.onTransition?.(
          transition(storedFlow, { channel: participant.channel, at: o.now() }, runtime.mark(storedFlow), {
            end: 'error',
          }),
        );
      } else if (!start.stored.record.run?.takeovers && (await startLost(o, key, current.version))) {
        // Its end not written because the write that started it, from a delivery here, is gone (a failover
        // dropped it, after reads from the old master had shown it): nobody else will end it, and its waiters
        // may have been told "being confirmed" (its state a money one, its call not made). A takeover's lost
        // write leaves the run it took over, to be taken over again.
        await nothingSent(o, participant, storedFlow, runtime.restore(storedFlow), profile.lang);
      }
    }
  } finally {
    lease.stop();
  }
}

/**
 * A run that failed before any money-moving call: the flow ends and its waiters are told that nothing was
 * sent and to start again. True when that was written.
 */
async function fail(
  o: RunnerOptions,
  key: string,
  token: string,
  from: Stored,
  storedFlow: StoredFlow,
  participant: Participant,
  starter?: Waiter,
): Promise<boolean> {
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
