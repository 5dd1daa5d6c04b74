/**
 * A killed master's server, started again empty as the new master's replica (as the Sentinel chaos run does),
 * is not promoted before its first sync. In the chaos run of 12:36 UTC (2026-11-27, bench/HISTORY.md) it was:
 * the new master stalled past the Sentinels' down-after time while the empty server waited for its data, the
 * Sentinels promoted it (a replica that never synced reports no link-down time), and the new master, made its
 * replica, loaded its empty data set: every outcome kept for a dial, run and follow-up gone. Real servers (free
 * ports): a master with keys, its replica, three Sentinels; the master is SIGKILLed, started again empty with
 * startEmptyReplica, and the new master is stopped (SIGSTOP) for three seconds at once.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../ports.js';
import {
  masterPortOf,
  promotable,
  startEmptyReplica,
  startSentinelSet,
  stopAll,
  untilMaster,
  type Server,
} from './servers.js';

const NAME = 'e';
const KEYS = 200;
let sentinelPorts: number[];
let servers: { master: Server; replica: Server };

beforeAll(async () => {
  const [master, replica, ...sentinels] = await Promise.all(Array.from({ length: 5 }, () => freePort()));
  sentinelPorts = sentinels;
  servers = await startSentinelSet(NAME, master!, replica!, sentinelPorts);
}, 120_000);
afterAll(stopAll);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withClient<T>(port: number, use: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({ port, maxRetriesPerRequest: 0 });
  r.on('error', () => {});
  try {
    return await use(r);
  } finally {
    r.disconnect();
  }
}

it('keeps the data when the new master stalls while the empty restart waits for it', async () => {
  const before = servers.master.port;
  await withClient(before, async (r) => {
    for (let i = 0; i < KEYS; i++) await r.set(`k${i}`, String(i));
    expect(await r.wait(1, 5_000)).toBe(1);
  });

  servers.master.kill();
  let after = before;
  while (after === before) {
    await sleep(100);
    after = await masterPortOf(sentinelPorts[0]!, NAME).catch(() => before);
  }
  await untilMaster(after);
  expect(after).toBe(servers.replica.port);

  await startEmptyReplica(before, after);
  const stalled = servers.replica.process.pid!;
  process.kill(stalled, 'SIGSTOP');
  await sleep(3_000);
  process.kill(stalled, 'SIGCONT');

  // The restarted server ends either synced with its master or promoted (role master, never synced).
  for (;;) {
    const replication = await withClient(before, (r) => r.info('replication')).catch(() => '');
    if (/^(master_link_status:up|role:master)/m.test(replication)) break;
    await sleep(100);
  }
  expect(await masterPortOf(sentinelPorts[0]!, NAME)).toBe(after);
  await promotable(before);
  expect(await withClient(after, (r) => r.dbsize())).toBe(KEYS);
  expect(await withClient(before, (r) => r.dbsize())).toBe(KEYS);
  expect(await withClient(before, (r) => r.config('GET', 'replica-priority'))).toEqual(['replica-priority', '100']);
}, 120_000);
