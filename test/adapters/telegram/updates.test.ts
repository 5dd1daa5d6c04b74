import { describe, expect, it } from 'vitest';
import type { Update } from 'grammy/types';
import { readUpdate } from '../../../adapters/telegram/updates.js';

const BOT = 'momo_test_bot';
const chat = { id: 42, type: 'private' as const, first_name: 'Ann' };
const from = { id: 7, is_bot: false, first_name: 'Ann' };
const text = (t: string, updateId = 5): Update => ({
  update_id: updateId,
  message: { message_id: 1, date: 1, chat, from, text: t },
});
const origin = { channel: 'telegram', conversationId: '42', userId: '7', messageId: '5' };

describe('readUpdate', () => {
  it.each([
    ['hello', { text: 'hello' }],
    ['/start', { nav: 'home' }],
    ['/start deep-link-payload', { nav: 'home' }],
    ['/pay', { start: 'pay' }],
    ['/request', { start: 'request' }],
    ['/check', { start: 'check' }],
    ['/data', { start: 'data' }],
    ['/pin', { start: 'pin' }],
    ['/PAY', { start: 'pay' }],
    ['/pay@momo_test_bot', { start: 'pay' }],
    ['/cancel', { nav: 'cancel' }],
    ['/help', 'help'],
    ['/unknown', 'help'],
    ['/payment', 'help'],
    ['pay /pay', { text: 'pay /pay' }],
    // Linking this account to a person (src/people/link.ts answers it before the engine).
    ['/link ABCD2345EF', { text: 'link ABCD2345EF' }],
    ['/link@momo_test_bot ABCD2345EF', { text: 'link ABCD2345EF' }],
  ])('message %j -> %j', (t, request) => {
    expect(readUpdate(text(t), BOT)).toEqual({ kind: 'message', chatId: 42, origin, request });
  });

  it('ignores a command addressed to another bot', () => {
    expect(readUpdate(text('/pay@other_bot'), BOT)).toBeNull();
  });

  it('answers a message without text with the help in a private chat, and ignores it in a group', () => {
    const photo: Update = { update_id: 5, message: { message_id: 1, date: 1, chat, from, photo: [] } };
    expect(readUpdate(photo, BOT)).toMatchObject({ kind: 'message', request: 'help' });
    const group = { id: -100, type: 'group' as const, title: 'Family' };
    const groupPhoto: Update = { update_id: 6, message: { message_id: 1, date: 1, chat: group, from, photo: [] } };
    expect(readUpdate(groupPhoto, BOT)).toBeNull();
    const groupText: Update = { update_id: 7, message: { message_id: 2, date: 1, chat: group, from, text: '/pay' } };
    // Flows run only in private chats: a command in a group is answered with a pointer there.
    expect(readUpdate(groupText, BOT)).toEqual({
      kind: 'group',
      chatId: -100,
      origin: { channel: 'telegram', conversationId: '-100:7', userId: '7', messageId: '7' },
    });
    const groupHelp: Update = { update_id: 8, message: { message_id: 3, date: 1, chat: group, from, text: '/help' } };
    expect(readUpdate(groupHelp, BOT)).toMatchObject({ kind: 'message', request: 'help' });
    const groupChatter: Update = {
      update_id: 9,
      message: { message_id: 4, date: 1, chat: group, from, text: '0772000001' },
    };
    expect(readUpdate(groupChatter, BOT)).toBeNull();
  });

  it('reads a callback query of our buttons, and of foreign data as no button', () => {
    const press = (data: string): Update => ({
      update_id: 9,
      callback_query: {
        id: 'q1',
        from,
        chat_instance: 'ci',
        data,
        message: { message_id: 77, date: 1, chat, text: 'Pick' },
      },
    });
    const base = { kind: 'press', chatId: 42, origin: { ...origin, messageId: '9' }, queryId: 'q1', messageId: 77 };
    expect(readUpdate(press('c:3'), BOT)).toEqual({ ...base, button: { kind: 'choice', index: 3 } });
    expect(readUpdate(press('n:home'), BOT)).toEqual({ ...base, button: { kind: 'nav', nav: 'home' } });
    expect(readUpdate(press('evil'), BOT)).toEqual({ ...base, button: undefined });
  });

  it('ignores edits, channel posts and messages without a sender', () => {
    const edited: Update = {
      update_id: 5,
      edited_message: { message_id: 1, date: 1, edit_date: 2, chat, from, text: 'x' },
    };
    const post: Update = {
      update_id: 5,
      channel_post: { message_id: 1, date: 1, chat: { id: -1, type: 'channel', title: 'c' }, text: 'x' },
    };
    expect(readUpdate(edited, BOT)).toBeNull();
    expect(readUpdate(post, BOT)).toBeNull();
  });
});
