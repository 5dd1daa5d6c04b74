/**
 * The flow authors' kit: a flow driven by what a person types and sees, on the product's own path. Each step
 * goes through the real engine (createEngine over a MemoryStore, the access policy, the flows' runtime) and
 * the channel's own code: on USSD the gateway's hop handler (adapters/ussd/hop.ts: the Africa's Talking codec,
 * the hop planner, paging, the 182-character renderer), on a chat the channel's reading of a message or a
 * press and its renderer (the same readers and renderers as /preview, adapters/preview/). What it sees is
 * the screen or message as that channel shows it. Time is the kit's own clock (`wait`), and the service is a
 * fake that answers as the test says (`answers`, every call kept in `calls`) or the embedded sandbox. An answer
 * `held` keeps its call out until the test releases it (`release`): the step that made it is answered at the
 * engine's deadline ("being confirmed" once money may move), as is every step while it is out (the clock runs
 * with the wall clock meanwhile, so the deadline passes), and what the run ends with comes after the release
 * (USSD: at the next dial; a chat: a message). `restart()` is the product's process dying and a new one
 * starting on the same data (store, clock and service): the old engine writes nothing more, the clock moves on
 * by the run lease, and the new engine's sweep takes over the runs the old one held, so a payment whose call
 * was out is made again under the same idempotency key, its outcome a late one as after `release`.
 *
 *   const check = flowTest('check', { answers: { latestCollections: { output: [] } } });
 *   await check.dial().sees(/Check payments/).press(/latest/i).sees(/No payments received yet/);
 *   expect(check.calls.map((c) => c.name)).toEqual(['latestCollections']);
 *
 * Steps queue and run in order when the chain is awaited; a step that fails rejects the chain with what the
 * person saw. ARCHITECTURE.md's "Add a flow" recipe shows it in a test.
 */
import { AssertionError } from 'node:assert';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AnyMachineSnapshot } from 'xstate';
import { flows as registeredFlows } from '../../flows/index.js';
import { serviceActors } from '../../flows/actors.js';
import type { FlowCalls, CallName } from '../../flows/calls.js';
import type { FlowId, FlowModule, ServiceFailure, UserProfile, View } from '../../flows/types.js';
import { channelCapabilities } from '../../adapters/capabilities.js';
import { readAction, shown, type PreviewAction, type PreviewState } from '../../adapters/preview/read.js';
import { renderAll } from '../../adapters/preview/render.js';
import { parseReply } from '../../adapters/whatsapp/render.js';
import { africastalking } from '../../adapters/ussd/codecs/africastalking.js';
import { answersOfDialString } from '../../adapters/ussd/dial-string.js';
import { createHopHandler } from '../../adapters/ussd/hop.js';
import type { UssdState } from '../../adapters/ussd/session.js';
import {
  createEngine,
  RUN_LEASE_MS,
  type ConversationEngine,
  type EngineOptions,
} from '../conversation/engine/engine.js';
import { readRecord, type ConversationRecord } from '../conversation/engine/ledger.js';
import { rememberProfile } from '../conversation/engine/profile.js';
import { FlowRuntime } from '../conversation/flow/flow-runtime.js';
import { currentView, render } from '../conversation/flow/render.js';
import { AccessPolicy, demoPolicy, type PolicyDocument } from '../conversation/calls/access-policy.js';
import { createFlowCalls } from '../conversation/calls/flow-calls.js';
import { Directory } from '../people/directory.js';
import { MemoryStore } from '../store/memory-store.js';
import { keys } from '../store/keys.js';
import type { Store } from '../store/types.js';
import type { Channel, Inbound, Participant, Prompt } from '../conversation/types.js';
import type { DirectRequest } from '../http/direct-routes.js';
import { createLogger } from '../log.js';
import { MomoClient } from '../momo/client.js';
import { createSandbox, type Sandbox, type SandboxControls } from '../sandbox/index.js';

/** How one call of a fake service ends: resolved with an output, or rejected with an error (a ServiceFailure). */
export type Outcome = { output: unknown } | { error: unknown };

/** One call the fake service received: which call (its name) and the input the flow gave it. */
export interface Call {
  name: CallName;
  input: Record<string, unknown>;
}

