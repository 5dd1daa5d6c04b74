/** Where the notifications benchmark keeps its Redis data (shared by its driver and its servers). */

/** Prefix of the session-store keys (order and dedup marks) the benchmark's server writes. */
export const NOTIFY_PREFIX = 'bench:notify:';
/** The product's BullMQ queue's keys (src/notifications createNotifications names it momo-notifications). */
export const QUEUE_PREFIX = 'bull:momo-notifications:';

/**
 * REDIS_URL with the benchmark's own database (BENCH_NOTIFY_DB, default 9): the product's queue name is
 * fixed, and its jobs must not meet another process's workers on the shared database.
 */
export function notifyRedisUrl(): string {
  const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  url.pathname = `/${process.env.BENCH_NOTIFY_DB ?? '9'}`;
  return url.toString();
}
