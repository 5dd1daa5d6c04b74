/**
 * The chaos run beyond one Redis (`npm run chaos -- --redis sentinel|cluster`), on real servers started here
 * on free ports (test/redis/servers.ts):
 * - `sentinel`: the deployment docs/redis.md recommends: a master with one replica, both with
 *   `repl-diskless-sync-delay 0`, and three Sentinels watching it as `momo`; the faults, in turn: a
 *   planned failover (`SENTINEL FAILOVER`), and a SIGKILL of the master (the Sentinels promote the replica; the
 *   killed server comes back empty as the new master's replica, promotable once it holds the data);
 * - `cluster`: three masters with a replica each, every server with
 *   `repl-diskless-sync-delay 0`; the faults, in turn, each on the master serving a busy tag (a part of the
 *   notification queue's `{momo-n<n>}`, of the follow-ups' `{momo-f<n>}`, or of the users' `{u<n>}`): its slot moved to another master
 *   while the run goes on (IMPORTING/MIGRATING, its keys migrated, then the slot given to the new owner, as
 *   `redis-cli --cluster reshard` does); a planned failover (`CLUSTER FAILOVER` sent to its replica); a SIGKILL
 *   of it (its replica promoted after `cluster-node-timeout`; the killed server comes back empty as the new
 *   master's replica, promotable once it holds the data).
 * Each fault waits until the servers are whole again (the new master taking writes, every replica in sync) and
 * gives the window it lasted, so the run can say what a fault cost the people answered during it.
 */
import { Cluster, Redis } from 'ioredis';
import { freePorts } from '../ports.js';
import { PARTS, queuePrefixes, tagOf } from '../../src/store/keys.js';
import {
  clusterFailOver,
  clusterNodes,
  masterPortOf,
  moveSlotOf,
  promotable,
  startCluster,
  startClusterNode,
  serves,
  startEmptyReplica,
  startSentinelSet,
  stopAll,
  untilMaster,
  withServer,
  type Server,
} from '../redis/servers.js';
import { until } from '../until.js';

export type RedisMode = 'sentinel' | 'cluster';

export interface RedisSet {
  mode: RedisMode;
  /** The instances' Redis settings (instead of REDIS_URL). */
  env: Record<string, string>;
  /** A client for the run's own reads (the queue's counts, a failed conversation's keys). */
  client: Redis | Cluster;
  /** Injects the next fault and waits until the servers are whole again: what it did, from when to when. */
  fault(): Promise<{ what: string; from: number; to: number } | undefined>;
  close(): Promise<void>;
}

const NAME = 'momo';
/**
 * A master and one replica. A second replica would shorten a planned failover's wait for a replica, but `WAIT 1` on the old
 * master is then answered, in the second before the Sentinels reconfigure it, by a replica that drops the write
 * when it follows the promoted one (docs/redis.md).
 */
const REPLICAS = 1;
const SENTINELS = 3;
/**
 * On every server of the Sentinel set and the cluster: a replica that (re)connects gets its first sync at once,
 * not 5 s later.
 */
const SERVER_ARGS = ['--repl-diskless-sync-delay', '0'];
/** Three masters, and a replica each: the n-th replica replicates the n-th master at the start. */
const CLUSTER_MASTERS = 3;

/** How long the chaos run waits for a set or a cluster to settle, asked every 200 ms. */
const SETTLE = { timeoutMs: 60_000, everyMs: 200 };

/**
 * Every other server of the set (`replicaPorts`) is an online replica of `masterPort` and the Sentinels count
 * each up: a failover can be asked for again.
 */
async function whole(sentinelPort: number, masterPort: number, replicaPorts: number[]): Promise<void> {
  await untilMaster(masterPort);
  await until(
    'every replica in sync',
    () =>
      withServer(masterPort, async (r) => {
        const online = (await r.info('replication')).match(/^slave\d+:.*state=online.*$/gm) ?? [];
        return replicaPorts.every((port) => online.some((line) => line.includes(`port=${port},`)));
      }),
    SETTLE,
  );
  await until(
    'the Sentinels see every replica',
    () =>
      withServer(sentinelPort, async (s) => {
        const replicas = (await s.call('SENTINEL', 'REPLICAS', NAME)) as string[][];
        const field = (fields: string[], key: string) => String(fields[fields.indexOf(key) + 1]);
        return replicaPorts.every((port) =>
          replicas.some(
            (fields) => field(fields, 'port') === String(port) && !/down|disconnected/.test(field(fields, 'flags')),
          ),
        );
      }),
    SETTLE,
  );
}

