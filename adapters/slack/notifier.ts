/**
 * Notifier for Slack: a direct message to the user whose conversation started the operation.
 */
import type { Address, Notifier } from '../../src/conversation/types.js';
import { userIdOf } from './address.js';
import { textMessage } from './blocks.js';
import type { Replier } from './reply.js';

export function createSlackNotifier(replier: Pick<Replier, 'direct'>): Notifier {
  return {
    async send(address: Address, message: string): Promise<void> {
      if (address.channel !== 'slack') throw new Error(`Slack notifier cannot send to channel ${address.channel}`);
      await replier.direct(userIdOf(address.conversationId), textMessage(message));
    },
  };
}
