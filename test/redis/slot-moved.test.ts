/**
 * A slot moved on a three-master cluster while a process sweeps every part of the open runs at
 * once (runner.ts sweepOnce), as every process does every two seconds. When the store's connection pipelined
 * the commands of a tick on a cluster (enableAutoPipelining; connectRedis no longer does), ioredis followed a
 * MOVED only when every command of a pipeline got it, so one moved part among 64 failed with MOVED and its new
 * owner was not learned. Before the connection refreshed its slot map on a timer, such a process's sweep
 * failed at every try for as long as it ran (a chaos run: a minute and more), and the runs it should have
 * taken over waited for another process. Each command now follows its own MOVED; the sweep stays answered.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { SLOTS_REFRESH_MS } from '../../src/redis/connect.js';
import { freePorts } from '../ports.js';
import { until } from '../until.js';
import { moveSlotOf, startCluster, stopAll } from './servers.js';

const PORTS = await freePorts(3, { bus: true });
let store: RedisStore;

beforeAll(async () => {
  await startCluster(PORTS);
  store = new RedisStore({
    url: { mode: 'cluster', nodes: PORTS.map((port) => ({ host: '127.0.0.1', port })), tls: false },
    keyPrefix: 'test:slot-moved:',
  });
}, 60_000);
afterAll(async () => {
  await store?.close();
  await stopAll();
});

const sweep = () => Promise.all(keys.openRunsParts().map((part) => store.expiredLeases(part, 10)));

/** Waits for a sweep of every part to succeed again, up to `ms` (then it throws with the last failure). */
async function sweepsAgainWithin(ms: number): Promise<void> {
  await until('a sweep of every part', async () => (await sweep()).length === keys.openRunsParts().length, {
    timeoutMs: ms,
    everyMs: 250,
  });
}

it('sweeps every part again soon after a slot of one part moved, and after a second move', async () => {
  expect(await sweep()).toHaveLength(keys.openRunsParts().length);
  for (const tag of ['{u5}', '{u41}']) {
    const moved = await moveSlotOf(PORTS, tag);
    expect(moved.target).not.toBe(moved.owner);
    // Within a few of the slot map's refreshes, not never.
    await sweepsAgainWithin(10 * SLOTS_REFRESH_MS);
  }
}, 60_000);
