/**
 * A notification worker keeps taking jobs when its Redis connections are lost under it, on Sentinel. BullMQ
 * blocks for the next job on a connection of its own (a duplicate of the one the worker is given, so without
 * src/redis/connect.ts's restart of a Sentinel connection ioredis ended by itself): an idle worker whose
 * blocking connection stayed on a demoted master, or ended, would never hear of a new job. Real servers (free
 * ports): a master, its replica and three Sentinels; a job is added and worked before each fault, and one
 * after it must be worked too: after a planned failover (`SENTINEL FAILOVER`), after the worker's connections
 * end by themselves ("Connection is closed.", as ioredis leaves one when a reconnection overlaps its asking a
 * Sentinel for the master), and after the master is SIGKILLed.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { BullQueue } from '../../src/notifications/queue.js';
import type { RedisClient } from '../../src/redis/connect.js';
import { freePorts } from '../ports.js';
import { masterPortOf, startSentinelSet, stopAll, untilMaster, type Server } from './servers.js';
import { until } from '../until.js';

const NAME = 'w';
let sentinelPorts: number[];
let servers: { master: Server; replica: Server };
let target: {
  mode: 'sentinel';
  sentinels: Array<{ host: string; port: number }>;
  name: string;
  tls: false;
};

beforeAll(async () => {
  const [master, replica, ...sentinels] = await freePorts(5);
  sentinelPorts = sentinels;
  servers = await startSentinelSet(NAME, master!, replica!, sentinelPorts);
  target = {
    mode: 'sentinel',
    sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
    name: NAME,
    tls: false,
  };
}, 120_000);
afterAll(stopAll);

/** Waits until the Sentinels name a master other than `before`, and it takes writes: the new master's port. */
async function newMaster(before: number): Promise<number> {
  let after = before;
  await until(
    'the Sentinels naming a new master',
    async () => {
      after = await masterPortOf(sentinelPorts[0]!, NAME).catch(() => before);
      return after !== before;
    },
    { timeoutMs: 60_000, everyMs: 50 },
  );
  await untilMaster(after);
  return after;
}

/** The port of the server a connection is on now. */
async function portOf(client: RedisClient): Promise<number> {
  return Number(/^tcp_port:(\d+)/m.exec(await client.info('server'))?.[1]);
}

/** BullMQ's worker inside a BullQueue, and the two connections it works on. */
interface WorkerInside {
  worker: {
    client: Promise<RedisClient>;
    blockingConnection: { client: Promise<RedisClient> };
  };
}

describe('a notification worker on a master with a replica and Sentinels', () => {
  let queue: BullQueue<{ n: number }>;
  const worked: number[] = [];
  /**
   * Adds job `n` and waits until the worker has worked it. An add refused while the queue's connection is
   * down or being restarted ("Connection is closed.", a loaded machine's Sentinel reconnection) is added again,
   * as the service sends again a notification the receiver answered 503: what is asserted is the worker's.
   */
  const addAndWork = async (n: number) => {
    await until(`job ${n} added`, () => queue.add({ n }).then(() => true), { timeoutMs: 10_000, everyMs: 250 });
    await until(`job ${n} worked`, () => worked.includes(n), { timeoutMs: 60_000, everyMs: 50 });
  };

  beforeAll(async () => {
    queue = new BullQueue<{ n: number }>(target, 'worker-failover', { logger: createLogger('silent') });
    queue.process(async ({ n }) => {
      worked.push(n);
    });
    await addAndWork(1);
  });
  afterAll(() => queue.close());

  it('works a job added after a planned failover (SENTINEL FAILOVER)', async () => {
    const before = await masterPortOf(sentinelPorts[0]!, NAME);
    const sentinel = new Redis({ port: sentinelPorts[0]! });
    try {
      await sentinel.call('SENTINEL', 'FAILOVER', NAME);
    } finally {
      sentinel.disconnect();
    }
    const after = await newMaster(before);
    await addAndWork(2);
    // Worked by the idle worker's blocking connection, now on the new master.
    const inside = (queue as unknown as WorkerInside).worker;
    await until(
      'the blocking connection on the new master',
      async () => (await portOf(await inside.blockingConnection.client)) === after,
      { timeoutMs: 60_000, everyMs: 50 },
    );
    expect(worked).toEqual([1, 2]);
  }, 120_000);

  it('works a job added after its connections ended by themselves ("Connection is closed.")', async () => {
    const inside = (queue as unknown as WorkerInside).worker;
    const blocking = await inside.blockingConnection.client;
    const client = await inside.client;
    // Ended as ioredis ends one for good: status `end`, no reconnection of its own; the blocking command in
    // flight fails with "Connection is closed.".
    const ended = Promise.all([blocking, client].map((c) => new Promise((resolve) => c.once('end', resolve))));
    blocking.disconnect();
    client.disconnect();
    await ended;
    await addAndWork(3);
    expect(worked).toEqual([1, 2, 3]);
  }, 120_000);

  it('works a job added after the master is SIGKILLed and the Sentinels promote the replica', async () => {
    const before = await masterPortOf(sentinelPorts[0]!, NAME);
    (before === servers.master.port ? servers.master : servers.replica).kill();
    await newMaster(before);
    await addAndWork(4);
    expect(worked).toEqual([1, 2, 3, 4]);
  }, 120_000);
});
