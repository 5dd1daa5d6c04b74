/**
 * The service and the product's notification side over real HTTP, for tests that need the whole path:
 * a standalone sandbox on its own port that counts the main-API reads it answers, and "processes" of the
 * product's notification side (the flows' services recording what they make, the receiver, the queues, the
 * dispatcher, the follow-up, the read budget; Redis shared when given), each on its own port.
 */
import express from 'express';
import { connect } from 'node:net';
import { createServer, type Server } from 'node:http';
import { DirectRoutes } from '../../src/http/direct-routes.js';
import type { AddressInfo } from 'node:net';
import type { FlowCalls } from '../../flows/calls.js';
import { MadeRecords, type Made } from '../../src/conversation/calls/made-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { loadAccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { ussdInbox } from '../../src/conversation/channels/ussd-inbox.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { createFlowCalls } from '../../src/conversation/calls/flow-calls.js';
import { recordMade } from '../../src/conversation/calls/made-records.js';
import type { Address, Notifier } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import { createLogger, type Logger } from '../../src/log.js';
import { MomoClient } from '../../src/momo/index.js';
import { createNotifications } from '../../src/notifications/index.js';
import type { EventType, Notice } from '../../src/notifications/events.js';
import { createReadBudget, type ReadBudgetOptions } from '../../src/ops/read-budget.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { until } from '../until.js';
import type { Database } from '../../src/journal/database.js';
import { Journal, moneyJournal, OwedOutcomes } from '../../src/journal/index.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { connectRedis } from '../../src/redis/connect.js';

export const API_KEY = 'stack-key';
export const WEBHOOK = { user: 'momo-service', password: 'stack-webhook-password' };
const silent = createLogger((process.env.STACK_LOG as 'warn' | undefined) ?? 'silent');

