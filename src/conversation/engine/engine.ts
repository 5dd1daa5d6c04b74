/**
 * The conversation engine (DESIGN "The engine's shape"): one Inbound in, one Prompt out. It only puts the
 * parts together; a message goes adapter -> turn (turn.ts) -> runner, when a service call is due (runner.ts)
 * -> ledger (ledger.ts) -> answer (answers.ts), over the record cache (record-cache.ts) and the flows' pure
 * steps (flow-runtime.ts). Every key it writes is built in src/store/keys.ts.
 *
 * Past the channel's deadline the answer is "processing, you will be notified" ("being confirmed, do not send
 * it again" once a money-moving call may have reached the service); the run goes on, its outcome is written
 * and handed to onLateOutcome (on USSD also kept and shown at the next dial). A run whose process died is taken
 * over by another process's sweep and repeated under the same Duplicate-Check-Key.
 */
import { randomUUID } from 'node:crypto';
import { flows as registeredFlows } from '../../../flows/index.js';
import type { FlowCalls } from '../../../flows/calls.js';
import type { FlowId, FlowModule, Lang } from '../../../flows/types.js';
import { VENDING_COUNTRY, VENDING_FLOWS } from '../../../flows/purchase.js';
import { getCountryCallingCode } from 'libphonenumber-js';
import type { Logger } from '../../log.js';
import { chatOf } from '../../store/chat-address.js';
import { migrations as declaredMigrations, type FlowMigrations } from '../../../flows/migrations/index.js';
import { currentBuild } from '../flow/build.js';
import { createAnswers } from './answers.js';
import { callerCountry, currenciesOfCountry } from './country.js';
import type { AccessPolicy } from '../calls/access-policy.js';
import { RecordCache } from './record-cache.js';
import { createCatalogue } from '../flow/render.js';
import { Runner, type MoneyAnswer } from './runner.js';
import {
  FlowRuntime,
  isBusy,
  transition,
  type FlowEnd,
  type FlowTransition,
  type StepContext,
} from '../flow/flow-runtime.js';
import { createTurn } from './turn.js';
import { keepToldLate } from './told-late.js';
import type {
  Address,
  Channel,
  ChannelCapabilities,
  Inbound,
  NoteWords,
  Participant,
  Prompt,
  SessionEnd,
  TurnDecision,
  TurnEngine,
} from '../types.js';
import type { Store } from '../../store/types.js';
import { keys } from '../../store/keys.js';

