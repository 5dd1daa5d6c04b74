/**
 * Outcomes by SMS for USSD users (USSD cannot push): the dispatcher queues one job per outcome told to a USSD
 * address (`SMS_PROVIDER` set), and the SMS queue's worker sends it once: the job takes the notification marks
 * under the outcome's own dedup key (`sms:<dedupKey>`), so a repeated job, a second process or a retry after
 * a lost reply sends nothing more once one send succeeded; a failed send frees its lease and throws, so the
 * queue retries it with backoff. Numbers are masked in every log line; the text is never logged.
 *
 * Providers:
 * - Africa's Talking (`SMS_PROVIDER=africastalking`): `POST {AT_SMS_URL}` (default the live
 *   https://api.africastalking.com/version1/messaging) with form fields `username, to, message[, from]`, headers
 *   `apiKey` and `Accept: application/json`; the answer `{ SMSMessageData: { Message, Recipients: [{ number,
 *   status, statusCode, messageId, cost }] } }`, a recipient's statusCode 100 (Processed), 101 (Sent) or 102
 *   (Queued) meaning accepted. 401-409 (risk hold, invalid sender id or number, balance, blacklist, routing,
 *   do-not-disturb) are refusals a retry does not change; anything else (5xx, no answer) is retried.
 * - The demo's outbox (embedded sandbox, no provider): the messages the phone would receive, which the USSD
 *   simulator shows (`GET /simulator/sms`).
 */
import { z } from 'zod';
import { maskPhone, type Logger } from '../log.js';
import type { NotificationMarks } from './marks.js';

/** Texts a phone. Rejects when the message was not accepted (the queue retries); {@link SmsRefused} when retrying cannot help. */
export interface SmsSender {
  send(phoneNumber: string, text: string): Promise<void>;
}

/** One outcome to text: the number (international `+` form), the words, and the outcome's dedup key. */
export interface SmsJob {
  to: string;
  text: string;
  key: string;
}

/** The provider refused the message for good (invalid number, blacklist...): not retried. */
export class SmsRefused extends Error {
  constructor(readonly status: string) {
    super(`the SMS provider refused the message: ${status}`);
    this.name = 'SmsRefused';
  }
}

/** Africa's Talking's answer to a send; added fields are tolerated. */
const atAnswer = z.object({
  SMSMessageData: z.object({
    Message: z.string().optional(),
    Recipients: z.array(
      z.looseObject({ status: z.string(), statusCode: z.coerce.number().int(), messageId: z.string().optional() }),
    ),
  }),
});

/** Recipient statusCodes of a message accepted. */
const ACCEPTED = new Set([100, 101, 102]);

export interface AfricasTalkingSmsOptions {
  username: string;
  apiKey: string;
  /** Sender id or short code (SMS_SENDER_ID); unset: the account's default sender. */
  from?: string;
  /** The messaging endpoint (AT_SMS_URL). */
  url: string;
  /** Injected for tests. Default globalThis.fetch. */
  fetch?: typeof fetch;
  /** A send that takes longer is abandoned (and retried by the queue). Default 15000 ms. */
  timeoutMs?: number;
  logger: Logger;
}

