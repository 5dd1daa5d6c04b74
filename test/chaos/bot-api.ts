/**
 * A local Bot API server for the chaos run: keeps, per chat, every message the bot sent or edited, so a
 * simulated user reads the prompt in front of them (text and buttons) and the notifications they got.
 *
 * It fails sends as Telegram does now and then: a share of the calls that show something (sendMessage,
 * editMessageText, editMessageReplyMarkup, answerCallbackQuery) gets a 500 (JSON, as the Bot API answers
 * it), a 502 page from its front proxy (HTML), a 429 with `parameters.retry_after`, or a dropped connection
 * (before the message is shown, or after: the bot does not learn that it was). outage() fails every such
 * call for a while. The start-up calls (setWebhook, setMyCommands) are never failed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type BotApiFault = '500' | '502' | '429' | 'drop-before' | 'drop-after';
const BOT_API_FAULTS: BotApiFault[] = ['500', '502', '429', 'drop-before', 'drop-after'];
/** During an outage nothing gets through. */
const OUTAGE_FAULTS: BotApiFault[] = ['500', '502', '429', 'drop-before'];
const SENDS = new Set(['sendMessage', 'editMessageText', 'editMessageReplyMarkup', 'answerCallbackQuery']);

export interface BotApiOptions {
  /** Share of sends failed (each kind of BotApiFault as often). Default 0: none. */
  faultShare?: number;
  /** Seeded randomness of the faults. Default Math.random. */
  random?: () => number;
  /** The `retry_after` of a 429, in seconds. Default 1. */
  retryAfterSeconds?: number;
}

export interface ShownMessage {
  messageId: number;
  text: string;
  /** Buttons as [label, callback_data]. */
  buttons: Array<[string, string]>;
  /** Order of the last send or edit, across all chats. */
  seq: number;
}

export interface ChatLog {
  messages: Map<number, ShownMessage>;
  /** Every text sent or edited into this chat, in order. */
  texts: string[];
}

export class ChaosBotApi {
  private readonly server: http.Server;
  private readonly chats = new Map<number, ChatLog>();
  private nextId = 1000;
  private seq = 0;
  private downUntil = 0;
  port = 0;
  readonly faults: Record<BotApiFault, number> = { '500': 0, '502': 0, '429': 0, 'drop-before': 0, 'drop-after': 0 };

  constructor(private readonly options: BotApiOptions = {}) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const method = (req.url ?? '').split('/').pop() ?? '';
        let payload: Record<string, any>;
        try {
          payload = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, any>) : {};
        } catch {
          payload = {};
        }
        const fault = SENDS.has(method) ? this.fault() : undefined;
        if (fault) this.faults[fault]++;
        const json = (status: number, body: unknown) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        switch (fault) {
          case '500':
            return json(500, { ok: false, error_code: 500, description: 'Internal Server Error' });
          case '502':
            return res
              .writeHead(502, { 'content-type': 'text/html' })
              .end(
                '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.18.0</center></body></html>',
              );
          case '429': {
            const retryAfter = this.options.retryAfterSeconds ?? 1;
            return json(429, {
              ok: false,
              error_code: 429,
              description: `Too Many Requests: retry after ${retryAfter}`,
              parameters: { retry_after: retryAfter },
            });
          }
          case 'drop-before':
            return res.socket?.destroy();
          case 'drop-after':
            this.answer(method, payload);
            return res.socket?.destroy();
          default:
            return json(200, { ok: true, result: this.answer(method, payload) });
        }
      });
    });
  }

  /** Fails every send for `ms` (Telegram unreachable for a moment). */
  outage(ms: number): void {
    this.downUntil = Math.max(this.downUntil, Date.now() + ms);
  }

  private fault(): BotApiFault | undefined {
    const random = this.options.random ?? Math.random;
    const kinds =
      Date.now() < this.downUntil ? OUTAGE_FAULTS : random() < (this.options.faultShare ?? 0) ? BOT_API_FAULTS : [];
    return kinds[Math.floor(random() * kinds.length)];
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  chat(chatId: number): ChatLog {
    let log = this.chats.get(chatId);
    if (!log) {
      log = { messages: new Map(), texts: [] };
      this.chats.set(chatId, log);
    }
    return log;
  }

  /** The message showing the latest prompt of the chat (the last one sent or edited). */
  latest(chatId: number): ShownMessage | undefined {
    let best: ShownMessage | undefined;
    for (const m of this.chat(chatId).messages.values()) if (!best || m.seq > best.seq) best = m;
    return best;
  }

  private answer(method: string, p: Record<string, any>): unknown {
    const buttons = (markup: any): Array<[string, string]> =>
      ((markup?.inline_keyboard ?? []) as Array<Array<{ text: string; callback_data: string }>>)
        .flat()
        .map((b) => [b.text, b.callback_data]);
    const message = (id: number) => ({
      message_id: id,
      date: 1_700_000_000,
      chat: { id: Number(p.chat_id), type: 'private' },
      text: p.text,
    });
    switch (method) {
      case 'getMe':
        return {
          id: 123456,
          is_bot: true,
          first_name: 'Momo',
          username: 'momo_chaos_bot',
          can_join_groups: true,
          can_read_all_group_messages: false,
          supports_inline_queries: false,
        };
      case 'sendMessage': {
        const id = this.nextId++;
        const log = this.chat(Number(p.chat_id));
        log.messages.set(id, {
          messageId: id,
          text: String(p.text),
          buttons: buttons(p.reply_markup),
          seq: this.seq++,
        });
        log.texts.push(String(p.text));
        return message(id);
      }
      case 'editMessageText': {
        const id = Number(p.message_id);
        const log = this.chat(Number(p.chat_id));
        log.messages.set(id, {
          messageId: id,
          text: String(p.text),
          buttons: buttons(p.reply_markup),
          seq: this.seq++,
        });
        log.texts.push(String(p.text));
        return message(id);
      }
      case 'editMessageReplyMarkup': {
        const id = Number(p.message_id);
        const shown = this.chat(Number(p.chat_id)).messages.get(id);
        if (shown) shown.buttons = buttons(p.reply_markup);
        return message(id);
      }
      default:
        return true;
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