async function listen(app: express.Express, direct?: DirectRoutes): Promise<{ server: Server; url: string }> {
  const server = createServer(direct ? direct.serve(app) : app).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export interface Service {
  url: string;
  sandbox: Sandbox;
  /** Every main-API read the sandbox answered, in order (method and URL). */
  reads: string[];
  /** Registers a webhook of `event` at `target` (as the product does at start with PUBLIC_URL). */
  hook(event: EventType, target: string): Promise<void>;
  close(): Promise<void>;
}

/** A standalone sandbox on a virtual clock (tests move it), limits raised: the product's budget is under test. */
export async function startService(): Promise<Service> {
  const sandbox = createSandbox({
    apiKey: API_KEY,
    allowHttpWebhooks: true,
    autoAdvance: false,
    limits: { readsPerMinute: 1e6, writesPerMinute: 1e6 },
    logger: silent,
  });
  const reads: string[] = [];
  const app = express();
  app.use((req, _res, next) => {
    if (req.method === 'GET' && req.path.startsWith('/api/')) reads.push(`GET ${req.originalUrl}`);
    next();
  });
  app.use(sandbox.app);
  const { server, url } = await listen(app);
  const client = new MomoClient({ baseUrl: url, apiKey: API_KEY });
  return {
    url,
    sandbox,
    reads,
    async hook(event, target) {
      await client.webhooks.create({ event, target });
    },
    async close() {
      await sandbox.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A chat notifier that keeps what it was asked to tell. */
export class RecordingNotifier implements Notifier {
  readonly told: Array<{ address: Address; text: string }> = [];
  async send(address: Address, text: string): Promise<void> {
    this.told.push({ address, text });
  }
}

export interface ProcessOptions {
  /** Shared Redis: store, marks, queues and read budget. Unset: all in memory. */
  redisUrl?: string;
  keyPrefix?: string;
  queueName?: string;
  /** Notifications carry Basic auth (and the sandbox sends it). Default false: final states are read. */
  credentials?: boolean;
  followUpDelaysSeconds?: readonly number[];
  budget?: ReadBudgetOptions;
  /** The client's fetch (to lose an answer). Default globalThis.fetch. */
  fetch?: typeof fetch;
  logger?: Logger;
  /** NotificationsOptions.onPaymentFailed (src/app.ts gives the spend back). Default: none. */
  onPaymentFailed?: (ref: string) => Promise<unknown>;
  /** NotificationsOptions.onNotMade (src/app.ts journals it). Default: none. */
  onNotMade?: (record: Made) => Promise<void>;
  /** NotificationsOptions.notMadeCheckSeconds. Default: the product's. */
  notMadeCheckSeconds?: number;
  /** The payouts' report of a payment's recipients (src/app.ts wires Payouts.report). Default: none. */
  onRecipients?: (ref: string, recipients: NonNullable<Notice['recipients']>) => Promise<void>;
  /**
   * The journal's database (migrated), as src/app.ts wires it: intents, their owed outcomes and their checks
   * (worked by the owed poller, every `owedPollMs`), the buffered writer (in `redisUrl`'s Redis), and an
   * "already submitted" the service holds nothing of journalled refused. Default: no journal.
   */
  database?: Database;
  /** NotificationsOptions.owedPollMs. Default the product's. */
  owedPollMs?: number;
}

export interface Process {
  url: string;
  store: Store;
  made: MadeRecords;
  /** The flows' services, recording what they make, as src/app.ts builds them. */
  calls: FlowCalls;
  telegram: RecordingNotifier;
  notifications: ReturnType<typeof createNotifications>;
  close(): Promise<void>;
}

/** One process of the product's notification side, started (routes served, workers running). */
export async function startProcess(service: Service, options: ProcessOptions = {}): Promise<Process> {
  const logger = options.logger ?? silent;
  const store: Store = options.redisUrl
    ? new RedisStore({ url: options.redisUrl, keyPrefix: options.keyPrefix })
    : new MemoryStore();
  const budget = createReadBudget(options.redisUrl, API_KEY, { ...options.budget, keyPrefix: options.keyPrefix });
  const client = new MomoClient({
    baseUrl: service.url,
    apiKey: API_KEY,
    readBudget: budget,
    maxRetries: 0,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const made = new MadeRecords({
    store,
    logger,
    ...(options.database ? { journal: new Journal(options.database.db) } : {}),
  });
  const journal = options.database ? new Journal(options.database.db) : undefined;
  const owed = options.database ? new OwedOutcomes(options.database) : undefined;
  const journalRedis =
    journal && options.redisUrl
      ? connectRedis(options.redisUrl, {
          name: 'journal',
          logger,
          keyPrefix: options.keyPrefix ?? 'momo:',
          maxRetriesPerRequest: 1,
        })
      : undefined;
  const writer = journal ? new JournalWriter({ journal, redis: journalRedis, logger, retryEveryMs: 200 }) : undefined;
  writer?.start();
  const money = journal && writer ? moneyJournal(journal, writer, () => ({ role: '' }), owed) : undefined;
  const delays = options.followUpDelaysSeconds ?? [];
  const calls = recordMade(
    createFlowCalls({ client, policy: loadAccessPolicy(), store, logger, moneyCallRetry: { maxRetries: 0 } }),
    made,
    logger,
    money ? { journal: money, ...(delays.length > 0 ? { owedFirstCheckSeconds: delays[0] } : {}) } : {},
  );
  const telegram = new RecordingNotifier();
  if (options.credentials)
    service.sandbox.controls.setOrganization({ webhookAuth: { username: WEBHOOK.user, password: WEBHOOK.password } });
  const notifications = createNotifications({
    made,
    client,
    basicAuth: options.credentials ? WEBHOOK : undefined,
    redisUrl: options.redisUrl,
    keyPrefix: options.keyPrefix,
    queueName: options.queueName,
    notifiers: { telegram, ussd: ussdInbox(store) },
    verify: { default: 'accept' },
    queue: { backoffMs: 50 },
    followUpDelaysSeconds: options.followUpDelaysSeconds ?? [],
    onRecipients: options.onRecipients,
    onPaymentFailed: options.onPaymentFailed,
    onNotMade:
      options.onNotMade ??
      (journal
        ? async (record: Made) => {
            await journal.refused(record.ref, { reason: 'not made', source: 'read', data: { kind: record.kind } });
          }
        : undefined),
    notMadeCheckSeconds: options.notMadeCheckSeconds,
    journal: money,
    owed,
    owedPollMs: options.owedPollMs,
    logger,
  });
  const app = express();
  const direct = new DirectRoutes();
  notifications.addRoutes(direct);
  notifications.start();
  const { server, url } = await listen(app, direct);
  return {
    url,
    store,
    made,
    calls,
    telegram,
    notifications,
    async close() {
      await new Promise((resolve) => server.close(resolve));
      // The budget first: a read still waiting for it gives up, so its job ends and the queue can close.
      await budget.close();
      await notifications.stop();
      await writer?.close();
      journalRedis?.disconnect();
      await store.close();
    },
  };
}

/** A payment as a pay flow asks for it, made by chat `chat` under key `key`. */
export const payment = (key: string, chat: string, phonenumber = '+256772000001') => ({
  duplicateCheckKey: key,
  paymentType: 'money' as const,
  phonenumber,
  amount: '5000',
  currency: 'UGX',
  description: 'lunch',
  metadata: { chat, ref: key },
});

/**
 * Sends the headers and half the body of a create under `key` to the service, then drops the connection (a
 * process killed mid-request): the service holds the key and made nothing. Resolves once it holds it.
 */
export async function cutOff(service: Service, key: string, chat: string): Promise<void> {
  const url = new URL(service.url);
  const body = JSON.stringify(payment(key, chat));
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(
        `POST /api/payments HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Token ${API_KEY}\r\nContent-Type: application/json\r\n` +
          `Duplicate-Check-Key: ${key}\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
        () => {
          socket.destroy();
          resolve();
        },
      );
    });
    socket.on('error', reject);
  });
  // Until the service holds the key: a create under it with a body it refuses is 409 then (a 400 otherwise,
  // which releases the key again, DUPLICATE_KEY_KEPT_AFTER_ERROR).
  await until(
    `the service holding ${key}`,
    async () =>
      (
        await fetch(`${service.url}/api/payments`, {
          method: 'POST',
          headers: {
            authorization: `Token ${API_KEY}`,
            'content-type': 'application/json',
            'duplicate-check-key': key,
          },
          body: '{}',
        })
      ).status === 409,
  );
}
