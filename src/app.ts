/**
 * Builds the whole product from a Config: the service client (or the embedded sandbox), the store,
 * the engine, the channel adapters, notifications and the operations routes, on one express app.
 * main.ts starts it; the end-to-end tests start it on port 0.
 */
import { within } from './within.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, whatsappOn, type Config } from './config.js';
import { setShownTimeZone } from './local-time.js';
import { createLogger, type Logger } from './log.js';
import { BANK_EMAIL_MAY_BE_ORGANIZATIONS } from './momo/assumptions.js';
import { MomoClient } from './momo/index.js';
import { createSandbox, TEST_NUMBERS, type Sandbox } from './sandbox/index.js';
import { createEngine, createFlowCalls, forgetFailedName } from './conversation/index.js';
import { createStore } from './store/index.js';
import type { Address, Channel, Notifier, Prompt } from './conversation/types.js';
import type { Store } from './store/types.js';
import { ussdInbox } from './conversation/channels/ussd-inbox.js';
import { keys, serviceScope } from './store/keys.js';
import { userOfAddress } from './store/chat-address.js';
import { MadeRecords, recordMade } from './conversation/calls/made-records.js';
import type { CallerCountrySettings } from './conversation/engine/country.js';
import type { Lang, UserProfile } from '../flows/types.js';
import { flows as shippedFlows } from '../flows/index.js';
import { releaseShape } from '../flows/shape.js';
import { currentBuild } from './conversation/flow/build.js';
import {
  africasTalkingSms,
  createNotifications,
  notificationQueueName,
  ensureWebhooks,
  SmsOutbox,
  type SmsSender,
} from './notifications/index.js';
import { notifyText } from './notifications/messages.js';
import { ApprovalDesk } from './approvals/desk.js';
import { Payouts } from './payouts/payouts.js';
import { addUssdRoutes } from '../adapters/ussd/index.js';
import { addPreviewRoutes } from '../adapters/preview/index.js';
import { createWhatsApp, type WhatsApp } from '../adapters/whatsapp/index.js';
import { createMetrics } from './ops/metrics.js';
import { createReadBudget } from './ops/read-budget.js';
import { addHealthRoutes } from './ops/health.js';
import { connectRedis, dropRedis, missingDatabase, warnOfEviction } from './redis/connect.js';
import { createFunnel } from './ops/funnel.js';
import { addOpsPage } from './ops/page.js';
import { drainUnreadBodies } from './http/body.js';
import { DirectRoutes } from './http/direct-routes.js';
import { sourceRateLimit, withRateLimit } from './ops/ratelimit.js';
import { requireOpsToken } from './ops/ops-token.js';
import { checkStart } from './start-checks.js';
import { recentPayment } from './conversation/calls/recent-payment.js';
import { productReconciliation } from './reconciliation/index.js';
import type { Database } from './journal/database.js';
import { events as journalEvents, Journal, moneyJournal, OwedOutcomes } from './journal/index.js';
import { FOLLOW_UP_DELAYS_SECONDS } from './notifications/follow-up.js';
import { JournalWriter } from './journal/writer.js';
import { startRetention } from './journal/retention.js';
import { openJournal } from './journal/roles.js';
import { eventsOut } from './events-out/index.js';
import { startPeople } from './people/start.js';
import { deleteLimitsOlderThan } from './people/limits.js';
import { alsoToPreferredChat } from './people/preferred-chat.js';
import { withLinkCommand } from './people/link.js';
import { codeDelivery } from './people/code-delivery.js';
import { OperatorAudit } from './ops/audit.js';
import { channelCapabilities } from '../adapters/capabilities.js';

export interface AppOptions {
  logger?: Logger;
  /** Texts USSD users their outcomes. Default: from SMS_PROVIDER; with the embedded sandbox and none, the demo's outbox. */
  sms?: SmsSender;
}

export interface RunningApp {
  /** Where the product listens, e.g. http://127.0.0.1:3000. */
  url: string;
  app: express.Express;
  server: Server;
  client: MomoClient;
  store: Store;
  sandbox?: Sandbox;
  logger: Logger;
  /** Maker/checker: the payments held for approval (its sweep runs every minute). */
  approvals: ApprovalDesk;
  /** The database of record (PostgreSQL at DATABASE_URL, or PGlite under DATA_DIR), migrated. */
  database: Database;
  /** The journal of money in it. */
  journal: Journal;
  /** Where later facts go (buffered: they survive the database being away). */
  journalWriter: JournalWriter;
  /** Stops taking requests, finishes those in flight and the queued notifications, and closes. */
  stop(): Promise<void>;
}

