/**
 * The outcome of a payment made on USSD is also told in the person's preferred chat (a Telegram, Slack or
 * WhatsApp account of theirs, linked or set on the People page), once, besides the USSD inbox (and SMS) of
 * before. The USSD notifier is wrapped: what it keeps for the next dial is sent to the preferred chat too, at
 * most once per message (a mark in the store, so a repeated telling does not repeat it). A chat that cannot be
 * reached is logged; the USSD inbox has the message whatever happens.
 */
import { createHash } from 'node:crypto';
import { parseChat } from '../store/chat-address.js';
import type { AccessPolicy } from '../conversation/calls/access-policy.js';
import { keys } from '../store/keys.js';
import type { Channel, Notifier } from '../conversation/types.js';
import type { Store } from '../store/types.js';
import type { Logger } from '../log.js';

/** How long the mark of a message told to a preferred chat is kept: 7 days, as the USSD inbox keeps it. */
const TOLD_SECONDS = 7 * 24 * 3600;

export function alsoToPreferredChat(
  inbox: Notifier,
  o: { policy: AccessPolicy; store: Store; notifiers: Partial<Record<Channel, Notifier>>; logger: Logger },
): Notifier {
  return {
    async send(address, text, words) {
      await inbox.send(address, text, words);
      const chat = parseChat(o.policy.person(address.channel, address.conversationId)?.preferredChat);
      const notifier = chat && chat.channel !== 'ussd' ? o.notifiers[chat.channel] : undefined;
      if (!chat || !notifier) return;
      const mark = createHash('sha256').update(`${address.channel}:${address.conversationId}\n${text}`).digest('hex');
      if (!(await o.store.claim(keys.toldPreferredChat(mark), TOLD_SECONDS))) return;
      await notifier
        .send(chat, text)
        .catch((err: unknown) =>
          o.logger.warn({ channel: chat.channel, err: String(err) }, 'people: the preferred chat was not told'),
        );
    },
  };
}