/**
 * An answer that keeps the call out until the test releases it ({@link Actions.release}): a payment "being
 * confirmed", what the next dial shows once it ends.
 */
export const held = Object.freeze({ held: true as const });
export type Held = typeof held;

/** Per call (by name), how it ends: one outcome (or {@link held}) for every call, or a function of the call's input. */
export type Answers = Partial<Record<CallName, Outcome | Held | ((input: Record<string, unknown>) => Outcome | Held)>>;

/** A ServiceFailure outcome: `failure('rate_limited')`. */
export const failure = (code: ServiceFailure['code'], extra: Partial<ServiceFailure> = {}): Outcome => ({
  error: { code, ...extra },
});

/** The engine's settings a test may set ({@link FlowTestOptions.settings}). */
type SettingName =
  | 'defaultCountry'
  | 'channelCountries'
  | 'currencies'
  | 'countryCurrencies'
  | 'testCurrencies'
  | 'testNumbers'
  | 'nameMatchAffectsPayment'
  | 'bankEmailOptional';

export interface FlowTestOptions {
  /** The channel the person uses: its reading of what they type and its rendering of what they see. Default `ussd`. */
  channel?: Channel;
  /**
   * The fake service's answers (every call is kept in {@link FlowTest.calls}). A call not answered here fails
   * the step that made it, except the person's history (recentPayees, recentPayment: none yet).
   */
  answers?: Answers;
  /**
   * Instead of `answers`, the flow's calls: `'sandbox'`, the product's own (createFlowCalls and its client) over
   * the embedded sandbox (src/sandbox, its clock standing still; {@link FlowTest.sandbox} controls it), or calls
   * of your own.
   */
  calls?: 'sandbox' | Partial<FlowCalls>;
  /** The access policy (who may use which flow, limits, USSD PINs). Default the demo's: everyone, USSD PIN `1234`. */
  policy?: PolicyDocument;
  /**
   * The person's PIN was reset by an operator (a person named in the policy, not a `*` rule): every dial opens
   * Change PIN, which asks the one-time code, and their money flows are refused until it is done.
   */
  pinReset?: boolean;
  /** The flows the engine runs. Default the registry (flows/index.ts); a new flow adds its own. */
  flows?: Partial<Record<FlowId, FlowModule>>;
  /**
   * Who is talking: on USSD and WhatsApp their number (`+256772123456`), on Telegram and Slack their user id
   * (`user-1`, whose chat is `chat-1`; no number). Default those. A number is the caller's country (how typed
   * numbers are read, the banks offered) and says whether data bundles and exam pins are offered: a Nigerian
   * number's (`+2348031234567`) only; WhatsApp is a chat with a number and no PIN, USSD asks the PIN.
   */
  user?: string;
  /**
   * What the product remembers of the person before the first step, as a finished flow leaves it: their
   * language, the exam candidates a pin purchase remembered. Default none (English).
   */
  profile?: Partial<UserProfile>;
  /**
   * The organization's settings the engine is given (src/config.ts): the country of a caller whose number says
   * none (`defaultCountry`, `channelCountries`), the currencies offered (`currencies`, `countryCurrencies`,
   * `testCurrencies` to pay one of `testNumbers`), `nameMatchAffectsPayment`, and `bankEmailOptional`
   * (BANK_TRANSFER_EMAIL set). Default: Uganda, UGX and KES offered to everyone.
   */
  settings?: Partial<Pick<EngineOptions, SettingName>>;
  /** The clock's start (ms since the epoch). Default 2026-01-01T08:00:00Z. */
  startAt?: number;
  /**
   * How long (real ms) a step waits for its service calls before the engine answers "processing" ("being
   * confirmed" in a money state). Default 10000, or 500 when an answer is {@link held} (a held call outlasts it).
   */
  deadlineMs?: number;
}

/** What a check of the screen is given: text it must contain, or a pattern it must match. */
export type Seen = string | RegExp;

