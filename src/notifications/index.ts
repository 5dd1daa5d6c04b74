/**
 * Notifications: the service's webhooks pushed back into the chat that started each operation.
 * receiver (HTTP) -> queue (memory or BullMQ) -> dispatcher (order, dedup, words) -> channel notifier.
 */
import type { Address, Channel, Notifier, SessionStore } from '../conversation/types.js';
import type { Lang } from '../../flows/types.js';
import type { Logger } from '../log.js';
import { createDispatcher, type SmsSender } from './dispatch.js';
import type { NotificationBody } from './events.js';
import { createQueue, type QueueOptions } from './queue.js';
import { createReceiver } from './receiver.js';
import { verifyCollection, type VerifyPolicy } from './verify.js';

export { ensureWebhooks } from './register.js';
export { EVENT_TYPES, deliveryFor, parseChat } from './events.js';
export type { SmsSender } from './dispatch.js';
export { createQueue, MemoryQueue, BullQueue, type JobQueue } from './queue.js';

export interface NotificationsOptions {
  store: SessionStore;
  /** Redis for the shared, restart-proof queue; unset: in memory. */
  redisUrl?: string;
  notifiers: Partial<Record<Channel, Notifier>>;
  sms?: SmsSender;
  basicAuth?: { user: string; password: string };
  verify: VerifyPolicy;
  languageOf?: (address: Address) => Promise<Lang | undefined>;
  queue?: Partial<Omit<QueueOptions, 'logger'>>;
  logger: Logger;
}

export function createNotifications(options: NotificationsOptions) {
  const { logger, store } = options;
  const queue = createQueue<NotificationBody>('momo-notifications', options.redisUrl, { ...options.queue, logger });
  const dispatcher = createDispatcher({
    store,
    notifiers: options.notifiers,
    sms: options.sms,
    languageOf: options.languageOf,
    logger,
  });
  const router = createReceiver({
    enqueue: (body) => queue.add(body),
    verify: (body) => verifyCollection(store, body, options.verify),
    basicAuth: options.basicAuth,
    logger,
  });
  return {
    router,
    dispatcher,
    queue,
    /** Starts working queued notifications. */
    start(): void {
      queue.process(async (body) => {
        await dispatcher.dispatch(body);
      });
    },
    /** Finishes the notifications in hand and stops. */
    stop: () => queue.close(),
  };
}
