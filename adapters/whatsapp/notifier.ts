/**
 * Messages to a WhatsApp user from outside a conversation (a payment's outcome), in the user's queue so
 * they follow the answers already on their way.
 *
 * WhatsApp lets a business write freely only within 24 hours of the user's last message. Inside that
 * window the outcome is sent as text; outside it (or when Meta answers that the window has closed) as the
 * configured template (WHATSAPP_TEMPLATE_OUTCOME) with the outcome as its body parameter. Without a
 * template, or when Meta refuses the template for good, the outcome is held, logged and counted, and sent
 * when the user next writes. A failure that may pass (no answer, throttling) is thrown, so the notification
 * queue tries again later.
 */
import type { Address, Notifier } from '../../src/conversation/types.js';
import type { KeyedQueue } from '../../src/conversation/channels/keyed-queue.js';
import { maskPhone, type Logger } from '../../src/log.js';
import { hold, windowOpen, type ChatRecords } from './chat-record.js';
import { GraphApiError, REENGAGEMENT_CODE, type GraphApi, type MessageCounter } from './graph-api.js';
import { WA_ID } from './payload.js';
import { templateMessage, textMessages } from './render.js';

/** An approved message template: its name and language code (WHATSAPP_TEMPLATE_OUTCOME). */
export interface OutcomeTemplate {
  name: string;
  language: string;
}

export interface NotifierDeps {
  api: GraphApi;
  chats: ChatRecords;
  queue: KeyedQueue;
  /** Used outside the 24-hour window. Unset: outcomes are held for the user's next message. */
  template?: OutcomeTemplate;
  counter?: MessageCounter;
  logger: Logger;
  now: () => number;
}

/** True for Meta refusing a message for good (a bad template, a closed window), not for a passing failure. */
const refused = (error: unknown): error is GraphApiError => error instanceof GraphApiError && error.final;

export function createWhatsAppNotifier(deps: NotifierDeps): Notifier {
  const { api, chats, template, logger } = deps;

  async function deliver(waId: string, text: string): Promise<void> {
    if (windowOpen(await chats.get(waId), deps.now())) {
      try {
        for (const message of textMessages(text)) await api.send(waId, message);
        return;
      } catch (error) {
        // The window closed after all (our record and Meta's clock disagree): the template's turn.
        if (!(error instanceof GraphApiError && error.code === REENGAGEMENT_CODE)) throw error;
      }
    }
    let reason = 'the 24-hour window is closed and WHATSAPP_TEMPLATE_OUTCOME is not set';
    if (template) {
      try {
        await api.send(waId, templateMessage(template, text));
        return;
      } catch (error) {
        if (!refused(error)) throw error;
        reason = `Meta refused the template ${template.name} (${error.code ?? error.status})`;
      }
    }
    await chats.update(waId, hold(text));
    deps.counter?.message('text', 'held');
    logger.warn({ to: maskPhone(waId), reason }, "whatsapp: outcome not sent; held for the user's next message");
  }

  return {
    async send(address: Address, text: string): Promise<void> {
      if (address.channel !== 'whatsapp') throw new Error(`the WhatsApp notifier cannot send to ${address.channel}`);
      if (!WA_ID.test(address.conversationId)) throw new Error('a WhatsApp conversation id is a wa_id (digits)');
      await deps.queue.run(address.conversationId, () => deliver(address.conversationId, text));
    },
  };
}
