/**
 * The WhatsApp channel, through Meta's WhatsApp Cloud API: the signed webhook (webhook.ts) turns each user
 * message into an Inbound for the engine (payload.ts -> inbound.ts -> handler.ts), each Prompt goes back as
 * text, reply buttons or a list (render.ts) through the Graph API (graph-api.ts), and a Notifier pushes
 * outcomes, with a template outside WhatsApp's 24-hour window (notifier.ts). Users are keyed by their
 * `wa_id`; one conversation per user with the business number.
 */
import type { Router } from 'express';
import { KeyedQueue } from '../../src/conversation/channels/keyed-queue.js';
import type { Address, Engine, Notifier, Prompt } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import type { Logger } from '../../src/log.js';
import { createChatRecords } from './chat-record.js';
import { createGraphApi, type MessageCounter, type RetryOptions } from './graph-api.js';
import { createMessageHandler } from './handler.js';
import { createWhatsAppNotifier, type OutcomeTemplate } from './notifier.js';
import { createWebhookRouter } from './webhook.js';

export { WEBHOOK_PATH } from './webhook.js';

/** What the channel counts (src/ops/metrics.ts implements it). */
export interface WhatsAppCounters extends MessageCounter {
  /** A status callback, by status (sent, delivered, read, failed, deleted, warning, other). */
  status(status: string): void;
}

export interface WhatsAppOptions {
  /** Permanent access token of a system user with whatsapp_business_messaging (WHATSAPP_TOKEN). Never logged. */
  token: string;
  /** The business phone number's id (WHATSAPP_PHONE_NUMBER_ID): messages come from it, and only its messages are read. */
  phoneNumberId: string;
  /** The app secret (WHATSAPP_APP_SECRET): checks X-Hub-Signature-256 on every delivery. */
  appSecret: string;
  /** Chosen by the operator and typed into Meta's dashboard (WHATSAPP_VERIFY_TOKEN): answers the verification. */
  verifyToken: string;
  /** Graph API base with its version. Default GRAPH_API_URL (a pinned version); a test server in tests. */
  apiUrl?: string;
  /** The template for outcomes outside the 24-hour window. Default none: such outcomes wait for the user's next message. */
  template?: OutcomeTemplate;
  /** Mark every message read as it is worked. Default false: it costs one more Graph API call a message. */
  readReceipts?: boolean;
  engine: Engine;
  /** Holds wamids already handled, the chat records (window, prompt shown, held outcomes). */
  store: Store;
  logger: Logger;
  counters?: WhatsAppCounters;
  /** Retries of Graph API calls (429, 5xx, throttling codes, no answer). Defaults in RetryOptions. */
  retry?: RetryOptions;
  /** Clock in ms (the 24-hour window). Default Date.now. */
  now?: () => number;
}

export interface WhatsApp {
  /** GET and POST /whatsapp/webhook. Mount at the app's root. */
  router: Router;
  notifier: Notifier;
  /**
   * The engine's answer to a message it first answered "processing" (EngineOptions.onLateOutcome): shown
   * with its buttons or list, so the next tap is read against it.
   */
  showLate(address: Address, prompt: Prompt): Promise<void>;
  /** Resolves when every message taken so far has been worked (shutdown: before the engine is drained). */
  idle(): Promise<void>;
}

export function createWhatsApp(options: WhatsAppOptions): WhatsApp {
  const { store, logger, counters } = options;
  const now = options.now ?? Date.now;
  const api = createGraphApi({
    apiUrl: options.apiUrl,
    phoneNumberId: options.phoneNumberId,
    token: options.token,
    retry: options.retry,
    counter: counters,
    logger,
  });
  const chats = createChatRecords(store);
  const queue = new KeyedQueue();
  const handler = createMessageHandler({
    engine: options.engine,
    store,
    chats,
    api,
    queue,
    logger,
    readReceipts: options.readReceipts ?? false,
    countStatus: (status) => counters?.status(status),
    now,
  });
  return {
    router: createWebhookRouter({
      appSecret: options.appSecret,
      verifyToken: options.verifyToken,
      phoneNumberId: options.phoneNumberId,
      handler,
      logger,
    }),
    notifier: createWhatsAppNotifier({ api, chats, queue, template: options.template, counter: counters, logger, now }),
    showLate: (address, prompt) => handler.showLate(address.conversationId, prompt),
    idle: () => queue.idle(),
  };
}
