/**
 * A killed master's server, started again empty as the new master's replica (as the Sentinel chaos run does),
 * is not promoted before its first sync. In the chaos run of 12:36 UTC (2026-11-27, bench/HISTORY.md) it was:
 * the new master stalled past the Sentinels' down-after time while the empty server waited for its data, the
 * Sentinels promoted it (a replica that never synced reports no link-down time), and the new master, made its
 * replica, loaded its empty data set: every outcome kept for a dial, run and follow-up gone. Real servers (free
 * ports): a master with keys, its replica, three Sentinels; the master is SIGKILLed, started again empty with
 * startEmptyReplica, and the new master is stopped (SIGSTOP) at once until the Sentinels' leader has tried to
 * fail it over and picked a replica or found none good.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePorts } from '../ports.js';
import {
  masterPortOf,
  promotable,
  startEmptyReplica,
  startSentinelSet,
  stopAll,
  untilMaster,
  type Server,
} from './servers.js';
import { until } from '../until.js';

const NAME = 'e';
const KEYS = 200;
let sentinelPorts: number[];
let servers: { master: Server; replica: Server };

beforeAll(async () => {
  const [master, replica, ...sentinels] = await freePorts(5);
  sentinelPorts = sentinels;
  servers = await startSentinelSet(NAME, master!, replica!, sentinelPorts);
}, 120_000);
afterAll(stopAll);

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
  const after = await until(
    'a new master',
    async () => {
      const port = await masterPortOf(sentinelPorts[0]!, NAME);
      return port === before ? undefined : port;
    },
    { timeoutMs: 30_000 },
  );
  await untilMaster(after);
  expect(after).toBe(servers.replica.port);

  // The Sentinels' leader, once it tries to fail the stalled master over, picks a replica or finds none good.
  const listeners = sentinelPorts.map((port) => new Redis({ port }));
  const tried = Promise.race(
    listeners.map(async (listener) => {
      await listener.subscribe('+selected-slave', '-failover-abort-no-good-slave');
      return new Promise((resolve) => listener.once('message', resolve));
    }),
  );
  await startEmptyReplica(before, after);
  const stalled = servers.replica.process.pid!;
  process.kill(stalled, 'SIGSTOP');
  try {
    await tried;
  } finally {
    process.kill(stalled, 'SIGCONT');
    listeners.forEach((listener) => listener.disconnect());
  }

  // The restarted server ends either synced with its master or promoted (role master, never synced).
  await until(
    'the restarted server synced or promoted',
    async () => {
      const replication = await withClient(before, (r) => r.info('replication'));
      return /^(master_link_status:up|role:master)/m.test(replication) ? true : undefined;
    },
    { timeoutMs: 30_000 },
  );
  expect(await masterPortOf(sentinelPorts[0]!, NAME)).toBe(after);
  await promotable(before);
  expect(await withClient(after, (r) => r.dbsize())).toBe(KEYS);
  expect(await withClient(before, (r) => r.dbsize())).toBe(KEYS);
  expect(await withClient(before, (r) => r.config('GET', 'replica-priority'))).toEqual(['replica-priority', '100']);
}, 120_000);
