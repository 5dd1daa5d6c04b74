/**
 * The conversation engine (DESIGN "Engine"): one Inbound in, one Prompt out.
 *
 * handle(): claim the delivery id (a duplicate gets the first answer) -> load the session -> one pure step
 * (start a flow, or send the flow ONE event) -> persist with compare-and-set (on conflict reload and redo
 * the step) -> when the flow is `busy`, run its service call from the stored snapshot until it settles or
 * the channel's deadline passes -> persist -> render the current View in the user's language.
 * Past the deadline the answer is "processing, you will be notified"; the run goes on, and its outcome is
 * persisted and handed to onLateOutcome (on USSD also kept and shown at the next dial).
 */
import { randomUUID } from 'node:crypto';
import { createActor, waitFor } from 'xstate';
import { provideServices } from '../../flows/actors.js';
import { flows as registeredFlows } from '../../flows/index.js';
import type { FlowServices } from '../../flows/services.js';
import type { FlowEvent, FlowId, FlowInput, FlowModule, Lang, Text, UserProfile } from '../../flows/types.js';
import { maskPhone, type Logger } from '../log.js';
import type { AccessPolicy } from './policy.js';
import { addPending, PENDING_TTL_SECONDS, pendingKey, profileKey as profileKeyOf } from './records.js';
import { createCatalogue, currentView } from './render.js';
import { FlowRuntime, isBusy, stepName, type FlowEnd, type Session, type Step, type StepContext } from './session.js';
import type { Address, Channel, Engine, Inbound, Prompt, SessionStore, StoredSnapshot } from './types.js';

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
export interface ConversationEngine extends Engine {
  /** Resolves when every run still going has settled and its late outcome was delivered. */
  drain(): Promise<void>;
}

/** A delivery id is remembered for a day: Telegram and Slack retry within minutes, gateways within seconds. */
const SEEN_TTL_SECONDS = 24 * 3600;
/** A session is kept this long past its expiry, to tell the user it expired instead of silently restarting. */
const EXPIRED_NOTICE_SECONDS = 3600;
const PROFILE_TTL_SECONDS = 365 * 24 * 3600;
/** Attempts of one step when other messages of the conversation keep winning the compare-and-set. */
const CAS_ATTEMPTS = 5;
/** How often a duplicate delivery looks for the first one's answer. */
const DUPLICATE_POLL_MS = 50;

const LATE = Symbol('late');

/** The duplicate mark of a delivery still being handled; its answer (a Prompt) replaces it. */
const UNANSWERED = 0;
const isPrompt = (value: unknown): value is Prompt => typeof value === 'object' && value !== null && typeof (value as Prompt).text === 'string';

/** Reads started together with a delivery's claim (see handle). */
interface EarlyReads {
  profile: Promise<StoredSnapshot | null>;
  conversation: Promise<StoredSnapshot | null>;
  pending: Promise<StoredSnapshot | null>;
}

