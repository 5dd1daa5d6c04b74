/**
 * An upgrade renamed the notification queues (the organization's digest; BullMQ's tagged prefix; the follow-ups
 * in parts): the jobs an earlier version left in its queues are moved into the current ones at start, and worked
 * there. Real Redis (TEST_REDIS_URL), queues of unique names.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { queuePrefixes } from '../../src/conversation/store/keys.js';
import { createLogger } from '../../src/log.js';
import { moveJobs, oldQueues } from '../../src/notifications/legacy-queues.js';
import { BullQueue, ShardedQueue } from '../../src/notifications/queue.js';
import { cleanupQueues, inspector, REDIS_URL } from '../conversation/redis-helper.js';

const logger = createLogger('silent');
const name = `test-legacy-${process.pid}-${Date.now()}`;
const oldName = `${name}-old`;

afterAll(async () => {
  await cleanupQueues(name);
  await inspector(`bull:${oldName}`).cleanup();
});

describe('the queues of an earlier version', () => {
  it('are the untagged and unnamed ones, and the follow-ups before their parts, never a current queue', () => {
    const old = oldQueues('momo-notifications-abc', REDIS_URL);
    expect(old.notifications).toEqual([
      { prefix: 'bull', name: 'momo-notifications' },
      { prefix: '{momo}:bull', name: 'momo-notifications' },
    ]);
    expect(old.followUps).toContainEqual({ prefix: '{momo}:bull', name: 'momo-notifications-abc-follow-ups' });
    expect(old.sms).toContainEqual({ prefix: 'bull', name: 'momo-notifications-sms' });
    // Named as before (tests, the benchmark): the current notification queue is not an old one.
    expect(oldQueues('momo-notifications', REDIS_URL).notifications).toEqual([
      { prefix: 'bull', name: 'momo-notifications' },
    ]);
    // On a cluster the untagged keys cannot have been used.
    const cluster = { mode: 'cluster' as const, nodes: [{ host: '127.0.0.1', port: 7000 }], tls: false };
    expect(oldQueues('x', cluster).notifications).toEqual([{ prefix: '{momo}:bull', name: 'momo-notifications' }]);
  });

  it('have their waiting and delayed jobs moved into the current queue (delays and own ids kept), and worked there', async () => {
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const old = new Queue(oldName, { connection, prefix: 'bull' });
    await old.add('notification', { n: 1 });
    await old.add('notification', { n: 2 }, { jobId: 'follow-up_ref-2_0' });
    await old.add('notification', { n: 3 }, { delay: 3_600_000 });
    const parts = queuePrefixes
      .followUpParts()
      .map((prefix) => new BullQueue<{ n: number }>(REDIS_URL, name, { prefix, logger }));
    const current = new ShardedQueue(parts, (job) => job.n);
    try {
      expect(await moveJobs(REDIS_URL, { prefix: 'bull', name: oldName }, current)).toBe(3);
      expect(await old.getJobCounts('wait', 'delayed')).toEqual({ wait: 0, delayed: 0 });
      // Moving again (another process starting) finds nothing.
      expect(await moveJobs(REDIS_URL, { prefix: 'bull', name: oldName }, current)).toBe(0);
      expect(await current.depth()).toBe(3);
      const part2 = new Queue(name, { connection, prefix: queuePrefixes.followUpParts()[2]! });
      expect(await part2.getJob('follow-up_ref-2_0')).toBeDefined();
      await part2.close();
      const part3 = new Queue(name, { connection, prefix: queuePrefixes.followUpParts()[3]! });
      expect(await part3.getJobCounts('delayed')).toEqual({ delayed: 1 });
      await part3.close();
      const worked: number[] = [];
      current.process(async (job) => void worked.push(job.n));
      for (let tries = 0; worked.length < 2 && tries < 200; tries++) await new Promise((r) => setTimeout(r, 50));
      expect(worked.sort()).toEqual([1, 2]);
    } finally {
      await current.close();
      await old.close();
      await connection.quit();
    }
  });
});