export interface EngineOptions {
  store: Store;
  /** The side effects flows ask for (createFlowCalls, or fakes in tests). */
  services: Partial<FlowCalls>;
  policy: AccessPolicy;
  /**
   * What each channel can do, as its adapter declares it (adapters/capabilities.ts): the engine branches on
   * these, never on a channel's name.
   */
  channels: Readonly<Record<Channel, ChannelCapabilities>>;
  /** The flows to run. Default: the registry in flows/index.ts; tests pass their own. */
  flows?: Partial<Record<FlowId, FlowModule>>;
  /**
   * This build's place in the order of releases, written in every conversation (FlowRuntimeOptions.build).
   * Default: when it was built (flow/build.ts); tests pass their own.
   */
  build?: number;
  /** The declared migrations of stored conversations. Default: flows/migrations/; tests pass their own. */
  migrations?: FlowMigrations;
  /** DEFAULT_COUNTRY: a caller's country when neither their number nor their channel says one. */
  defaultCountry: string;
  /** CHANNEL_COUNTRIES: the country of a channel whose callers have no number. Default none. */
  channelCountries?: Partial<Record<Channel, string>>;
  /** CURRENCIES: the currencies the organization allows to be offered. */
  currencies: string[];
  /**
   * COUNTRY_CURRENCIES: those a caller of each country is offered (FlowInput.currencies). Default: every one of
   * `currencies` to everyone.
   */
  countryCurrencies?: Record<string, string[]>;
  /** TEST_CURRENCIES: offered only to pay one of `testNumbers`. Default none. */
  testCurrencies?: string[];
  /** TEST_NUMBERS: the service's test numbers (`+` form). Default none. */
  testNumbers?: string[];
  /** NAME_MATCH_AFFECTS_PAYMENT (FlowInput.nameMatchAffectsPayment). Default true. */
  nameMatchAffectsPayment?: boolean;
  /**
   * The words of a note the notifications kept for the next dial (NoteWords `from: 'notify'`) in the person's
   * language at that dial (the app: the notifications' short form). Absent: such a note shows its words as kept.
   */
  dialNote?: (words: NoteWords, lang: Lang) => string;
  /** BANK_TRANSFER_EMAIL is set (FlowInput.bankEmailOptional). Default false. */
  bankEmailOptional?: boolean;
  /** Idle time in seconds after which a conversation starts over (SESSION_TTL_SECONDS). */
  sessionTtlSeconds: number;
  /**
   * Per channel, how long handle() waits for a service call before answering "processing". A channel not
   * listed waits {@link DEFAULT_DEADLINE_MS}.
   */
  deadlineMs: Partial<Record<Channel, number>>;
  /**
   * How long a run's lease lasts unless renewed (it is renewed every third of this while its call is out).
   * A process that died holding one is taken over this long after its last renewal. Default 10000: a live
   * process's Redis hiccup of a few seconds does not look like its death, and a Telegram user whose payment's
   * process died still hears of it within a quarter of a minute.
   */
  runLeaseMs?: number;
  /**
   * How often this process looks for runs whose lease expired.
   * Default 2000: one small Redis read every two seconds, a takeover at most that long after the lease expired.
   */
  sweepEveryMs?: number;
  /**
   * Most conversation records the record cache keeps (record-cache.ts). Default RECORDS_KEPT (20 000): a
   * process's minute of conversations. The flow authors' kit, one conversation an engine, keeps a few: the
   * cache's tables are made at their full size with each engine.
   */
  recordsKept?: number;
  /** Told of every flow run that finished or was abandoned, and at which step (metrics). */
  onFlowEnd?: (end: FlowEnd) => void;
  /**
   * Told, once a run's outcome is written, of the screen that answered a money-moving call (the journal's
   * telling: src/journal): our ref (the call's Duplicate-Check-Key), where and what was shown. Called
   * synchronously: keep it cheap (the journal hands it to its buffered writer) and let it not throw.
   */
  onMoneyAnswer?: (answer: MoneyAnswer) => void;
  /**
   * The short ref (src/journal/short-ref.ts) of our ref (a money-moving call's Duplicate-Check-Key), once its
   * intent is written: the "being confirmed" screen names it. Default: none (the screen names no reference).
   */
  shortRefOf?: (ref: string) => Promise<string | undefined>;
  /**
   * Told of every move of a flow run between steps once it is stored (the funnel, src/ops/funnel.ts): a run
   * started, moved, finished, or stopped where it was (left, expired, ended by the network, failed). Called
   * synchronously: keep it cheap and let it not throw. Default: none.
   */
  onTransition?: (transition: FlowTransition) => void;
  /** Receives the outcome of a run that passed its deadline, or was taken over (send it to the chat). */
  onLateOutcome?: (address: Address, prompt: Prompt) => void | Promise<void>;
  logger: Logger;
  /** Makes FlowInput.runId (idempotency keys derive from it). Default randomUUID. */
  newRunId?: () => string;
  /**
   * Clock in milliseconds: a stored flow's expiry, deadlines and leases (the turn and the runner read no other).
   * Default Date.now; tests pass their own, or fake Date.now and the timers.
   */
  now?: () => number;
}

/** The Engine, plus a way to wait for runs that passed their deadline (graceful shutdown, tests). */
export interface ConversationEngine extends TurnEngine {
  /** Resolves when every run of this process has settled and its late outcome was delivered. */
  drain(): Promise<void>;
  /**
   * Stops looking for runs to take over and the record cache's purge (their timers cleared), then drains
   * (graceful shutdown).
   */
  stop(): Promise<void>;
  /**
   * Looks once for runs whose holder died (their lease expired) and takes them over, as the engine does every
   * EngineOptions.sweepEveryMs; resolves once those runs are begun here, not finished (drain() waits for them).
   * Takes nothing over after stop().
   */
  sweep(): Promise<void>;
  /**
   * The runs still going after stop() had its time are handed on to another process's sweep at once, their
   * leases cut and never renewed here (Runner.handOn); resolves to how many.
   */
  handOn(): Promise<number>;
  sessionEnded<S>(participant: Participant, isCurrent: (state: S | undefined) => boolean): Promise<SessionEnd>;
  toldLate(participant: Participant, messageId: string): Promise<void>;
}

