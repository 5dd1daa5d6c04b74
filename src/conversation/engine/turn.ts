/**
 * One delivery, from the adapter to its answer:
 *
 * 1. The conversation record (ledger.ts), as this process last wrote it (record-cache.ts) or read.
 * 2. The channel decides from its own state kept there (TurnEngine): a reply of its own (a resend, a page
 *    turn), or a message for the flow.
 * 3. The ledger: a delivery it holds gets its answer again, or waits for the run it is waiting on.
 * 4. A new delivery: one pure step of the flow (flow-runtime.ts: start a flow, or send it ONE event), written with
 *    its ledger entry and the channel's state in one compare-and-set (on conflict: read, redo the step). A step
 *    into a PIN check runs the check first (checkSecrets), and the step after it is the one written.
 * 5. A step into a busy state (a service call) is written with a run id, its lease taken in the same atomic
 *    write, and handed to the runner (runner.ts); the delivery waits for its outcome up to the channel's
 *    deadline. A delivery arriving while a run is out is written as waiting and waits for it too.
 *
 * At most one read and one write a message (none read mid-flow when the record is kept here).
 */
import type { FlowEvent, Lang, UserProfile } from '../../../flows/types.js';
import { errorMessage, type Logger } from '../../log.js';
import { within } from '../../within.js';
import { logged } from '../../store/chat-address.js';
import type { Answers } from './answers.js';
import { keys } from '../../store/keys.js';
import {
  answerOf,
  deliveryId,
  isNewest,
  openFlow,
  WAITING,
  withAnswer,
  type ConversationRecord,
  type Stored,
} from './ledger.js';
import { unseenAfterToldLate } from './told-late.js';
import type { AccessPolicy } from '../calls/access-policy.js';
import { profileOf, readProfile, rememberProfile } from './profile.js';
import type { RecordCache } from './record-cache.js';
import { rideOut } from '../../store/ride-out.js';
import { afterShown, dropSeen, PENDING_TTL_SECONDS, storedNotes } from '../channels/ussd-inbox.js';
import type { Runner, Waiter } from './runner.js';
import {
  isBusy,
  isSecret,
  stepName,
  transition,
  type FlowEnd,
  type FlowRuntime,
  type FlowTransition,
  type StoredFlow,
  type Step,
  type StepContext,
} from '../flow/flow-runtime.js';
import type {
  Channel,
  ChannelCapabilities,
  ConversationView,
  Decide,
  Inbound,
  NoteWords,
  Participant,
  Prompt,
  TurnDecision,
} from '../types.js';
import type { Store, StoredSnapshot } from '../../store/types.js';
import { pendingNotes, withToldLate } from './dial-notes.js';

export interface TurnOptions {
  store: Store;
  records: RecordCache;
  runtime: FlowRuntime;
  answers: Answers;
  runner: Runner;
  policy: AccessPolicy;
  /** The StepContext of a delivery's user, with the flows they may start. */
  context(participant: Participant & Pick<Inbound, 'phoneNumber'>): StepContext;
  /** What a channel can do, as its adapter declares it (EngineOptions.channels). */
  capabilitiesOf(channel: Channel): ChannelCapabilities;
  onFlowEnd?: (end: FlowEnd) => void;
  /** Told of each move of a flow run between steps once it is stored (EngineOptions.onTransition). */
  onTransition?: (transition: FlowTransition) => void;
  /** Per channel, how long a delivery waits before it is answered without its outcome (a secret check's here). */
  deadlineOf(channel: Channel): number;
  /** Clock in milliseconds: session expiry, deadlines, the lease's age. The turn reads no other clock. */
  now: () => number;
  /** EngineOptions.dialNote: a note of the notifications' catalogue in the person's language. */
  dialNote?: (words: NoteWords, lang: Lang) => string;
  logger: Logger;
}

/** The answer to one delivery and the channel state kept with it. */
export interface Delivered<S> {
  prompt?: Prompt;
  state: S;
}

/** Compare-and-sets one delivery may lose to other messages of the conversation before it answers "busy". */
const CAS_ATTEMPTS = 5;

/**
 * The write that starts a run failed and the record could not be read to tell whether it landed: the run
 * may be out (a sweep takes it over once its lease expires). `session` is the busy session it was to run.
 */
class RunUnknown extends Error {
  constructor(
    readonly storedFlow: StoredFlow,
    cause: unknown,
  ) {
    super(`a run may have started: ${errorMessage(cause)}`);
  }
}