/** Africa's Talking's SMS API as an {@link SmsSender}. */
export function africasTalkingSms(options: AfricasTalkingSmsOptions): SmsSender {
  const doFetch = options.fetch ?? fetch;
  return {
    async send(to, message) {
      const form = new URLSearchParams({ username: options.username, to, message });
      if (options.from) form.set('from', options.from);
      const res = await doFetch(options.url, {
        method: 'POST',
        headers: {
          apiKey: options.apiKey,
          Accept: 'application/json',
          'Content-Type': 'application/x-www-form-urlencoded',
        },
        body: form,
        signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
      });
      const body = await res.text();
      if (!res.ok) throw new Error(`Africa's Talking SMS answered ${res.status}`);
      let parsed;
      try {
        parsed = atAnswer.safeParse(JSON.parse(body));
      } catch {
        parsed = undefined;
      }
      if (!parsed?.success) throw new Error("Africa's Talking SMS answered without SMSMessageData.Recipients");
      const recipient = parsed.data.SMSMessageData.Recipients[0];
      if (!recipient) throw new SmsRefused(parsed.data.SMSMessageData.Message ?? 'no recipient accepted');
      if (ACCEPTED.has(recipient.statusCode)) {
        options.logger.info(
          { to: maskPhone(to), status: recipient.status, messageId: recipient.messageId },
          'sms accepted',
        );
        return;
      }
      if (recipient.statusCode >= 401 && recipient.statusCode <= 409)
        throw new SmsRefused(`${recipient.statusCode} ${recipient.status}`);
      throw new Error(`Africa's Talking SMS status ${recipient.statusCode} ${recipient.status}`);
    },
  };
}

/** A message the demo's phone received. */
export interface SmsMessage {
  to: string;
  text: string;
  /** ISO time it was sent. */
  at: string;
}

/** The demo's SMS outbox: what would have been texted, kept in memory (the latest {@link OUTBOX_KEPT}). */
export class SmsOutbox implements SmsSender {
  private readonly messages: SmsMessage[] = [];

  async send(to: string, text: string): Promise<void> {
    this.messages.push({ to, text, at: new Date().toISOString() });
    if (this.messages.length > OUTBOX_KEPT) this.messages.shift();
  }

  /** The messages sent to `phone`, oldest first. */
  to(phone: string): SmsMessage[] {
    return this.messages.filter((m) => m.to === phone);
  }
}

/** Messages the demo's outbox keeps. */
export const OUTBOX_KEPT = 1000;

export interface SmsWorkOptions {
  sender: SmsSender;
  marks: NotificationMarks;
  /** How long an SMS's dedup mark is kept, in seconds (the notification marks' TTL). */
  ttlSeconds: number;
  /** Lease while sending, ms (the notification lease). */
  leaseMs: number;
  logger: Logger;
}

/** The SMS queue's worker: each outcome's SMS sent once (see the file comment). */
export function smsWork(options: SmsWorkOptions) {
  const { marks, logger } = options;
  return async (job: SmsJob): Promise<void> => {
    const key = `sms:${job.key}`;
    const claim = await marks.take({
      orderKey: key,
      rank: 0,
      dedupKey: key,
      ttlSeconds: options.ttlSeconds,
      leaseMs: options.leaseMs,
    });
    if (claim.outcome === 'duplicate' || claim.outcome === 'stale') return;
    if (claim.outcome === 'busy') throw new Error('another worker is sending this SMS');
    try {
      await options.sender.send(job.to, job.text);
    } catch (err) {
      if (err instanceof SmsRefused) {
        // Retrying cannot change a refusal: the outcome still waits at the next dial.
        logger.warn({ to: maskPhone(job.to), reason: err.status }, 'sms refused by the provider; not retried');
        // Without its mark the lease runs out and a retry meets the same refusal: logged, never sent twice.
        await claim
          .done()
          .catch((markErr: unknown) =>
            logger.warn(
              { err: String(markErr), to: maskPhone(job.to) },
              'sms refused, and its dedup mark was not written',
            ),
          );
        return;
      }
      // A lease not released runs out on its own; the queue's retry waits for that.
      await claim
        .release()
        .catch((releaseErr: unknown) =>
          logger.warn(
            { err: String(releaseErr), to: maskPhone(job.to) },
            'sms lease not released; it runs out on its own',
          ),
        );
      logger.warn(
        { to: maskPhone(job.to), err: err instanceof Error ? err.message : String(err) },
        'sms not sent; the queue retries it',
      );
      throw err;
    }
    await claim
      .done()
      .catch((err: unknown) =>
        logger.warn({ err: String(err), to: maskPhone(job.to) }, 'sms sent, but its dedup mark was not written'),
      );
  };
}
