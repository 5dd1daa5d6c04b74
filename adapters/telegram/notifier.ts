/**
 * Messages to a chat from outside a conversation (a payment settled, a collection arrived). Retries on 429
 * (after `retry_after`), 5xx and network failures come from the retry transformer on the bot's API
 * (retry.ts); what is still failing after those is thrown to the caller, whose queue has its own retries.
 */
import type { Api } from 'grammy';
import type { Address, Notifier } from '../../src/conversation/types.js';

export function createTelegramNotifier(api: Api): Notifier {
  return {
    async send(address: Address, message: string): Promise<void> {
      if (address.channel !== 'telegram') throw new Error(`the Telegram notifier cannot send to ${address.channel}`);
      // A group member's conversation is `<chat id>:<user id>` (updates.ts): the message goes to the chat.
      await api.sendMessage(address.conversationId.split(':')[0]!, message);
    },
  };
}