/** A step lost its compare-and-set to another message: read again and redo it. */
const CONFLICT = Symbol('conflict');

const EMPTY: ConversationRecord = { ledger: [] };

function eventOf(inbound: Inbound): FlowEvent | undefined {
  if (inbound.nav === 'back') return { type: 'BACK' };
  if (inbound.choice !== undefined) return { type: 'CHOSEN', id: inbound.choice };
  if (inbound.text !== undefined) return { type: 'ANSWERED', value: inbound.text };
  return undefined;
}

/** `deliver(participant, decide)`: one delivery, its answer and the channel state kept. */
export function createTurn(o: TurnOptions) {
  const { store, records, runtime, answers, runner, logger } = o;
  const who = (inbound: Inbound) => ({ ...logged(inbound), messageId: inbound.messageId });

  /**
   * The pure step for this message, `wait` while a run is out (messages wait for its outcome), or `newer` when
   * the conversation's flow was written by a later build in a shape this one cannot read (left alone).
   */
  function plan(
    inbound: Inbound,
    record: ConversationRecord,
    profile: UserProfile,
    ctx: StepContext,
  ): Step | 'wait' | 'newer' {
    const base: Omit<Step, 'storedFlow'> = { profile, remember: {}, notes: [], ended: [], moves: [] };
    if (record.run) return 'wait';
    let storedFlow = record.session;
    if (storedFlow) {
      // Written by another release (FlowRuntime.admit): continued (migrated when declared), left alone when a
      // later build wrote it and it is not over, else started again with one line saying the service was updated.
      const admitted = runtime.admit(storedFlow);
      const over = storedFlow.ended || storedFlow.expiresAt <= o.now();
      if (admitted.kind === 'newer' && !over) return 'newer';
      if (admitted.kind === 'continue') storedFlow = admitted.storedFlow;
      else {
        if (!over) base.notes.push({ key: 'common.updated' });
        storedFlow = undefined;
      }
    }
    if (storedFlow && storedFlow.expiresAt <= o.now()) {
      if (!storedFlow.ended) left(storedFlow, base, ctx);
      const startsOver = inbound.newSession || inbound.start !== undefined || inbound.nav === 'home';
      if (!storedFlow.ended && !startsOver) base.notes.push({ key: 'common.expired' });
      storedFlow = undefined;
    }
    const live = storedFlow && !storedFlow.ended ? storedFlow : undefined;
    if (live && isBusy(runtime.restore(live))) return 'wait';
    // Taken up from a session that was dropped: where the flow is, untouched (its outcome, once it ended).
    if (inbound.resume && storedFlow) return { ...base, storedFlow };
    const leaving =
      inbound.start !== undefined || inbound.newSession || inbound.nav === 'home' || inbound.nav === 'cancel';
    if (live && leaving) left(live, base, ctx);
    // A conversation that must start elsewhere (Change PIN after a reset) does, whatever flow was asked for.
    if (inbound.start) return runtime.start(ctx.home === 'menu' ? inbound.start : ctx.home, base, ctx);
    if (live && inbound.nav === 'cancel') {
      return {
        ...base,
        storedFlow: { ...live, ended: true, notice: { key: 'common.cancelled' }, expiresAt: ctx.expiresAt },
      };
    }
    if (!live || leaving) return runtime.start(ctx.home, base, ctx);
    return runtime.send(live, eventOf(inbound), base, ctx);
  }

  /** The step leaves the flow run of `s` unfinished: counted abandoned where it is. */
  function left(s: StoredFlow, step: Omit<Step, 'storedFlow'>, ctx: StepContext): void {
    step.ended!.push({ flow: s.flow, outcome: 'abandoned', step: stepName(runtime.restore(s)) });
    step.moves!.push(transition(s, ctx, runtime.mark(s), { end: 'abandoned' }));
  }

  /**
   * The step after the secret checks it leads into. A state tagged `secret` (a PIN check) is never stored: its
   * invoke's input holds the secret. Its check is our own (a PIN against our own store: nothing reaches the
   * service, nothing needs repeating), so it runs here, before anything is written, and the step is written as
   * it ends: the screen of a refused PIN, or the next busy state with the run it starts, in one write. A process
   * dying meanwhile leaves the flow at the PIN (a dial offers to take it up), nothing recorded and nothing sent.
   * A copy of the message racing this one checks its PIN too (a try counted twice, never less), and one of the
   * two writes wins. A check still out at the channel's deadline: undefined, and its answer is dropped.
   */
  async function checkSecrets(inbound: Inbound, planned: Step, ctx: StepContext): Promise<Step | undefined> {
    let step = planned;
    const until = o.now() + o.deadlineOf(inbound.channel);
    for (
      let snapshot = runtime.restore(step.storedFlow);
      isSecret(snapshot);
      snapshot = runtime.restore(step.storedFlow)
    ) {
      const outcome = await within(runtime.call(runtime.invocation(step.storedFlow.flow, snapshot)), until - o.now());
      if (!outcome) return undefined;
      step = runtime.resolve(step.storedFlow, outcome, step, { ...ctx, at: o.now() });
    }
    return step;
  }

  /** The deliveries the USSD guard answered, once a dial has said what became of them. */
  async function forgetToldLate(inbound: Inbound): Promise<void> {
    await store
      .delete(keys.toldLate(inbound))
      .catch((error: unknown) =>
        logger.warn(
          { ...who(inbound), err: errorMessage(error) },
          'engine: deliveries the USSD guard answered not forgotten',
        ),
      );
  }

  /**
   * What follows a committed step; none of it may take the step's answer away. `seen`: this message followed a
   * dial that showed pending notes, in its session, so they reached the phone and are dropped. Undefined when
   * there is nothing to write (most steps: nothing remembered, no kept outcomes shown): no promise to wait for.
   */
  function afterStep(
    inbound: Inbound,
    planned: Step,
    pending: StoredSnapshot | null,
    shownPending: boolean,
    seen: boolean,
  ): Promise<void> | undefined {
    for (const end of planned.ended ?? []) o.onFlowEnd?.(end);
    for (const move of planned.moves ?? []) o.onTransition?.(move);
    const remembered = Object.keys(planned.remember).length > 0;
    const shown = pending !== null && shownPending;
    if (!remembered && !shown && !seen) return undefined;
    return (async () => {
      try {
        await rememberProfile(store, inbound, planned.remember, logger); // writes nothing when nothing is remembered
        if (shown)
          await store.set(
            keys.pending(inbound),
            afterShown(storedNotes(pending.snapshot)),
            pending.version,
            PENDING_TTL_SECONDS,
          );
        if (seen) await dropSeen(store, inbound);
      } catch (error) {
        logger.warn({ ...who(inbound), err: errorMessage(error) }, 'engine: profile or shown outcomes not saved');
      }
    })();
  }

  /** One new delivery against the record as read: the step, its write, and the run it starts. */
  async function step<S>(
    inbound: Inbound,
    id: string,
    key: string,
    stored: Stored | null,
    profile: UserProfile,
    pending: StoredSnapshot | null,
    toldLate: StoredSnapshot | null,
    after: (prompt: Prompt) => S,
    answerBy?: number,
  ): Promise<Delivered<S> | typeof CONFLICT> {
    const record = stored?.record ?? EMPTY;
    if (!o.policy.role(inbound.channel, inbound.userId)) {
      logger.info(who(inbound), 'engine: refused a user the access policy does not know');
      const prompt = answers.notice('common.notAllowed', profile.lang, true);
      return { prompt, state: after(prompt) };
    }
    const ctx = o.context(inbound);
    const stepped = plan(inbound, record, profile, ctx);
    if (stepped === 'newer') {
      // Nothing written: the record stays the later build's, for a process of that build to answer.
      logger.info(who(inbound), 'engine: a conversation of a later build left alone; answered try again');
      const prompt = answers.notice('common.tryAgainSoon', profile.lang, true);
      return { prompt, state: after(prompt) };
    }
    if (stepped === 'wait') {
      // A run is out: this delivery waits for its outcome, listed as waiting first so a copy of it waits too.
      const written = await records.write(
        key,
        { ...record, ledger: withAnswer(record.ledger, id, WAITING) },
        stored!.version,
      );
      if (!written) return CONFLICT;
      return runner.wait({ key, participant: inbound, id, lang: profile.lang, notes: [], after }, written) as Promise<
        Delivered<S>
      >;
    }
    // Only a step into a PIN check waits for one (most steps: no async call to wait through).
    const planned = isSecret(runtime.restore(stepped.storedFlow)) ? await checkSecrets(inbound, stepped, ctx) : stepped;
    if (!planned) {
      // The check took longer than the channel waits: its answer is dropped, so nothing follows from it. The
      // answer is recorded for this delivery (the flow stays where it was), so a copy of it in another process,
      // whose check came in time, answers the same and pays nothing; a copy that recorded its step first wins,
      // and this one answers as that copy does (read again). Where answers are kept for the next dial (USSD) it
      // is kept there too: the gateway's guard may have answered "dial again to see the result" before it, and
      // that dial must say it rather than offer the PIN screen again.
      const prompt = answers.notice('common.runFailed', profile.lang, true);
      if (
        !(await records.write(
          key,
          { ...record, ledger: withAnswer(record.ledger, id, prompt) },
          stored?.version ?? null,
        ))
      )
        return CONFLICT;
      logger.warn(who(inbound), 'engine: a secret check passed the deadline; nothing was sent');
      if (o.capabilitiesOf(inbound.channel).keepsForNextDial)
        await runner.keepForNextDial(inbound, prompt, { key: 'common.runFailed' });
      return { prompt, state: after(prompt) };
    }
    const lang = planned.profile.lang;
    // A new dial after the USSD guard answered "dial again to see the result" for deliveries nothing will tell:
    // this dial says that nothing was sent, and records it as their answer, so their work, if it comes late (a
    // turn stuck behind a stalled Redis), finds them answered and sends nothing.
    const unseen = inbound.newSession ? unseenAfterToldLate(record, toldLate, pending, o.now()) : [];
    const nothingSent = unseen.length > 0 ? answers.notice('common.runFailed', lang, true) : undefined;
    const ledger = unseen.reduce((entries, lost) => withAnswer(entries, lost, nothingSent!), record.ledger);
    const shownPending = withToldLate(o, pendingNotes(o, pending, lang), nothingSent, lang);
    const notes = [...shownPending, ...planned.notes.map((t) => answers.text(t, lang))];
    // Notes shown now are marked in the record; the next message of this session drops them (and the mark).
    const marked = shownPending.length > 0 ? { notesShown: true as const } : {};
    const seen = !inbound.newSession && record.notesShown === true;
    const landed = runtime.restore(planned.storedFlow);
    const busy = isBusy(landed);
    if (!busy) {
      const screen = answers.withNotes(answers.screen(planned.storedFlow, lang, inbound.channel), notes);
      const prompt = shownPending.length > 0 ? { ...screen, noted: true } : screen;
      const state = after(prompt);
      // A final screen tagged `secret` (a link code) is shown once: the record keeps neither it nor its flow,
      // and a resend of this delivery is told to ask again.
      const shownOnce = landed.status === 'done' && landed.hasTag('secret');
      const kept = shownOnce ? answers.notice('common.shownOnce', lang, true) : prompt;
      const next: ConversationRecord = {
        ...(shownOnce ? {} : { session: planned.storedFlow }),
        ledger: withAnswer(ledger, id, kept),
        channel: shownOnce ? after(kept) : state,
        profile: planned.profile,
        ...marked,
      };
      if (!(await records.write(key, next, stored?.version ?? null))) return CONFLICT;
      // Kept outcomes on a screen written past the channel's deadline may never reach the phone (the USSD router's
      // guard answers "dial again" in its place): not counted as shown, so two later dials still show them.
      const inTime = answerBy === undefined || o.now() <= answerBy;
      if (unseen.length > 0) {
        logger.warn(who(inbound), 'engine: a dial told that nothing was sent for what the USSD guard answered');
        // Said on a screen that may not reach the phone, and this dial left the flow for the menu (the next dial
        // finds no flow waiting): kept for the next dial as a run's late answer is.
        if (!inTime) await runner.keepForNextDial(inbound, nothingSent!, { key: 'common.runFailed' });
      }
      if (toldLate && inbound.newSession && !record.run) await forgetToldLate(inbound);
      const saving = afterStep(inbound, planned, pending, shownPending.length > 0 && inTime, seen);
      if (saving) await saving;
      return { prompt, state };
    }
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
    const written = await writeRun(inbound, key, next, stored?.version ?? null, token, planned.storedFlow);
    if (written === null) return CONFLICT;
    if (toldLate && inbound.newSession) await forgetToldLate(inbound);
    const starter: Waiter = { key, participant: inbound, id, lang, notes, after };
    runner.begin({
      key,
      participant: inbound,
      token,
      leasedAt,
      storedFlow: planned.storedFlow,
      stored: written,
      starter,
    });
    const saving = afterStep(inbound, planned, pending, shownPending.length > 0, seen);
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
    inbound: Inbound,
    key: string,
    next: ConversationRecord,
    expected: number | null,
    token: string,
    storedFlow: StoredFlow,
  ): Promise<Stored | null> {
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
        logger.warn(
          { ...who(inbound), err: errorMessage(error) },
          'engine: the write that started a run failed after it landed; the run goes on',
        );
        return read;
      }
      if ((read?.version ?? null) !== expected) return null;
      throw error;
    }
  }

  /**
   * What the channel may know of the conversation (ConversationView). A flow other than the one the
   * conversation starts with now (Change PIN for a person whose PIN was reset meanwhile) is not offered to be
   * taken up: that one comes first.
   */
  function viewOf(
    record: ConversationRecord,
    pending: StoredSnapshot | null | undefined,
    participant: Participant,
    toldLate?: StoredSnapshot | null,
  ): ConversationView {
    const open = openFlow(record, o.now());
    // A flow this release cannot take up (another build's, started again at the next step) is not offered.
    const storedFlow = open && runtime.admit(open).kind !== 'updated' ? open : undefined;
    // The user's context (their policy) only for a flow that could be taken up.
    const home = storedFlow ? o.context(participant).home : 'menu';
    const waiting = storedFlow !== undefined && (home === 'menu' || storedFlow.flow === home);
    // Something to say of what the USSD guard answered counts as a note: no flow is offered to be taken up first.
    const notes =
      storedNotes(pending?.snapshot).length > 0 || unseenAfterToldLate(record, toldLate, pending, o.now()).length > 0;
    return { waiting, notes };
  }

  /**
   * One delivery, then the answers its decision typed ahead (TurnDecision `ahead`), each a delivery of its own
   * (id `<delivery>.<k>`) taken on the screen the last one answered, while the channel takes it there, nothing
   * else was delivered in between, and the channel's deadline has not passed.
   */
  return async function deliver<S>(participant: Participant, decide: Decide<S>): Promise<Delivered<S>> {
    const began = o.now();
    const first = await deliverOne(participant, decide, undefined, began + o.deadlineOf(participant.channel));
    const decision = first.decision;
    if (decision?.kind !== 'step' || !decision.ahead) return first;
    const { ahead, inbound } = decision;
    let last: Delivered<S> = first;
    for (let k = 1; k <= ahead.answers.length && o.now() - began < o.deadlineOf(participant.channel); k++) {
      const action = last.prompt ? ahead.take(last.prompt, ahead.answers[k - 1]!) : undefined;
      if (!action) break;
      const previous = `${inbound.messageId}${k === 1 ? '' : `.${k - 1}`}`;
      const next: Inbound = {
        ...inbound,
        newSession: undefined,
        resume: undefined,
        ...action,
        messageId: `${inbound.messageId}.${k}`,
      };
      const taken = await deliverOne<S>(
        participant,
        () => ({ kind: 'step', inbound: next, after: (prompt) => decision.after(prompt, k) }),
        deliveryId(previous),
      );
      if (taken.stopped) break;
      last = taken;
    }
    return last;
  };

  /**
   * One delivery: read the record, decide, step, write; with the decision it acted on. With `follows`, only
   * while that delivery is the latest the conversation holds (else `stopped`: nothing decided or written).
   * `answerBy`: the channel's deadline for its answer (kept outcomes shown later are not counted as seen).
   */
  async function deliverOne<S>(
    participant: Participant,
    decide: Decide<S>,
    follows?: string,
    answerBy?: number,
  ): Promise<Delivered<S> & { decision?: TurnDecision<S>; stopped?: true }> {
    const key = keys.conversation(participant);
    /** The record kept in memory (a guess, proved by this message's write) or, once undefined, read. */
    let stored: Stored | null | undefined = records.peek(key);
    let guessed = stored !== undefined;
    /**
     * The profile and pending outcomes, read with the record when it is read: what a conversation starting over
     * needs (a new USSD dial, where the record is mostly not kept here), in the same round trip.
     */
    let alongside:
      { profile: StoredSnapshot | null; pending: StoredSnapshot | null; toldLate: StoredSnapshot | null } | undefined;
    /** What the channel answered on its own (TurnEngine.toldLate) is read only where a next dial explains it. */
    const { keepsForNextDial } = o.capabilitiesOf(participant.channel);
    /** The record last read, and the channel state of the decision on it: what a failure is answered from. */
    let known: ConversationRecord | undefined;
    let after: ((prompt: Prompt) => S) | undefined;
    try {
      // Only a lost compare-and-set counts as a try. A record kept in memory that cannot be acted on (stale, or
      // an answer that must come from a record just read) is read again without counting: a read has no guess
      // to refute, so that happens at most once.
      let lost = 0;
      while (lost < CAS_ATTEMPTS) {
        if (stored === undefined) {
          const [read, profile, pending, toldLate] = await records.readWith(key, [
            keys.profile(participant.channel, participant.userId),
            keys.pending(participant),
            ...(keepsForNextDial ? [keys.toldLate(participant)] : []),
          ]);
          stored = read;
          alongside = { profile: profile ?? null, pending: pending ?? null, toldLate: toldLate ?? null };
          guessed = false;
        }
        const record = stored?.record ?? EMPTY;
        known = record;
        if (follows !== undefined && !isNewest(record, follows)) {
          if (guessed) {
            stored = undefined;
            continue;
          }
          return { state: record.channel as S, stopped: true };
        }
        const decision = decide(
          record.channel as S | undefined,
          viewOf(record, alongside?.pending, participant, alongside?.toldLate),
        );
        // An answer without a step comes only from a record just read, with the outcomes kept for the user (the
        // view's notes): a kept one is read and decided on again (not a try).
        if (decision.kind === 'reply') {
          after = () => decision.state;
          if (guessed) {
            stored = undefined;
            continue;
          }
          if (!decision.changed) return { state: decision.state, decision };
          if (await records.write(key, { ...record, channel: decision.state }, stored?.version ?? null))
            return { state: decision.state, decision };
          lost += 1;
          stored = undefined;
          continue;
        }
        const { inbound } = decision;
        after = (prompt) => decision.after(prompt, 0);
        const id = deliveryId(inbound.messageId);
        const entry = answerOf(record, id);
        if (entry !== undefined) {
          if (guessed) {
            stored = undefined;
            continue;
          }
          logger.info(who(inbound), 'engine: duplicate delivery');
          if (entry !== WAITING) return { prompt: entry, state: after(entry), decision };
          const lang = record.profile?.lang ?? 'en';
          return {
            ...(await (runner.wait({ key, participant: inbound, id, lang, notes: [], after }, stored!) as Promise<
              Delivered<S>
            >)),
            decision,
          };
        }
        // The profile record is read when the conversation starts over, with the pending outcomes of a new
        // channel session (one round trip); otherwise the copy kept in the record serves.
        const storedFlow = record.session;
        const fresh =
          inbound.newSession === true ||
          !record.profile ||
          !storedFlow ||
          storedFlow.ended ||
          storedFlow.expiresAt <= o.now();
        // Mid-flow on a kept record (most messages) nothing is read: no Promise.all of two constants a message.
        const [read, pending, toldLate] = alongside
          ? [
              fresh ? profileOf(alongside.profile) : undefined,
              inbound.newSession ? alongside.pending : null,
              inbound.newSession ? alongside.toldLate : null,
            ]
          : fresh || inbound.newSession
            ? await Promise.all([
                fresh ? readProfile(store, inbound) : undefined,
                inbound.newSession ? store.get(keys.pending(inbound)) : null,
                inbound.newSession && keepsForNextDial ? store.get(keys.toldLate(inbound)) : null,
              ])
            : [undefined, null, null];
        const profile = (fresh ? read : record.profile) ?? { lang: 'en' };
        const outcome = await step(inbound, id, key, stored ?? null, profile, pending, toldLate, after, answerBy);
        if (outcome !== CONFLICT) return { ...outcome, decision };
        lost += 1;
        stored = undefined;
      }
      logger.warn({ channel: participant.channel }, 'engine: gave up after repeated conflicts');
      const prompt = answers.notice('common.busy', known?.profile?.lang ?? 'en', false);
      return { prompt, state: after ? after(prompt) : (undefined as S) };
    } catch (error) {
      logger.error({ ...logged(participant), err: errorMessage(error) }, 'engine: message failed');
      if (!after) throw error;
      const lang = known?.profile?.lang ?? 'en';
      const latest = known?.ledger.at(-1)?.[1];
      const afterMoney = latest !== undefined && latest !== WAITING && latest.money === true;
      const prompt =
        error instanceof RunUnknown
          ? answers.failure(error.storedFlow, true, afterMoney, lang, participant.channel)
          : known
            ? answers.failure(known.session, known.run !== undefined, afterMoney, lang, participant.channel)
            : answers.notice('common.unavailable', lang, true);
      return { prompt, state: after(prompt) };
    }
  }
}
