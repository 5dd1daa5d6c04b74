/**
 * Notifications: the service's webhooks pushed back into the chat that started each operation, believed
 * only for what this product made (src/conversation/calls/made-records.ts).
 * receiver (HTTP, body -> Notice) -> queue (memory or BullMQ; the notices of one event-loop turn share a
 * job) -> dispatcher (our record, a confirming read without credentials, order, lease and dedup, words) ->
 * channel notifier. Beside it, the follow-up queue checks every intent's outcome a few minutes later
 * (follow-up.ts) and tells what it reads through the same dispatcher.
 */
import { createHash } from 'node:crypto';
import type { Made, MadeRecords } from '../conversation/calls/made-records.js';
import type { Address, Channel, Notifier } from '../conversation/types.js';
import type { Lang } from '../../flows/types.js';
import type { DirectRoutes } from '../http/direct-routes.js';
import type { Logger } from '../log.js';
import type { MomoClient } from '../momo/index.js';
import { createLimiter, tickBatcher } from './batch.js';
import type { MoneyJournal } from '../journal/index.js';
import { createDispatcher, LEASE_MS, MARK_TTL_SECONDS } from './dispatch.js';
import { notificationBody, parseNotice, recordIdOf, recordKindOf, type Notice } from './events.js';
import { createFollowUp, type FollowUpJob } from './follow-up.js';
import { createMarks, lettingGo, type NotificationMarks } from './marks.js';
import { owedPoller } from './owed-poller.js';
import type { OwedOutcomes } from '../journal/owed.js';
import { createPartedQueue, DEFAULT_CONCURRENCY, type JobQueue, type QueueOptions } from './queue.js';
import { moveOldJobs, oldQueues, type OldQueue } from './legacy-queues.js';
import { serviceReads } from './reads.js';
import { within } from '../within.js';
import { smsWork, type SmsJob, type SmsSender } from './sms.js';
import { addReceiverRoutes } from './receiver.js';
import { verifyCollection, type VerifyPolicy } from './verify.js';
import type { RedisTarget } from '../redis/connect.js';
import { queuePrefixesOf } from '../store/keys.js';

export { ensureWebhooks } from './register.js';
export { EVENT_TYPES, deliveryFor, parseChat, parseNotice } from './events.js';
export { africasTalkingSms, SmsOutbox, type SmsSender } from './sms.js';
export { createPartedQueue, MemoryQueue, BullQueue, type JobQueue } from './queue.js';
export { createMarks, MemoryMarks, RedisMarks, type NotificationMarks } from './marks.js';

export interface NotificationsOptions {
  /** Our records of what we made: notices are believed for these only; verification consumes open requests. */
  made: MadeRecords;
  /** The service's client: the confirming reads and the follow-ups' reads (through its read budget). */
  client: MomoClient;
  /**
   * Basic auth credentials the service sends (MOMO_WEBHOOK_USER/PASSWORD). Set: the routes refuse any
   * other caller and a body's state is believed. Unset: anyone may post, and a final state is told only once
   * one read of it from the service agrees.
   */
  basicAuth?: { user: string; password: string };
  /** Redis (src/redis/connect.ts) for the shared, restart-proof queues and the order and dedup marks; unset: in memory. */
  redisUrl?: RedisTarget;
  /**
   * The product's key prefix (REDIS_KEY_PREFIX): the marks' keys start with it, and the queues' tags carry its
   * name (keys.ts queuePrefixesOf). Default `momo:`, the store's.
   */
  keyPrefix?: string;
  /** The order and dedup marks. Default: in Redis with `redisUrl`, else in memory; closed by stop(). */
  marks?: NotificationMarks;
  notifiers: Partial<Record<Channel, Notifier>>;
  /**
   * Texts USSD users the outcomes told to them (SMS_PROVIDER; the demo's outbox), once per outcome through
   * its own queue (`<queueName>-sms`, retried with backoff). Unset: outcomes wait for the next dial only.
   */
  sms?: SmsSender;
  verify: VerifyPolicy;
  languageOf?: (address: Address) => Promise<Lang | undefined>;
  /**
   * The queues' settings; `concurrency` (default 32) bounds both the jobs worked at once and the
   * notifications dispatched at once over all of them.
   */
  queue?: Partial<Omit<QueueOptions, 'logger'>>;
  /**
   * The BullMQ queue's name; the follow-ups' is it with `-follow-ups`, the texts' with `-sms`. Default
   * `momo-notifications`; the product names it for its organization ({@link notificationQueueName}).
   */
  queueName?: string;
  /** Most notifications in one queued job. Default 50. */
  maxBatch?: number;
  /** The follow-up's delays in seconds. Default FOLLOW_UP_DELAYS_SECONDS (3 min, 30 min, 6 h, 25 h). */
  followUpDelaysSeconds?: readonly number[];
  /** FollowUpOptions.notMadeCheckSeconds: the second read of an "already submitted". Default 8 minutes. */
  notMadeCheckSeconds?: number;
  /** FollowUpOptions.onNotMade: journals an "already submitted" of which the service holds nothing. */
  onNotMade?: (record: Made) => Promise<void>;
  /** Lease on a state change being told, ms (DispatcherOptions.leaseMs). Default 30000. */
  leaseMs?: number;
  /**
   * DispatcherOptions.onPaymentFailed: gives a failed payment's spend reservation back, and forgets names that
   * failed the network's check (`reason`: the payment's last_error).
   */
  onPaymentFailed?: (ref: string, reason?: string) => Promise<unknown>;
  /** DispatcherOptions.onRecipients: a payout's recipients' states (src/payouts). */
  onRecipients?: (ref: string, recipients: NonNullable<Notice['recipients']>) => Promise<void>;
  /** DispatcherOptions.journal: states and tellings journalled (buffered). */
  journal?: MoneyJournal;
  /**
   * The outcomes owed to people, kept in the database (src/journal/owed.ts; each intent's row is written with it,
   * recordMade's owedFirstCheckSeconds): the follow-up's checks are scheduled there and worked by the owed
   * poller (./owed-poller.ts), one process at a time, instead of the follow-up queue in Redis (which still works
   * the jobs an earlier release queued). Unset: the follow-up queue schedules them.
   */
  owed?: OwedOutcomes;
  /** OwedPollerOptions.everyMs: between the owed poller's ticks. Default 5000. */
  owedPollMs?: number;
  logger: Logger;
}

