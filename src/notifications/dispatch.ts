/**
 * Works one notice: finds OUR record of what it is about (a notice about something this product did not
 * make is told to nobody), confirms a final state by one read when notifications carry no credentials,
 * makes sure each state change is told at least once and shown once and an older state never follows a
 * newer one, and hands the words (from our record) to the chat's notifier.
 *
 * Told at least once, shown once: the marks give a short lease while telling (renewed while the notifier
 * works) and the long dedup mark only after the notifier succeeded. A notifier failure frees the lease and
 * throws, so the queue retries the job with backoff; a lease held by another worker throws {@link BusyError}
 * (the queue comes back later: the holder has told it by then, or died and its lease ran out).
 */
import { Decimal } from 'decimal.js';
import { metadataRef, type Made, type MadeRecords } from '../conversation/calls/made-records.js';
import type { Address, Channel, Notifier } from '../conversation/types.js';
import type { Lang } from '../../flows/types.js';
import { events as journalEvents, type JournalEvent, type MoneyJournal } from '../journal/index.js';
import type { OperationState } from '../journal/schema.js';
import type { Logger } from '../log.js';
import { ourWord } from '../reconciliation/match.js';
import {
  deliveryFor,
  isFinal,
  marksOf,
  PAYMENT_FAILED,
  recordIdOf,
  recordKindOf,
  type Delivery,
  type Notice,
} from './events.js';
import type { Lease, NotificationMarks } from './marks.js';
import { notifyText } from './messages.js';
import type { ServiceReads } from './reads.js';
import type { SmsJob } from './sms.js';

export interface DispatcherOptions {
  /** The order and dedup marks (RedisMarks shared by every process, or MemoryMarks for one). */
  marks: NotificationMarks;
  /** Our records of what we made: the only notices told are about one of them. */
  made: MadeRecords;
  /**
   * True when notifications are authenticated (MOMO_WEBHOOK_USER/PASSWORD configured: the receiver checks
   * Basic auth), so a body's state is believed. False: a final state is told only once one read of the
   * record from the service (`reads`, through the read budget) agrees.
   */
  credentialsConfigured: boolean;
  /** The service's reads; required when `credentialsConfigured` is false. */
  reads?: ServiceReads;
  /** One per channel that can take a message; a channel without one is skipped with a log line. */
  notifiers: Partial<Record<Channel, Notifier>>;
  /**
   * Also texts USSD users their outcomes when set: queues the SMS of an outcome (sms.ts sends it once, retried
   * by its queue), before the outcome is kept for the next dial.
   */
  sms?: (job: SmsJob) => Promise<void>;
  /** The user's language, when known. Default: English. */
  languageOf?: (address: Address) => Promise<Lang | undefined>;
  /** How long dedup and order marks are kept, in seconds. Default 14 days (events are kept 30). */
  markTtlSeconds?: number;
  /**
   * How long a lease on a state change being told lasts unless renewed, ms. Default 30000: renewed every
   * third of it while the notifier works (a chat API may take tens of seconds through its own retries), so
   * only a worker that died leaves it to run out, and its delivery is told again within about that long.
   */
  leaseMs?: number;
  /**
   * Called with our ref of a payment of ours that ended without money moving (processed_with_errors, rejected,
   * cancelled), as believed here (our record; a read without credentials), before it is told (its spend
   * reservation goes back with the journalled state: JournalEvent.giveBack, once only whatever the repeats),
   * and forgets names that failed the network's check (`reason`, its last_error: flow-calls.ts forgetFailedName).
   * Default: none.
   */
  onPaymentFailed?: (ref: string, reason?: string) => Promise<unknown>;
  /**
   * Called with our ref of a payment of ours and its recipients' states, as believed here (an authenticated
   * body; without credentials only the read that confirms an outcome), before the state is told, for every
   * such notice (repeats included: the callee keeps states idempotently). Its failure fails the notice, which
   * the queue retries. Default: none. The payouts' messages (src/payouts) are updated from it.
   */
  onRecipients?: (ref: string, recipients: NonNullable<Notice['recipients']>) => Promise<void>;
  /**
   * The journal (src/journal): each believed state is journalled (how learned: `notification`, or `read` from
   * the follow-up) and each telling (channel, to whom, the words) once told; through the buffered writer, so
   * nothing here waits for the database. Default: none.
   */
  journal?: MoneyJournal;
  logger: Logger;
}

