/**
 * Jobs left by an earlier version in queues this one no longer works: moved, once, at start, into the queues
 * that replaced them, so nothing queued before an upgrade is stranded. Each earlier layout had its own names or
 * prefixes:
 * - before the hash-tagged prefix: BullMQ's default prefix `bull`, the queues `momo-notifications`,
 *   `-follow-ups`, `-sms` (on one server or Sentinel only: those keys span slots, so a cluster never ran them);
 * - before the queues were named for the organization: `{momo}:bull` with the same names;
 * - before the follow-ups were sharded: `{momo}:bull:<name>-follow-ups`;
 * - before the notification and SMS queues were sharded: `{momo}:bull:<name>` and `{momo}:bull:<name>-sms`.
 * So every queue's earlier forms are the same list: the name before the organization's under each earlier
 * prefix, and the organization's under `{momo}:bull`.
 * A notification job moved (the notices of one turn, perhaps of several parts) is cut into its parts' jobs as
 * any batch is (the current queue's add).
 * Moved: the jobs waiting, delayed (keeping when they are due) and paused. A job an older process still works
 * (active) is left to it; failed ones stay for the operator. A job added with its own id keeps it, so moving
 * again (every process does it at its start) adds nothing twice; one numbered by BullMQ gets a new number in
 * its new queue (the old number may be taken there), and two processes moving it at once may both add it: the
 * dispatcher's marks tell a notification once all the same.
 *
 * Two deployments that shared a Redis under an earlier version shared these queues too: whichever starts
 * first takes the other's old jobs, as either's workers did before the upgrade (a job about the other's
 * payment finds no record of ours and is told to nobody).
 */
import { Queue } from 'bullmq';
import { DEFAULT_KEY_PREFIX, queuePrefixesOf } from '../store/keys.js';
import type { Logger } from '../log.js';
import { closeRedis, connectRedis, settingsOf, type RedisTarget } from '../redis/connect.js';
import type { JobQueue } from './queue.js';

/** The earlier name of the notification queue (before it carried the organization's digest). */
const OLD_NAME = 'momo-notifications';
/** BullMQ's default prefix, used before the tagged one. */
const OLD_PREFIX = 'bull';
/** Jobs read per page. */
const PAGE = 200;

/** An earlier queue: its prefix and name. */
export interface OldQueue {
  prefix: string;
  name: string;
}

/**
 * The earlier queues whose jobs belong in the current queues named `name` (notifications), `name-follow-ups`
 * and `name-sms` (each in its parts, keys.ts queuePrefixes, none of them under an earlier prefix), for each, of
 * the product under `keyPrefix` (REDIS_KEY_PREFIX).
 */
export function oldQueues(
  name: string,
  target: RedisTarget,
  keyPrefix: string = DEFAULT_KEY_PREFIX,
): Record<'notifications' | 'followUps' | 'sms', OldQueue[]> {
  // Each layout under the prefix's own name (`{momo}:bull` for the default); BullMQ's untagged default, which
  // holds no name, only for the default prefix (every earlier version's: another prefix must not take a default
  // product's old jobs), and not on a cluster, where the untagged keys cannot have been used.
  const shared = queuePrefixesOf(keyPrefix).shared;
  const untagged = keyPrefix === DEFAULT_KEY_PREFIX && settingsOf(target).mode !== 'cluster' ? [OLD_PREFIX] : [];
  const prefixes = [...untagged, shared];
  const earlier = (suffix: string): OldQueue[] =>
    [
      ...prefixes.map((prefix) => ({ prefix, name: `${OLD_NAME}${suffix}` })),
      { prefix: shared, name: `${name}${suffix}` },
    ].filter((old, i, all) => all.findIndex((o) => o.prefix === old.prefix && o.name === old.name) === i);
  return { notifications: earlier(''), followUps: earlier('-follow-ups'), sms: earlier('-sms') };
}

/** A BullMQ job id of its own (not a number BullMQ gave). */
const ownId = (id: string | undefined): string | undefined => (id && !/^\d+$/.test(id) ? id : undefined);

/**
 * Moves the waiting, delayed and paused jobs of `old` into `to`; returns how many. A job that cannot be removed
 * from the old queue (an older process took it meanwhile) is left there after it was added: the dispatcher's
 * marks tell it once.
 */
export async function moveJobs<T>(
  target: RedisTarget,
  old: OldQueue,
  to: JobQueue<T>,
  now = Date.now,
): Promise<number> {
  const connection = connectRedis(target, { name: `old queue ${old.prefix}:${old.name}`, maxRetriesPerRequest: null });
  // A queue holding no job to move is left as it is (BullMQ's Queue writes its `meta` key when it starts: every
  // process's start would leave one in each earlier queue). One key a command: the untagged ones span slots.
  const lists = ['wait', 'paused', 'delayed', 'prioritized'].map((list) => `${old.prefix}:${old.name}:${list}`);
  const holding = await Promise.all(lists.map((list) => connection.exists(list))).catch(async (error: unknown) => {
    await closeRedis(connection);
    throw error;
  });
  if (holding.every((n) => n === 0)) {
    await closeRedis(connection);
    return 0;
  }
  const queue = new Queue(old.name, { connection, prefix: old.prefix });
  queue.on('error', () => {});
  let moved = 0;
  try {
    for (let skipped = 0; ;) {
      const jobs = await queue.getJobs(['wait', 'delayed', 'paused', 'prioritized'], skipped, skipped + PAGE - 1);
      if (jobs.length === 0) return moved;
      for (const job of jobs) {
        const due = job.timestamp + (job.delay ?? 0) - now();
        const id = ownId(job.id);
        await to.add(job.data as T, { ...(id ? { id } : {}), ...(due > 0 ? { delayMs: due } : {}) });
        moved++;
        try {
          await job.remove();
        } catch {
          skipped++;
        }
      }
    }
  } finally {
    await queue.close().catch(() => undefined);
    await closeRedis(connection);
  }
}

/** Moves every earlier queue's jobs into its current queue; logs what it moved, and any queue it could not read. */
export async function moveOldJobs(
  target: RedisTarget,
  moves: Array<{ from: OldQueue[]; to: JobQueue<unknown> }>,
  logger: Logger,
): Promise<void> {
  for (const { from, to } of moves) {
    for (const old of from) {
      try {
        const moved = await moveJobs(target, old, to);
        if (moved > 0)
          logger.warn({ from: `${old.prefix}:${old.name}`, moved }, 'queue: jobs of an earlier version moved');
      } catch (error) {
        logger.warn(
          { from: `${old.prefix}:${old.name}`, err: error instanceof Error ? error.message : String(error) },
          'queue: the jobs of an earlier version could not be moved; drain them by hand (docs/operations.md)',
        );
      }
    }
  }
}
