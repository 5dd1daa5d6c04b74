/**
 * A local Bot API server for the chaos run: keeps, per chat, every message the bot sent or edited, so a
 * simulated user reads the prompt in front of them (text and buttons) and the notifications they got.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

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
  port = 0;

  constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const method = (req.url ?? '').split('/').pop() ?? '';
        let payload: Record<string, any> = {};
        try {
          payload = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, any>) : {};
        } catch {
          payload = {};
        }
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ ok: true, result: this.answer(method, payload) }));
      });
    });
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
      ((markup?.inline_keyboard ?? []) as Array<Array<{ text: string; callback_data: string }>>).flat().map((b) => [b.text, b.callback_data]);
    const message = (id: number) => ({ message_id: id, date: 1_700_000_000, chat: { id: Number(p.chat_id), type: 'private' }, text: p.text });
    switch (method) {
      case 'getMe':
        return { id: 123456, is_bot: true, first_name: 'Momo', username: 'momo_chaos_bot', can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false };
      case 'sendMessage': {
        const id = this.nextId++;
        const log = this.chat(Number(p.chat_id));
        log.messages.set(id, { messageId: id, text: String(p.text), buttons: buttons(p.reply_markup), seq: this.seq++ });
        log.texts.push(String(p.text));
        return message(id);
      }
      case 'editMessageText': {
        const id = Number(p.message_id);
        const log = this.chat(Number(p.chat_id));
        log.messages.set(id, { messageId: id, text: String(p.text), buttons: buttons(p.reply_markup), seq: this.seq++ });
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
