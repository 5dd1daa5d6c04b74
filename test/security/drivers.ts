/**
 * Drivers for the security tests: a Telegram user posting updates to the product's webhook (the answers
 * read from the local Bot API server), and a Slack user posting signed commands and clicks (the answers
 * read from the local response_url). The product is the fuzzing one (every channel on, startFuzzProduct).
 */
import type { Update } from 'grammy/types';
import { SlackSender, buttonLabelled, textOf } from '../adapters/slack/harness.js';
import { TELEGRAM_SECRET, type Product } from '../fuzz/harness.js';
import { until } from '../until.js';

let nextUpdateId = 1_000;

/** A Telegram user in a chat (a private chat has the user's id; a group a negative id). */
export class TelegramUser {
  constructor(
    private readonly product: Product,
    readonly userId: number,
    readonly chatId: number = userId,
  ) {}

  private get chat() {
    return this.chatId < 0
      ? { id: this.chatId, type: 'group' as const, title: 'Shop' }
      : { id: this.chatId, type: 'private' as const, first_name: 'U' };
  }

  private get from() {
    return { id: this.userId, is_bot: false, first_name: `User${this.userId}` };
  }

  /** Posts an update with the right secret; returns the webhook's status. */
  async post(
    update: Omit<Update, 'update_id'>,
    secret: string | null = TELEGRAM_SECRET,
  ): Promise<{ status: number; text: string }> {
    const res = await fetch(`${this.product.url}/telegram/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(secret === null ? {} : { 'x-telegram-bot-api-secret-token': secret }),
      },
      body: JSON.stringify({ update_id: nextUpdateId++, ...update }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  }

  /** Sends a message; returns the text of what the bot showed this chat last. */
  async say(text: string): Promise<string> {
    const res = await this.post({
      message: { message_id: nextUpdateId, date: 1, chat: this.chat, from: this.from, text } as never,
    });
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
    return this.screen().text;
  }

  /** Presses the button labelled `label` on the chat's latest message with a keyboard. */
  async press(label: string, on = this.screen()): Promise<string> {
    const button = buttons(on).find((b) => b.text === label);
    if (!button)
      throw new Error(
        `no button "${label}" on "${on.text}": ${buttons(on)
          .map((b) => b.text)
          .join(', ')}`,
      );
    return this.pressData(button.callback_data, on.messageId);
  }

  async pressData(data: string, messageId: number): Promise<string> {
    const res = await this.post({
      callback_query: {
        id: `q${nextUpdateId}`,
        from: this.from,
        chat_instance: 'ci',
        data,
        message: { message_id: messageId, date: 1, chat: this.chat, text: '...' },
      } as never,
    });
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
    return this.screen().text;
  }

  /** Every text the bot sent or edited into this chat, oldest first (a notification may come between two steps). */
  texts(): string[] {
    return this.product.bot.calls
      .filter(
        (c) =>
          (c.method === 'sendMessage' || c.method === 'editMessageText') &&
          String(c.payload.chat_id) === String(this.chatId),
      )
      .map((c) => String(c.payload.text));
  }

  /** The chat's latest message as shown: text, keyboard and message id. */
  screen(): { text: string; keyboard: Array<{ text: string; callback_data: string }>; messageId: number } {
    const calls = this.product.bot.calls.filter(
      (c) =>
        (c.method === 'sendMessage' || c.method === 'editMessageText') &&
        String(c.payload.chat_id) === String(this.chatId),
    );
    const last = calls.at(-1);
    if (!last) return { text: '', keyboard: [], messageId: 0 };
    const sentIds = this.product.bot.calls.filter((c) => c.method === 'sendMessage');
    // The fake numbers sent messages 100, 101, ... in order; an edit names its message.
    const messageId = last.method === 'editMessageText' ? Number(last.payload.message_id) : 100 + sentIds.indexOf(last);
    return {
      text: String(last.payload.text),
      keyboard: (last.payload.reply_markup?.inline_keyboard ?? []).flat(),
      messageId,
    };
  }
}

function buttons(screen: { keyboard: Array<{ text: string; callback_data: string }> }) {
  return screen.keyboard;
}

let nextResponse = 0;

/** A Slack user: /momo and clicks, answers read from the response_url each one names. */
export class SlackUser {
  private readonly sender: SlackSender;
  /** The blocks this user was shown last. */
  blocks: Array<Record<string, any>> = [];

  constructor(
    private readonly product: Product,
    readonly userId: string,
  ) {
    this.sender = new SlackSender(product.url, product.slack);
  }

  async command(text: string): Promise<string> {
    const res = await this.sender.command(text, { user: this.userId });
    const body = (await res.json()) as { blocks: Array<Record<string, any>> };
    this.blocks = body.blocks;
    return textOf(this.blocks);
  }

  /** Clicks `button` (from anyone's message) as this user; the answer that came to the response_url. */
  async click(button: { action_id: string; value?: string }): Promise<string> {
    const id = `sec-${this.userId}-${nextResponse++}`;
    const before = this.product.slack.calls.length;
    await this.sender.interaction({
      type: 'block_actions',
      team: { id: 'T0001', domain: 'example' },
      user: { id: this.userId, username: this.userId, team_id: 'T0001' },
      api_app_id: 'A0001',
      trigger_id: `${Date.now()}.${nextResponse}.${Math.random().toString(16).slice(2)}`,
      channel: { id: 'C0001', name: 'general' },
      container: { type: 'message', message_ts: '1700000000.000100', channel_id: 'C0001', is_ephemeral: true },
      response_url: this.product.slack.responseUrl(id),
      actions: [
        {
          type: 'button',
          block_id: 'b',
          action_ts: '1700000001.000',
          text: { type: 'plain_text', text: 'x' },
          ...button,
        },
      ],
    });
    const answer = await until(`an answer to ${this.userId}'s click`, () =>
      this.product.slack.calls.slice(before).find((c) => c.kind === 'respond' && c.id === id),
    );
    this.blocks = answer.body.blocks ?? [];
    return textOf(this.blocks);
  }

  button(label: string) {
    return buttonLabelled(this.blocks, label);
  }
}