async function sentinelSet(progress: (line: string) => void): Promise<RedisSet> {
  const [masterPort, ...others] = (await freePorts(1 + REPLICAS + SENTINELS)) as [number, ...number[]];
  const sentinelPorts = others.slice(REPLICAS);
  const { master, replicas } = await startSentinelSet(NAME, masterPort, others.slice(0, REPLICAS), sentinelPorts, {
    args: SERVER_ARGS,
  });
  const servers = new Map<number, Server>([master, ...replicas].map((server) => [server.port, server]));
  const client = new Redis({ sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })), name: NAME });
  client.on('error', () => {});
  let turn = 0;
  return {
    mode: 'sentinel',
    env: {
      REDIS_SENTINELS: sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','),
      REDIS_SENTINEL_NAME: NAME,
    },
    client,
    async fault() {
      const before = await masterPortOf(sentinelPorts[0]!, NAME);
      const from = Date.now();
      const kill = turn++ % 2 === 1;
      if (kill) {
        progress(`chaos: SIGKILL of the Redis master (${before})`);
        servers.get(before)!.kill();
      } else {
        progress(`chaos: SENTINEL FAILOVER (master ${before})`);
        await withServer(sentinelPorts[0]!, (s) => s.call('SENTINEL', 'FAILOVER', NAME));
      }
      let after = before;
      await until(
        'the Sentinels name a new master',
        async () => {
          after = await masterPortOf(sentinelPorts[0]!, NAME);
          return after !== before;
        },
        SETTLE,
      );
      await untilMaster(after);
      const to = Date.now();
      // The killed server comes back empty, as the new master's replica (as an operator restarts it), and may
      // be promoted only once it holds the data: at 12:36 UTC on 2026-11-27 the Sentinels promoted it empty
      // during a stall of the new master, which then loaded its empty data set (servers.ts).
      if (kill) servers.set(before, await startEmptyReplica(before, after, SERVER_ARGS));
      const replicaPorts = [...servers.keys()].filter((port) => port !== after);
      await whole(sentinelPorts[0]!, after, replicaPorts);
      if (kill) {
        await promotable(before);
        // The Sentinels read a replica's priority every 10 s: until they have read it lifted, a failover asked
        // for finds no replica to promote (NOGOODSLAVE, at 16:18 UTC on 2026-11-27), and a master kill then
        // leaves the set without one.
        await until(
          'the Sentinels see the restarted server promotable',
          async () => {
            for (const port of sentinelPorts) {
              const seen = await withServer(port, async (s) => {
                const replicas = (await s.call('SENTINEL', 'REPLICAS', NAME)) as string[][];
                const fields = replicas.find((f) => f[f.indexOf('port') + 1] === String(before));
                return fields !== undefined && fields[fields.indexOf('slave-priority') + 1] !== '0';
              });
              if (!seen) return false;
            }
            return true;
          },
          SETTLE,
        );
      }
      progress(`chaos: Redis master now ${after} (${to - from} ms)`);
      return { what: kill ? 'master-killed' : 'failover', from, to };
    },
    async close() {
      client.disconnect();
      await stopAll();
    },
  };
}

/** The busy hash tags a fault takes: the notification queue's parts, the follow-ups' parts, the users' parts. */
const tagsOf = (prefixes: string[]) => prefixes.map((prefix) => tagOf(prefix).slice(1, -1));
const NOTIFICATION_TAGS = tagsOf(queuePrefixes.parts('notifications'));
const FOLLOW_UP_TAGS = tagsOf(queuePrefixes.parts('followUps'));
const USER_TAGS = Array.from({ length: PARTS }, (_, part) => `u${part}`);

/** Whether a node's flags say it is failing, not known yet, or without an address. */
const unwell = (flags: string[]) => flags.some((flag) => /^(fail\??|handshake|noaddr)$/.test(flag));

/**
 * The cluster on `ports` is whole: every node answers `cluster_state:ok` with every slot served and sees the
 * same `ports.length` nodes, none failing, every link up; each master serving slots has a replica, online in
 * its `INFO replication` (in sync), whose own link to it is up.
 */
async function clusterWhole(ports: number[]): Promise<void> {
  await until(
    'the cluster whole (every slot served, each master with its replica in sync)',
    async () => {
      for (const port of ports) {
        const info = await withServer(port, async (r) => String(await r.call('CLUSTER', 'INFO')));
        if (!/^cluster_state:ok/m.test(info) || !/^cluster_slots_ok:16384/m.test(info)) return false;
        const nodes = await clusterNodes(port);
        if (nodes.length !== ports.length) return false;
        if (nodes.some((node) => unwell(node.flags) || node.link !== 'connected')) return false;
      }
      const nodes = await clusterNodes(ports[0]!);
      for (const master of nodes.filter((node) => node.slots.length > 0)) {
        const replica = nodes.find((node) => node.master === master.id);
        if (!replica) return false;
        const online = await withServer(master.port, async (r) =>
          new RegExp(`^slave\\d+:.*port=${replica.port},state=online`, 'm').test(await r.info('replication')),
        );
        const linked = await withServer(replica.port, async (r) =>
          /^master_link_status:up/m.test(await r.info('replication')),
        );
        if (!online || !linked) return false;
      }
      return true;
    },
    { ...SETTLE, timeoutMs: 120_000 },
  );
}

