/**
 * On a cluster, what a failover must not drop waits for the replicas of the master serving its key's slot: a
 * master failover drops the old master's writes its replica lacks. Real servers on free ports: three masters
 * with a replica each, and three masters alone. A replica stopped (SIGSTOP: connected, answering nothing) holds
 * nothing of its master's keys, while a key on another master is held; once it runs again it is held. A master
 * with no replica holds its writes alone. WAIT goes to the connection that carried the key's writes (ioredis keeps
 * one a node), so callers of different masters never wait behind each other.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedNotes, ussdInbox } from '../../src/conversation/channels/ussd-inbox.js';
import { keys, queuePrefixes } from '../../src/store/keys.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { createLogger } from '../../src/log.js';
import { BullQueue, NotReplicatedError } from '../../src/notifications/queue.js';
import {
  clusterReplicaUp,
  heldByReplica,
  QUEUE_PREFIX,
  type RedisClient,
  type RedisSettings,
} from '../../src/redis/connect.js';
import { freePorts } from '../ports.js';
import { until } from '../until.js';
import { startCluster, stopAll, waitCalls, withServer, type Server } from './servers.js';

const slotOf = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

const ports = await freePorts(9, { bus: true });
const MASTERS = ports.slice(0, 3);
const REPLICAS = ports.slice(3, 6);
const ALONE = ports.slice(6);

const clusterOn = (ports: number[]): RedisSettings => ({
  mode: 'cluster',
  nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
  tls: false,
});

/** The port of the master serving `key`'s slot in the cluster of `ports`. */
async function masterOf(ports: number[], key: string): Promise<number> {
  const slot = slotOf(key);
  const ranges = await withServer(
    ports[0]!,
    async (r) => (await r.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>,
  );
  return ranges.find(([start, end]) => start <= slot && slot <= end)![2][1];
}

/** A USSD address whose keys (its part's tag) the master on `port` serves, under the store's `prefix`. */
async function addressOn(ports: number[], port: number, prefix: string) {
  for (let n = 0; ; n++) {
    const address = { channel: 'ussd' as const, conversationId: `+2567005550${String(n).padStart(2, '0')}` };
    if ((await masterOf(ports, `${prefix}${keys.pending(address)}`)) === port) return address;
  }
}

let servers: Server[];

beforeAll(async () => {
  servers = await startCluster(MASTERS, { replicaPorts: REPLICAS });
  await startCluster(ALONE);
}, 180_000);
afterAll(stopAll);

describe('the store on a cluster with a replica a master', () => {
  it('holds a key once its own master’s replica has it, whatever the other replicas do', async () => {
    const prefix = `cw-${Date.now()}:`;
    const store = new RedisStore({ url: clusterOn(MASTERS), keyPrefix: prefix });
    const inbox = ussdInbox(store);
    const stoppedAddress = await addressOn(MASTERS, MASTERS[0]!, prefix);
    const otherAddress = await addressOn(MASTERS, MASTERS[1]!, prefix);
    const stoppedKey = keys.conversation(stoppedAddress);
    const otherKey = keys.conversation(otherAddress);
    const replica = servers[MASTERS.length]!;
    try {
      await store.set(stoppedKey, { n: 1 }, null, 60);
      await store.set(otherKey, { n: 1 }, null, 60);
      expect(await store.replicated?.(stoppedKey)).toBe(true);
      expect(await store.replicated?.(otherKey)).toBe(true);
      replica.process.kill('SIGSTOP');
      try {
        await store.set(stoppedKey, { n: 2 }, (await store.get(stoppedKey))!.version, 60);
        await store.set(otherKey, { n: 2 }, (await store.get(otherKey))!.version, 60);
        expect(await store.replicated?.(stoppedKey)).toBe(false);
        expect(await store.replicated?.(otherKey)).toBe(true);
        // An outcome kept for the dial on the stopped replica's master is not told; on another master it is.
        await expect(inbox.send(stoppedAddress, 'Done: 7,000 UGX reached +256772000001')).rejects.toThrow(
          /not on a replica/,
        );
        await inbox.send(otherAddress, 'Done: 8,000 UGX reached +256772000001');
      } finally {
        replica.process.kill('SIGCONT');
      }
      expect(await store.replicated?.(stoppedKey)).toBe(true);
      await inbox.send(stoppedAddress, 'Done: 7,000 UGX reached +256772000001');
      const notes = storedNotes((await store.get(keys.pending(stoppedAddress)))?.snapshot).map((note) => note.text);
      expect(notes).toEqual(['Done: 7,000 UGX reached +256772000001']);
    } finally {
      for (const key of [stoppedKey, otherKey, keys.pending(stoppedAddress), keys.pending(otherAddress)])
        await store.delete(key);
      await store.close();
    }
  }, 60_000);

  it('shares one WAIT a master among callers at once, and another master’s callers do not wait behind it', async () => {
    const prefix = `cw-together-${Date.now()}:`;
    const store = new RedisStore({ url: clusterOn(MASTERS), keyPrefix: prefix });
    const stoppedKey = keys.conversation(await addressOn(MASTERS, MASTERS[0]!, prefix));
    const otherKey = keys.conversation(await addressOn(MASTERS, MASTERS[2]!, prefix));
    const replica = servers[MASTERS.length]!;
    try {
      await store.set(stoppedKey, { n: 0 }, null, 60);
      await store.set(otherKey, { n: 0 }, null, 60);
      expect(await store.replicated?.(stoppedKey)).toBe(true);
      const before = await waitCalls(MASTERS[0]!);
      replica.process.kill('SIGSTOP');
      let stopped: boolean[];
      let other: boolean[];
      try {
        await store.set(stoppedKey, { n: 1 }, (await store.get(stoppedKey))!.version, 60);
        [stopped, other] = await Promise.all([
          Promise.all(Array.from({ length: 8 }, () => store.replicated!(stoppedKey))),
          Promise.all(Array.from({ length: 8 }, () => store.replicated!(otherKey))),
        ]);
      } finally {
        replica.process.kill('SIGCONT');
      }
      expect(stopped).toEqual(Array.from({ length: 8 }, () => false));
      expect(other).toEqual(Array.from({ length: 8 }, () => true));
      expect((await waitCalls(MASTERS[0]!)) - before).toBeLessThanOrEqual(2);
    } finally {
      await store.delete(stoppedKey);
      await store.delete(otherKey);
      await store.close();
    }
  }, 60_000);

  it('is not taken as alone while the cluster counts the replica up but it is cut off from its master', async () => {
    const prefix = `cw-alone-${Date.now()}:`;
    const store = new RedisStore({ url: clusterOn(MASTERS), keyPrefix: prefix });
    const key = keys.conversation(await addressOn(MASTERS, MASTERS[1]!, prefix));
    const replicaPort = REPLICAS[1]!;
    const connected = () =>
      withServer(MASTERS[1]!, async (r) => Number(/^connected_slaves:(\d+)/m.exec(await r.info('replication'))![1]));
    try {
      await store.set(key, { n: 1 }, null, 60);
      expect(await store.replicated?.(key)).toBe(true);
      // The replica's link to its master fails (it cannot authenticate) while the cluster's bus sees it well.
      await withServer(replicaPort, async (r) => {
        await r.config('SET', 'masteruser', 'nobody');
        await r.config('SET', 'masterauth', 'wrong');
        await r.call('CLIENT', 'KILL', 'TYPE', 'master');
      });
      await until('the master without its replica', async () => (await connected()) === 0, { everyMs: 50 });
      expect(await connected()).toBe(0);
      await store.set(key, { n: 2 }, (await store.get(key))!.version, 60);
      expect(await store.replicated?.(key)).toBe(false);
    } finally {
      await withServer(replicaPort, async (r) => {
        await r.config('SET', 'masteruser', '');
        await r.config('SET', 'masterauth', '');
      });
    }
    try {
      await until('the replica replicating again', () => store.replicated?.(key), { everyMs: 100 });
      expect(await store.replicated?.(key)).toBe(true);
    } finally {
      await store.delete(key);
      await store.close();
    }
  }, 60_000);
});

describe('the notification queue on a cluster with a replica a master', () => {
  it('takes a job once its slot’s replica holds it, and a queue of another slot meanwhile', async () => {
    const name = `cw-queue-${Date.now()}`;
    const sharedMaster = await masterOf(MASTERS, `${QUEUE_PREFIX}:${name}`);
    const replica = servers[MASTERS.length + MASTERS.indexOf(sharedMaster)]!;
    // A follow-up part served by another master.
    let otherPrefix: string | undefined;
    for (const prefix of queuePrefixes.parts('followUps'))
      if ((await masterOf(MASTERS, `${prefix}:${name}`)) !== sharedMaster) otherPrefix = prefix;
    const options = { replicated: 'required' as const, logger: createLogger('silent') };
    const queue = new BullQueue<{ n: number }>(clusterOn(MASTERS), name, options);
    const other = new BullQueue<{ n: number }>(clusterOn(MASTERS), name, { ...options, prefix: otherPrefix! });
    try {
      await queue.add({ n: 1 });
      replica.process.kill('SIGSTOP');
      try {
        await expect(queue.add({ n: 2 })).rejects.toBeInstanceOf(NotReplicatedError);
        await other.add({ n: 1 });
      } finally {
        replica.process.kill('SIGCONT');
      }
      await queue.add({ n: 3 });
      expect(await queue.depth()).toBe(3);
      expect(await other.depth()).toBe(1);
    } finally {
      await queue.close();
      await other.close();
    }
  }, 60_000);
});

describe('a cluster without replicas', () => {
  it('holds every write at once: each master holds its own alone', async () => {
    const prefix = `cw-none-${Date.now()}:`;
    const store = new RedisStore({ url: clusterOn(ALONE), keyPrefix: prefix });
    const inbox = ussdInbox(store);
    const queue = new BullQueue<{ n: number }>(clusterOn(ALONE), `cw-none-${Date.now()}`, {
      replicated: 'required',
      logger: createLogger('silent'),
    });
    const addresses = await Promise.all(ALONE.map((port) => addressOn(ALONE, port, prefix)));
    try {
      for (const address of addresses) {
        const key = keys.conversation(address);
        await store.set(key, { n: 1 }, null, 60);
        expect(await store.replicated?.(key)).toBe(true);
        await inbox.send(address, 'Done: 5,000 UGX reached +256772000001');
      }
      await queue.add({ n: 1 });
      expect(await queue.depth()).toBe(1);
    } finally {
      for (const address of addresses) {
        await store.delete(keys.conversation(address));
        await store.delete(keys.pending(address));
      }
      await queue.close();
      await store.close();
    }
  }, 60_000);
});

describe('a master’s table of nodes (CLUSTER NODES)', () => {
  const line = (id: string, flags: string, master: string, link = 'connected') =>
    `${id} 127.0.0.1:7000@17000 ${flags} ${master} 0 0 1 ${link}`;
  it('counts a replica of the node itself up unless it is failing or its link is down', () => {
    const myself = line('m1', 'myself,master', '-') + ' 0-5460';
    const other = line('m2', 'master', '-') + ' 5461-10922';
    expect(clusterReplicaUp([myself, other].join('\n'))).toBe(false);
    expect(clusterReplicaUp([myself, other, line('r2', 'slave', 'm2')].join('\n'))).toBe(false);
    expect(clusterReplicaUp([myself, other, line('r1', 'slave', 'm1')].join('\n'))).toBe(true);
    expect(clusterReplicaUp([myself, line('r1', 'slave,fail?', 'm1')].join('\n'))).toBe(false);
    expect(clusterReplicaUp([myself, line('r1', 'slave,fail', 'm1')].join('\n'))).toBe(false);
    expect(clusterReplicaUp([myself, line('r1', 'slave', 'm1', 'disconnected')].join('\n'))).toBe(false);
    expect(clusterReplicaUp(other)).toBe(true);
  });

  it('holds nothing on a server that is no master any more (demoted under the connection)', async () => {
    const demoted = {
      info: () => Promise.resolve('# Replication\r\nrole:slave\r\nmaster_port:7141\r\nconnected_slaves:0\r\n'),
    } as unknown as RedisClient;
    expect(await heldByReplica(demoted, clusterOn(ALONE), 10)).toBe(false);
  });
});
