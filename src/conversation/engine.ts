/**
 * The conversation engine (DESIGN "Engine"): one Inbound in, one Prompt out.
 *
 * handle(): the conversation record (`conv:<channel>:<conversationId>`: the session, the ids of its latest
 * deliveries, and a channel's own state), as this process last wrote it or read -> a delivery already in it
 * is a duplicate and gets the current answer -> one pure step (start a flow, or send the flow ONE event) ->
 * persist with compare-and-set, the delivery id and the channel's state in the same write (on conflict read
 * and redo the step) -> when the flow is `busy`, run its service call from the stored snapshot until it
 * settles or the channel's deadline passes -> persist -> render the current View in the user's language.
 * At most one read and one write a message (none read mid-flow when the record is kept here): the record is
 * the duplicate mark, so no key per delivery.
 * Past the deadline the answer is "processing, you will be notified"; the run goes on, and its outcome is
 * persisted and handed to onLateOutcome (on USSD also kept and shown at the next dial).
 */
import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { createActor, waitFor, type AnyMachineSnapshot } from 'xstate';
import { provideServices } from '../../flows/actors.js';
import { flows as registeredFlows } from '../../flows/index.js';
import type { FlowServices } from '../../flows/services.js';
import type { FlowEvent, FlowId, FlowInput, FlowModule, Lang, Text, UserProfile } from '../../flows/types.js';
import { maskPhone, type Logger } from '../log.js';
import type { AccessPolicy } from './policy.js';
import { addPending, PENDING_TTL_SECONDS, pendingKey, profileKey as profileKeyOf } from './records.js';
import { createCatalogue, currentView } from './render.js';
import { FlowRuntime, isBusy, stepName, type FlowEnd, type Session, type Step, type StepContext } from './session.js';
import type { Address, Channel, Inbound, Participant, Prompt, SessionStore, StoredSnapshot, TurnDecision, TurnEngine } from './types.js';

export interface EngineOptions {
  store: SessionStore;
  /** The side effects flows ask for (createServices, or fakes in tests). */
  services: Partial<FlowServices>;
  policy: AccessPolicy;
  /** The flows to run. Default: the registry in flows/index.ts; tests pass their own. */
  flows?: Partial<Record<FlowId, FlowModule>>;
  /** Country of local phone numbers (FlowInput.defaultCountry). */
  defaultCountry: string;
  /** Currencies offered (FlowInput.currencies), first is the default. */
  currencies: string[];
  /** Idle time in seconds after which a conversation starts over (SESSION_TTL_SECONDS). */
  sessionTtlSeconds: number;
  /** Per channel, how long handle() waits for a service call before answering "processing". */
  deadlineMs: Record<Channel, number>;
  /** Told of every flow run that finished or was abandoned, and at which step (metrics). */
  onFlowEnd?: (end: FlowEnd) => void;
  /** Receives the outcome of a run that passed its deadline (send it to the chat). */
  onLateOutcome?: (address: Address, prompt: Prompt) => void | Promise<void>;
  logger: Logger;
  /** Makes FlowInput.runId (idempotency keys derive from it). Default randomUUID. */
  newRunId?: () => string;
  /** Clock in milliseconds (session expiry). Default Date.now; tests pass their own. */
  now?: () => number;
}

/** The Engine, plus a way to wait for runs that passed their deadline (graceful shutdown, tests). */
export interface ConversationEngine extends TurnEngine {
  /** Resolves when every run still going has settled and its late outcome was delivered. */
  drain(): Promise<void>;
}

/** A session is kept this long past its expiry, to tell the user it expired instead of silently restarting. */
const EXPIRED_NOTICE_SECONDS = 3600;
const PROFILE_TTL_SECONDS = 365 * 24 * 3600;
/** Attempts of one step when other messages of the conversation keep winning the compare-and-set. */
const CAS_ATTEMPTS = 5;
/** How often a duplicate delivery looks for the first one's answer. */
const DUPLICATE_POLL_MS = 50;

const LATE = Symbol('late');

/** A step lost its compare-and-set to another message: read again and redo it. */
const CONFLICT = Symbol('conflict');

