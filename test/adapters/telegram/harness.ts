/**
 * Wires createTelegram to a local Bot API server and serves its router over real HTTP, as main.ts would.
 * Updates are posted to the webhook with the secret header; logs are kept to check what they reveal.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Update } from 'grammy/types';
import { createTelegram, type Telegram, type TelegramOptions } from '../../../adapters/telegram/index.js';
import { deriveSecretToken } from '../../../adapters/telegram/webhook.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { Engine, Inbound, Prompt } from '../../../src/conversation/types.js';
import type { Store } from '../../../src/store/types.js';
import { createLogger } from '../../../src/log.js';
import { BOT_INFO, BOT_TOKEN, startFakeBotApi, type FakeBotApi } from './fake-bot-api.js';

export const CHAT = 42;
export const USER = 7;

/** An Engine that records what it is asked and answers from a script. */
export class ScriptedEngine implements Engine {
  readonly inbounds: Inbound[] = [];
  constructor(private readonly script: (inbound: Inbound) => Prompt | Promise<Prompt>) {}
  async handle(inbound: Inbound): Promise<Prompt> {
    this.inbounds.push(inbound);
    return this.script(inbound);
  }
}

export function textUpdate(updateId: number, text: string, chatId = CHAT): Update {
  return {
    update_id: updateId,
    message: {
      message_id: updateId,
      date: 1,
      chat: { id: chatId, type: 'private', first_name: 'Ann' },
      from: { id: USER, is_bot: false, first_name: 'Ann' },
      text,
    },
  };
}

export function pressUpdate(updateId: number, messageId: number, data: string, chatId = CHAT): Update {
  return {
    update_id: updateId,
    callback_query: {
      id: `q${updateId}`,
      from: { id: USER, is_bot: false, first_name: 'Ann' },
      chat_instance: 'ci',
      data,
      message: {
        message_id: messageId,
        date: 1,
        chat: { id: chatId, type: 'private', first_name: 'Ann' },
        text: '...',
      },
    },
  };
}

export interface Harness {
  api: FakeBotApi;
  telegram: Telegram;
  store: Store;
  logs: string[];
  sleeps: number[];
  /** Posts a body to the webhook; `secret` null sends no secret header. */
  post(body: unknown, options?: { secret?: string | null; contentType?: string }): Promise<Response>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  store?: Store;
  /** Overrides of createTelegram's options. */
  telegram?: Partial<TelegramOptions>;
}

export async function startHarness(engine: Engine, options: HarnessOptions = {}): Promise<Harness> {
  const store = options.store ?? new MemoryStore();
  const api = await startFakeBotApi();
  const logs: string[] = [];
  const sleeps: number[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logs.push(line) });
  const telegram = createTelegram({
    token: BOT_TOKEN,
    engine,
    store,
    apiRoot: api.apiRoot,
    publicUrl: 'https://bot.example.org/',
    logger,
    botInfo: BOT_INFO,
    retry: { sleep: async (ms) => void sleeps.push(ms) },
    ...options.telegram,
  });
  const app = express();
  app.use(telegram.router);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const secret = options.telegram?.secretToken ?? deriveSecretToken(BOT_TOKEN);
  return {
    api,
    telegram,
    store,
    logs,
    sleeps,
    post(body, options = {}) {
      const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json' };
      const sent = options.secret === undefined ? secret : options.secret;
      if (sent !== null) headers['x-telegram-bot-api-secret-token'] = sent;
      return fetch(`http://127.0.0.1:${port}/telegram/webhook`, {
        method: 'POST',
        headers,
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    async close() {
      await telegram.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await api.close();
    },
  };
}
