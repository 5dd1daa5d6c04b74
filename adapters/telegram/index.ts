/**
 * The Telegram channel: a grammY bot that turns updates into Inbound for the engine and renders Prompts as
 * messages with inline keyboards (a prompt told late too: showLate), the webhook route, and a Notifier for
 * later messages.
 */
import express, { type Router } from 'express';
import { Bot } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import type { Address, Engine, Notifier, Prompt } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import type { Logger } from '../../src/log.js';
import { COMMANDS, describeCommand } from './commands.js';
import { describeError } from './describe-error.js';
import { createUpdateHandler, UpdateNotTaken } from './handler.js';
import { createTelegramNotifier } from './notifier.js';
import { createPromptRecords } from './prompt-record.js';
import { KeyedQueue } from '../../src/conversation/channels/keyed-queue.js';
import { retryTransformer, type RetryOptions } from './retry.js';
import { createWebhookRouter, deriveSecretToken, WEBHOOK_PATH } from './webhook.js';

export { WEBHOOK_PATH } from './webhook.js';
export type { RetryOptions } from './retry.js';

export interface TelegramOptions {
  /** The bot token from BotFather (TELEGRAM_BOT_TOKEN). Never logged. */
  token: string;
  engine: Engine;
  /** Holds the prompt each chat is looking at and the update ids already handled (duplicate deliveries). */
  store: Store;
  /** Bot API server. Default https://api.telegram.org; set for a self-hosted Bot API server or a test server. */
  apiRoot?: string;
  /**
   * Public https base of this product (PUBLIC_URL). Set: start() points Telegram's webhook at
   * `<publicUrl>/telegram/webhook`. Unset: start() long-polls, which needs no public address.
   */
  publicUrl?: string;
  /**
   * Secret Telegram sends with every webhook call (X-Telegram-Bot-Api-Secret-Token); 1-256 characters of
   * A-Z a-z 0-9 _ -. Default: derived from the token (sha256, 32 hex characters), the same in every instance.
   */
  secretToken?: string;
  logger: Logger;
  /** The bot's getMe answer. Default: fetched on start() (or the first update). Tests set it to run offline. */
  botInfo?: UserFromGetMe;
  /** Retries of Bot API calls (429 retry_after, 5xx, network). Defaults in RetryOptions. */
  retry?: RetryOptions;
}

export interface Telegram {
  /** Holds POST /telegram/webhook when publicUrl is set; empty otherwise. Mount at the app's root. */
  router: Router;
  notifier: Notifier;
  /**
   * The engine's answer to a message it first answered "processing" (EngineOptions.onLateOutcome): a new
   * message with its keyboard, so a press on it is read against it.
   */
  showLate(address: Address, prompt: Prompt): Promise<void>;
  bot: Bot;
  /** Registers the commands, then sets the webhook (publicUrl) or starts long polling. */
  start(): Promise<void>;
  /** Stops long polling and waits for updates being handled. The webhook is left set for the next start. */
  stop(): Promise<void>;
}

/** Update kinds the bot reads; Telegram does not send the others. */
const ALLOWED_UPDATES = ['message', 'callback_query'] as const;

/** Answer a webhook call after this long even if its update is still being handled (see webhook.ts). */
const WEBHOOK_TIMEOUT_MS = 10_000;

/** How long a shown prompt's buttons keep working: a day, like a chat the user comes back to. */
const PROMPT_TTL_SECONDS = 86_400;

const SECRET_TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

export function createTelegram(options: TelegramOptions): Telegram {
  const { token, engine, store, publicUrl, logger, botInfo } = options;
  const secretToken = options.secretToken ?? deriveSecretToken(token);
  if (!SECRET_TOKEN.test(secretToken)) {
    throw new Error('the Telegram webhook secret must be 1-256 characters of A-Z, a-z, 0-9, _ and -');
  }
  const apiRoot = options.apiRoot?.replace(/\/+$/, '');
  const bot = new Bot(token, { botInfo, client: apiRoot ? { apiRoot } : undefined });
  bot.api.config.use(retryTransformer(options.retry));

  const queue = new KeyedQueue();
  const records = createPromptRecords(store, PROMPT_TTL_SECONDS);
  const handler = createUpdateHandler({ engine, store, records, queue, logger, detach: !publicUrl });
  bot.use(handler.middleware);
  // Long polling only: the handler reports its own failures, so this sees only what escaped it.
  bot.catch((error) => {
    // Not taken at all (the store unreachable): refused, so Telegram delivers it again (webhook.ts answers 503).
    if (error.error instanceof UpdateNotTaken) throw error.error;
    logger.error({ err: describeError(error.error) }, 'telegram: update escaped the handler');
  });

  // Only with a public URL: grammY's webhookCallback turns long polling off for good.
  const router = publicUrl
    ? createWebhookRouter(bot, { secretToken, timeoutMs: WEBHOOK_TIMEOUT_MS, logger })
    : express.Router();
  let polling: Promise<void> | undefined;

  return {
    router,
    notifier: createTelegramNotifier(bot.api),
    showLate: (address, prompt) => handler.showLate(bot.api, address.conversationId, prompt),
    bot,
    async start() {
      await bot.init();
      // The command menu is a convenience: a server that refuses it (an emulator, a hiccup) must not keep the bot down.
      await bot.api
        .setMyCommands(COMMANDS.map(({ command }) => ({ command, description: describeCommand(command) })))
        .catch((error: unknown) => {
          logger.warn({ err: describeError(error) }, 'telegram: commands not registered');
        });
      if (publicUrl) {
        const url = publicUrl.replace(/\/+$/, '') + WEBHOOK_PATH;
        await bot.api.setWebhook(url, { secret_token: secretToken, allowed_updates: [...ALLOWED_UPDATES] });
        logger.info({ url }, 'telegram: webhook set');
        return;
      }
      await new Promise<void>((resolve, reject) => {
        polling = bot
          .start({ allowed_updates: [...ALLOWED_UPDATES], onStart: () => resolve() })
          .catch((error: unknown) => {
            logger.error({ err: describeError(error) }, 'telegram: long polling stopped');
            reject(error);
          });
      });
      logger.info({ username: bot.botInfo.username }, 'telegram: long polling');
    },
    async stop() {
      if (polling) {
        await bot.stop();
        await polling;
        polling = undefined;
      }
      await queue.idle();
    },
  };
}
