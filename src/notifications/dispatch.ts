/**
 * Works one notification: finds the chat it owes a message to, makes sure each state change is told once
 * and an older state never follows a newer one, and hands the words to that channel's notifier.
 * A notifier failure throws, so the queue retries the job with backoff.
 */
import type { Address, Channel, Notifier } from '../conversation/types.js';
import type { Lang, Params } from '../../flows/types.js';
import type { Logger } from '../log.js';
import { maskPhone } from '../log.js';
import { deliveryFor, failedPaymentRef, type Delivery, type NotificationBody } from './events.js';
import type { NotificationMarks } from './marks.js';
import { notifyMessages } from './messages.js';

/** Texts to a phone (USSD users); no provider is built in. */
export interface SmsSender {
  send(phoneNumber: string, text: string): Promise<void>;
}

export interface DispatcherOptions {
  /** The order and dedup marks (RedisMarks shared by every process, or MemoryMarks for one). */
  marks: NotificationMarks;
  /** One per channel that can take a message; a channel without one is skipped with a log line. */
  notifiers: Partial<Record<Channel, Notifier>>;
  /** Also texts USSD users when set. */
  sms?: SmsSender;
  /** The user's language, when known. Default: English. */
  languageOf?: (address: Address) => Promise<Lang | undefined>;
  /**
   * Given the Duplicate-Check-Key (`metadata.ref`) of a payment that ended `processed_with_errors`, `rejected`
   * or `cancelled`, before it is told: gives the spend reserved for it back (src/conversation/policy.ts
   * giveBackSpend, once per key). Unset: nothing is given back.
   */
  onPaymentFailed?: (ref: string) => Promise<unknown>;
  /** How long dedup and order marks are kept, in seconds. Default 14 days (events are kept 30). */
  markTtlSeconds?: number;
  logger: Logger;
}

export type DispatchResult = 'sent' | 'duplicate' | 'stale' | 'ignored';

/** Ranks from this one up are outcomes (processed, failed, rejected, expired...). */
const OUTCOME_RANK = 9;

function fill(template: string, params: Params): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

export function createDispatcher(options: DispatcherOptions) {
  const { marks, logger } = options;
  const ttl = options.markTtlSeconds ?? 14 * 24 * 3600;

  /** The user's language; a failed read is English, not a failed notification. */
  async function language(address: Address): Promise<Lang | undefined> {
    try {
      return await options.languageOf?.(address);
    } catch {
      return undefined;
    }
  }

  function words(delivery: Delivery, lang: Lang): string {
    const catalogue = notifyMessages[lang] ?? notifyMessages.en;
    const template = catalogue[delivery.messageKey] ?? notifyMessages.en[delivery.messageKey] ?? delivery.messageKey;
    const params = { ...delivery.params };
    if (params.reason === '') params.reason = catalogue['notify.noReason'] ?? '';
    return fill(template, params);
  }

  async function send(delivery: Delivery, text: string): Promise<void> {
    const { address } = delivery;
    const notifier = options.notifiers[address.channel];
    if (!notifier) {
      logger.warn({ channel: address.channel }, 'no notifier for channel; message dropped');
      return;
    }
    await notifier.send(address, text);
    if (address.channel === 'ussd' && options.sms) {
      await options.sms.send(address.conversationId, text).catch((err: unknown) => {
        logger.warn({ err: String(err), to: maskPhone(address.conversationId) }, 'sms failed');
      });
    }
  }

  return {
    async dispatch(body: NotificationBody): Promise<DispatchResult> {
      const failed = failedPaymentRef(body);
      if (failed !== undefined) await options.onPaymentFailed?.(failed);
      const delivery = deliveryFor(body);
      if (!delivery) return 'ignored';
      // USSD cannot push: its users see their latest outcome at the next dial, on a 182-character
      // screen, so the steps on the way there are not kept for them (their order mark is still raised).
      const tell = !(delivery.address.channel === 'ussd' && delivery.rank < OUTCOME_RANK);
      // The language is read alongside the marks (both in the same tick, so on Redis one write each way),
      // not after them: a refused delivery wastes one read, a told one saves a round trip.
      const [claim, lang] = await Promise.all([
        marks.take({ orderKey: delivery.orderKey, rank: delivery.rank, dedupKey: tell ? delivery.dedupKey : undefined, ttlSeconds: ttl }),
        tell ? language(delivery.address) : undefined,
      ]);
      if (claim.outcome !== 'ok') return claim.outcome;
      if (!tell) return 'ignored';
      try {
        await send(delivery, words(delivery, lang ?? 'en'));
      } catch (err) {
        // Not told: free the mark so the queue's retry (or the service's next attempt) tells it.
        await claim.release();
        throw err;
      }
      logger.info({ event: body.hook.event, key: delivery.dedupKey, channel: delivery.address.channel }, 'notification told');
      return 'sent';
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