/** Delivery ids kept per conversation: retries repeat one of the latest few, within minutes. */
const SEEN_KEPT = 8;

/**
 * Conversations whose latest record this process keeps in memory, and for how long after its last use.
 * A USSD user answers within seconds and a gateway session lasts a few minutes, so a minute covers the hops
 * of a session; far inside the record's own TTL (an hour and more), so a record that expired and was made
 * again elsewhere, its version counting from 1 once more, is never taken for the one kept here.
 * With several processes behind a gateway that spreads one session's hops over them, a hop that lands where
 * the record is stale costs a refused compare-and-set, a read and the write (one round trip more than
 * reading first); one that lands where it is current saves the read. About even at two processes; sticky
 * routing (or one process) makes every mid-flow hop one round trip.
 * Memory: about 3 KB a conversation with its live flow snapshot (measured over 20,000 benchmark sessions),
 * so at most about 60 MB.
 */
const RECORDS_KEPT = 20_000;
const RECORD_KEPT_MS = 60_000;

/** What `conv:<channel>:<conversationId>` holds. */
interface ConversationRecord {
  session?: Session;
  /** Ids of the latest deliveries that moved the conversation, oldest first: one seen again is a duplicate. */
  seen: string[];
  /** A channel's own state, kept with the conversation (TurnEngine); chat channels keep none. */
  channel?: unknown;
  /**
   * The delivery whose service call is still out (its answer is not known yet): a repeat of it waits for the
   * outcome instead of being answered from the stored session. Cleared when the run settles.
   */
  open?: string;
  /**
   * Deliveries answered "processing" while a run was out (they, or a copy of them in another process, waited
   * for it past the deadline), newest last. A later copy of one gets "processing" too; the run keeps that as
   * its own delivery's answer when it is listed (and delivers the outcome late), and so does a delivery that
   * waited for the run when its answer is kept. Kept by the run's writes, dropped by the next step.
   */
  late?: string[];
  /**
   * The user's profile (language, remembered candidates) as read when this conversation last started over
   * (a new channel session, an ended or expired flow) and as changed here since: a message in the middle of a
   * flow reads no profile record. A change made in another conversation of the same user (another Telegram
   * chat) shows here from the next start.
   */
  profile?: UserProfile;
}

/** The record's delivery ids with `messageId` added as the newest. */
const seenWith = (record: ConversationRecord, messageId: string): string[] => [...record.seen, messageId].slice(-SEEN_KEPT);
/** The record with `messageId` listed as answered "processing". */
const markedLate = (record: ConversationRecord, messageId: string): ConversationRecord => ({
  ...record,
  late: [...(record.late ?? []), messageId].slice(-SEEN_KEPT),
});

function readConversation(stored: StoredSnapshot | null): ConversationRecord {
  const record = stored?.snapshot as Partial<ConversationRecord> | undefined;
  return {
    session: record?.session,
    seen: Array.isArray(record?.seen) ? record.seen : [],
    channel: record?.channel,
    open: typeof record?.open === 'string' ? record.open : undefined,
    late: Array.isArray(record?.late) ? record.late : undefined,
    profile: typeof record?.profile?.lang === 'string' ? record.profile : undefined,
  };
}

/** The answer to one delivery and the channel state kept with it. */
interface Delivered<S> {
  prompt?: Prompt;
  state: S;
}

/** Where a run of a busy session starts: the message that started it and the record it starts from. */
interface RunStart {
  inbound: Inbound;
  key: string;
  /** The record as stored at `version` (its session can differ from `start`: a secret step is not stored). */
  base: ConversationRecord;
  start: Session;
  version: number;
  profile: UserProfile;
  ctx: StepContext;
  /** The channel's state for the answer the starting message gets (TurnEngine), if it keeps one. */
  after: ((prompt: Prompt) => unknown) | undefined;
}

interface Run {
  /** Answered "processing" at the deadline: the outcome goes to onLateOutcome, and the channel state kept with the conversation stays that answer. */
  late: boolean;
  /**
   * The run has its outcome and is writing it: past the deadline from here on, waiters get the outcome when
   * that write lands (a round trip) instead of "processing". Answering "processing" while the record is
   * being written with the outcome would let a resend handled meanwhile by another process get the outcome.
   */
  decided: boolean;
  channel: Channel;
  address: Address;
  /** The prompt of the settled run. */
  outcome: Promise<Prompt>;
  /** Settled and, when late, delivered. */
  finished: Promise<void>;
}

