/**
 * Notifications: the service's webhooks pushed back into the chat that started each operation.
 * receiver (HTTP) -> queue (memory or BullMQ; the deliveries of one event-loop turn share a job) ->
 * dispatcher (order, dedup, words) -> channel notifier.
 */
import type { Express } from 'express';
import type { Address, Channel, Notifier, SessionStore } from '../conversation/types.js';
import type { Lang } from '../../flows/types.js';
import type { Logger } from '../log.js';
import { createLimiter, tickBatcher } from './batch.js';
import { giveBackSpend } from '../conversation/policy.js';
import { createDispatcher, type SmsSender } from './dispatch.js';
import type { NotificationBody } from './events.js';
import { createMarks, type NotificationMarks } from './marks.js';
import { createQueue, DEFAULT_CONCURRENCY, type QueueOptions } from './queue.js';
import { addReceiverRoutes } from './receiver.js';
import { verifyCollection, type VerifyPolicy } from './verify.js';

export { ensureWebhooks } from './register.js';
export { EVENT_TYPES, deliveryFor, parseChat } from './events.js';
export type { SmsSender } from './dispatch.js';
export { createQueue, MemoryQueue, BullQueue, type JobQueue } from './queue.js';
export { createMarks, MemoryMarks, RedisMarks, type NotificationMarks } from './marks.js';

export interface NotificationsOptions {
  /** Collection verification reads the open requests from it. */
  store: SessionStore;
  /** Redis for the shared, restart-proof queue and the order and dedup marks; unset: in memory. */
  redisUrl?: string;
  /** Prefix of the marks' keys in Redis. Default `momo:`, the session store's. */
  keyPrefix?: string;
  /** The order and dedup marks. Default: in Redis with `redisUrl`, else in memory; closed by stop(). */
  marks?: NotificationMarks;
  notifiers: Partial<Record<Channel, Notifier>>;
  sms?: SmsSender;
  basicAuth?: { user: string; password: string };
  verify: VerifyPolicy;
  languageOf?: (address: Address) => Promise<Lang | undefined>;
  /**
   * The queue's settings; `concurrency` (default 32) bounds both the jobs worked at once and the
   * notifications dispatched at once over all of them.
   */
  queue?: Partial<Omit<QueueOptions, 'logger'>>;
  /** The BullMQ queue's name. Default `momo-notifications`; tests use their own. */
  queueName?: string;
  /** Most notifications in one queued job. Default 50. */
  maxBatch?: number;
  logger: Logger;
}

/**
 * One queued job: the notifications received in one turn of the event loop (see batch.ts). A single body is
 * a job of one (as queued by earlier versions, and by callers of `queue.add`).
 */
export type NotificationJob = NotificationBody | NotificationBody[];

export function createNotifications(options: NotificationsOptions) {
  const { logger, store } = options;
  const queue = createQueue<NotificationJob>(options.queueName ?? 'momo-notifications', options.redisUrl, { ...options.queue, logger });
  const marks = options.marks ?? createMarks(options.redisUrl, options.keyPrefix);
  const dispatcher = createDispatcher({
    marks,
    notifiers: options.notifiers,
    sms: options.sms,
    languageOf: options.languageOf,
    onPaymentFailed: (ref) => giveBackSpend(store, ref),
    logger,
  });
  const limit = createLimiter(options.queue?.concurrency ?? DEFAULT_CONCURRENCY);
  const enqueue = tickBatcher<NotificationBody>({ flush: (bodies) => queue.add(bodies), maxItems: options.maxBatch ?? 50 });
  return {
    /** Adds POST /notifications/momo and /notifications/momo/verify to the app. */
    addRoutes(app: Express): void {
      addReceiverRoutes(app, {
        enqueue,
        verify: (body) => verifyCollection(store, body, options.verify),
        basicAuth: options.basicAuth,
        logger,
      });
    },
    dispatcher,
    queue,
    /** Starts working queued notifications. */
    start(): void {
      queue.process(async (job) => {
        const bodies = Array.isArray(job) ? job : [job];
        // Each is ordered and deduplicated on its own, so they run together (at most `concurrency` at once
        // over all jobs); one that fails fails the job, whose retry tells it: the others were told, and
        // their dedup marks refuse them then as duplicates.
        const results = await Promise.allSettled(bodies.map((body) => limit(() => dispatcher.dispatch(body))));
        const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed.length === 0) return;
        if (bodies.length === 1) throw failed[0]!.reason;
        throw new AggregateError(
          failed.map((r) => r.reason),
          `${failed.length} of ${bodies.length} notifications not told; first: ${String(failed[0]!.reason)}`,
        );
      });
    },
    /** Finishes the notifications in hand and stops. */
    async stop(): Promise<void> {
      await queue.close();
      await marks.close();
    },
  };
}