/**
 * The notification queue's name for the organization of `apiKey` (a digest of it; the key is never stored):
 * every process of one deployment shares it, and two deployments sharing a Redis have one each. Not of the
 * service's address, which may differ between processes behind different proxies: a queue named by it would
 * leave a process's jobs to nobody after a restart with another address.
 */
export function notificationQueueName(apiKey: string): string {
  return `momo-notifications-${createHash('sha256').update(apiKey).digest('hex').slice(0, 12)}`;
}

/** One queued job: the notices received in one turn of the event loop (see batch.ts). */
export type NotificationJob = Notice[];

/**
 * What puts a notice in its part of the queue: the record it is about as the service names it (its kind and
 * id; a collection, its request's), which every notice of one payment carries (our ref, `metadata.ref`, only
 * some), so a payment's notices share a part. Their order and dedup are the dispatcher's marks'.
 */
const noticeKey = (notice: Notice): string => `${recordKindOf(notice.kind)}:${recordIdOf(notice) ?? notice.id}`;

/** Follow-ups wait on the read budget (30 a minute): a few at once is all it lets through. */
const FOLLOW_UP_CONCURRENCY = 4;

/** The notices of a job; one queued by an earlier version holds bodies (one, or an array): read here. */
function noticesOf(job: NotificationJob | unknown): Notice[] {
  return (Array.isArray(job) ? job : [job]).flatMap((item: unknown) => {
    if (typeof item !== 'object' || item === null || !('hook' in item)) return [item as Notice];
    const body = notificationBody.safeParse(item);
    const parsed = body.success ? parseNotice(body.data) : null;
    return parsed?.ok && parsed.notice ? [parsed.notice] : [];
  });
}