/** The deadline of a channel EngineOptions.deadlineMs does not list: a chat's (CHAT_DEADLINE_MS' default). */
export const DEFAULT_DEADLINE_MS = 2500;

/** A stored flow is kept this long past its expiry, to tell the user it expired instead of silently restarting. */
const EXPIRED_NOTICE_SECONDS = 3600;
/** Default of EngineOptions.runLeaseMs. */
export const RUN_LEASE_MS = 10_000;
/** Default of EngineOptions.sweepEveryMs. */
export const SWEEP_EVERY_MS = 2_000;

export function createEngine(options: EngineOptions): ConversationEngine {
  const { store, policy, logger } = options;
  const flows = options.flows ?? registeredFlows;
  const runtime = new FlowRuntime(flows, options.services, {
    build: options.build ?? currentBuild(),
    migrations: options.migrations ?? declaredMigrations,
  });
  const capabilitiesOf = (channel: Channel): ChannelCapabilities => options.channels[channel];
  const answers = createAnswers(createCatalogue(Object.values(flows)), runtime, capabilitiesOf, logger);
  const records = new RecordCache(
    store,
    options.sessionTtlSeconds + EXPIRED_NOTICE_SECONDS,
    undefined,
    options.recordsKept,
  );
  const now = options.now ?? Date.now;
  const newRunId = options.newRunId ?? randomUUID;

  /**
   * True when the vending group may sell to this person: their number is of its country (a prefix test, no parse
   * on the hop). A chat without a number (Telegram, Slack) has no country to tell: it is offered them.
   */
  const numberOf = (participant: Participant & Pick<Inbound, 'phoneNumber'>): string | undefined =>
    participant.phoneNumber ?? (capabilitiesOf(participant.channel).userIsNumber ? participant.userId : undefined);
  const vendingPrefix = `+${getCountryCallingCode(VENDING_COUNTRY)}`;
  const buysFromVending = (participant: Participant & Pick<Inbound, 'phoneNumber'>): boolean => {
    const phone = numberOf(participant);
    return phone === undefined || phone.startsWith(vendingPrefix);
  };

  /**
   * What any flow a user starts gets: their channel, chat, number, and the flows they may start: their role's
   * (the vending group's only where it sells, {@link buysFromVending}), and for a person of the directory's
   * database (not a `*` rule's) on a channel that asks PINs (USSD), Change PIN and Link a chat app.
   * A person whose PIN was reset starts every dial with Change PIN, from the operator's code; until then their
   * money flows are refused on every channel (AccessPolicy.checkFlow).
   */
  function context(participant: Participant & Pick<Inbound, 'phoneNumber'>): StepContext {
    const person = policy.person(participant.channel, participant.userId);
    const own = person?.status === 'active' && policy.directory.person(person.id) !== undefined;
    const pinReset = own && person.pinMustChange === true;
    // PINs and codes are typed only where a PIN is asked (a USSD screen, which keeps nothing): never into a
    // chat, whose history would keep them. A reset person sets theirs at their next dial.
    const { asksPin } = capabilitiesOf(participant.channel);
    const vending = buysFromVending(participant);
    const allowedFlows = [
      ...policy.allowedFlows(participant.channel, participant.userId),
      ...(own && asksPin && (person.pin !== undefined || pinReset) ? (['changePin'] as const) : []),
      ...(own && asksPin ? (['link'] as const) : []),
    ].filter((flow) => runtime.has(flow) && (vending || !VENDING_FLOWS.includes(flow)));
    return {
      allowedFlows,
      home: pinReset && asksPin && runtime.has('changePin') ? 'changePin' : 'menu',
      newRunId,
      expiresAt: now() + options.sessionTtlSeconds * 1000,
      channel: participant.channel,
      at: now(),
      input: (runId, profile) => {
        const userPhone = numberOf(participant);
        // Computed when a flow starts, not on every hop: the caller's country, and of its currencies only those
        // the role may pay in, so one is never asked.
        const country = callerCountry(userPhone, participant.channel, options);
        const offered = currenciesOfCountry(country, options);
        const usable = policy.currenciesOf(participant.channel, participant.userId, [
          ...offered.currencies,
          ...offered.testCurrencies,
        ]);
        const currencies = usable.filter((c) => offered.currencies.includes(c));
        const testCurrencies = usable.filter((c) => offered.testCurrencies.includes(c));
        const testNumbers = options.testNumbers ?? [];
        return {
          runId,
          channel: participant.channel,
          chat: chatOf(participant),
          userId: participant.userId,
          userPhone,
          requirePin: asksPin,
          defaultCountry: country,
          currencies: currencies.length > 0 ? currencies : offered.currencies,
          ...(testCurrencies.length > 0 && testNumbers.length > 0 ? { testCurrencies, testNumbers } : {}),
          nameMatchAffectsPayment: options.nameMatchAffectsPayment ?? true,
          ...(options.bankEmailOptional ? { bankEmailOptional: true } : {}),
          profile,
          allowedFlows,
          ...(pinReset ? { pinReset } : {}),
        };
      },
    };
  }

  const deadlineOf = (channel: Channel) => options.deadlineMs[channel] ?? DEFAULT_DEADLINE_MS;
  const runner = new Runner({
    store,
    records,
    runtime,
    answers,
    context,
    capabilitiesOf,
    deadlineOf,
    leaseMs: options.runLeaseMs ?? RUN_LEASE_MS,
    sweepEveryMs: options.sweepEveryMs ?? SWEEP_EVERY_MS,
    onLateOutcome: options.onLateOutcome,
    onFlowEnd: options.onFlowEnd,
    onMoneyAnswer: options.onMoneyAnswer,
    ...(options.shortRefOf ? { shortRefOf: options.shortRefOf } : {}),
    onTransition: options.onTransition,
    giveBack: (ref) => policy.giveBackSpend(store, ref, 'run lost before the call'),
    now,
    logger,
  });
  const deliver = createTurn({
    store,
    records,
    runtime,
    answers,
    runner,
    policy,
    context,
    capabilitiesOf,
    deadlineOf,
    onFlowEnd: options.onFlowEnd,
    onTransition: options.onTransition,
    now,
    ...(options.dialNote ? { dialNote: options.dialNote } : {}),
    logger,
  });

  return {
    async handle(inbound: Inbound): Promise<Prompt> {
      try {
        const { prompt } = await deliver<undefined>(inbound, () => ({ kind: 'step', inbound, after: () => undefined }));
        return prompt!;
      } catch {
        // The conversation could not be read: what it holds is unknown, so nothing is said to start again.
        return answers.notice('common.unavailable', 'en', true);
      }
    },
    async turn<S>(participant: Participant, decide: (state: S | undefined) => TurnDecision<S>): Promise<S> {
      return (await deliver(participant, decide)).state;
    },
    async sessionEnded<S>(participant: Participant, isCurrent: (state: S | undefined) => boolean): Promise<SessionEnd> {
      const record = (await records.read(keys.conversation(participant)))?.record;
      const storedFlow = record?.session;
      if (!isCurrent(record?.channel as S | undefined))
        return { counted: false, reason: "not the conversation's current session" };
      if (!storedFlow || storedFlow.ended || storedFlow.notice)
        return { counted: false, reason: 'no flow in progress' };
      if (!runtime.readsAsIs(storedFlow)) return { counted: false, reason: "another build's flow" };
      if (record?.run !== undefined || isBusy(runtime.restore(storedFlow)))
        return { counted: false, reason: 'a service call is running' };
      options.onTransition?.(
        transition(storedFlow, { channel: participant.channel, at: now() }, runtime.mark(storedFlow), {
          end: 'abandoned',
        }),
      );
      return { counted: true };
    },
    toldLate: (participant: Participant, messageId: string) => keepToldLate(store, participant, messageId, logger),
    drain: () => runner.drain(),
    stop: () => {
      records.stop();
      return runner.stop();
    },
    sweep: () => runner.sweep(),
    handOn: () => runner.handOn(),
  };
}
