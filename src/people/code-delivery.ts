/**
 * One-time codes go to the person, never to an operator: a PIN reset's code and an operator-made link code are
 * texted to the person's number (their USSD identity) when the product has an SMS sender (SMS_PROVIDER; the
 * demo's outbox, shown by the USSD simulator), else, or when the send fails, kept in their USSD inbox and shown
 * at their next dial. The operator is told only where it went, the number masked: "code sent to +256 77… 460 by
 * SMS".
 *
 * The text is sent at once (not through the SMS queue, whose jobs Redis keeps): the approver learns whether it
 * went. A note kept for the dial holds the code in the USSD inbox (Redis) until it was shown at two dials or a
 * week passed; the code itself stops working after its own time (people.ts). The code is never logged.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Lang, Params } from '../../flows/types.js';
import { addPending } from '../conversation/channels/ussd-inbox.js';
import type { Address } from '../conversation/types.js';
import type { Store } from '../store/types.js';
import { maskPhone, type Logger } from '../log.js';
import { notifyText } from '../notifications/messages.js';
import type { SmsSender } from '../notifications/sms.js';
import { PeopleError, type PersonView } from './people.js';

/** Which code: `pin` (a PIN reset's), `link` (to link a chat account). */
export type CodeKind = 'pin' | 'link';

/** How a code reached the person. */
export type CodeSent = { by: 'sms' | 'dial'; to: string };

export interface CodeDelivery {
  /** Sends `code` to the person; answers how (the number unmasked: {@link maskedNumber} it before showing). */
  send(person: PersonView, kind: CodeKind, code: string, params?: Params): Promise<CodeSent>;
}

export interface CodeDeliveryOptions {
  /** Texts the person (SMS_PROVIDER, or the demo's outbox); unset: the code waits for their next dial. */
  sms?: SmsSender;
  /** The store the USSD inbox lives in. */
  store: Store;
  /** The person's language, from their USSD profile; English when unknown. */
  languageOf?: (address: Address) => Promise<Lang | undefined>;
  logger: Logger;
}

/** The number a code is sent to: the person's USSD identity; a PeopleError (409) when they have none. */
export function numberOf(person: PersonView): string {
  const ussd = person.identities.find((i) => i.channel === 'ussd');
  if (!ussd)
    throw new PeopleError(
      `${person.name} has no phone number (a USSD identity) to send the code to; a code is never shown here`,
      409,
    );
  return ussd.userId;
}

/** A number as an operator may see it: `+256 77… 460` (the country code, two digits, the last three). */
export function maskedNumber(phone: string): string {
  const parsed = parsePhoneNumberFromString(phone);
  if (!parsed) return maskPhone(phone);
  const national = String(parsed.nationalNumber);
  return `+${parsed.countryCallingCode} ${national.slice(0, 2)}… ${national.slice(-3)}`;
}

/** What the operator is told: "code sent to +256 77… 460 by SMS", or kept for the next dial. */
export function sentLine(sent: CodeSent): string {
  return sent.by === 'sms'
    ? `code sent to ${maskedNumber(sent.to)} by SMS`
    : `code kept for ${maskedNumber(sent.to)}: shown at their next USSD dial`;
}

const KEYS: Record<CodeKind, string> = { pin: 'notify.code.pin', link: 'notify.code.link' };

export function codeDelivery(o: CodeDeliveryOptions): CodeDelivery {
  return {
    async send(person, kind, code, params = {}) {
      const to = numberOf(person);
      const address: Address = { channel: 'ussd', conversationId: to };
      const lang = (await o.languageOf?.(address).catch(() => undefined)) ?? 'en';
      const words = { key: KEYS[kind], params: { ...params, code }, from: 'notify' as const };
      if (o.sms) {
        try {
          await o.sms.send(to, notifyText(lang, words.key, words.params));
          o.logger.info({ person: person.id, to: maskPhone(to), kind }, 'people: one-time code sent by SMS');
          return { by: 'sms', to };
        } catch (err) {
          o.logger.warn(
            { person: person.id, to: maskPhone(to), kind, err: err instanceof Error ? err.message : String(err) },
            'people: one-time code not sent by SMS; kept for the next dial',
          );
        }
      }
      await addPending(o.store, address, notifyText(lang, words.key, words.params, { forDial: true }), { words });
      o.logger.info({ person: person.id, to: maskPhone(to), kind }, 'people: one-time code kept for the next dial');
      return { by: 'dial', to };
    },
  };
}