export function createNotifications(options: NotificationsOptions) {
  const { logger, made } = options;
  const name = options.queueName ?? 'momo-notifications';
  const prefixes = queuePrefixesOf(options.keyPrefix);
  // Each queue spanning every payment is in parts of their own tag on Redis (keys.ts queuePrefixes; one queue
  // in memory), a job in the part of its payment: on a cluster they spread over the masters, and an add waits
  // for the replicas of its own part's master. The receiver answers the service on the add: on Sentinel or a
  // cluster, once the replicas hold the job. A turn's batch holding notices of several parts is cut in one job
  // a part.
  const queue = createPartedQueue<NotificationJob>(
    'notifications',
    name,
    options.redisUrl,
    { ...options.queue, replicated: 'required', logger },
    (job) => noticeKey(job[0]!),
    (job) => {
      const pieces = new Map<string, Notice[]>();
      for (const notice of job) {
        const part = prefixes.part('notifications', noticeKey(notice));
        const piece = pieces.get(part);
        if (piece) piece.push(notice);
        else pieces.set(part, [notice]);
      }
      return [...pieces.values()];
    },
    prefixes,
  );
  // Added with the intent, before the money call: on Sentinel or a cluster it waits for the replicas (a failover
  // during the call would drop it, and with it the check of an outcome whose notification never comes), but never
  // fails the payment's way for a replica that lags. In the part of the intent's ref.
  const followUps = createPartedQueue<FollowUpJob>(
    'followUps',
    `${name}-follow-ups`,
    options.redisUrl,
    { ...options.queue, concurrency: FOLLOW_UP_CONCURRENCY, replicated: 'waited', logger },
    (job) => job.ref,
    undefined,
    prefixes,
  );
  const marks = lettingGo(options.marks ?? createMarks(options.redisUrl, options.keyPrefix, logger));
  const reads = serviceReads(options.client);
  const texts = options.sms
    ? createPartedQueue<SmsJob>(
        'sms',
        `${name}-sms`,
        options.redisUrl,
        { ...options.queue, logger },
        (job) => job.key,
        undefined,
        prefixes,
      )
    : undefined;
  const dispatcher = createDispatcher({
    marks,
    made,
    credentialsConfigured: options.basicAuth !== undefined,
    reads,
    notifiers: options.notifiers,
    ...(texts ? { sms: (job: SmsJob) => texts.add(job, { id: `sms:${job.key}` }) } : {}),
    languageOf: options.languageOf,
    leaseMs: options.leaseMs,
    onPaymentFailed: options.onPaymentFailed,
    onRecipients: options.onRecipients,
    journal: options.journal,
    logger,
  });
  const queueFollowUp = (job: FollowUpJob, delayMs: number) =>
    followUps.add(job, { id: `follow-up:${job.ref}:${job.step}`, delayMs });
  const { owed } = options;
  const followUp = createFollowUp({
    made,
    marks,
    dispatcher,
    reads,
    // With owed outcomes, the database keeps the next check; one without a row there (an intent of an earlier
    // release) stays on the queue.
    schedule: owed
      ? async (job, delayMs) => {
          if (!(await owed.reschedule(job.ref, job.step, new Date(Date.now() + delayMs))))
            await queueFollowUp(job, delayMs);
        }
      : queueFollowUp,
    delaysSeconds: options.followUpDelaysSeconds,
    notMadeCheckSeconds: options.notMadeCheckSeconds,
    onNotMade: options.onNotMade,
    logger,
  });
  // With owed outcomes, each intent's first check is written with the intent itself (Journal.intend).
  if (!owed) made.onIntent((record) => followUp.intended(record));
  const poller = owed
    ? owedPoller({ owed, made, followUp, logger, ...(options.owedPollMs ? { everyMs: options.owedPollMs } : {}) })
    : undefined;
  /** The move of an earlier version's jobs into these queues, once started. */
  let moving: Promise<void> = Promise.resolve();
  const limit = createLimiter(options.queue?.concurrency ?? DEFAULT_CONCURRENCY);
  const enqueue = tickBatcher<Notice>({ flush: (notices) => queue.add(notices), maxItems: options.maxBatch ?? 50 });
  return {
    /** Serves POST /notifications/momo and /notifications/momo/verify (direct routes, in front of the app). */
    addRoutes(direct: DirectRoutes): void {
      addReceiverRoutes(direct, {
        enqueue,
        verify: (body) => verifyCollection(made, body, options.verify),
        basicAuth: options.basicAuth,
        logger,
      });
    },
    dispatcher,
    queue,
    /** The follow-up's checks (run by its queue; a check can be run at once, e.g. by an operator's script). */
    followUp,
    followUps,
    /** The owed outcomes' poller, with owed outcomes (one tick can be run at once). */
    poller,
    /**
     * Starts working queued notifications and due follow-ups, and moves the jobs an earlier version left in
     * queues of other names or prefixes into them (legacy-queues.ts), once.
     */
    start(): void {
      if (options.redisUrl) {
        const old = oldQueues(name, options.redisUrl, options.keyPrefix);
        moving = moveOldJobs(
          options.redisUrl,
          [
            { from: old.notifications, to: queue },
            { from: old.followUps, to: followUps },
            ...(texts ? [{ from: old.sms, to: texts }] : []),
          ] as Array<{ from: OldQueue[]; to: JobQueue<unknown> }>,
          logger,
        );
      }
      queue.process(async (job) => {
        // The same notice twice in one job (the service delivered it again within the turn) is told once.
        const notices = [...new Map(noticesOf(job).map((n) => [`${n.kind}:${n.id}:${n.state}`, n])).values()];
        // Each is ordered and deduplicated on its own, so they run together (at most `concurrency` at once
        // over all jobs); one that fails fails the job, whose retry tells it: the others were told, and
        // their dedup marks refuse them then as duplicates.
        const results = await Promise.allSettled(notices.map((notice) => limit(() => dispatcher.dispatch(notice))));
        const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed.length === 0) return;
        if (notices.length === 1) throw failed[0]!.reason;
        throw new AggregateError(
          failed.map((r) => r.reason),
          `${failed.length} of ${notices.length} notifications not told; first: ${String(failed[0]!.reason)}`,
        );
      });
      followUps.process((job) => followUp.check(job));
      poller?.start();
      if (texts && options.sms) {
        texts.process(
          smsWork({
            sender: options.sms,
            marks,
            ttlSeconds: MARK_TTL_SECONDS,
            leaseMs: options.leaseMs ?? LEASE_MS,
            logger,
          }),
        );
      }
    },
    /**
     * Frees the telling leases still held by notifications in hand (a stop whose notifiers did not finish in its
     * time), so another process tells them at once; resolves to how many (marks.ts lettingGo).
     */
    letGo: () => marks.letGo(),
    /** Finishes the notifications in hand and stops. */
    async stop(): Promise<void> {
      await poller?.stop();
      // The move of an earlier version's jobs, if still going, ends with its connection (bounded as any close).
      await within(moving, 1_000);
      await queue.close();
      await followUps.close();
      await texts?.close();
      await marks.close();
    },
  };
}