/** What a person does and checks. Each queues a step and returns the chain; awaiting the chain runs them. */
export interface Actions {
  /**
   * Starts the conversation as the channel does and opens the flow: on USSD a dial of the service code (or of
   * `dialString` as typed: `*384*123*1#`, whose answers are typed ahead) and, when the flow is not the menu and
   * no dial string is given, its number typed on the menu (the service code is `*384*123#`); on Telegram and Slack the flow's command (`/check`, `check`), on WhatsApp its choice on
   * the menu; the menu itself with `hi`.
   */
  dial(dialString?: string): Steps;
  /** Types `text` and sends it (on USSD an answer: `98` turns the page, `0` goes back, `00` home). */
  send(text: string): Steps;
  /** Picks the choice or button whose label matches (USSD: types its number; a chat presses it). */
  press(label: Seen): Steps;
  /**
   * Picks the choice whose id (the View's, `confirm`) is `id`, as {@link press} would: for a path found on the
   * machine (xstate/graph), whose events name choices by id.
   */
  choose(id: string): Steps;
  /** Goes back a screen: on USSD types `0`, on Telegram and Slack presses Back, on WhatsApp (no button) types `back`. */
  back(): Steps;
  /** The screen (USSD) or the message with its buttons (chats) contains `text` or matches the pattern. */
  sees(expected: Seen): Steps;
  /** The screen does not contain `text` or match the pattern. */
  doesNotSee(expected: Seen): Steps;
  /** Moves the clock on (a flow's expiry, the resume window, daily totals). */
  wait(ms: number): Steps;
  /**
   * Ends the oldest {@link held} call named `name` with `outcome` and waits for the run to finish: on USSD its
   * outcome is kept for the next dial (`dial('*384*123#')` shows it as dialled), on a chat it is the message on
   * screen.
   */
  release(name: CallName, outcome: Outcome): Steps;
  /**
   * The product's process dies and a new one starts on the same data: the engine is stopped, its calls still
   * out never answer it (a {@link held} one is no longer out) and none of its later steps reaches the store; a
   * new engine runs on the same store, clock and service (its answers, and {@link FlowTest.calls} kept). The
   * clock moves on by the run lease, so the runs the old engine held are free to take over, and the new
   * engine's sweep takes them over at once: each repeats its call from the stored flow (a payment under the
   * same idempotency key). The step ends when those runs finished, or when a call of theirs answered
   * {@link held} is out (`release` it); their outcome is a late one (USSD: at the next dial; a chat: a message).
   */
  restart(): Steps;
}

/**
 * The steps queued so far: await them. It rejects with the first step that failed (what was seen with it) and
 * skips the rest; the next chain starts where this one ended.
 */
export interface Steps extends Actions, PromiseLike<void> {}

/**
 * A flow driven by what a person types and sees. Not itself awaitable (an async function may return it): its
 * actions return the awaitable {@link Steps}.
 */
export interface FlowTest extends Actions {
  /** The last thing the person saw, as the channel shows it. */
  readonly screen: string;
  /**
   * The engine's last answer, before the channel rendered it. On USSD as kept with the conversation for a resend:
   * a secret screen (a link code) is kept as the notice that it was shown once.
   */
  readonly prompt: Prompt | undefined;
  /** Every call the fake service received, in order (empty with the sandbox). */
  readonly calls: Call[];
  /** The flow stored in the conversation now: its id, its machine snapshot and the View it shows. */
  flow(): { id: FlowId; snapshot: AnyMachineSnapshot; view: View | undefined; ended: boolean } | undefined;
  /** The sandbox's controls (with `calls: 'sandbox'`). */
  readonly sandbox: SandboxControls | undefined;
  /** The clock (ms since the epoch). */
  now(): number;
  /** The conversation record as the store keeps it after the last step (what a Redis would hold). */
  stored(): unknown;
  /** Stops the engine (and the sandbox). */
  close(): Promise<void>;
}

const DEFAULT_START = Date.UTC(2026, 0, 1, 8);
const SERVICE_CODE = '*384*123#';
const SANDBOX_KEY = 'flow-test-key';
const SANDBOX_VENDING_KEY = 'flow-test-vending-key';
const DEFAULT_USER: Record<Channel, string> = {
  ussd: '+256772123456',
  whatsapp: '+256772123456',
  telegram: 'user-1',
  slack: 'user-1',
};

/**
 * The person's own history, which the product reads from its journal rather than the service: none, unless the
 * test answers otherwise (the pay flow asks for both before its first screen and its confirmation).
 */
