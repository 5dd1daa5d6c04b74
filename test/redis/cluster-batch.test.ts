/**
 * A product connection on a three-master cluster with a replica each sends, in one tick, a
 * write to each of several slots of one master (as the sessions connection does under load: other
 * conversations' records, leases, marks), just after one of those slots moved, and just after that master
 * failed over. Every command must be answered: none may fail with MOVED. Auto-pipelined, ioredis sent the
 * batch as one pipeline to the old master and followed no redirection (it does only when every command of a
 * pipeline got the same one): the moved slot's write failed with MOVED, and after the failover every write
 * did. connectRedis never auto-pipelines a cluster connection, whatever the part asks.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closeRedis, connectRedis, type RedisClient } from '../../src/redis/connect.js';
import { freePorts } from '../ports.js';
import { until } from '../until.js';
import { clusterNodes, moveSlotOf, serves, startCluster, stopAll, untilMaster, withServer } from './servers.js';

const ports = await freePorts(6, { bus: true });
const MASTERS = ports.slice(0, 3);
const REPLICAS = ports.slice(3);
const slotOf = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;
let client: RedisClient;
/** Hash tags on slots of the first master, each on a slot of its own. */
let tags: string[];

beforeAll(async () => {
  await startCluster(MASTERS, { replicaPorts: REPLICAS, args: ['--repl-diskless-sync-delay', '0'] });
  const first = (await clusterNodes(MASTERS[0]!)).find((node) => node.flags.includes('myself'))!;
  tags = [];
  const slots = new Set<number>();
  for (let n = 0; tags.length < 8; n++) {
    const slot = slotOf(`{u${n}}`);
    if (serves(first, slot) && !slots.has(slot)) {
      tags.push(`{u${n}}`);
      slots.add(slot);
    }
  }
  // What the sessions connection asks for (scriptedRedis).
  client = connectRedis(
    { mode: 'cluster', nodes: MASTERS.map((port) => ({ host: '127.0.0.1', port })), tls: false },
    { name: 'test', keyPrefix: 'test:batch:', enableAutoPipelining: true },
  );
  await Promise.all(tags.map((tag) => client.set(`${tag}:record`, 'first')));
}, 60_000);
afterAll(async () => {
  if (client) await closeRedis(client);
  await stopAll();
});

/** One write a tag, all in one tick; each one's outcome (the error's message when it failed). */
async function batch(value: string): Promise<string[]> {
  const outcomes = await Promise.allSettled(tags.map((tag) => client.set(`${tag}:record`, value)));
  return outcomes.map((outcome) =>
    outcome.status === 'fulfilled' ? String(outcome.value) : String((outcome.reason as Error).message),
  );
}

const readBack = () => Promise.all(tags.map((tag) => client.get(`${tag}:record`)));

it('answers every write of a batch over several slots of a master, after one slot moved', async () => {
  const moved = await moveSlotOf(MASTERS, tags[0]!);
  expect(moved.owner).toBe(MASTERS[0]);
  expect(await batch('after the move')).toEqual(tags.map(() => 'OK'));
  expect(await readBack()).toEqual(tags.map(() => 'after the move'));
}, 30_000);

it('answers every write of a batch over several slots of a master, after it failed over', async () => {
  // The slots the first master still serves (the first tag's moved away above), on its replica after this.
  // TAKEOVER: the replica takes its master's slots at once, with no election that a loaded machine could
  // time out; the connection meets the same change as after an elected failover.
  // A replica taking over claims the slots it believes its master serves: it must know that the first tag's slot
  // moved (the masters were told; a replica learns it by gossip), or it takes that slot back, keys and all gone.
  await until('the replica knowing the first tag moved', async () => {
    const master = (await clusterNodes(REPLICAS[0]!)).find((node) => node.port === MASTERS[0]);
    return master !== undefined && !serves(master, slotOf(tags[0]!));
  });
  await withServer(REPLICAS[0]!, (r) => r.call('CLUSTER', 'FAILOVER', 'TAKEOVER'));
  await untilMaster(REPLICAS[0]!);
  // The old master redirects once it knows it is a replica: the batch meets MOVED, not a write it takes.
  await until('the old master a replica', () =>
    withServer(MASTERS[0]!, async (r) => /^role:slave/m.test(await r.info('replication'))),
  );
  expect(await batch('after the failover')).toEqual(tags.map(() => 'OK'));
  expect(await readBack()).toEqual(tags.map(() => 'after the failover'));
}, 30_000);
