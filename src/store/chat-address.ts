/**
 * The chat address: where a later message goes (the chat that started an operation), written as text in a
 * payment's `metadata.chat` (`telegram:123`, `slack:T1:U2`, `ussd:+256772000001`, `whatsapp:256772000001`) so the service's webhook
 * finds its chat without a read. Built and parsed here only.
 */
import { maskUserId } from '../log.js';
import type { Address, Channel } from './types.js';

const CHANNELS: readonly Channel[] = ['ussd', 'telegram', 'slack', 'whatsapp'];

/** `{ channel: 'telegram', conversationId: '123' }` -> `telegram:123`. */
export function chatOf(address: Address): string {
  return `${address.channel}:${address.conversationId}`;
}

/** `telegram:123`, `slack:T1:U2`, `ussd:+256...`, `whatsapp:256...` -> Address; anything else -> null. */
export function parseChat(chat: unknown): Address | null {
  if (typeof chat !== 'string') return null;
  const at = chat.indexOf(':');
  if (at <= 0 || at === chat.length - 1) return null;
  const channel = chat.slice(0, at) as Channel;
  if (!CHANNELS.includes(channel)) return null;
  return { channel, conversationId: chat.slice(at + 1) };
}

/**
 * The user behind a chat address: a shared chat's conversation id names its user after the first colon (Slack
 * `team:user`, Telegram group `chat:user`); an id without one is the user's own (a USSD `+` number, a WhatsApp
 * `wa_id`, a private Telegram chat), whatever its channel.
 */
export function userOfAddress(address: Address): string {
  return address.conversationId.slice(address.conversationId.indexOf(':') + 1);
}

/** A conversation as logs show it: phone numbers (USSD, WhatsApp) masked, never in clear. */
export function logged(p: Address & { userId?: string }): { channel: Channel; conversation: string; user?: string } {
  const conversation = maskUserId(p.channel, p.conversationId);
  return {
    channel: p.channel,
    conversation,
    ...(p.userId !== undefined ? { user: maskUserId(p.channel, p.userId) } : {}),
  };
}
