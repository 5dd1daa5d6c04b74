/**
 * Telegram update -> what the bot should do with it. Pure: no I/O, so every kind of update is tested as a
 * table. Only private and group messages and callback queries of our own buttons are read; edits, channel
 * posts and other update kinds are ignored. Every flow (money, exam pins, checking collections) runs only in
 * a private chat, where nobody else reads the screens: in a group a command other than /help, or a press
 * of one of our buttons, is answered with a pointer to the private chat; other group messages are not for
 * the bot.
 */
import type { Update } from 'grammy/types';
import type { Inbound } from '../../src/conversation/types.js';
import { commandAction } from './commands.js';
import { parseButton, type Button } from './keyboard.js';

/** The fields of an Inbound that say where an update came from. */
export type Origin = Pick<Inbound, 'channel' | 'conversationId' | 'userId' | 'messageId'>;

export type TelegramAction =
  /** A message: ask the engine (text, a flow to start, navigation) or show the help; answer with a new message. */
  | { kind: 'message'; chatId: number; origin: Origin; request: Pick<Inbound, 'text' | 'start' | 'nav'> | 'help' }
  /** A button press on `messageId`; button is undefined when the data is not one of ours. */
  | { kind: 'press'; chatId: number; origin: Origin; queryId: string; messageId: number; button: Button | undefined }
  /** A command or a press in a group: tell the user to write to the bot directly (a toast for a press). */
  | { kind: 'group'; chatId: number; origin: Origin; queryId?: string };

const COMMAND = /^\/([A-Za-z0-9_]+)(?:@([A-Za-z0-9_]+))?(?:\s|$)/;

/** A chat, user or message id as Telegram sends it; anything else makes the update malformed. */
const isId = (value: unknown): value is number => Number.isSafeInteger(value);

/**
 * The conversation of a user in a chat: the chat itself when private, `<chat id>:<user id>` in a group, so
 * one member can neither continue nor read another's flow by pressing their buttons or answering their
 * questions. The notifier sends to the chat part (notifier.ts).
 */
function conversationOf(chat: { id: number; type?: string }, userId: number): string {
  return chat.type === 'private' ? String(chat.id) : `${chat.id}:${userId}`;
}

/**
 * What to do with an update, or null to ignore it. `botUsername` tells `/pay@ThisBot` from `/pay@OtherBot`.
 * A malformed update (ids that are not integers, a text that is not a string) is ignored, never thrown on:
 * a throw would answer the webhook 503 and Telegram would redeliver it forever.
 */
export function readUpdate(update: Update, botUsername: string): TelegramAction | null {
  const messageId = String(update.update_id);
  if (update.message?.from) {
    const { chat, from } = update.message;
    if (!isId(chat?.id) || !isId(from?.id)) return null;
    const text = typeof update.message.text === 'string' ? update.message.text : undefined;
    const origin: Origin = {
      channel: 'telegram',
      conversationId: conversationOf(chat, from.id),
      userId: String(from.id),
      messageId,
    };
    const inPrivate = chat.type === 'private';
    // A photo or sticker gets the help in a private chat; in a group it was not meant for the bot.
    if (text === undefined) return inPrivate ? { kind: 'message', chatId: chat.id, origin, request: 'help' } : null;
    const command = COMMAND.exec(text);
    // In a group only commands are for the bot: the rest is the members talking to each other.
    if (!command) return inPrivate ? { kind: 'message', chatId: chat.id, origin, request: { text } } : null;
    const [, name = '', target] = command;
    if (target !== undefined && target.toLowerCase() !== botUsername.toLowerCase()) return null;
    // `/link CODE` links this account to a person (src/people/link.ts answers it before the engine).
    if (name.toLowerCase() === 'link' && inPrivate)
      return { kind: 'message', chatId: chat.id, origin, request: { text: text.replace(COMMAND, 'link ') } };
    const request = commandAction(name) ?? 'help';
    if (!inPrivate && request !== 'help') return { kind: 'group', chatId: chat.id, origin };
    return { kind: 'message', chatId: chat.id, origin, request };
  }
  const query = update.callback_query;
  if (query?.message) {
    const { chat, message_id } = query.message;
    if (!isId(chat?.id) || !isId(query.from?.id) || !isId(message_id)) return null;
    const origin: Origin = {
      channel: 'telegram',
      conversationId: conversationOf(chat, query.from.id),
      userId: String(query.from.id),
      messageId,
    };
    if (chat.type !== 'private') return { kind: 'group', chatId: chat.id, origin, queryId: query.id };
    return {
      kind: 'press',
      chatId: chat.id,
      origin,
      queryId: query.id,
      messageId: message_id,
      button: parseButton(query.data),
    };
  }
  return null;
}