async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => {
    timer = setTimeout(() => resolve(LATE), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function eventOf(inbound: Inbound): FlowEvent | undefined {
  if (inbound.nav === 'back') return { type: 'BACK' };
  if (inbound.choice !== undefined) return { type: 'CHOSEN', id: inbound.choice };
  if (inbound.text !== undefined) return { type: 'ANSWERED', value: inbound.text };
  return undefined;
}

export function createEngine(options: EngineOptions): ConversationEngine {
  const { store, policy, logger } = options;
  const flows = options.flows ?? registeredFlows;
  const runtime = new FlowRuntime(flows, provideServices(options.services));
  const catalogue = createCatalogue(Object.values(flows));
  const now = options.now ?? Date.now;
  const newRunId = options.newRunId ?? randomUUID;
  const storeTtl = options.sessionTtlSeconds + EXPIRED_NOTICE_SECONDS;
  const runs = new Map<string, Run>();
  /** Writes left after a run, awaited by drain(). */
  const followUps = new Set<Promise<void>>();
  /**
   * The record of each recent conversation as this process last read or wrote it. A message starts from it
   * instead of reading Redis: the compare-and-set that commits the message proves it current (another process
   * that wrote since makes that a conflict, and the record is read and the step redone). An answer given
   * without a write (a resend, a duplicate) is given only from a record just read. Its objects are the ones
   * written, so the flow's live snapshot of them is kept too (FlowRuntime.restore).
   */
  const records = new LRUCache<string, StoredSnapshot>({ max: RECORDS_KEPT, ttl: RECORD_KEPT_MS });

  /** Reads a conversation record from the store and keeps it. */
  async function readRecord(key: string): Promise<StoredSnapshot | null> {
    const stored = await store.get(key);
    if (stored === null) records.delete(key);
    else keep(key, stored);
    return stored;
  }

  /** Compare-and-set of a conversation record; the record written is kept, a conflict forgets the kept one. */
  async function writeRecord(key: string, record: ConversationRecord, expected: number | null): Promise<number | null> {
    const version = await store.set(key, record, expected, storeTtl);
    if (version === null) records.delete(key);
    else keep(key, { snapshot: record, version });
    return version;
  }

  function keep(key: string, stored: StoredSnapshot): void {
    const kept = records.get(key, { updateAgeOnGet: false });
    if (!kept || kept.version < stored.version) records.set(key, stored);
  }

  const convKey = (p: Participant) => `conv:${p.channel}:${p.conversationId}`;
  const profileKey = (i: Inbound) => profileKeyOf(i.channel, i.userId);
  const who = (i: Inbound) => {
    const mask = (id: string) => (i.channel === 'ussd' ? maskPhone(id) : id);
    return { channel: i.channel, conversation: mask(i.conversationId), user: mask(i.userId), messageId: i.messageId };
  };

  const text = (t: Text, lang: Lang) => catalogue.render(t, lang);
  const simple = (key: string, lang: Lang, final: boolean): Prompt => ({ text: text({ key }, lang), final });
  const processing = (channel: Channel, lang: Lang) => simple('common.processing', lang, channel === 'ussd');
  const withNotes = (prompt: Prompt, notes: string[]): Prompt =>
    notes.length === 0 ? prompt : { ...prompt, text: [...notes, prompt.text].join('\n') };

  function render(session: Session, lang: Lang, channel: Channel): Prompt {
    if (session.notice) return { text: text(session.notice, lang), final: true };
    const snapshot = runtime.restore(session);
    if (isBusy(snapshot)) return processing(channel, lang);
    const view = currentView(snapshot);
    if (!view) {
      logger.error({ flow: session.flow, state: snapshot.value }, 'engine: a waiting state has no view');
      return simple('common.error', lang, true);
    }
    const prompt = catalogue.renderView(view, lang);
    return session.ended ? { ...prompt, final: true } : prompt;
  }

  /** Merges changes into the stored profile (compare-and-set, retried). */
  async function remember(inbound: Inbound, changes: Partial<UserProfile>): Promise<void> {
    if (Object.keys(changes).length === 0) return;
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const stored = await store.get(profileKey(inbound));
      const merged = { lang: 'en', ...(stored?.snapshot as UserProfile | undefined), ...changes };
      if ((await store.set(profileKey(inbound), merged, stored?.version ?? null, PROFILE_TTL_SECONDS)) !== null) return;
    }
    logger.warn(who(inbound), 'engine: profile not saved after repeated conflicts');
  }

  function stepContext(inbound: Inbound, allowedFlows: FlowId[]): StepContext {
    return {
      allowedFlows,
      newRunId,
      expiresAt: now() + options.sessionTtlSeconds * 1000,
      input: (runId, profile): FlowInput => ({
        runId,
        channel: inbound.channel,
        chat: `${inbound.channel}:${inbound.conversationId}`,
        userId: inbound.userId,
        userPhone: inbound.phoneNumber ?? (inbound.channel === 'ussd' ? inbound.userId : undefined),
        requirePin: inbound.channel === 'ussd',
        defaultCountry: options.defaultCountry,
        currencies: options.currencies,
        profile,
        allowedFlows,
      }),
    };
  }

  function reportEnds(ends: FlowEnd[] | undefined): void {
    for (const end of ends ?? []) options.onFlowEnd?.(end);
  }

  /** The pure step for this message, or `resume` when the flow is busy (messages wait for its outcome). */
  function plan(inbound: Inbound, stored: Session | undefined, profile: UserProfile, ctx: StepContext): Step | 'resume' {
    const base: Omit<Step, 'session'> = { profile, remember: {}, notes: [], ended: [] };
    const left = (s: Session) => base.ended!.push({ flow: s.flow, outcome: 'abandoned', step: stepName(runtime.restore(s)) });
    let session = stored;
    if (session && session.expiresAt <= now()) {
      if (!session.ended) left(session);
      const startsOver = inbound.newSession || inbound.start !== undefined || inbound.nav === 'home';
      if (!session.ended && !startsOver) base.notes.push({ key: 'common.expired' });
      session = undefined;
    }
    const live = session && !session.ended ? session : undefined;
    if (live && isBusy(runtime.restore(live))) return 'resume';
    const leaving = inbound.start !== undefined || inbound.newSession || inbound.nav === 'home' || inbound.nav === 'cancel';
    if (live && leaving) left(live);
    if (inbound.start) return runtime.start(inbound.start, base, ctx);
    if (live && inbound.nav === 'cancel') {
      return { ...base, session: { ...live, ended: true, notice: { key: 'common.cancelled' }, expiresAt: ctx.expiresAt } };
    }
    if (!live || leaving) return runtime.start('menu', base, ctx);
    return runtime.send(live, eventOf(inbound), base, ctx);
  }

  /**
   * Runs a busy session's service calls from its snapshot until the flow waits again. Each further busy
   * state it enters (a PIN check leading to the spend reservation, then the payment) is handed to `saved`
   * as it starts, unless it holds a secret, so a restart resumes the chain there instead of losing it.
   * Returns the snapshot it settled in, live: the caller persists it once (FlowRuntime.settled) instead of
   * persisting it here and restoring it there. It waits (not busy), so no service call of it is running.
   */
  async function runBusy(session: Session, saved: (snapshot: unknown) => Promise<void>): Promise<AnyMachineSnapshot> {
    const actor = createActor(runtime.machine(session.flow), { snapshot: session.snapshot as never });
    let last = JSON.stringify(runtime.restore(session).value);
    let saving = Promise.resolve();
    // A save that fails (Redis refused or dropped the write) stops the saves after it and is thrown once the
    // flow settled: the chain of saves is awaited only then, and a rejection with no handler until that
    // moment would be unhandled meanwhile, which ends a Node process.
    let saveFailed: { error: unknown } | undefined;
    const subscription = actor.subscribe((snapshot) => {
      const value = JSON.stringify(snapshot.value);
      if (value === last || !isBusy(snapshot) || snapshot.hasTag('secret')) return;
      last = value;
      const persisted = runtime.persist(session.flow, snapshot);
      saving = saving.then(() => (saveFailed ? undefined : saved(persisted))).catch((error: unknown) => void (saveFailed = { error }));
    });
    actor.start();
    try {
      const settled = await waitFor(actor, (s) => !isBusy(s), { timeout: Infinity });
      await saving;
      if (saveFailed) throw saveFailed.error;
      return settled;
    } finally {
      subscription.unsubscribe();
      actor.stop();
    }
  }

  /**
   * Runs and persists until the conversation is no longer busy; the prompt of where it ends. Writes keep the
   * record's delivery ids and channel state; the last one sets the channel's state (`after`) for the answer
   * the message that started the run got (the outcome, or "processing" past the deadline), so a resend of
   * it gets that same answer.
   */
  async function settle(from: RunStart, run: Pick<Run, 'late' | 'decided'>): Promise<Prompt> {
    const { inbound, key, base, version, profile, ctx, after } = from;
    let session = from.start;
    let current = version;
    let known = profile;
    let seen = base.seen;
    let late = base.late;
    /** The session as stored now (compared with the record only after a conflict). */
    let storedSession = base.session;
    /**
     * Compare-and-set of the run's next session. Lost to a message that only added its delivery id (one that
     * waits for this run) or marked the run's message answered "processing" (ConversationRecord.late), it
     * keeps their ids, takes the mark, and writes again; lost to one that moved the flow on, null. `channel`
     * is the channel state to write, made at each attempt (the mark can change it).
     */
    const write = async (next: Session, channel: () => unknown, open: string | undefined): Promise<number | null> => {
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const written = await writeRecord(key, { seen, late, session: next, channel: channel(), open, profile: known }, current);
        if (written !== null) {
          current = written;
          storedSession = next;
          return written;
        }
        const now = await readRecord(key);
        const record = readConversation(now);
        if (!now || JSON.stringify(record.session) !== JSON.stringify(storedSession)) return null;
        current = now.version;
        seen = record.seen;
        late = record.late;
        if (late?.includes(inbound.messageId)) run.late = true;
      }
      return null;
    };
    try {
      while (isBusy(runtime.restore(session))) {
        let moved = false;
        const settled = await runBusy(session, async (snapshot) => {
          if (moved) return;
          if ((await write({ ...session, snapshot }, () => base.channel, base.open)) === null) moved = true;
        });
        const step = runtime.settled(session, settled, { profile: known, remember: {}, notes: [] }, ctx);
        await remember(inbound, step.remember);
        known = step.profile;
        const prompt = isBusy(runtime.restore(step.session)) ? undefined : render(step.session, known.lang, inbound.channel);
        if (prompt) run.decided = true;
        const answered = () => (prompt && after ? after(run.late ? processing(inbound.channel, profile.lang) : prompt) : base.channel);
        const written = await write(step.session, answered, prompt ? undefined : base.open);
        if (written === null) {
          // Another message moved the conversation on meanwhile; this outcome is still the user's answer.
          logger.info(who(inbound), 'engine: conversation changed while a service call ran');
          return prompt ?? processing(inbound.channel, known.lang);
        }
        reportEnds(step.ended);
        session = step.session;
        if (prompt) return prompt;
      }
      return render(session, known.lang, inbound.channel);
    } catch (error) {
      logger.error({ ...who(inbound), err: error }, 'engine: a flow failed while running a service call');
      await write({ ...session, ended: true }, () => base.channel, undefined).catch(() => null);
      return simple('common.error', known.lang, true);
    }
  }

  async function deliverLate(run: Run, prompt: Prompt): Promise<void> {
    try {
      // Kept as the OLDEST note: the service's outcome of the same payment may already be there (its
      // webhook can beat a slow answer) and supersedes this interim answer.
      if (run.channel === 'ussd') await addPending(store, run.address, prompt.text, { asOldest: true });
      await options.onLateOutcome?.(run.address, prompt);
    } catch (error) {
      logger.error({ channel: run.channel, err: error }, 'engine: late outcome not delivered');
    }
  }

  /** The run of this conversation: the one already going in this process, or a new one from `from`. */
  function runFor(from: RunStart): Run {
    const { inbound, key } = from;
    const going = runs.get(key);
    if (going) return going;
    const run = { late: false, decided: false, channel: inbound.channel, address: { channel: inbound.channel, conversationId: inbound.conversationId } } as Run;
    run.outcome = settle(from, run);
    run.finished = run.outcome
      .then((prompt) => (run.late ? deliverLate(run, prompt) : undefined))
      .finally(() => runs.delete(key));
    runs.set(key, run);
    return run;
  }

  /**
   * Waits for a run up to the channel's deadline: its outcome, or "processing" (the run goes on). A run that
   * has its outcome and is writing it at the deadline is waited for (Run.decided).
   */
  async function outcomeOf(run: Run, inbound: Inbound, lang: Lang, beforeProcessing?: () => Promise<void>): Promise<Prompt> {
    const outcome = await withDeadline(run.outcome, options.deadlineMs[inbound.channel]);
    if (outcome !== LATE) return outcome;
    if (run.decided) return run.outcome;
    run.late = true;
    await beforeProcessing?.();
    logger.info(who(inbound), 'engine: past the deadline, answering processing');
    return processing(inbound.channel, lang);
  }

  /** The answer a repeat of the message that started `run` gets: the first one's ("processing" once it was late). */
  async function repeatOf(run: Run, inbound: Inbound, lang: Lang): Promise<Prompt> {
    const outcome = await outcomeOf(run, inbound, lang);
    return run.late ? processing(inbound.channel, lang) : outcome;
  }

  /**
   * Keeps the channel state of a message answered from a run, once it settled, unless a message came since:
   * `state`, or `lateState` when the message is listed as answered "processing" (ConversationRecord.late).
   */
  async function keepAnswer(key: string, messageId: string, state: unknown, lateState: unknown): Promise<void> {
    try {
      const stored = await readRecord(key);
      const record = readConversation(stored);
      if (!stored || record.seen.at(-1) !== messageId || (record.session && isBusy(runtime.restore(record.session)))) return;
      await writeRecord(key, { ...record, channel: record.late?.includes(messageId) ? lateState : state }, stored.version);
    } catch (error) {
      logger.warn({ err: error }, 'engine: the answer of a resumed message was not kept');
    }
  }

  /**
   * Lists a delivery as answered "processing" (ConversationRecord.late) before it is answered so. Not
   * marked (repeated conflicts, Redis down), it is still answered: a later copy may then get the outcome.
   */
  async function markLate(key: string, messageId: string): Promise<void> {
    try {
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const stored = await readRecord(key);
        const record = readConversation(stored);
        if (!stored || record.late?.includes(messageId)) return;
        if ((await writeRecord(key, markedLate(record, messageId), stored.version)) !== null) return;
      }
      logger.warn('engine: a "processing" answer was not marked after repeated conflicts');
    } catch (error) {
      logger.warn({ err: error }, 'engine: a "processing" answer was not marked');
    }
  }

  /** Pending outcomes to show on a new channel session (USSD dial), newest first, under a header. */
  function pendingNotes(pending: StoredSnapshot | null, lang: Lang): string[] {
    const texts = (pending?.snapshot as string[] | undefined) ?? [];
    // Newest first: a USSD screen cuts a long header at its end, and the latest outcome ("Done...")
    // supersedes the earlier ones ("submitted, you will be notified"), so it is the one that must fit.
    return texts.length === 0 ? [] : [text({ key: 'common.pendingOutcome' }, lang), ...[...texts].reverse()];
  }

  /** One new delivery against the record as read: the step, its write, and the service call it starts. */
  async function step<S>(
    inbound: Inbound,
    key: string,
    stored: StoredSnapshot | null,
    record: ConversationRecord,
    profile: UserProfile,
    pending: StoredSnapshot | null,
    after: (prompt: Prompt) => S,
  ): Promise<Delivered<S> | typeof CONFLICT> {
    const answer = (prompt: Prompt): Delivered<S> => ({ prompt, state: after(prompt) });
    if (!policy.role(inbound.channel, inbound.userId)) {
      logger.info(who(inbound), 'engine: refused a user the access policy does not know');
      return answer(simple('common.notAllowed', profile.lang, true));
    }
    const allowed = policy.allowedFlows(inbound.channel, inbound.userId).filter((flow) => runtime.has(flow));
    const ctx = stepContext(inbound, allowed);
    const address: Address = { channel: inbound.channel, conversationId: inbound.conversationId };
    const planned = plan(inbound, record.session, profile, ctx);
    if (planned === 'resume') {
      // The flow is running a service call: this message waits for its outcome. Its delivery id goes in
      // the record first (a copy of it then waits too, instead of counting as new), and its answer once the
      // run has settled (so a resend of it gets the same), unless another message came since.
      const marked: ConversationRecord = { ...record, seen: seenWith(record, inbound.messageId) };
      const version = await writeRecord(key, marked, stored!.version);
      if (version === null) return CONFLICT;
      const run = runFor({ inbound, key, base: marked, start: record.session!, version, profile, ctx, after });
      const resumed = answer(await outcomeOf(run, inbound, profile.lang, () => markLate(key, inbound.messageId)));
      const lateState = after(processing(inbound.channel, profile.lang));
      const keep = run.outcome.then(() => keepAnswer(key, inbound.messageId, resumed.state, lateState));
      if (run.late) {
        const followUp: Promise<void> = keep.finally(() => followUps.delete(followUp));
        followUps.add(followUp);
      } else {
        await keep;
      }
      return resumed;
    }
    const lang = planned.profile.lang;
    const shownPending = pendingNotes(pending, lang);
    const notes = [...shownPending, ...planned.notes.map((t) => text(t, lang))];
    const busy = isBusy(runtime.restore(planned.session));
    const done = busy ? undefined : answer(withNotes(render(planned.session, lang, inbound.channel), notes));
    // A step into a state tagged `secret` (a PIN check) is not stored: the invoke's input holds the secret.
    // The stored conversation stays where it was (its version moves on, so racing messages still conflict)
    // and the check runs from memory; a restart meanwhile asks for the PIN again.
    const holdsSecret = record.session !== undefined && runtime.restore(planned.session).hasTag('secret');
    const written: ConversationRecord = {
      session: holdsSecret ? record.session : planned.session,
      seen: seenWith(record, inbound.messageId),
      channel: done ? done.state : record.channel,
      ...(busy ? { open: inbound.messageId } : {}),
      profile: planned.profile,
    };
    const version = await writeRecord(key, written, stored?.version ?? null);
    if (version === null) return CONFLICT;
    reportEnds(planned.ended);
    await remember(inbound, planned.remember);
    if (pending && shownPending.length > 0) await store.set(pendingKey(address), [], pending.version, PENDING_TTL_SECONDS);
    if (done) return done;
    const run = runFor({ inbound, key, base: written, start: planned.session, version, profile, ctx, after });
    return answer(withNotes(await outcomeOf(run, inbound, profile.lang), notes));
  }

  /**
   * A repeated delivery whose first is done: where the conversation is now, which is the first one's answer
   * unless a later message moved it on. None while the first's service call is still out (see deliver).
   */
  function earlierAnswer(record: ConversationRecord, inbound: Inbound, profile: UserProfile): Prompt | undefined {
    const session = record.session;
    if (record.open === inbound.messageId || (session && isBusy(runtime.restore(session)))) return undefined;
    return session ? render(session, profile.lang, inbound.channel) : simple('common.busy', profile.lang, false);
  }

  /** One delivery: read the record, decide, step, write. */
  async function deliver<S>(participant: Participant, decide: (state: S | undefined) => TurnDecision<S>): Promise<Delivered<S>> {
    const key = convKey(participant);
    /** The record kept in memory (a guess, proved by this message's write) or, once undefined, read. */
    let stored: StoredSnapshot | null | undefined = records.get(key);
    let guessed = stored !== undefined;
    let waited = 0;
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      if (stored === undefined || attempt > 0 || waited > 0) {
        stored = await readRecord(key);
        guessed = false;
      }
      const record = readConversation(stored);
      const decision = decide(record.channel as S | undefined);
      /** An answer without a write comes from a record just read: read it and decide again (not an attempt). */
      const unproved = () => {
        if (!guessed) return false;
        stored = undefined;
        attempt -= 1;
        return true;
      };
      if (decision.kind === 'reply') {
        if (!decision.changed) {
          if (unproved()) continue;
          return { state: decision.state };
        }
        if ((await writeRecord(key, { ...record, channel: decision.state }, stored?.version ?? null)) === null) continue;
        return { state: decision.state };
      }
      const { inbound, after } = decision;
      // The profile record is read when the conversation starts over, with the pending outcomes of a new
      // channel session (one round trip); otherwise the copy kept in the record serves.
      const session = record.session;
      const duplicate = record.seen.includes(inbound.messageId);
      if (duplicate && unproved()) continue;
      const fresh = inbound.newSession === true || !record.profile || !session || session.ended || session.expiresAt <= now();
      const [read, pending] = await Promise.all([
        fresh ? store.get(profileKey(inbound)) : null,
        // A duplicate shows no pending outcomes (the first one did), so it does not read them.
        inbound.newSession && !duplicate ? store.get(pendingKey({ channel: inbound.channel, conversationId: inbound.conversationId })) : null,
      ]);
      const profile = (fresh ? (read?.snapshot as UserProfile | undefined) : record.profile) ?? { lang: 'en' };
      try {
        if (duplicate) {
          if (waited === 0) logger.info(who(inbound), 'engine: duplicate delivery');
          const going = runs.get(key);
          // A copy of one answered "processing" gets that; of the message that started the run, what it got;
          // of one that waited for it, the outcome.
          const wait = record.open === inbound.messageId ? repeatOf : outcomeOf;
          const prompt = record.late?.includes(inbound.messageId)
            ? processing(inbound.channel, profile.lang)
            : going
              ? await wait(going, inbound, profile.lang)
              : earlierAnswer(record, inbound, profile);
          if (prompt) return { prompt, state: after(prompt) };
          // The first one's service call runs in another process: read again until it settles (a channel
          // may then answer from its own state), up to the deadline. Past it this copy is answered
          // "processing", and says so in the record first, so the run keeps that answer for the message.
          if (waited >= options.deadlineMs[inbound.channel]) {
            // Refused when the run wrote meanwhile: read again (an attempt), it may have settled.
            if ((await writeRecord(key, markedLate(record, inbound.messageId), stored!.version)) === null) continue;
            const late = processing(inbound.channel, profile.lang);
            return { prompt: late, state: after(late) };
          }
          await sleep(DUPLICATE_POLL_MS);
          waited += DUPLICATE_POLL_MS;
          attempt -= 1;
          continue;
        }
        const outcome = await step(inbound, key, stored ?? null, record, profile, pending, after);
        if (outcome !== CONFLICT) return outcome;
      } catch (error) {
        logger.error({ ...who(inbound), err: error }, 'engine: message failed');
        const prompt = simple('common.error', profile.lang, true);
        return { prompt, state: after(prompt) };
      }
    }
    logger.warn({ channel: participant.channel }, 'engine: gave up after repeated conflicts');
    const prompt = simple('common.busy', 'en', false);
    const last = decide(readConversation(stored ?? null).channel as S | undefined);
    return { prompt, state: last.kind === 'step' ? last.after(prompt) : last.state };
  }

  return {
    async handle(inbound: Inbound): Promise<Prompt> {
      try {
        const { prompt } = await deliver<undefined>(inbound, () => ({ kind: 'step', inbound, after: () => undefined }));
        return prompt!;
      } catch (error) {
        logger.error({ ...who(inbound), err: error }, 'engine: message failed');
        return simple('common.error', 'en', true);
      }
    },
    async turn<S>(participant: Participant, decide: (state: S | undefined) => TurnDecision<S>): Promise<S> {
      return (await deliver(participant, decide)).state;
    },
    async drain(): Promise<void> {
      while (runs.size > 0 || followUps.size > 0) await Promise.all([...[...runs.values()].map((run) => run.finished), ...followUps]);
    },
  };
}