async function clusterSet(progress: (line: string) => void, random: () => number): Promise<RedisSet> {
  const all = await freePorts(2 * CLUSTER_MASTERS, { bus: true });
  const masterPorts = all.slice(0, CLUSTER_MASTERS);
  const started = await startCluster(masterPorts, { replicaPorts: all.slice(CLUSTER_MASTERS), args: SERVER_ARGS });
  const servers = new Map<number, Server>(started.map((server) => [server.port, server]));
  const ports = () => [...servers.keys()];
  const client = new Cluster(masterPorts.map((port) => ({ host: '127.0.0.1', port })));
  client.on('error', () => {});
  let turn = 0;
  return {
    mode: 'cluster',
    env: { REDIS_CLUSTER_NODES: masterPorts.map((p) => `127.0.0.1:${p}`).join(',') },
    client,
    async fault() {
      // The faults in turn: a slot moved, a planned failover, a master killed; each on the master serving a
      // busy tag, taken in turn too (shifted every third fault, so each fault meets each tag): a part of the
      // notification queue's (the busiest: a quarter of every notification), a part of the follow-ups' (one job
      // per payment), a random part of the users'.
      const pick = (tags: string[]) => tags[Math.floor(random() * tags.length)]!;
      const kind = (['slot-moved', 'failover', 'master-killed'] as const)[turn % 3]!;
      const tag = [() => pick(NOTIFICATION_TAGS), () => pick(FOLLOW_UP_TAGS), () => pick(USER_TAGS)][
        (turn + Math.floor(turn / 3)) % 3
      ]!();
      turn++;
      const nodes = await clusterNodes(masterPorts.find((port) => servers.has(port)) ?? ports()[0]!);
      const masters = nodes.filter((node) => node.slots.length > 0).sort((a, b) => a.port - b.port);
      if (kind === 'slot-moved') {
        const from = Date.now();
        const { slot, owner, target, keys } = await moveSlotOf(
          masters.map((node) => node.port),
          `{${tag}}`,
        );
        const to = Date.now();
        progress(`chaos: slot ${slot} ({${tag}}, ${keys} keys) moved from ${owner} to ${target} (${to - from} ms)`);
        return { what: kind, from, to };
      }
      const slot = await withServer(masters[0]!.port, async (r) =>
        Number(await r.call('CLUSTER', 'KEYSLOT', `{${tag}}`)),
      );
      const master = masters.find((node) => serves(node, slot))!;
      const replica = nodes.find((node) => node.master === master.id)!;
      const from = Date.now();
      if (kind === 'failover') {
        progress(`chaos: CLUSTER FAILOVER on ${replica.port} (master ${master.port}, slot ${slot} of {${tag}})`);
        await clusterFailOver(replica.port);
      } else {
        progress(`chaos: SIGKILL of the cluster master ${master.port} (slot ${slot} of {${tag}})`);
        servers.get(master.port)!.kill();
      }
      await until(
        `${replica.port} serving slot ${slot}`,
        async () => {
          const seen = await clusterNodes(replica.port);
          return seen.some(
            (node) => node.flags.includes('myself') && node.flags.includes('master') && serves(node, slot),
          );
        },
        SETTLE,
      );
      const to = Date.now();
      if (kind === 'master-killed') {
        // The killed server comes back empty (as an operator restarts one that kept nothing on disk: a new
        // node id), the old id forgotten by every node, as the new master's replica; not to be promoted
        // until its first sync is done (`cluster-replica-no-failover`): empty, it would take the slots and
        // the master, made its replica, would load its empty data set (the Sentinel set's startEmptyReplica).
        const live = ports().filter((port) => port !== master.port);
        for (const port of live)
          await withServer(port, (r) => r.call('CLUSTER', 'FORGET', master.id)).catch(() => undefined);
        const restarted = await startClusterNode(master.port, [...SERVER_ARGS, '--cluster-replica-no-failover', 'yes']);
        servers.set(master.port, restarted);
        const newMaster = await withServer(replica.port, async (r) => String(await r.call('CLUSTER', 'MYID')));
        await withServer(master.port, (r) => r.call('CLUSTER', 'MEET', '127.0.0.1', replica.port));
        await until(
          `${master.port} replicating ${replica.port}`,
          () => withServer(master.port, async (r) => (await r.call('CLUSTER', 'REPLICATE', newMaster)) === 'OK'),
          SETTLE,
        );
        await until(
          `${master.port} in sync`,
          () => withServer(master.port, async (r) => /^master_link_status:up/m.test(await r.info('replication'))),
          SETTLE,
        );
        await withServer(master.port, (r) => r.config('SET', 'cluster-replica-no-failover', 'no'));
      }
      await clusterWhole(ports());
      progress(
        `chaos: cluster master of slot ${slot} now ${replica.port} (${to - from} ms; whole after ${Date.now() - from} ms)`,
      );
      return { what: kind, from, to };
    },
    async close() {
      client.disconnect();
      await stopAll();
    },
  };
}

export function startRedisSet(
  mode: RedisMode,
  progress: (line: string) => void,
  random: () => number,
): Promise<RedisSet> {
  return mode === 'sentinel' ? sentinelSet(progress) : clusterSet(progress, random);
}