/** A believed notice's state in the journal's words: a collection that matched a request completes it. */
function journalState(record: Made, notice: Notice): OperationState {
  if (notice.kind === 'collection')
    return ['failed', 'reversed'].includes(notice.status ?? '') ? 'submitted' : 'completed';
  return ourWord(record.kind === 'payment' ? 'payment' : 'request', notice.state);
}

/** Default of DispatcherOptions.markTtlSeconds: 14 days (events are kept 30). */
export const MARK_TTL_SECONDS = 14 * 24 * 3600;
/** Default of DispatcherOptions.leaseMs. */
export const LEASE_MS = 30_000;

/**
 * `unknown`: about nothing we made (told to nobody); `unconfirmed`: a final state the service's read did not
 * confirm (told to nobody).
 */
export type DispatchResult = 'sent' | 'duplicate' | 'stale' | 'ignored' | 'unknown' | 'unconfirmed';

/** Another worker holds the lease on this state change: try again later. */
export class BusyError extends Error {
  constructor(key: string) {
    super(`another worker is telling ${key}`);
    this.name = 'BusyError';
  }
}

/** Names of the fields where a notice's body differs from our record (amount, currency, number). */
function disagreements(notice: Notice, made: Made): string[] {
  const differs: string[] = [];
  const amount = (a: string) => {
    try {
      return new Decimal(a);
    } catch {
      return null;
    }
  };
  const given = amount(notice.amount);
  if (notice.amount !== '' && !(given && amount(made.amount)?.eq(given))) differs.push('amount');
  if (notice.currency !== '' && notice.currency.toUpperCase() !== made.currency.toUpperCase()) differs.push('currency');
  if (notice.phone !== '' && notice.phone.replace(/^\+?/, '+') !== made.payee) differs.push('phone');
  return differs;
}

