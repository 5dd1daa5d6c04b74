/**
 * An upgrade renamed the notification queues (the organization's digest; BullMQ's tagged prefix; the follow-ups
 * in parts): the jobs an earlier version left in its queues are moved into the current ones at start, and worked
 * there. Real Redis (TEST_REDIS_URL), queues of unique names.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { queuePrefixes, queuePrefixesOf } from '../../src/store/keys.js';
import { createLogger } from '../../src/log.js';
import { moveJobs, oldQueues } from '../../src/notifications/legacy-queues.js';
import { BullQueue, ShardedQueue } from '../../src/notifications/queue.js';
import { cleanupQueues, inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';
import { MadeRecords } from '../../src/conversation/calls/made-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { MomoClient } from '../../src/momo/index.js';
import { createNotifications } from '../../src/notifications/index.js';
import { processed } from './notices.js';
import { until } from '../until.js';

const logger = createLogger('silent');
const name = `test-legacy-${process.pid}-${Date.now()}`;
const oldName = `${name}-old`;

afterAll(async () => {
  await cleanupQueues(name);
  await inspector(`bull:${oldName}`).cleanup();
});

describe('the queues of an earlier version', () => {
  it('are the untagged and unnamed ones, and the queues before their parts, never a current queue', () => {
    const old = oldQueues('momo-notifications-abc', REDIS_URL);
    expect(old.notifications).toEqual([
      { prefix: 'bull', name: 'momo-notifications' },
      { prefix: '{momo}:bull', name: 'momo-notifications' },
      { prefix: '{momo}:bull', name: 'momo-notifications-abc' },
    ]);
    expect(old.followUps).toContainEqual({ prefix: '{momo}:bull', name: 'momo-notifications-abc-follow-ups' });
    expect(old.sms).toEqual([
      { prefix: 'bull', name: 'momo-notifications-sms' },
      { prefix: '{momo}:bull', name: 'momo-notifications-sms' },
      { prefix: '{momo}:bull', name: 'momo-notifications-abc-sms' },
    ]);
    // Named as before (tests, the benchmark): each earlier queue once.
    expect(oldQueues('momo-notifications', REDIS_URL).notifications).toEqual([
      { prefix: 'bull', name: 'momo-notifications' },
      { prefix: '{momo}:bull', name: 'momo-notifications' },
    ]);
    // No current queue is an old one: every current queue is in parts of prefixes of their own.
    const current = (['notifications', 'followUps', 'sms'] as const).flatMap((q) => queuePrefixes.parts(q));
    for (const list of Object.values(old)) for (const { prefix } of list) expect(current).not.toContain(prefix);
    // On a cluster the untagged keys cannot have been used.
    const cluster = { mode: 'cluster' as const, nodes: [{ host: '127.0.0.1', port: 7000 }], tls: false };
    expect(oldQueues('x', cluster).notifications).toEqual([
      { prefix: '{momo}:bull', name: 'momo-notifications' },
      { prefix: '{momo}:bull', name: 'x' },
    ]);
    // Another key prefix: the same layouts under its own name, never the untagged ones a default product's
    // earlier version may have left.
    expect(oldQueues('x', REDIS_URL, 'staging:').notifications).toEqual([
      { prefix: '{staging}:bull', name: 'momo-notifications' },
      { prefix: '{staging}:bull', name: 'x' },
    ]);
  });

  it('have their waiting and delayed jobs moved into the current queue (delays and own ids kept), and worked there', async () => {
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const old = new Queue(oldName, { connection, prefix: 'bull' });
    await old.add('notification', { n: 1 });
    await old.add('notification', { n: 2 }, { jobId: 'follow-up_ref-2_0' });
    await old.add('notification', { n: 3 }, { delay: 3_600_000 });
    const parts = queuePrefixes
      .parts('followUps')
      .map((prefix) => new BullQueue<{ n: number }>(REDIS_URL, name, { prefix, logger }));
    const current = new ShardedQueue(parts, (job) => job.n);
    try {
      expect(await moveJobs(REDIS_URL, { prefix: 'bull', name: oldName }, current)).toBe(3);
      expect(await old.getJobCounts('wait', 'delayed')).toEqual({ wait: 0, delayed: 0 });
      // Moving again (another process starting) finds nothing.
      expect(await moveJobs(REDIS_URL, { prefix: 'bull', name: oldName }, current)).toBe(0);
      expect(await current.depth()).toBe(3);
      const part2 = new Queue(name, { connection, prefix: queuePrefixes.parts('followUps')[2]! });
      expect(await part2.getJob('follow-up_ref-2_0')).toBeDefined();
      await part2.close();
      const part3 = new Queue(name, { connection, prefix: queuePrefixes.parts('followUps')[3]! });
      expect(await part3.getJobCounts('delayed')).toEqual({ delayed: 1 });
      await part3.close();
      const worked: number[] = [];
      current.process(async (job) => void worked.push(job.n));
      await until('both moved jobs worked', () => worked.length >= 2, { timeoutMs: 10_000, everyMs: 50 });
      expect(worked.sort()).toEqual([1, 2]);
    } finally {
      await current.close();
      await old.close();
      await connection.quit();
    }
  });
});

describe('an upgrade to the notification and SMS queues in parts', () => {
  it('works the notifications and texts an earlier version left in the one `{momo}` queue of each', async () => {
    const upgraded = `${name}-up`;
    const keyPrefix = uniquePrefix('legacy-up');
    const prefixes = queuePrefixesOf(keyPrefix);
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    // Payments whose notices belong in different parts of the notification queue.
    const ids = Array.from({ length: 8 }, (_, i) => 7_300_000 + i);
    const partOf = (id: number) => prefixes.part('notifications', `payment:${id}`);
    expect(new Set(ids.map(partOf)).size).toBeGreaterThan(1);
    for (const id of ids) {
      await made.intend({
        kind: 'payment',
        ref: `ref-${id}`,
        chat: `telegram:${id}`,
        amount: '2500',
        currency: 'UGX',
        payee: '+256772000001',
      });
      await made.accepted(`ref-${id}`, String(id));
    }
    // Left by the earlier version: two batches of notices (each of several parts) and two texts, one delayed.
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const oldNotifications = new Queue(upgraded, { connection, prefix: prefixes.shared });
    const oldTexts = new Queue(`${upgraded}-sms`, { connection, prefix: prefixes.shared });
    await oldNotifications.add(
      'notification',
      ids.slice(0, 5).map((id) => processed(id)),
    );
    await oldNotifications.add(
      'notification',
      ids.slice(5).map((id) => processed(id)),
    );
    await oldTexts.add('notification', { to: '+256700000001', text: 'one', key: 'a' }, { jobId: 'sms_a' });
    await oldTexts.add('notification', { to: '+256700000002', text: 'two', key: 'b' }, { jobId: 'sms_b', delay: 300 });
    const told: string[] = [];
    const texted: string[] = [];
    const n = createNotifications({
      made,
      client: new MomoClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'unused', maxRetries: 0 }),
      basicAuth: { user: 'momo', password: 'secret' },
      redisUrl: REDIS_URL,
      keyPrefix,
      queueName: upgraded,
      notifiers: { telegram: { send: async (address) => void told.push(address.conversationId) } },
      sms: { send: async (to) => void texted.push(to) },
      verify: { default: 'accept' },
      logger,
    });
    try {
      n.start();
      await until(
        'every moved notification told and both texts sent',
        () => told.length >= ids.length && texted.length >= 2,
        {
          timeoutMs: 20_000,
          everyMs: 50,
        },
      );
      expect(told.sort()).toEqual(ids.map(String).sort());
      expect(texted.sort()).toEqual(['+256700000001', '+256700000002']);
      expect(await oldNotifications.getJobCounts('wait', 'delayed')).toEqual({ wait: 0, delayed: 0 });
      expect(await oldTexts.getJobCounts('wait', 'delayed')).toEqual({ wait: 0, delayed: 0 });
      // Each batch was cut into its parts' jobs: every part of the payments' notices worked one or two.
      const worked = await Promise.all(
        prefixes.parts('notifications').map(async (prefix) => {
          const part = new Queue(upgraded, { connection, prefix });
          try {
            return (await part.getJobCounts('completed')).completed!;
          } finally {
            await part.close();
          }
        }),
      );
      const used = new Set(ids.map(partOf));
      prefixes.parts('notifications').forEach((prefix, i) => {
        if (used.has(prefix)) expect(worked[i], prefix).toBeGreaterThan(0);
        else expect(worked[i], prefix).toBe(0);
      });
    } finally {
      await n.stop();
      await oldNotifications.close();
      await oldTexts.close();
      await connection.quit();
      for (const prefix of prefixes.all()) await inspector(`${prefix}:${upgraded}`).cleanup();
      await inspector(keyPrefix).cleanup();
    }
  });
});