/** A read that may be dropped unread (a duplicate delivery): its failure must not go unhandled. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

interface Run {
  late: boolean;
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

  const convKey = (i: Inbound) => `conv:${i.channel}:${i.conversationId}`;
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

  async function loadProfile(inbound: Inbound): Promise<UserProfile> {
    const stored = await store.get(profileKey(inbound));
    return (stored?.snapshot as UserProfile | undefined) ?? { lang: 'en' };
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
   */
  async function runBusy(session: Session, saved: (snapshot: unknown) => Promise<void>): Promise<Session> {
    const actor = createActor(runtime.machine(session.flow), { snapshot: session.snapshot as never });
    let last = JSON.stringify(runtime.restore(session).value);
    let saving = Promise.resolve();
    const subscription = actor.subscribe((snapshot) => {
      const value = JSON.stringify(snapshot.value);
      if (value === last || !isBusy(snapshot) || snapshot.hasTag('secret')) return;
      last = value;
      const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
      saving = saving.then(() => saved(persisted));
    });
    actor.start();
    try {
      await waitFor(actor, (s) => !isBusy(s), { timeout: Infinity });
      await saving;
      return { ...session, snapshot: JSON.parse(JSON.stringify(actor.getPersistedSnapshot())) };
    } finally {
      subscription.unsubscribe();
      actor.stop();
    }
  }

  /** Runs and persists until the conversation is no longer busy; the prompt of where it ends. */
  async function settle(inbound: Inbound, key: string, start: Session, version: number, profile: UserProfile, ctx: StepContext): Promise<Prompt> {
    let session = start;
    let current = version;
    let lang = profile.lang;
    try {
      while (isBusy(runtime.restore(session))) {
        let moved = false;
        const ran = await runBusy(session, async (snapshot) => {
          if (moved) return;
          const written = await store.set(key, { ...session, snapshot }, current, storeTtl);
          if (written === null) moved = true;
          else current = written;
        });
        const step = runtime.settled(session, runtime.restore(ran), { profile, remember: {}, notes: [] }, ctx);
        await remember(inbound, step.remember);
        lang = step.profile.lang;
        const written = await store.set(key, step.session, current, storeTtl);
        if (written === null) {
          // Another message moved the conversation on meanwhile; this outcome is still the user's answer.
          logger.info(who(inbound), 'engine: conversation changed while a service call ran');
          return render(step.session, lang, inbound.channel);
        }
        reportEnds(step.ended);
        session = step.session;
        current = written;
      }
      return render(session, lang, inbound.channel);
    } catch (error) {
      logger.error({ ...who(inbound), err: error }, 'engine: a flow failed while running a service call');
      await store.set(key, { ...session, ended: true }, current, storeTtl).catch(() => null);
      return simple('common.error', lang, true);
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

  /** The run of this conversation: the one already going in this process, or a new one. */
  function runFor(inbound: Inbound, key: string, session: Session, version: number, profile: UserProfile, ctx: StepContext): Run {
    const going = runs.get(key);
    if (going) return going;
    const run = {
      late: false,
      channel: inbound.channel,
      address: { channel: inbound.channel, conversationId: inbound.conversationId },
      outcome: settle(inbound, key, session, version, profile, ctx),
    } as Run;
    run.finished = run.outcome
      .then((prompt) => (run.late ? deliverLate(run, prompt) : undefined))
      .finally(() => runs.delete(key));
    runs.set(key, run);
    return run;
  }

  async function step(inbound: Inbound, early: EarlyReads): Promise<Prompt> {
    const profile = ((await early.profile)?.snapshot as UserProfile | undefined) ?? { lang: 'en' };
    if (!policy.role(inbound.channel, inbound.userId)) {
      logger.info(who(inbound), 'engine: refused a user the access policy does not know');
      return simple('common.notAllowed', profile.lang, true);
    }
    const allowed = policy.allowedFlows(inbound.channel, inbound.userId).filter((flow) => runtime.has(flow));
    const ctx = stepContext(inbound, allowed);
    const key = convKey(inbound);
    const address: Address = { channel: inbound.channel, conversationId: inbound.conversationId };
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      // The first attempt uses the reads made together with the claim; a retry after a conflict reads again.
      const stored = attempt === 0 ? await early.conversation : await store.get(key);
      const pending = !inbound.newSession ? null : attempt === 0 ? await early.pending : await store.get(pendingKey(address));
      const planned = plan(inbound, stored?.snapshot as Session | undefined, profile, ctx);
      let session: Session;
      let version: number;
      const notes: string[] = [];
      if (planned === 'resume') {
        session = stored!.snapshot as Session;
        version = stored!.version;
      } else {
        // A step into a state tagged `secret` (a PIN check) is not stored: the invoke's input holds the
        // secret. The stored conversation stays where it was (its version moves on, so racing messages
        // still conflict) and the check runs from memory; a restart meanwhile asks for the PIN again.
        const holdsSecret = stored !== null && runtime.restore(planned.session).hasTag('secret');
        const toStore = holdsSecret ? stored.snapshot : planned.session;
        const written = await store.set(key, toStore, stored?.version ?? null, storeTtl);
        if (written === null) continue;
        reportEnds(planned.ended);
        await remember(inbound, planned.remember);
        const pendingTexts = (pending?.snapshot as string[] | undefined) ?? [];
        if (pending && pendingTexts.length > 0) {
          // Newest first: a USSD screen cuts a long header at its end, and the latest outcome ("Done...")
          // supersedes the earlier ones ("submitted, you will be notified"), so it is the one that must fit.
          notes.push(text({ key: 'common.pendingOutcome' }, planned.profile.lang), ...[...pendingTexts].reverse());
          await store.set(pendingKey(address), [], pending.version, PENDING_TTL_SECONDS);
        }
        notes.push(...planned.notes.map((t) => text(t, planned.profile.lang)));
        session = planned.session;
        version = written;
        if (!isBusy(runtime.restore(session))) return withNotes(render(session, planned.profile.lang, inbound.channel), notes);
      }
      const run = runFor(inbound, key, session, version, profile, ctx);
      const outcome = await withDeadline(run.outcome, options.deadlineMs[inbound.channel]);
      if (outcome !== LATE) return withNotes(outcome, notes);
      run.late = true;
      logger.info(who(inbound), 'engine: past the deadline, answering processing');
      return withNotes(processing(inbound.channel, profile.lang), notes);
    }
    logger.warn(who(inbound), 'engine: gave up after repeated conflicts');
    return simple('common.busy', profile.lang, false);
  }

  /** A repeated delivery: the first one's answer, once it is there. */
  async function earlierAnswer(inbound: Inbound, seen: string): Promise<Prompt> {
    const patience = options.deadlineMs[inbound.channel] * 2 + 1000;
    for (let waited = 0; waited <= patience; waited += DUPLICATE_POLL_MS) {
      const answer = (await store.get(seen))?.snapshot;
      if (isPrompt(answer)) return answer;
      await sleep(DUPLICATE_POLL_MS);
    }
    // The first delivery never answered (its process died): show where the conversation is, change nothing.
    const profile = await loadProfile(inbound);
    const stored = await store.get(convKey(inbound));
    return stored ? render(stored.snapshot as Session, profile.lang, inbound.channel) : simple('common.busy', profile.lang, false);
  }

  return {
    async handle(inbound: Inbound): Promise<Prompt> {
      // One record per delivery: created (compare-and-set, must be absent) as the duplicate mark, then
      // holding the answer a repeated delivery gets. Keyed by conversation too: a delivery id is only unique
      // within its source (two USSD gateways can both number a session 700123), and another conversation's
      // answer must never be handed out as this one's.
      const seen = `seen:${inbound.channel}:${inbound.conversationId}:${inbound.messageId}`;
      let prompt: Prompt;
      let claimed: number | null = null;
      try {
        // Sent together (one round trip with auto-pipelining): the claim and the reads the step needs.
        // Reading before the claim is decided changes nothing: a duplicate drops them, and the step's
        // compare-and-set rejects a write based on a read that another message overtook.
        const claim = store.set(seen, UNANSWERED, null, SEEN_TTL_SECONDS);
        const early: EarlyReads = {
          profile: quiet(store.get(profileKey(inbound))),
          conversation: quiet(store.get(convKey(inbound))),
          pending: inbound.newSession ? quiet(store.get(pendingKey({ channel: inbound.channel, conversationId: inbound.conversationId }))) : Promise.resolve(null),
        };
        claimed = await claim;
        if (claimed === null) {
          logger.info(who(inbound), 'engine: duplicate delivery');
          return await earlierAnswer(inbound, seen);
        }
        prompt = await step(inbound, early);
      } catch (error) {
        logger.error({ ...who(inbound), err: error }, 'engine: message failed');
        prompt = simple('common.error', 'en', true);
      }
      if (claimed !== null) {
        await store.set(seen, prompt, claimed, SEEN_TTL_SECONDS).catch((error: unknown) => {
          logger.error({ ...who(inbound), err: error }, 'engine: answer not kept for duplicates');
        });
      }
      return prompt;
    },
    async drain(): Promise<void> {
      while (runs.size > 0) await Promise.all([...runs.values()].map((run) => run.finished));
    },
  };
}