export function createDispatcher(options: DispatcherOptions) {
  const { marks, made, logger } = options;
  const ttl = options.markTtlSeconds ?? MARK_TTL_SECONDS;
  const leaseMs = options.leaseMs ?? LEASE_MS;
  const trusted = options.credentialsConfigured;
  if (!trusted && !options.reads)
    throw new Error('without notification credentials the dispatcher needs the service reads to confirm outcomes');

  /** The user's language; a failed read is English, not a failed notification. */
  async function language(address: Address): Promise<Lang | undefined> {
    try {
      return await options.languageOf?.(address);
    } catch {
      return undefined;
    }
  }

  const words = (delivery: Delivery, lang: Lang): string => notifyText(lang, delivery.messageKey, delivery.params);

  /** The full words go to a chat and the SMS; the USSD inbox keeps the short form for the next dial. */
  async function send(
    delivery: Delivery,
    text: string,
    lang: Lang,
    told: (channel: string, to: string) => void,
  ): Promise<void> {
    const { address } = delivery;
    const notifier = options.notifiers[address.channel];
    if (!notifier) {
      logger.warn({ channel: address.channel }, 'no notifier for channel; message dropped');
      return;
    }
    // Queued first: should keeping it for the next dial fail, the retry queues the same SMS again, and its
    // marks send it once.
    if (address.channel === 'ussd' && options.sms) {
      await options.sms({ to: address.conversationId, text, key: delivery.dedupKey });
      told('sms', address.conversationId);
    }
    await notifier.send(
      address,
      address.channel === 'ussd' ? notifyText(lang, delivery.messageKey, delivery.params, { forDial: true }) : text,
      { key: delivery.messageKey, params: delivery.params, from: 'notify' },
    );
    told(address.channel, `${address.channel}:${address.conversationId}`);
  }

  /**
   * Our record of what the notice is about, by the service's id; else, for a create whose answer (with the
   * id) was lost or a later occurrence of a recurring request, by the ref the body names, linked then
   * (believed from an authenticated body, otherwise only when a read of that id shows our ref: refs are
   * random and never leave the service and us). The read, when one was made, comes along.
   */
  async function recordOf(notice: Notice): Promise<{ made: Made; read?: Notice } | null> {
    const kind = recordKindOf(notice.kind);
    const id = recordIdOf(notice);
    if (!id) return null;
    const known = await made.byId(kind, id);
    if (known) return { made: known };
    if (notice.kind === 'collection') return null;
    const intent = await made.byRef(notice.ref);
    if (!intent || intent.kind !== kind || intent.refused) return null;
    // A request of ours with another id: a later occurrence of a recurring request we made (the service makes
    // each occurrence a new request carrying the series' metadata); any other record with another id is
    // another payment. With this id, its link is being written.
    const occurrence = intent.id !== undefined && intent.id !== id;
    if (occurrence && kind !== 'request') return null;
    let read: Notice | undefined;
    if (!trusted) {
      // A read is spent only on an outcome: an open state of an unlinked intent waits for its link.
      if (!isFinal(notice)) return null;
      read = (await options.reads!.get(notice.kind, id)) ?? undefined;
      if (read?.ref !== intent.ref) return null;
    }
    const linked = occurrence ? await made.occurrence(intent, id) : await made.accepted(intent.ref, id);
    return linked ? { made: linked, read } : null;
  }

  /**
   * The final state as the service reads it, when it confirms the notice's record (a collection: matched to
   * our request, and its money arrived); null when it shows no outcome. It may differ from the notice's.
   */
  async function confirm(record: Made, notice: Notice, read?: Notice): Promise<Notice | null> {
    const actual = read ?? (await options.reads!.get(notice.kind, notice.id));
    const ours =
      actual !== null &&
      (notice.kind === 'collection'
        ? actual.requestId === record.id && ['successful', 'cashed_out'].includes(actual.status ?? '')
        : actual.ref === '' || actual.ref === metadataRef(record));
    if (!actual || !ours) {
      logger.warn(
        { kind: notice.kind, id: notice.id, claimed: notice.state },
        'the service does not confirm this notification; told to nobody',
      );
      return null;
    }
    if (actual.state !== notice.state) {
      logger.warn(
        { kind: notice.kind, id: notice.id, claimed: notice.state, actual: actual.state },
        'the service reads another state than the notification says',
      );
    }
    return isFinal(actual) ? actual : null;
  }

  /**
   * Runs `work` while keeping `lease` (renewed every third of its length), then lets it go. A failed renewal
   * is logged and the next one tries again; a lease that runs out lets another worker tell the notice, which
   * its dedup mark then answers (at least once, never lost).
   */
  async function keeping<T>(lease: Lease, work: () => Promise<T>): Promise<T> {
    const renew = () => {
      lease
        .renew()
        .catch((err: unknown) =>
          logger.warn({ err: String(err) }, 'notification lease not renewed; retried at the next renewal'),
        );
    };
    const renewal = setInterval(renew, Math.max(1, Math.floor(leaseMs / 3)));
    try {
      return await work();
    } finally {
      clearInterval(renewal);
    }
  }

  /** Hands a believed payment notice's recipients on (onRecipients). */
  async function recipientsOf(record: Made, notice: Notice): Promise<void> {
    if (record.kind === 'payment' && notice.kind === 'payment' && notice.recipients && options.onRecipients)
      await options.onRecipients(record.ref, notice.recipients);
  }

  /**
   * Journals a believed state: through the buffered writer (nothing waits for the database), but a state the
   * follow-up read (`read`) is written before it is told, awaited, so the journal holds it when the check that
   * read it is settled (src/notifications/owed-poller.ts); buffered should the database not take it then.
   */
  async function journalStateOf(source: 'notification' | 'read', event: JournalEvent): Promise<void> {
    const journal = options.journal;
    if (!journal) return;
    // A state read, and one that gives a reservation back (before the person is told), are written at once.
    if ((source !== 'read' && !event.giveBack) || !journal.append) {
      journal.write(event);
      return;
    }
    try {
      await journal.append(event);
    } catch (err) {
      logger.warn({ err: String(err), ref: event.ref }, 'a state read was not journalled at once; kept for later');
      journal.write(event);
    }
  }

  /**
   * Tells `notice` about our record `record` once: marks, words from the record, the notifier. `source`: how
   * the state was learned, as the journal keeps it.
   */
  async function tell(
    record: Made,
    notice: Notice,
    source: 'notification' | 'read' = 'notification',
  ): Promise<DispatchResult> {
    const state = journalState(record, notice);
    const failed = record.kind === 'payment' && PAYMENT_FAILED.has(notice.state);
    await journalStateOf(
      source,
      journalEvents.state(record.ref, {
        state,
        serviceState: notice.kind === 'collection' ? `collection.${notice.status ?? notice.state}` : notice.state,
        source,
        ...(notice.kind !== 'collection' && notice.id !== '' ? { serviceId: notice.id } : {}),
        data: {
          ...(notice.reason ? { reason: notice.reason } : {}),
          ...(notice.kind === 'collection' ? { collection: notice.id } : {}),
        },
        ...(notice.kind === 'collection' ? { key: `${record.ref}:state:collection:${notice.id}:${source}` } : {}),
        // Ended without money moving: its reservation goes back with the state that says so.
        ...(failed ? { giveBack: 'ended without money moving' as const } : {}),
      }),
    );
    if (failed) await options.onPaymentFailed?.(record.ref, notice.reason);
    const delivery = deliveryFor(record, notice);
    if (!delivery) return 'ignored';
    // USSD cannot push: its users see their latest outcome (or what asks someone to act) at the next dial,
    // on a 182-character screen, so the steps on the way there are not kept for them (their order mark is
    // still raised).
    const tellIt = delivery.forUssd || delivery.address.channel !== 'ussd';
    // The language is read alongside the marks (both in the same tick, so on Redis one write each way).
    const [claim, lang] = await Promise.all([
      marks.take({
        orderKey: delivery.orderKey,
        rank: delivery.rank,
        dedupKey: tellIt ? delivery.dedupKey : undefined,
        ttlSeconds: ttl,
        leaseMs,
      }),
      tellIt ? language(delivery.address) : undefined,
    ]);
    if (claim.outcome === 'busy') throw new BusyError(delivery.dedupKey);
    if (claim.outcome !== 'ok') {
      logger.debug(
        { key: delivery.dedupKey, outcome: claim.outcome },
        'notification not told: told before, or a newer state was',
      );
      return claim.outcome;
    }
    if (!tellIt) return 'ignored';
    try {
      const text = words(delivery, lang ?? 'en');
      const told = (channel: string, to: string) =>
        options.journal?.write(
          journalEvents.telling(record.ref, {
            channel,
            to,
            text,
            outcome: state,
            source,
            key: `${record.ref}:telling:${channel}:${delivery.dedupKey}`,
          }),
        );
      await keeping(claim, () => send(delivery, text, lang ?? 'en', told));
    } catch (err) {
      // Not told: free the lease so the queue's retry (or the service's next attempt) tells it. Should the
      // release fail, the lease runs out on its own and the retry waits for that.
      await claim
        .release()
        .catch((releaseErr: unknown) =>
          logger.warn(
            { err: String(releaseErr), key: delivery.dedupKey },
            'notification lease not released; it runs out on its own',
          ),
        );
      throw err;
    }
    // Told. Should the long mark not be written, the lease runs out and a repeat is told again: at least once.
    await claim
      .done()
      .catch((err: unknown) =>
        logger.warn({ err: String(err), key: delivery.dedupKey }, 'told, but its dedup mark was not written'),
      );
    logger.info(
      { kind: notice.kind, state: notice.state, key: delivery.dedupKey, channel: delivery.address.channel },
      'notification told',
    );
    return 'sent';
  }

  return {
    /** One notice as received: believed only for our record, confirmed by a read without credentials. */
    async dispatch(notice: Notice): Promise<DispatchResult> {
      // The creation itself was told by the conversation that made it (and races our link of its id).
      if (notice.state === 'new') return 'ignored';
      const found = await recordOf(notice);
      if (!found) {
        logger.warn(
          { kind: notice.kind, id: notice.id, state: notice.state },
          'notification about something this product did not make; told to nobody',
        );
        return 'unknown';
      }
      const record = found.made;
      const differs = disagreements(notice, record);
      if (differs.length > 0) {
        logger.warn(
          { kind: notice.kind, id: notice.id, fields: differs, ref: record.ref },
          'notification body disagrees with our record; our record is told',
        );
      }
      if (trusted) await recipientsOf(record, notice);
      if (trusted || !isFinal(notice)) return tell(record, notice);
      // No read is spent on a state change already told or overtaken, nor on one another worker is reading:
      // checked and held in one step (marks.ts hold), since the one who read it tells it before letting go.
      const { orderKey, dedupKey, rank } = marksOf(record, notice);
      const reading = await marks.hold({ orderKey, dedupKey, rank, leaseMs });
      if (reading.outcome === 'busy') throw new BusyError(dedupKey);
      if (reading.outcome !== 'ok') return reading.outcome;
      try {
        const confirmed = await keeping(reading, () => confirm(record, notice, found.read));
        if (confirmed) await recipientsOf(record, confirmed);
        return confirmed ? await tell(record, confirmed) : 'unconfirmed';
      } finally {
        // A lease not released runs out on its own; the next attempt waits for that.
        await reading
          .release()
          .catch((err: unknown) =>
            logger.warn({ err: String(err), key: dedupKey }, 'notification lease not released; it runs out on its own'),
          );
      }
    },
    tell,
    /** A payment's recipients read from the service (the follow-up): handed on as a believed notice's are. */
    recipientsOf,
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