const HISTORY: Answers = { recentPayees: { output: [] }, recentPayment: { output: null } };

let demo: PolicyDocument | undefined;
/** The demo's policy, made once: its USSD PIN's hash is a deliberately slow scrypt, most of a kit's start. */
const theDemoPolicy = (): PolicyDocument => structuredClone((demo ??= demoPolicy()));

/** The participant of a chat as its adapter makes it. */
function participantOf(channel: Channel, user: string): Participant & Pick<Inbound, 'phoneNumber'> {
  switch (channel) {
    case 'ussd':
      return { channel, conversationId: user, userId: user, phoneNumber: user };
    case 'whatsapp': {
      const waId = user.replace(/^\+/, '');
      return { channel, conversationId: waId, userId: waId, phoneNumber: user };
    }
    case 'telegram':
      return { channel, conversationId: 'chat-1', userId: user };
    case 'slack':
      return { channel, conversationId: `T1:${user}`, userId: user };
  }
}

/** A screen check, failed with what was seen. */
function check(screen: string, expected: Seen, wanted: boolean): void {
  const found = typeof expected === 'string' ? screen.includes(expected) : expected.test(screen);
  if (found === wanted) return;
  throw new AssertionError({
    message: `${wanted ? 'expected to see' : 'expected not to see'} ${String(expected)} on:\n${screen}`,
    actual: screen,
    expected: String(expected),
    operator: wanted ? 'sees' : 'doesNotSee',
  });
}

const matches = (label: string, wanted: Seen) =>
  typeof wanted === 'string' ? label.includes(wanted) : wanted.test(label);

/** A pressable thing of a chat's rendering: its label and the action pressing it posts. */
interface Button {
  label: string;
  action: PreviewAction;
}

/** The buttons of a chat's rendering of `state`, as the person sees them (the adapters' renderers). */
function buttonsOf(channel: Exclude<Channel, 'ussd'>, state: PreviewState): Button[] {
  const shownNow = renderAll(state);
  switch (channel) {
    case 'telegram':
      return (shownNow.telegram.reply_markup?.inline_keyboard ?? []).flat().map((b) => ({
        label: b.text,
        action: { kind: 'telegram-press', data: 'callback_data' in b ? (b.callback_data ?? '') : '' },
      }));
    case 'slack':
      return shownNow.slack.blocks.flatMap((block) =>
        block.type === 'actions'
          ? block.elements.flatMap((e) =>
              e.type === 'button'
                ? [
                    {
                      label: e.text.text,
                      action: { kind: 'slack-click' as const, actionId: e.action_id ?? '', value: e.value ?? '' },
                    },
                  ]
                : [],
            )
          : [],
      );
    case 'whatsapp':
      return shownNow.whatsapp.flatMap((m) => {
        if (m.type !== 'interactive') return [];
        const action = m.interactive.action as {
          buttons?: Array<{ reply: { id: string; title: string } }>;
          sections?: Array<{ rows: Array<{ id: string; title: string; description?: string }> }>;
        };
        const rows: Array<{ id: string; title: string; description?: string }> = [
          ...(action.buttons ?? []).map((b) => b.reply),
          ...(action.sections ?? []).flatMap((s) => s.rows),
        ];
        return rows.map((r) => ({
          label: r.description ?? r.title,
          action: { kind: 'whatsapp-tap' as const, id: r.id },
        }));
      });
  }
}

/** The words of a chat's rendering: the message text and every button's label. */
function chatScreen(channel: Exclude<Channel, 'ussd'>, state: PreviewState): string {
  const shownNow = renderAll(state);
  const text =
    channel === 'telegram'
      ? shownNow.telegram.text
      : channel === 'slack'
        ? shownNow.slack.text
        : shownNow.whatsapp
            .map((m) =>
              m.type === 'text'
                ? m.text.body
                : m.type === 'interactive'
                  ? (m.interactive.body as { text: string }).text
                  : m.template.name,
            )
            .join('\n');
  return [text, ...buttonsOf(channel, state).map((b) => b.label)].join('\n');
}

