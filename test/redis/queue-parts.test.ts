/**
 * The notification and SMS queues in parts on a real three-master Redis Cluster: the
 * notifications of payments whose records fall in different parts are queued on different masters (each part's
 * tag its own slot), a batch of them cut into one job a part, and every one is told; the texts of the USSD
 * outcomes too, in their own parts. Nothing goes to the one `{momo}` slot the queues shared before.
 */
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { MadeRecords } from '../../src/conversation/calls/made-records.js';
import { queuePrefixes, QUEUE_PARTS } from '../../src/store/keys.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Address } from '../../src/conversation/types.js';
import { createLogger } from '../../src/log.js';
import { MomoClient } from '../../src/momo/index.js';
import { processed } from '../notifications/notices.js';
import { createNotifications } from '../../src/notifications/index.js';
import type { RedisSettings } from '../../src/redis/connect.js';
import { freePorts } from '../ports.js';
import { until } from '../until.js';
import { startCluster, stopAll } from './servers.js';

afterAll(stopAll);

const PORTS = await freePorts(3, { bus: true });
const logger = createLogger('silent');
/** Servers to start and a cluster to form: a minute on a loaded machine. */
const SLOW_TEST_MS = 180_000;

/** How many jobs of queue `name` each server of `ports` completed under each prefix of `prefixes` (asked of each). */
async function completedOn(ports: number[], prefixes: string[], name: string): Promise<Map<number, number[]>> {
  const counts = new Map<number, number[]>();
  for (const port of ports) {
    const node = new Redis({ port });
    try {
      // A server answers only for the slots it serves: a key of another's is MOVED, not counted.
      counts.set(
        port,
        await Promise.all(prefixes.map((prefix) => node.zcard(`${prefix}:${name}:completed`).catch(() => 0))),
      );
    } finally {
      node.disconnect();
    }
  }
  return counts;
}

it(
  'queues the notifications of payments of different parts on different masters and tells every one',
  async () => {
    await startCluster(PORTS);
    const target: RedisSettings = {
      mode: 'cluster',
      nodes: PORTS.map((port) => ({ host: '127.0.0.1', port })),
      tls: false,
    };
    const name = `test-parts-${process.pid}`;
    const made = new MadeRecords({ store: new MemoryStore(), logger });
    // Two payments in each part of the notification queue, half of them by USSD users (texted too).
    const parts = queuePrefixes.parts('notifications');
    const ids: number[] = [];
    for (let id = 8_100_000; parts.some((p) => ids.filter((i) => partOf(i) === p).length < 2); id++)
      if (ids.filter((i) => partOf(i) === partOf(id)).length < 2) ids.push(id);
    function partOf(id: number): string {
      return queuePrefixes.part('notifications', `payment:${id}`);
    }
    const chatOf = (id: number): string => (id % 2 === 0 ? `ussd:+25670${id}` : `telegram:${id}`);
    for (const id of ids) {
      await made.intend({
        kind: 'payment',
        ref: `ref-${id}`,
        chat: chatOf(id),
        amount: '2500',
        currency: 'UGX',
        payee: '+256772000001',
      });
      await made.accepted(`ref-${id}`, String(id));
    }
    const told: string[] = [];
    const texted: string[] = [];
    const notifier = {
      send: async (address: Address) => void told.push(`${address.channel}:${address.conversationId}`),
    };
    const n = createNotifications({
      made,
      client: new MomoClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'unused', maxRetries: 0 }),
      basicAuth: { user: 'momo', password: 'secret' },
      redisUrl: target,
      queueName: name,
      notifiers: { telegram: notifier, ussd: notifier },
      sms: { send: async (to) => void texted.push(to) },
      verify: { default: 'accept' },
      logger,
    });
    try {
      n.start();
      // One batch (the notices of one turn) of every part, and one notice alone.
      await n.queue.add(ids.slice(1).map(processed));
      await n.queue.add([processed(ids[0]!)]);
      const ussd = ids.filter((id) => chatOf(id).startsWith('ussd:'));
      await until('every notice told and texted', () => told.length >= ids.length && texted.length >= ussd.length, {
        timeoutMs: 30_000,
        everyMs: 50,
      });
      expect(told.sort()).toEqual(ids.map(chatOf).sort());
      expect(texted.sort()).toEqual(ussd.map((id) => chatOf(id).slice('ussd:'.length)).sort());

      // Each part's jobs on the master of its tag: the four parts' jobs on every one of the three masters.
      const notified = await completedOn(PORTS, parts, name);
      const jobsOf = (counts: Map<number, number[]>) => [...counts.values()].flat().reduce((a, b) => a + b, 0);
      expect(jobsOf(notified)).toBe(QUEUE_PARTS + 1);
      for (const [port, perPart] of notified)
        expect(
          perPart.some((jobs) => jobs > 0),
          `master ${port}`,
        ).toBe(true);
      parts.forEach((_, i) =>
        expect(
          [...notified.values()].filter((perPart) => perPart[i]! > 0),
          parts[i],
        ).toHaveLength(1),
      );
      const smsParts = queuePrefixes.parts('sms');
      const sms = await completedOn(PORTS, smsParts, `${name}-sms`);
      expect(jobsOf(sms)).toBe(ussd.length);
      expect([...sms.values()].filter((perPart) => perPart.some((jobs) => jobs > 0)).length).toBeGreaterThan(1);
      // Nothing under the prefix the queues shared before.
      for (const port of PORTS) {
        const node = new Redis({ port });
        try {
          expect(await node.keys(`${queuePrefixes.shared}:*`), `master ${port}`).toEqual([]);
        } finally {
          node.disconnect();
        }
      }
    } finally {
      await n.stop();
    }
  },
  SLOW_TEST_MS,
);
