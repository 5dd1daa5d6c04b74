/**
 * A local Bot API server for tests: the methods the bot uses, over real HTTP (express on port 0), recording
 * every call. grammY is pointed at it with `client.apiRoot`. Failures are scripted per method.
 * Sent messages get ids 100, 101, ... in the order they are sent.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Update, UserFromGetMe } from 'grammy/types';

export const BOT_TOKEN = '123456:TEST-token-never-logged';

export const BOT_INFO: UserFromGetMe = {
  id: 123456,
  is_bot: true,
  first_name: 'Momo',
  username: 'momo_test_bot',
  can_join_groups: true,
  can_read_all_group_messages: false,
  supports_inline_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
  has_topics_enabled: false,
  allows_users_to_create_topics: false,
} as UserFromGetMe;

export interface ApiCall {
  method: string;
  token: string;
  payload: Record<string, any>;
}

interface Scripted {
  status: number;
  body: unknown;
}

interface Waiter {
  method: string;
  count: number;
  resolve: () => void;
}

export interface FakeBotApi {
  apiRoot: string;
  calls: ApiCall[];
  /** Payloads of the calls of one method, in order. */
  of(method: string): Record<string, any>[];
  /** Answers the next `times` calls of `method` with this status and body instead of success. */
  failNext(method: string, status: number, body: unknown, times?: number): void;
  /** Queues an update for getUpdates (long polling). */
  pushUpdate(update: Update): void;
  /** Resolves once `count` calls of `method` have been recorded. */
  waitForCalls(method: string, count: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeBotApi(): Promise<FakeBotApi> {
  const calls: ApiCall[] = [];
  const scripted = new Map<string, Scripted[]>();
  const waiters: Waiter[] = [];
  let updates: Update[] = [];
  let pollers: Array<() => void> = [];
  let nextMessageId = 100;

  const of = (method: string) => calls.filter((c) => c.method === method).map((c) => c.payload);
  const settleWaiters = () => {
    for (const w of [...waiters]) {
      if (of(w.method).length >= w.count) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const message = (p: Record<string, any>, messageId: number) => ({
    message_id: messageId,
    date: 1_700_000_000,
    chat: { id: Number(p.chat_id), type: 'private' },
    text: p.text,
    ...(p.reply_markup ? { reply_markup: p.reply_markup } : {}),
  });
  const results: Record<string, (p: Record<string, any>) => unknown> = {
    getMe: () => BOT_INFO,
    sendMessage: (p) => message(p, nextMessageId++),
    editMessageText: (p) => message(p, Number(p.message_id)),
    editMessageReplyMarkup: (p) => message(p, Number(p.message_id)),
    answerCallbackQuery: () => true,
    setMyCommands: () => true,
    setWebhook: () => true,
    deleteWebhook: () => true,
  };

  const app = express();
  app.post('/bot:token/:method', express.json(), (req, res) => {
    const method = String(req.params.method);
    const payload = (req.body ?? {}) as Record<string, any>;
    calls.push({ method, token: String(req.params.token), payload });
    settleWaiters();
    const failure = scripted.get(method)?.shift();
    if (failure) {
      res.status(failure.status).json(failure.body);
      return;
    }
    if (method === 'getUpdates') {
      const answer = () => {
        const offset = Number(payload.offset ?? 0);
        updates = updates.filter((u) => u.update_id >= offset);
        res.json({ ok: true, result: updates });
      };
      if (updates.some((u) => u.update_id >= Number(payload.offset ?? 0)) || !payload.timeout) return answer();
      pollers.push(answer);
      res.on('close', () => (pollers = pollers.filter((p) => p !== answer)));
      return;
    }
    const result = results[method];
    if (!result) {
      res.status(404).json({ ok: false, error_code: 404, description: 'Not Found: method not found' });
      return;
    }
    res.json({ ok: true, result: result(payload) });
  });

  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    calls,
    of,
    failNext(method, status, body, times = 1) {
      const list = scripted.get(method) ?? [];
      for (let i = 0; i < times; i++) list.push({ status, body });
      scripted.set(method, list);
    },
    pushUpdate(update) {
      updates.push(update);
      const waiting = pollers;
      pollers = [];
      for (const answer of waiting) answer();
    },
    waitForCalls(method, count) {
      return new Promise((resolve) => {
        waiters.push({ method, count, resolve });
        settleWaiters();
      });
    },
    async close() {
      for (const answer of pollers) answer();
      pollers = [];
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
}