/** Starts the embedded sandbox on a free loopback port, its clock standing still. */
async function startSandbox(): Promise<{ sandbox: Sandbox; server: Server; url: string }> {
  const sandbox = createSandbox({
    apiKey: SANDBOX_KEY,
    vendingApiKey: SANDBOX_VENDING_KEY,
    autoAdvance: false,
    logger: createLogger('silent'),
    limits: { readsPerMinute: 1e6 },
  });
  const server = createServer(sandbox.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { sandbox, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * The store as one process of the product sees it: once `end()` is called (the process died), every call is
 * refused, so a step of that process still under way writes nothing. `refused` resolves at the first refusal.
 */
function processView(store: Store): { store: Store; end(): void; refused: Promise<void> } {
  let ended = false;
  let told!: () => void;
  const refused = new Promise<void>((resolve) => (told = resolve));
  const view = new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (!ended) return (value as (...a: unknown[]) => unknown).apply(target, args);
        told();
        return Promise.reject(new Error('flowTest: this process was restarted'));
      };
    },
  });
  return { store: view, end: () => void (ended = true), refused };
}

/**
 * A test of flow `id` as a person uses it on a channel. See the module's comment for an example; call
 * `close()` when done (an `afterEach`).
 */
export function flowTest(id: FlowId, options: FlowTestOptions = {}): FlowTest {
  const channel = options.channel ?? 'ussd';
  const user = options.user ?? DEFAULT_USER[channel];
  const participant = participantOf(channel, user);
  const logger = createLogger('silent');
  let clock = options.startAt ?? DEFAULT_START;
  /** Wall time since a {@link held} call is out: meanwhile the clock runs, so the engine's deadline passes. */
  let heldSince: number | undefined;
  const now = () => clock + (heldSince === undefined ? 0 : Date.now() - heldSince);
  const flows = options.flows ?? registeredFlows;
  const store = new MemoryStore({ now });
  const policy = new AccessPolicy(options.policy ?? theDemoPolicy(), { now });
  if (options.pinReset) {
    const people = policy.directory;
    const person = people.find(channel, user);
    if (!person || !people.person(person.id)) throw new Error(`pinReset: ${user} is not named in the policy`);
    const reset = people.persons().map((p) => (p.id === person.id ? { ...p, pinMustChange: true } : p));
    policy.useDirectory(new Directory(people.version, reset, people.identities(), people.wildcards));
  }

  const calls: Call[] = [];
  /** Calls the test gave no answer for: the step that made one fails. */
  const unanswered: CallName[] = [];
  /** Calls answered {@link held}, oldest first, until released. */
  const out: Array<{ name: CallName; settle: (outcome: Outcome) => void }> = [];
  /** Told when a held call goes out (restart waits for the runs it took over: finished, or held). */
  const heldWaiters: Array<() => void> = [];
  const heldOut = (): Promise<void> =>
    out.length > 0 ? Promise.resolve() : new Promise((resolve) => heldWaiters.push(resolve));
  const fake = (name: CallName) => async (input: Record<string, unknown>) => {
    calls.push({ name, input });
    const given = options.answers?.[name] ?? HISTORY[name];
    const answer = typeof given === 'function' ? given(input) : given;
    if (!answer) {
      unanswered.push(name);
      throw { code: 'unknown', message: `flowTest: no answer given for ${name}` };
    }
    const outcome =
      'held' in answer
        ? await new Promise<Outcome>((settle) => {
            heldSince ??= Date.now();
            out.push({ name, settle });
            for (const told of heldWaiters.splice(0)) told();
          })
        : answer;
    if ('error' in outcome) throw outcome.error;
    return outcome.output;
  };
  const holds = Object.values(options.answers ?? {}).some((a) => a === held);
  const deadlineMs = options.deadlineMs ?? (holds ? 500 : 10_000);
  const fakes = Object.fromEntries((Object.keys(serviceActors) as CallName[]).map((name) => [name, fake(name)]));

  let sandboxed: Awaited<ReturnType<typeof startSandbox>> | undefined;
  /** The process running now: its view of the store (refused once it is restarted) and its engine. */
  let view: ReturnType<typeof processView> | undefined;
  let engine: ConversationEngine | undefined;
  let hop: ReturnType<ReturnType<typeof createHopHandler>> | undefined;
  let runs = 0;
  const runtime = new FlowRuntime(flows, {});

  async function start(): Promise<ConversationEngine> {
    if (engine) return engine;
    if (options.profile) await rememberProfile(store, participant, options.profile, logger);
    if (options.calls === 'sandbox') sandboxed = await startSandbox();
    return launch();
  }

  /** A process of the product on the store: its engine and USSD hop handler, its calls of the service. */
  function launch(): ConversationEngine {
    view = processView(store);
    let flowCalls: Partial<FlowCalls>;
    if (options.calls === 'sandbox') {
      const { url } = sandboxed!;
      const client = new MomoClient({
        baseUrl: url,
        apiKey: SANDBOX_KEY,
        vendingUrl: `${url}/vending`,
        vendingApiKey: SANDBOX_VENDING_KEY,
        maxRetries: 0,
      });
      flowCalls = createFlowCalls({ client, policy, store: view.store, logger, now });
    } else flowCalls = options.calls ?? (fakes as unknown as Partial<FlowCalls>);
    engine = createEngine({
      store: view.store,
      channels: channelCapabilities,
      services: flowCalls,
      policy,
      flows,
      defaultCountry: 'UG',
      currencies: ['UGX', 'KES'],
      ...options.settings,
      sessionTtlSeconds: 600,
      // One conversation: the record cache's tables at their full size would be most of an engine's start.
      recordsKept: 8,
      deadlineMs: { ussd: deadlineMs, telegram: deadlineMs, slack: deadlineMs, whatsapp: deadlineMs },
      runLeaseMs: RUN_LEASE_MS,
      logger,
      newRunId: () => `run-${++runs}`,
      // A chat is sent a run's late outcome: the message the person then has on screen.
      onLateOutcome: async (_address, late) => {
        if (channel === 'ussd') return;
        prompt = late;
        chat = shown(late);
        screen = chatScreen(channel, chat);
      },
      now,
    });
    hop = createHopHandler({
      engine,
      // The gateway's own wait past the engine's: the step sees the engine's answer at its deadline (its
      // "being confirmed"), never the adapter's apology for an engine that did not answer.
      deadlineMs: deadlineMs + 10_000,
      logger,
      defaultCountry: options.settings?.defaultCountry ?? 'UG',
      digestKey: 'flow-test',
      serviceCode: SERVICE_CODE,
      resumeSeconds: 120,
      now,
    })(africastalking);
    return engine;
  }

  /**
   * The process dies and another starts ({@link Actions.restart}). The old one: its store refused, its held
   * calls ended, and it is stopped; its run's next step (the ended call's outcome) is refused before the new
   * process starts. The rest of that run (its write tried again through the store's ride-out, a second or
   * two, then left) ends on its own, not waited for. Then the new one, the clock past the old leases, and its
   * sweep; the step ends when the runs it took over finished or a call of theirs is held.
   */
  async function restarted(): Promise<void> {
    const old = await start();
    const dead = view!;
    dead.end();
    for (const call of out.splice(0)) call.settle({ error: { code: 'connection' } });
    if (heldSince !== undefined) {
      clock += Date.now() - heldSince;
      heldSince = undefined;
    }
    await Promise.race([old.stop().catch(() => undefined), dead.refused]);
    const taker = launch();
    clock += RUN_LEASE_MS;
    await taker.sweep();
    await Promise.race([taker.drain(), heldOut()]);
  }

  // USSD: the gateway session and the answers typed in it (Africa's Talking sends them all, joined by `*`).
  let sessions = 0;
  let session: { id: string; answers: string[]; ended: boolean } | undefined;
  // Chats: what the person has on screen (the engine's last answer and the page each list is on).
  let chat: PreviewState | undefined;
  let screen = '';
  let prompt: Prompt | undefined;
  let messages = 0;

  /** One Africa's Talking request through the hop handler, as the gateway posts it; the screen it answers. */
  async function ussdHop(text: string): Promise<void> {
    await start();
    let body = '';
    const res = {
      writeHead: () => res,
      end: (chunk: string) => void (body = chunk),
    } as unknown as ServerResponse;
    const req = {
      body: { sessionId: session!.id, serviceCode: SERVICE_CODE, phoneNumber: user, text },
    } as DirectRequest;
    await hop!(req, res);
    const reply = /^(CON|END) ([\s\S]*)$/.exec(body);
    if (!reply) throw new Error(`the USSD route answered ${body}`);
    screen = reply[2]!;
    session!.ended = reply[1] === 'END';
    const stored = readRecord((await store.get(keys.conversation(participant)))?.snapshot).channel as
      UssdState | undefined;
    prompt = stored?.prompt;
  }

  /** One chat action read by the channel's own code, then the engine's answer or the channel's own. */
  async function chatAction(action: PreviewAction): Promise<void> {
    const e = await start();
    // Before the first message nothing is on screen: read as on an empty chat (readAction would dial).
    const reading = readAction(action, chat ?? shown({ text: '', final: true }));
    const pane = channel as Exclude<Channel, 'ussd'>;
    switch (reading.kind) {
      case 'message': {
        const inbound: Inbound = { ...participant, messageId: `m-${++messages}`, ...reading.request };
        prompt = await e.handle(inbound);
        chat = shown(prompt);
        screen = chatScreen(pane, chat);
        return;
      }
      case 'page':
        chat = { ...chat!, pages: { ...chat!.pages, [reading.pane]: reading.page } };
        screen = chatScreen(pane, chat);
        return;
      case 'say':
        screen = reading.text;
        return;
      case 'show':
        return;
    }
  }

  function typed(text: string): Promise<void> {
    if (channel === 'ussd') {
      if (!session || session.ended) throw new Error(`the USSD session has ended: dial() again (screen: ${screen})`);
      session.answers.push(text);
      return ussdHop(session.answers.join('*'));
    }
    const kind =
      channel === 'telegram'
        ? 'telegram-text'
        : channel === 'whatsapp'
          ? 'whatsapp-text'
          : chat?.prompt.input && !chat.prompt.final
            ? 'slack-answer'
            : 'slack-text';
    return chatAction({ kind, text } as PreviewAction);
  }

  /**
   * The button of the prompt's choice at `index`: on WhatsApp by the id it carries (a title is cut to 20 or 24
   * characters), on Telegram and Slack by its label.
   */
  function buttonOfChoice(index: number): Button | undefined {
    const choice = prompt?.choices?.[index];
    if (!choice || !chat || channel === 'ussd') return undefined;
    return buttonsOf(channel, chat).find((b) => {
      if (b.action.kind !== 'whatsapp-tap') return b.label === choice.label;
      const reply = parseReply(b.action.id);
      return reply?.kind === 'choice' ? reply.id === choice.id : reply?.kind === 'index' && reply.index === index;
    });
  }

  async function pressed(label: Seen): Promise<void> {
    const index = (prompt?.choices ?? []).findIndex((c) => matches(c.label, label));
    if (channel === 'ussd') {
      if (index < 0) throw new Error(`no choice ${String(label)} on:\n${screen}`);
      return typed(String(index + 1));
    }
    // What the person sees on a button, else a choice whose whole label matches (its button's title cut).
    const buttons = chat ? buttonsOf(channel, chat) : [];
    const button = buttons.find((b) => matches(b.label, label)) ?? (index < 0 ? undefined : buttonOfChoice(index));
    if (!button) throw new Error(`no button ${String(label)} on:\n${screen}`);
    return chatAction(button.action);
  }

  async function chosen(id: string): Promise<void> {
    const choices = prompt?.choices ?? [];
    const index = choices.findIndex((c) => c.id === id);
    if (index < 0) throw new Error(`no choice ${id} on:\n${screen}`);
    if (channel === 'ussd') return typed(String(index + 1));
    const button = buttonOfChoice(index);
    if (!button) throw new Error(`no button ${choices[index]!.label} on:\n${screen}`);
    return chatAction(button.action);
  }

  async function wentBack(): Promise<void> {
    if (channel === 'ussd') return typed('0');
    if (channel === 'whatsapp') return typed('back');
    // The channel's own Back (its word in the screen's language), after any choice of the same words.
    const label = render({ key: 'common.back' }, prompt?.lang ?? 'en');
    const button = (chat ? buttonsOf(channel, chat) : []).findLast((b) => b.label === label);
    if (!button) throw new Error(`no Back button on:\n${screen}`);
    return chatAction(button.action);
  }

  async function dialled(dialString?: string): Promise<void> {
    if (channel === 'ussd') {
      session = { id: `flow-test-${++sessions}`, answers: [], ended: false };
      const ahead = dialString ? answersOfDialString(dialString, [SERVICE_CODE]) : [];
      session.answers.push(...ahead);
      await ussdHop(ahead.join('*'));
      // The menu, unless the dial opened the flow itself (Change PIN after a reset).
      const opened = readRecord((await store.get(keys.conversation(participant)))?.snapshot).session?.flow;
      if (id !== 'menu' && !dialString && prompt?.top && opened !== id) {
        const index = (prompt.choices ?? []).findIndex((c) => c.id === id);
        if (index < 0) throw new Error(`the menu offers no ${id} to ${user}:\n${screen}`);
        await typed(String(index + 1));
      }
      return;
    }
    const text = id === 'menu' ? 'hi' : channel === 'slack' ? id : `/${id}`;
    if (channel === 'telegram') return chatAction({ kind: 'telegram-text', text });
    if (channel === 'slack') return chatAction({ kind: 'slack-text', text });
    // WhatsApp has no commands: the menu, then the flow's choice on it.
    await chatAction({ kind: 'whatsapp-text', text: 'hi' });
    if (id !== 'menu') {
      const choice = (prompt?.choices ?? []).find((c) => c.id === id);
      if (!choice) throw new Error(`the menu offers no ${id} to ${user}:\n${screen}`);
      await pressed(choice.label);
    }
  }

  /** The conversation as stored after the last step. */
  let record: ConversationRecord | undefined;
  let storedRaw: unknown;
  let queue: Promise<void> = Promise.resolve();
  const actions: Actions = {
    dial: (dialString) => step(() => dialled(dialString)),
    send: (text) => step(() => typed(text)),
    press: (label) => step(() => pressed(label)),
    choose: (id) => step(() => chosen(id)),
    back: () => step(wentBack),
    sees: (expected) => step(() => check(screen, expected, true)),
    doesNotSee: (expected) => step(() => check(screen, expected, false)),
    wait: (ms) =>
      step(() => {
        clock += ms;
      }),
    release: (name, outcome) =>
      step(async () => {
        const index = out.findIndex((call) => call.name === name);
        if (index < 0) throw new Error(`no held ${name} call is out (calls: ${calls.map((c) => c.name).join(', ')})`);
        out.splice(index, 1)[0]!.settle(outcome);
        if (out.length === 0 && heldSince !== undefined) {
          clock += Date.now() - heldSince;
          heldSince = undefined;
        }
        await engine!.drain();
      }),
    restart: () => step(restarted),
  };
  const steps: Steps = {
    ...actions,
    then(onfulfilled, onrejected) {
      // A later chain starts where this one ended, without its failure.
      const done = queue;
      queue = done.catch(() => undefined);
      return done.then(onfulfilled, onrejected);
    },
  };
  const test: FlowTest = {
    ...actions,
    get screen() {
      return screen;
    },
    get prompt() {
      return prompt;
    },
    calls,
    flow() {
      const stored = record?.session;
      if (!stored) return undefined;
      const snapshot = runtime.restore(stored);
      return { id: stored.flow, snapshot, view: currentView(snapshot), ended: stored.ended };
    },
    stored: () => storedRaw,
    get sandbox() {
      return sandboxed?.sandbox.controls;
    },
    now,
    async close() {
      // A call still held ends as a lost connection would, so the engine's runs can settle.
      for (const call of out.splice(0)) call.settle({ error: { code: 'connection' } });
      heldSince = undefined;
      await engine?.stop();
      if (sandboxed) {
        await sandboxed.sandbox.close();
        await new Promise((resolve) => sandboxed!.server.close(resolve));
      }
    },
  };

  function step(run: () => void | Promise<void>): Steps {
    queue = queue.then(async () => {
      await run();
      storedRaw = (await store.get(keys.conversation(participant)))?.snapshot;
      record = readRecord(storedRaw);
      const missed = unanswered.splice(0);
      if (missed.length > 0)
        throw new Error(`${missed.join(', ')} was called, and flowTest was given no answer for it`);
    });
    return steps;
  }
  return test;
}