/** The requests a server is answering: a stop waits for none to be left (`idle`). */
interface InFlight {
  count: number;
  /** Resolves once no request is being answered. */
  idle(): Promise<void>;
}

/**
 * Serves the direct routes (src/http/direct-routes.ts) and, for every other request, the app, on `port`;
 * `inFlight` counts the requests being answered.
 */
function listen(app: express.Express, direct: DirectRoutes, port: number, inFlight: InFlight): Promise<Server> {
  const serve = direct.serve(app);
  let waiting: Array<() => void> = [];
  inFlight.idle = () =>
    inFlight.count === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve));
  return new Promise((resolve, reject) => {
    const server = createServer((req, res) => {
      inFlight.count++;
      res.once('close', () => {
        inFlight.count--;
        if (inFlight.count > 0) return;
        const done = waiting;
        waiting = [];
        for (const resolve of done) resolve();
      });
      serve(req, res);
    }).listen(port);
    // Idle keep-alive connections outlive a load balancer's (60 s), so the balancer never reuses one
    // the server is closing at that moment (a reset request); headers must arrive within a bit more.
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

/**
 * The key of the USSD adapter's stored resend digest: derived from the service's API key, a secret every
 * process of one deployment has and Redis never holds.
 */
function ussdDigestKey(config: Config): string {
  return createHmac('sha256', config.MOMO_API_KEY ?? config.SANDBOX_API_KEY)
    .update('momo-chat:ussd-resend-digest')
    .digest('base64url');
}

/** The organization's address the demo sends with a bank transfer whose email was skipped (BANK_TRANSFER_EMAIL). */
export const DEMO_BANK_TRANSFER_EMAIL = 'payments@example.org';

/** Starts the product; rejects with ConfigError (before listening) when the start is refused (start-checks.ts). */
/** The share of SHUTDOWN_GRACE_SECONDS by which stop()'s steps before the journal's have ended, done or not. */
export const STOP_STEPS_SHARE = 0.6;
/**
 * The share by which the runs still going are handed on (Runner.handOn) instead of waited for: another process
 * takes them over at once, and the parts closed after have the time left before {@link STOP_STEPS_SHARE}.
 */
export const STOP_RUNS_SHARE = 0.45;
/** The share by which the journal's last writes have ended (the rest: closing the store, and the exit). */
export const STOP_JOURNAL_SHARE = 0.85;
/**
 * The share by which the store's connection has closed, its QUIT given up if Redis does not answer: after a
 * journal held to {@link STOP_JOURNAL_SHARE}, the store's own bound (a second) would pass a grace under seven.
 */
export const STOP_STORE_SHARE = 0.95;

export async function startApp(config: Config, options: AppOptions = {}): Promise<RunningApp> {
  const { policy, warnings } = checkStart(config);
  // Before anything connects: a database the server does not have would fail every connection's SELECT.
  const noDatabase = config.redis ? await missingDatabase(config.redis) : undefined;
  if (noDatabase) throw new ConfigError(`REDIS_URL: ${noDatabase}`);
  const logger = options.logger ?? createLogger(config.LOG_LEVEL);
  // Every time people read (/ops, the flows' words) is shown in the organization's zone, with its name.
  setShownTimeZone(config.TZ);
  for (const warning of warnings) logger.warn(warning);
  const app = express();
  app.disable('x-powered-by');
  // The caller's address (req.ip) for the USSD allow-list and the per-source limit: the socket's, or what
  // the named proxy hops forwarded; never whatever X-Forwarded-For a caller writes.
  app.set('trust proxy', config.TRUST_PROXY);
  // The USSD gateways' routes, served in front of the app on Node's own objects (the hot path), with the same
  // body drain, metrics and per-source limit as the app's routes.
  const direct = new DirectRoutes(config.TRUST_PROXY);
  const metrics = createMetrics();
  app.use(drainUnreadBodies, metrics.http);
  direct.use(drainUnreadBodies);
  direct.use(metrics.http);

  // The money is kept in the database: it must open and migrate (under an advisory lock, processes starting
  // together) before anything can move money. A start that cannot open it does not happen.
  // With DATABASE_OWNER_URL, migrations and retention run as the owner and the product as a role that may not
  // change an event (src/journal/roles.ts).
  const journalDatabases = await openJournal(config);
  const { database, ran } = journalDatabases;
  if (ran.length > 0) logger.info({ migrations: ran, database: database.kind }, 'database migrated');
  logger.info(journalDatabases.line);
  const journal = new Journal(database.db);
  const journalRedis = config.redis
    ? connectRedis(config.redis, {
        name: 'journal',
        logger,
        keyPrefix: config.REDIS_KEY_PREFIX,
        maxRetriesPerRequest: 1,
      })
    : undefined;
  const journalWriter = new JournalWriter({ journal, redis: journalRedis, logger });
  journalWriter.start();
  const stopRetention = startRetention({
    journal: journalDatabases.owner === database ? journal : new Journal(journalDatabases.owner.db),
    limits: (days) => deleteLimitsOlderThan(journalDatabases.owner.db, days),
    days: config.RETENTION_DAYS,
    logger,
  });

  // Signed events out: the cursor is set before anything can be paid (so no event of this start is missed),
  // then one process at a time reads the journal and sends in the background (src/events-out).
  const events = eventsOut({
    database,
    endpoints: config.WEBHOOK_ENDPOINTS,
    secret: config.WEBHOOK_SECRET ?? '',
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
    retryMaxMs: config.WEBHOOK_RETRY_MAX_MS,
    retryForMs: config.WEBHOOK_RETRY_HOURS * 3_600_000,
    pollMs: config.WEBHOOK_POLL_MS,
    logDays: config.WEBHOOK_LOG_DAYS,
    logger,
  });
  await events.start();

  // Listen first: the embedded sandbox and its webhooks need the port we got.
  // SIGTERM (stop()): from its first moment /readyz answers 503 and new hops are refused as each channel
  // expects (USSD: a screen ending the session; chats: 503, which their providers retry), while the server
  // still listens for the hops in flight.
  let draining = false;
  const isDraining = () => draining;
  const inFlight: InFlight = { count: 0, idle: () => Promise.resolve() };
  const server = await listen(app, direct, config.PORT, inFlight);
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  /** What stop() closes, in reverse order, each named in its line should it not finish in time. */
  const closers: Array<[string, () => Promise<void>]> = [];
  // Closed last (closers run in reverse): every part that journals has stopped by then.
  closers.push([
    'journal',
    async () => {
      stopRetention();
      await journalWriter.close();
      if (journalRedis) dropRedis(journalRedis);
      await journalDatabases.close();
    },
  ]);
  closers.push(['events out', () => events.stop()]);

  let sandbox: Sandbox | undefined;
  if (config.embeddedSandbox) {
    sandbox = createSandbox({
      apiKey: config.SANDBOX_API_KEY,
      vendingApiKey: config.SANDBOX_VENDING_API_KEY,
      // Development only: the embedded sandbox delivers its webhooks to this process over loopback http.
      allowHttpWebhooks: true,
      logger,
    });
    app.use(sandbox.app);
  }
  const apiKey = config.MOMO_API_KEY ?? config.SANDBOX_API_KEY;
  // Every read on the main API waits for the budget all processes share (30 a minute per key).
  const readBudget = createReadBudget(config.redis, apiKey, { logger, keyPrefix: config.REDIS_KEY_PREFIX });
  closers.push(['read budget', () => readBudget.close()]);
  const clientOptions = {
    baseUrl: config.MOMO_BASE_URL ?? url,
    apiKey,
    vendingUrl: config.MOMO_VENDING_URL ?? `${config.MOMO_BASE_URL ?? url}/vending`,
    vendingApiKey: config.MOMO_VENDING_API_KEY ?? config.SANDBOX_VENDING_API_KEY,
    vendingAuthorization: config.MOMO_VENDING_AUTHORIZATION,
    version: config.MOMO_VERSION,
    fetch: metrics.countingFetch(),
  };
  const client = new MomoClient({ ...clientOptions, readBudget });

  const store = createStore({ redisUrl: config.redis, logger, keyPrefix: config.REDIS_KEY_PREFIX });
  // The directory of people (src/people): imported from the policy, read whole into every process.
  const people = await startPeople({ config, policy, logger, database });
  closers.push(['people', () => people.close()]);
  if (config.redis) {
    // Not awaited: a Redis still starting does not hold the start; the line comes when the answer does.
    const eviction = warnOfEviction(config.redis, logger);
    closers.push(['eviction check', () => eviction]);
  }
  // What we make is recorded before it is made: notifications are believed for these records only.
  const made = new MadeRecords({
    store,
    logger,
    scope: serviceScope(config.MOMO_BASE_URL ?? url, apiKey),
    journal,
  });
  // The outcomes owed to people and the checks that settle them, kept in the database (src/journal/owed.ts).
  const owed = new OwedOutcomes(database);
  const money = moneyJournal(
    journal,
    journalWriter,
    (channel, userId) => ({
      role: policy.roleName(channel as Channel, userId),
      person: policy.personOf(channel as Channel, userId),
    }),
    owed,
  );
  // The pay flow asks before a second payment of the same a moment after the first: the journal knows it.
  const recentOfJournal = (input: {
    channel: string;
    userId: string;
    payee: string;
    amount: string;
    currency: string;
  }) => recentPayment(database.db, input);
  // The address sent with a bank transfer whose email was skipped; the demo has one of its own.
  const bankTransferEmail = BANK_EMAIL_MAY_BE_ORGANIZATIONS
    ? (config.BANK_TRANSFER_EMAIL ?? (config.embeddedSandbox ? DEMO_BANK_TRANSFER_EMAIL : undefined))
    : undefined;
  const recorded = recordMade(
    createFlowCalls({
      client,
      policy,
      store,
      logger,
      recentPayment: recentOfJournal,
      directory: people,
      ...(bankTransferEmail ? { bankTransferEmail } : {}),
      reservedWithIntent: true,
    }),
    made,
    logger,
    {
      journal: money,
      owedFirstCheckSeconds: FOLLOW_UP_DELAYS_SECONDS[0],
      // A payment's reservation in its person's daily total commits with its intent, and goes back with its
      // journalled refusal.
      reservation: {
        of: (input) => policy.reservationOf({ ...input, channel: input.channel as Channel }),
        check: (input) => policy.checkReservation({ ...input, channel: input.channel as Channel }),
        refused: (reservation, total) => policy.overDayOf(reservation, total),
      },
    },
  );

  const funnel = createFunnel({
    redisUrl: config.redis,
    keyPrefix: config.REDIS_KEY_PREFIX,
    days: config.FUNNEL_DAYS,
    logger,
  });
  closers.push(['funnel', () => funnel.close()]);

  const notifiers: Partial<Record<Channel, Notifier>> = {};
  // USSD outcomes wait for the next dial, and are told in the person's preferred chat too (src/people).
  notifiers.ussd = alsoToPreferredChat(ussdInbox(store), { policy, store, notifiers, logger });
  // The demo keeps the SMS it would send for the simulator's phone to show.
  const outbox = config.embeddedSandbox && !config.SMS_PROVIDER && !options.sms ? new SmsOutbox() : undefined;
  const sms =
    options.sms ??
    outbox ??
    (config.SMS_PROVIDER === 'africastalking'
      ? africasTalkingSms({
          username: config.AT_USERNAME!,
          apiKey: config.AT_API_KEY!,
          from: config.SMS_SENDER_ID,
          url: config.AT_SMS_URL,
          logger,
        })
      : undefined);
  const languageOf = async (address: Address): Promise<Lang | undefined> => {
    const stored = await store.get(keys.profile(address.channel, userOfAddress(address)));
    return (stored?.snapshot as UserProfile | undefined)?.lang;
  };
  // Maker/checker: payments above a role's approvalAbove are held for the approvals board (Slack, below).
  const approvals = new ApprovalDesk({
    db: database.db,
    policy,
    calls: recorded,
    ttlHours: config.APPROVAL_TTL_HOURS,
    tell: async (address, messageKey, params) => {
      const notifier = notifiers[address.channel];
      if (!notifier) throw new Error(`no notifier for ${address.channel}`);
      const lang = (await languageOf(address).catch(() => undefined)) ?? 'en';
      const text = notifyText(lang, messageKey, params);
      await notifier.send(
        address,
        address.channel === 'ussd' ? notifyText(lang, messageKey, params, { forDial: true }) : text,
        { key: messageKey, params, from: 'notify' },
      );
      return text;
    },
    journal: money,
    logger,
  });
  const calls = approvals.guard(recorded);
  // How a number typed without its country code is read, wherever it is typed (engine/country.ts callerCountry).
  const country: CallerCountrySettings = {
    defaultCountry: config.DEFAULT_COUNTRY,
    channelCountries: Object.fromEntries(
      Object.entries(config.CHANNEL_COUNTRIES).map(([channel, [code]]) => [channel, code]),
    ),
  };
  // Bulk payouts (Slack /momo payout) through the same services: policy and maker/checker apply.
  const payouts = new Payouts({
    store,
    policy,
    calls,
    currencies: config.CURRENCIES,
    countryCurrencies: config.COUNTRY_CURRENCIES,
    testCurrencies: config.TEST_CURRENCIES,
    country,
    logger,
  });
  let whatsapp: WhatsApp | undefined;
  const basicAuth =
    config.MOMO_WEBHOOK_USER && config.MOMO_WEBHOOK_PASSWORD
      ? { user: config.MOMO_WEBHOOK_USER, password: config.MOMO_WEBHOOK_PASSWORD }
      : undefined;
  // The embedded sandbox sends its notifications with the credentials the receiver checks, as the operator
  // sets them up for the real service.
  if (sandbox && basicAuth)
    sandbox.controls.setOrganization({ webhookAuth: { username: basicAuth.user, password: basicAuth.password } });
  // Built before any route can make something: it schedules each intent's follow-up. Channels add their
  // notifiers below; the routes and the workers start once they have.
  const notifications = createNotifications({
    made,
    client,
    redisUrl: config.redis,
    keyPrefix: config.REDIS_KEY_PREFIX,
    // Named for the organization (its API key): a staging and a production product sharing a Redis never
    // take each other's queued notifications (a worker taking another's finds no record of it, and would
    // complete the job told to nobody).
    queueName: notificationQueueName(apiKey),
    // Each job says which build (and flows) queued it: an earlier build's worker hands a later one's back.
    queue: {
      written: { build: currentBuild(), flows: releaseShape(shippedFlows) },
      // A job its worker lost (its process died) is put back once its lock ran out, by a check every 2/3 of it.
      stalledJobs: {
        lockDuration: config.NOTIFY_JOB_LOCK_MS,
        stalledInterval: Math.round((config.NOTIFY_JOB_LOCK_MS * 2) / 3),
      },
    },
    leaseMs: config.NOTIFY_LEASE_MS,
    notifiers,
    sms,
    basicAuth,
    verify: { default: config.COLLECTION_VERIFY_DEFAULT, defaultCountry: config.DEFAULT_COUNTRY },
    languageOf,
    onPaymentFailed: async (ref, reason) => {
      await forgetFailedName({ store, logger }, ref, reason);
    },
    // An "already submitted" the service holds nothing of (follow-up.ts): journalled as nothing made.
    onNotMade: async (record) => {
      await journal.refused(record.ref, {
        reason: 'answered "already submitted", but two reads minutes apart found no such payment at the service',
        source: 'read',
        data: { kind: record.kind },
        // Nothing was made: what it took from the person's daily limit comes back with the refusal.
        giveBack: 'ended without money moving',
      });
    },
    onRecipients: (ref, recipients) => payouts.report(ref, recipients),
    journal: money,
    owed,
    owedPollMs: config.OWED_POLL_MS,
    logger,
  });
  // A chat is shown a late answer as any other, with its buttons (each chat channel adds its own below); the
  // engine keeps late USSD outcomes for the next dial itself.
  const lateShown: Partial<Record<Channel, (address: Address, prompt: Prompt) => Promise<void>>> = {};
  const tellLate = async (address: Address, prompt: Prompt) => lateShown[address.channel]?.(address, prompt);
  const engine = withRateLimit(
    createEngine({
      store,
      channels: channelCapabilities,
      services: calls,
      policy,
      ...country,
      currencies: config.CURRENCIES,
      countryCurrencies: config.COUNTRY_CURRENCIES,
      testCurrencies: config.TEST_CURRENCIES,
      // The service's test numbers; the embedded sandbox's own in the demo.
      testNumbers: config.TEST_NUMBERS ?? (sandbox ? TEST_NUMBERS.map((t) => t.phonenumber) : []),
      nameMatchAffectsPayment: config.NAME_MATCH_AFFECTS_PAYMENT,
      // An outcome kept for the next dial is said in the person's language at that dial.
      dialNote: (words, lang) => notifyText(lang, words.key, words.params ?? {}, { forDial: true }),
      // "Being confirmed" names the payment by our short ref: the journal drew it with the intent, before the call.
      shortRefOf: async (ref) => (await journal.byRef(ref))?.short_ref,
      bankEmailOptional: bankTransferEmail !== undefined,
      sessionTtlSeconds: config.SESSION_TTL_SECONDS,
      runLeaseMs: config.RUN_LEASE_MS,
      sweepEveryMs: config.RUN_SWEEP_MS,
      deadlineMs: {
        ussd: config.USSD_DEADLINE_MS,
        telegram: config.CHAT_DEADLINE_MS,
        slack: config.CHAT_DEADLINE_MS,
        whatsapp: config.CHAT_DEADLINE_MS,
      },
      onLateOutcome: tellLate,
      onFlowEnd: (end) => metrics.conversationFinished(end.flow, end.outcome, end.step),
      // The screen that answered a money-moving call is a telling too (buffered: the hop does not wait).
      onMoneyAnswer: (answer) =>
        money.write(
          journalEvents.telling(answer.ref, {
            channel: answer.channel,
            to: `${answer.channel}:${answer.conversationId}`,
            text: answer.text,
            source: 'conversation',
            key: `${answer.ref}:telling:${answer.channel}:answer`,
          }),
        ),
      onTransition: (move) => funnel.record(move),
      logger,
    }),
    {
      messages: config.RATE_LIMIT_MESSAGES,
      windowSeconds: config.RATE_LIMIT_WINDOW_SECONDS,
      redisUrl: config.redis,
      keyPrefix: `${config.REDIS_KEY_PREFIX}ratelimit`,
      store,
      logger,
    },
  );
  // Chat accounts linked to their person with a link code (`/link CODE`), answered before the engine.
  withLinkCommand(engine, { directory: people, logger });
  closers.push(['engine', () => engine.close()]);

  addHealthRoutes(app, {
    store,
    serviceUrl: config.MOMO_BASE_URL ?? url,
    opsToken: config.OPS_TOKEN,
    journal,
    draining: isDraining,
  });
  // A chat's webhook while the process stops: 503, which Telegram, Slack and Meta retry (on another process).
  app.use(['/telegram', '/slack', '/whatsapp'], (_req, res, next) => {
    if (!draining) return next();
    res.set('Retry-After', '1').status(503).json({ detail: 'This process is stopping; try again in a moment' });
  });
  app.get('/metrics', requireOpsToken(config.OPS_TOKEN), async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  const opsServed = addOpsPage(app, {
    funnel,
    metrics,
    credentials:
      config.OPS_USER && config.OPS_PASSWORD ? { user: config.OPS_USER, password: config.OPS_PASSWORD } : undefined,
    open: config.embeddedSandbox,
    opsToken: config.OPS_TOKEN,
    country,
    journal,
    logger,
    store,
    operators: () => people.operators(),
    people: {
      directory: people,
      policy,
      store,
      logger,
      dualControl: config.dualControl,
      // One-time codes go to the person (an SMS, else their next dial), never to the operator.
      codes: codeDelivery({ ...(sms ? { sms } : {}), store, languageOf, logger }),
      audit: new OperatorAudit(database.db, logger),
    },
    deliveries: {
      endpoints: config.WEBHOOK_ENDPOINTS,
      retryForMs: config.WEBHOOK_RETRY_HOURS * 3_600_000,
      wake: () => events.wake(),
    },
  });
  if (!opsServed)
    logger.warn(
      'operator page /ops is not served: set OPS_USER and OPS_PASSWORD to serve it (operators sign in on /ops/sign-in), or OPS_TOKEN for scripts',
    );

  // Routes anyone on the network can post to are counted per caller address before anything else runs.
  const sourceLimit = sourceRateLimit({
    requests: config.SOURCE_RATE_LIMIT_REQUESTS,
    windowSeconds: config.SOURCE_RATE_LIMIT_WINDOW_SECONDS,
    redisUrl: config.redis,
    keyPrefix: `${config.REDIS_KEY_PREFIX}sourcelimit`,
    addressOf: (req) => direct.ip(req),
    logger,
  });
  app.use(['/ussd', '/whatsapp/webhook'], sourceLimit);
  direct.use(sourceLimit);
  closers.push(['rate limits', () => sourceLimit.close()]);

  addUssdRoutes(app, direct, {
    engine,
    serviceCode: config.USSD_SERVICE_CODE,
    deadlineMs: config.USSD_DEADLINE_MS,
    draining: isDraining,
    defaultCountry: config.DEFAULT_COUNTRY,
    logger,
    access: { token: config.USSD_CALLBACK_TOKEN, allowedIps: config.USSD_ALLOWED_IPS, open: config.embeddedSandbox },
    digestKey: ussdDigestKey(config),
    resumeSeconds: config.USSD_RESUME_SECONDS,
    wholeInput: config.USSD_WHOLE_INPUT,
    simulator: config.embeddedSandbox,
    smsOutbox: outbox,
  });
  // One conversation as every channel renders it, for flow authors: the demo only (no real money).
  if (config.embeddedSandbox) addPreviewRoutes(app, { engine, store, logger });

  // Telegram's and Slack's adapters are loaded only when configured: a deploy without them never loads Bolt
  // with its web API and socket mode (undici, axios), nor grammY's bot.
  if (config.TELEGRAM_BOT_TOKEN) {
    const { createTelegram } = await import('../adapters/telegram/index.js');
    const telegram = createTelegram({
      token: config.TELEGRAM_BOT_TOKEN,
      engine,
      store,
      apiRoot: config.TELEGRAM_API_ROOT,
      publicUrl: config.PUBLIC_URL,
      secretToken: config.TELEGRAM_WEBHOOK_SECRET,
      logger,
    });
    app.use(telegram.router);
    notifiers.telegram = telegram.notifier;
    lateShown.telegram = telegram.showLate;
    await telegram.start();
    closers.push(['telegram', () => telegram.stop()]);
  }

  if (config.SLACK_SIGNING_SECRET && config.SLACK_BOT_TOKEN) {
    const { createSlack } = await import('../adapters/slack/index.js');
    const slack = createSlack({
      signingSecret: config.SLACK_SIGNING_SECRET,
      botToken: config.SLACK_BOT_TOKEN,
      appToken: config.SLACK_APP_TOKEN,
      apiUrl: config.SLACK_API_URL,
      ...(config.SLACK_APPROVALS_CHANNEL
        ? { approvals: { desk: approvals, channel: config.SLACK_APPROVALS_CHANNEL } }
        : {}),
      payouts: { payouts },
      engine,
      store,
      logger,
    });
    app.use(slack.router);
    notifiers.slack = slack.notifier;
    lateShown.slack = slack.showLate;
    await slack.start();
    closers.push(['slack', () => slack.stop()]);
  }

  if (whatsappOn(config)) {
    whatsapp = createWhatsApp({
      token: config.WHATSAPP_TOKEN!,
      phoneNumberId: config.WHATSAPP_PHONE_NUMBER_ID!,
      appSecret: config.WHATSAPP_APP_SECRET!,
      verifyToken: config.WHATSAPP_VERIFY_TOKEN!,
      apiUrl: config.WHATSAPP_API_URL,
      template: config.WHATSAPP_TEMPLATE_OUTCOME,
      readReceipts: config.WHATSAPP_READ_RECEIPTS,
      engine,
      store,
      logger,
      counters: metrics.whatsapp,
    });
    app.use(whatsapp.router);
    notifiers.whatsapp = whatsapp.notifier;
    lateShown.whatsapp = whatsapp.showLate;
  }

  notifications.addRoutes(direct);
  notifications.start();
  // The reconciliation of the last RECONCILE_WINDOW_DAYS days, once a night (one process at a time), and the
  // corrections it owes.
  // Its reads go after the product's own (a check, a notification's confirming read): the budget's `behind()`.
  const reconciliation = productReconciliation({
    database,
    journal,
    client: new MomoClient({ ...clientOptions, readBudget: readBudget.behind() }),
    notifiers,
    languageOf,
    logger,
    windowDays: config.RECONCILE_WINDOW_DAYS,
  });
  reconciliation.start();
  closers.push(['reconciliation', () => reconciliation.stop()]);
  approvals.start();
  payouts.start();
  closers.push([
    'approvals and payouts',
    async () => {
      approvals.stop();
      payouts.stop();
    },
  ]);
  metrics.trackQueueDepth(() => notifications.queue.depth());
  // Run after the notifications' stop, done or not by its time: a telling lease still held (a notifier that did
  // not answer) is freed for another process at once, not at its expiry.
  closers.push([
    'notification leases',
    async () => {
      const freed = await notifications.letGo();
      if (freed > 0)
        logger.warn({ leases: freed }, 'shutdown: notifications not told in time let go for another process');
    },
  ]);
  closers.push(['notifications', () => notifications.stop()]);

  // Anything no route took: 404 with a reason. Anything a route threw: 4xx stays 4xx, the rest is 500.
  app.use((req, res) => {
    res.status(404).json({ detail: `No route for ${req.method} ${req.path}` });
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status =
      typeof err === 'object' && err !== null && 'status' in err ? Number((err as { status: unknown }).status) : 500;
    if (status >= 400 && status < 500) {
      res.status(status).json({ detail: err instanceof Error ? err.message : 'Bad request' });
      return;
    }
    logger.error({ err: err instanceof Error ? err.message : String(err) }, 'unhandled error');
    res.status(500).json({ detail: 'Internal error' });
  });

  // Webhooks: at PUBLIC_URL for a real service; over loopback for the embedded sandbox.
  const receiver = config.PUBLIC_URL
    ? `${config.PUBLIC_URL.replace(/\/$/, '')}/notifications/momo`
    : sandbox
      ? `${url}/notifications/momo`
      : undefined;
  // Processes starting together on one Redis register one at a time: the first lists and creates, the
  // others (within a minute) leave it to it, so no two list "missing" and both create.
  if (receiver && (await store.claim(keys.webhookRegistration(receiver), 60))) {
    await ensureWebhooks(client, receiver, logger).catch((err: unknown) => {
      logger.error({ err: String(err) }, 'webhook registration failed; notifications will not arrive');
    });
  }

  return {
    url,
    app,
    server,
    client,
    store,
    sandbox,
    logger,
    approvals,
    database,
    journal,
    journalWriter,
    /**
     * Stops taking requests, finishes those in flight, the runs and the queued jobs in hand, and closes every
     * part, each step bounded: whatever Redis (or anything else) does, the steps before the journal end by
     * {@link STOP_STEPS_SHARE} of SHUTDOWN_GRACE_SECONDS and the journal's (its buffered writes to the database)
     * by {@link STOP_JOURNAL_SHARE}, the store's connection by {@link STOP_STORE_SHARE}; a step not done by then
     * is named in a line and left behind, and the connections closed after it make its waits fail. So the
     * process ends by its own stop, with the journal flushed when the database answers, not by main.ts's grace
     * timer.
     */
    async stop() {
      const started = Date.now();
      const graceMs = config.SHUTDOWN_GRACE_SECONDS * 1000;
      const bounded = async (name: string, step: () => Promise<unknown>, share: number) => {
        const running = step().then(
          () => true,
          (err: unknown) => {
            logger.warn({ err: String(err), step: name }, 'close failed');
            return true;
          },
        );
        const left = Math.max(0, started + graceMs * share - Date.now());
        if ((await within(running, left)) === undefined)
          logger.warn({ step: name, waitedMs: left }, 'shutdown: a step did not finish in time; going on without it');
      };
      // Not ready, and no new hop taken, from this moment; the hops in flight finish on the open server.
      draining = true;
      await bounded('hops in flight', () => inFlight.idle(), STOP_STEPS_SHARE);
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      await bounded(
        'http',
        () => {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          // Keep-alive connections close as soon as their request is answered, not at their idle timeout.
          server.closeIdleConnections();
          return closed;
        },
        STOP_STEPS_SHARE,
      );
      clearInterval(sweep);
      // WhatsApp's webhook answers before its messages are worked: they finish before the runs are drained.
      await bounded('whatsapp', async () => whatsapp?.idle(), STOP_STEPS_SHARE);
      // No more taking over of runs; runs past their deadline finish and tell their chats before the
      // notifiers go away. A run that cannot (its call held at the service) is handed on, not cut off with its
      // lease held until it expires: another process takes it over under the same Duplicate-Check-Key.
      await bounded('runs', () => engine.stop(), STOP_RUNS_SHARE);
      await bounded('hand on runs', () => engine.handOn(), STOP_STEPS_SHARE);
      for (const [name, close] of closers.reverse())
        await bounded(name, close, name === 'journal' ? STOP_JOURNAL_SHARE : STOP_STEPS_SHARE);
      await bounded('sandbox', async () => sandbox?.close(), STOP_JOURNAL_SHARE);
      // Bounded on its own too (closeRedis: a QUIT unanswered for a second is given up), and never past the grace.
      await bounded('store', () => store.close(), STOP_STORE_SHARE);
      // Connections still open under a step left behind: ended, so nothing holds the process.
      server.closeAllConnections();
    },
  };
}
