/**
 * The follow-up of an outcome that never came by webhook. Every intent we record (src/conversation/calls/made-records.ts)
 * schedules a check a few minutes later on the queue (a BullMQ delayed job with Redis, so it survives the
 * process that scheduled it; a timer in memory). The check costs nothing when the outcome was told (or is
 * being told): its order mark holds a final rank. Otherwise it makes ONE budgeted read: the payment or
 * request by id, or, when the create's answer (and so the id) was lost, one list read filtered by number,
 * amount, currency and time (a payout request: its first recipient's number, currency and time), matched by
 * our `metadata.ref`. What it finds is told through the dispatcher, deduplicated with the webhook path (same
 * marks). Still no outcome: it checks again later, at growing intervals ({@link FOLLOW_UP_DELAYS_SECONDS}),
 * each time one read.
 *
 * Nothing found is not told as "not made" of a create whose answer was lost: a list read proves no absence
 * (the contract promises no list consistency, a request still in flight or repeated under its
 * Duplicate-Check-Key within the key's 24 hours creates it later), and telling the user to send again could
 * pay twice. The conversation keeps saying the outcome is being confirmed; after the last check the operator
 * is told in the log, with our ref.
 *
 * One exception, decided as src/momo/assumptions.ts ALREADY_SUBMITTED_BELIEVED_FOR says: a create the service
 * answered "already submitted" (409 on our own key, so accepted without an id) is believed only while the
 * service can be believed to hold it. Its first check is the first read; a second read follows at
 * {@link NOT_MADE_CHECK_SECONDS}; when neither shows it, nothing was made (a request cut off before its body
 * arrived holds the key at the service and made nothing): it is journalled (`onNotMade`), the person is told
 * plainly that nothing was sent, and the spend reserved for it is given back (the dispatcher's
 * onPaymentFailed, as for any payment that ended without money moving). Purchases
 * cannot be read at all (the contract shows no read of a purchase): one whose answer was lost is logged for
 * the operator at the first check.
 */
import { metadataRef, type Made, type MadeRecords } from '../conversation/calls/made-records.js';
import type { Logger } from '../log.js';
import { ALREADY_SUBMITTED_BELIEVED_FOR } from '../momo/assumptions.js';
import type { Dispatcher } from './dispatch.js';
import { FINAL_RANK, isFinal, NOT_MADE, recordOrderKey, type Notice } from './events.js';
import type { NotificationMarks } from './marks.js';
import type { ServiceReads } from './reads.js';

/**
 * When an intent's outcome is checked, seconds after the intent: 3 minutes (a webhook comes within seconds;
 * the service retries a failed delivery for a while), 30 minutes, 6 hours (an approval, a schedule), and
 * 25 hours (past the Duplicate-Check-Key's 24 hours, after which no repeat under our key can create it).
 */
export const FOLLOW_UP_DELAYS_SECONDS: readonly number[] = [180, 1800, 6 * 3600, 25 * 3600];

/**
 * When a create answered "already submitted" whose first check found nothing is read again, seconds after the
 * intent: 8 minutes, five after the first read. If that read shows nothing either, nothing was made.
 */
export const NOT_MADE_CHECK_SECONDS = ALREADY_SUBMITTED_BELIEVED_FOR.secondReadSeconds;

/** A queued check: our record's ref and which of the delays it is. */
export interface FollowUpJob {
  ref: string;
  step: number;
}

export interface FollowUpOptions {
  made: MadeRecords;
  marks: NotificationMarks;
  dispatcher: Dispatcher;
  reads: ServiceReads;
  /** Queues a check to run in `delayMs` (idempotent per ref and step). */
  schedule(job: FollowUpJob, delayMs: number): Promise<void>;
  /** The delays. Default {@link FOLLOW_UP_DELAYS_SECONDS}; tests shorten them. */
  delaysSeconds?: readonly number[];
  /** Default {@link NOT_MADE_CHECK_SECONDS}; tests shorten it. */
  notMadeCheckSeconds?: number;
  /**
   * Called (before the person is told) with a record answered "already submitted" of which two reads found
   * nothing: the journal records that nothing was made. Its failure fails the check, which the queue retries.
   */
  onNotMade?: (record: Made) => Promise<void>;
  /** Clock in ms. Default Date.now. */
  now?: () => number;
  logger: Logger;
}

export function createFollowUp(options: FollowUpOptions) {
  const { made, marks, dispatcher, reads, logger } = options;
  const delays = options.delaysSeconds ?? FOLLOW_UP_DELAYS_SECONDS;
  const now = options.now ?? Date.now;

  /** Queues check `step` of `record`, at its delay after the intent. */
  const scheduleStep = (record: Made, step: number) =>
    options.schedule({ ref: record.ref, step }, Math.max(0, record.created + delays[step]! * 1000 - now()));

  const notMadeCheckSeconds = options.notMadeCheckSeconds ?? NOT_MADE_CHECK_SECONDS;

  /** Two reads minutes apart show nothing of a create answered "already submitted": journalled, told, limit back. */
  async function notMade(record: Made): Promise<void> {
    logger.warn(
      { ref: record.ref, kind: record.kind },
      'answered "already submitted", but the service holds nothing of it: told nothing was made',
    );
    await options.onNotMade?.(record);
    const notice: Notice = {
      kind: record.kind === 'payment' ? 'payment' : 'request',
      id: '',
      state: NOT_MADE,
      amount: record.amount,
      currency: record.currency,
      phone: record.payee,
      reason: '',
      ref: record.ref,
    };
    await dispatcher.tell(record, notice, 'read');
  }

  /** The outcome was told or is being told: a final rank on the record's order mark. */
  async function settled(record: Made): Promise<boolean> {
    return (await marks.seen(recordOrderKey(record))).rank >= FINAL_RANK;
  }

  return {
    /** Schedules the first check of a new intent (MadeRecords.onIntent). */
    async intended(record: Made): Promise<void> {
      if (delays.length > 0) await scheduleStep(record, 0);
    },

    /** One check: nothing when the outcome was told; else one read, its outcome told, or a later check. */
    async check(job: FollowUpJob): Promise<void> {
      let record = await made.byRef(job.ref);
      if (!record || record.refused) return;
      if (record.kind === 'purchase') {
        if (!record.accepted) {
          logger.error(
            { ref: record.ref },
            'purchase outcome unknown (its answer was lost and a purchase cannot be read): check it with the vending group',
          );
        }
        return;
      }
      if (await settled(record)) return;
      const found = record.id ? await reads.get(record.kind, record.id) : await reads.find(record);
      // Answered "already submitted" (accepted, no id) and not found: read once more, then believed not made.
      if (!found && record.accepted && !record.id) {
        if (job.step === 0) {
          await options.schedule(
            { ref: record.ref, step: 1 },
            Math.max(0, record.created + notMadeCheckSeconds * 1000 - now()),
          );
          return;
        }
        await notMade(record);
        return;
      }
      if (found) {
        if (!record.id) record = (await made.accepted(record.ref, found.id)) ?? record;
        if (found.ref === '' || found.ref === metadataRef(record)) {
          await dispatcher.recipientsOf(record, found);
          await dispatcher.tell(record, found, 'read');
          if (isFinal(found)) return;
        }
      }
      const next = job.step + 1;
      if (next < delays.length) {
        await scheduleStep(record, next);
        return;
      }
      logger.error(
        { ref: record.ref, kind: record.kind, id: record.id, state: found?.state ?? 'not found' },
        'outcome still unknown after the last check: the user was told it is being confirmed; check it with the service',
      );
    },
  };
}

export type FollowUp = ReturnType<typeof createFollowUp>;
