/**
 * Real Redis servers for tests, started as child processes in a temporary directory each, keeping nothing on
 * disk, and stopped after: one server, a replica, a three-master cluster (with a replica a master if asked), and
 * Sentinels, each on a port the OS had free (test/ports.ts `freePorts`; a cluster's with its bus port free too), so
 * files and runs beside each other never share one; `startOwnRedis` picks its own and tries another if taken.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../ports.js';
import { until } from '../until.js';

/** How long a server, a cluster or a Sentinel set gets to come up or settle, probed every 100 ms. */
const SERVER_WAIT = { timeoutMs: 30_000, everyMs: 100 };

export interface Server {
  port: number;
  process: ChildProcess;
  /** SIGKILLs it (a crash). */
  kill(): void;
  /** SIGKILLs it, waits until it is gone, and starts it again on its port with its arguments: empty. */
  restart(): Promise<Server>;
}

const started: Array<{ process: ChildProcess; dir: string }> = [];

/** `pid` answers on `port` (a server or a Sentinel): the process there is that one, not another's. */
async function answers(port: number, pid: number | undefined): Promise<true | undefined> {
  const probe = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    const id = /^process_id:(\d+)/m.exec(await probe.info('server'))?.[1];
    return Number(id) === pid ? true : undefined;
  } finally {
    probe.disconnect();
  }
}

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));

/** Starts `redis-server` (or a Sentinel with `sentinel: true`) on `port` with `args`, and waits until it answers. */
export async function startRedis(
  port: number,
  args: string[] = [],
  options: { sentinel?: boolean; config?: string } = {},
): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), `momo-redis-${port}-`));
  const base = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
  ];
  let argv: string[];
  if (options.sentinel) {
    const { writeFileSync } = await import('node:fs');
    const file = join(dir, 'sentinel.conf');
    writeFileSync(file, options.config ?? '');
    argv = [
      file,
      '--sentinel',
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--protected-mode',
      'no',
      ...args,
    ];
  } else {
    argv = [...base, ...args];
  }
  const child = spawn('redis-server', argv, { stdio: 'ignore' });
  started.push({ process: child, dir });
  // A server that cannot listen (the port taken) exits: said at once, not waited for.
  let ready = false;
  await Promise.race([
    until(`redis on ${port}`, () => answers(port, child.pid), SERVER_WAIT).finally(() => (ready = true)),
    exited(child).then(() => {
      if (!ready) throw new Error(`redis-server on ${port} exited before it answered (port taken?)`);
    }),
  ]);
  return {
    port,
    process: child,
    kill: () => child.kill('SIGKILL'),
    async restart() {
      child.kill('SIGKILL');
      await exited(child);
      return startRedis(port, args, options);
    },
  };
}

/**
 * A `redis-server` of the caller's own (`args` added), on a port the OS had free, so that files and runs
 * beside each other never share one: for a test that must see or empty a whole database. Another port is
 * tried when another process took the one chosen before the server could listen.
 */
export async function startOwnRedis(args: string[] = []): Promise<Server> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedis(await freePort(), args);
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}

/**
 * A cluster node on `port` (`cluster-enabled`, `cluster-node-timeout` 2 s: a master that stops answering is
 * counted failing, and its replica promoted, within about 3 s), with `args` added; a node of its own until it
 * meets the others (a killed one started again this way comes back empty, with a new id).
 */
export function startClusterNode(port: number, args: string[] = []): Promise<Server> {
  return startRedis(port, [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${port}.conf`,
    '--cluster-node-timeout',
    String(CLUSTER_NODE_TIMEOUT_MS),
    ...args,
  ]);
}

/** The test clusters' `cluster-node-timeout`, ms. */
export const CLUSTER_NODE_TIMEOUT_MS = 2000;

/**
 * A three-master cluster on `ports` (its slots split evenly), ready (cluster_state:ok). With `replicaPorts`, a
 * replica for each master: the one on `replicaPorts[i]` replicates the master on `ports[i]` (as
 * `--cluster-replicas 1` deploys, the pairs named here), each in sync when this returns; the servers returned
 * are the masters', then the replicas'. `args` go to every node (e.g. `['--repl-diskless-sync-delay', '0']`).
 */
export async function startCluster(
  ports: number[],
  options: { replicaPorts?: number[]; args?: string[] } = {},
): Promise<Server[]> {
  const replicaPorts = options.replicaPorts ?? [];
  const clusterNode = (port: number) => startClusterNode(port, options.args);
  const servers = await Promise.all([...ports, ...replicaPorts].map(clusterNode));
  const create = spawn('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes'], {
    stdio: 'ignore',
  });
  await new Promise<void>((resolve, reject) =>
    create.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`redis-cli --cluster create: ${code}`)))),
  );
  for (const [i, port] of replicaPorts.entries()) {
    const masterPort = ports[i]!;
    const masterId = await withServer(masterPort, async (r) => String(await r.call('CLUSTER', 'MYID')));
    await withServer(port, (r) => r.call('CLUSTER', 'MEET', '127.0.0.1', masterPort));
    // The master is known to the replica once the handshake is done: then it can replicate it.
    await until(
      `${port} replicating ${masterPort}`,
      () =>
        withServer(port, async (r) => ((await r.call('CLUSTER', 'REPLICATE', masterId)) === 'OK' ? true : undefined)),
      SERVER_WAIT,
    );
  }
  for (const port of [...ports, ...replicaPorts]) {
    await until(
      `cluster ok on ${port}`,
      async () => {
        const c = new Redis({ port, maxRetriesPerRequest: 0 });
        c.on('error', () => {});
        try {
          const info = await c.cluster('INFO');
          return String(info).includes('cluster_state:ok') ? true : undefined;
        } finally {
          c.disconnect();
        }
      },
      SERVER_WAIT,
    );
  }
  for (const port of replicaPorts)
    await until(
      `replica on ${port} in sync`,
      () =>
        withServer(port, async (r) => (/^master_link_status:up/m.test(await r.info('replication')) ? true : undefined)),
      SERVER_WAIT,
    );
  return servers;
}

/** A node of a `CLUSTER NODES` reply: id, port, flags (`master`, `slave`, `myself`, `fail`, …), master's id or `-`. */
export interface ClusterNode {
  id: string;
  port: number;
  flags: string[];
  master: string;
  link: string;
  /** Its slot ranges (`0-5460`, `5461`), not those being imported or migrated. */
  slots: string[];
}

/** The cluster's nodes as the node on `port` sees them (`CLUSTER NODES`). */
export async function clusterNodes(port: number): Promise<ClusterNode[]> {
  const reply = await withServer(port, async (r) => String(await r.call('CLUSTER', 'NODES')));
  return reply
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, master, , , , link, ...slots] = line.trim().split(' ');
      return {
        id: id!,
        port: Number(/:(\d+)@/.exec(address!)?.[1]),
        flags: flags!.split(','),
        master: master!,
        link: link!,
        slots: slots.filter((slot) => !slot.startsWith('[')),
      };
    });
}

/** Whether `node` serves `slot` (one of its ranges holds it). */
export function serves(node: ClusterNode, slot: number): boolean {
  return node.slots.some((range) => {
    const [start, end = start] = range.split('-').map(Number);
    return start! <= slot && slot <= end!;
  });
}

/**
 * A master on `masterPort`, its replica on `replicaPorts` (or one on each of several), and three Sentinels on
 * `sentinelPorts` watching it as `name` (quorum 2, down after 1 s, failover timeout 5 s), all answering, every
 * replica in sync and known to every Sentinel. `args` go to every redis-server of the set (not the Sentinels),
 * e.g. `['--repl-diskless-sync-delay', '0']`.
 */
export async function startSentinelSet(
  name: string,
  masterPort: number,
  replicaPorts: number | number[],
  sentinelPorts: number[],
  options: { args?: string[] } = {},
): Promise<{ master: Server; replica: Server; replicas: Server[]; sentinels: Server[] }> {
  const args = options.args ?? [];
  const ports = typeof replicaPorts === 'number' ? [replicaPorts] : replicaPorts;
  const master = await startRedis(masterPort, args);
  const replicas: Server[] = [];
  for (const port of ports)
    replicas.push(await startRedis(port, [...args, '--replicaof', '127.0.0.1', String(masterPort)]));
  for (const port of ports) await untilInSync(port);
  // Each Sentinel is told the replicas and the other Sentinels (by the ids they are given) in its config, as a
  // Sentinel writes them there itself once it has met them: it starts knowing the set instead of learning it
  // from the others' hellos (every 2 s).
  const ids = sentinelPorts.map(() => randomBytes(20).toString('hex'));
  const configOf = (i: number) =>
    [
      `sentinel myid ${ids[i]}`,
      `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 5000`,
      `sentinel parallel-syncs ${name} 1`,
      ...ports.map((port) => `sentinel known-replica ${name} 127.0.0.1 ${port}`),
      ...sentinelPorts.flatMap((port, j) =>
        j === i ? [] : [`sentinel known-sentinel ${name} 127.0.0.1 ${port} ${ids[j]}`],
      ),
      '',
    ].join('\n');
  const sentinels = await Promise.all(
    sentinelPorts.map((port, i) => startRedis(port, [], { sentinel: true, config: configOf(i) })),
  );
  // Every Sentinel knows the replicas and the other Sentinels before a failover is asked of them: linked to each
  // (no `disconnected` flag), the replicas' link to the master read from their INFO.
  for (const port of sentinelPorts) {
    await until(
      `sentinel ${port} sees the set`,
      async () => {
        const s = new Redis({ port, maxRetriesPerRequest: 0 });
        s.on('error', () => {});
        try {
          const [info] = (await s.call('SENTINEL', 'MASTERS')) as string[][];
          const field = (key: string) => Number(info![info!.indexOf(key) + 1]);
          const of = (fields: string[], key: string) => fields[fields.indexOf(key) + 1];
          const known = (await s.call('SENTINEL', 'REPLICAS', name)) as string[][];
          const others = (await s.call('SENTINEL', 'SENTINELS', name)) as string[][];
          return field('num-slaves') >= ports.length &&
            field('num-other-sentinels') >= sentinelPorts.length - 1 &&
            known.every((r) => of(r, 'flags') === 'slave' && of(r, 'master-link-status') === 'ok') &&
            others.every((o) => of(o, 'flags') === 'sentinel')
            ? true
            : undefined;
        } finally {
          s.disconnect();
        }
      },
      SERVER_WAIT,
    );
  }
  return { master, replica: replicas[0]!, replicas, sentinels };
}

/**
 * Starts a killed server again on `port`, empty, as the replica of `masterPort` (as an operator brings back a
 * crashed server that kept nothing on disk), not to be promoted until its first sync is done
 * (`replica-priority 0`; {@link promotable} lifts it). A replica that never synced reports no link-down time,
 * so the Sentinels take it for a good candidate: a stall of the master past their down-after time in that
 * window (a few seconds: the master waits before it sends its data) would promote the empty server, and the
 * master, made its replica, would load its empty data set: every key gone. `args`: as the set's other servers
 * were started with ({@link startSentinelSet}).
 */
export function startEmptyReplica(port: number, masterPort: number, args: string[] = []): Promise<Server> {
  return startRedis(port, [...args, '--replicaof', '127.0.0.1', String(masterPort), '--replica-priority', '0']);
}

/** Once the replica on `port` holds its master's data (its link up), the Sentinels may promote it again. */
export async function promotable(port: number, timeoutMs = 60_000): Promise<void> {
  await untilInSync(port, timeoutMs);
  await withServer(port, (r) => r.config('SET', 'replica-priority', '100'));
}

/** Until the replica on `port` holds its master's data (its link up). */
export function untilInSync(port: number, timeoutMs = 30_000): Promise<true> {
  return until(
    `replica on ${port} in sync`,
    () =>
      withServer(port, async (r) => (/^master_link_status:up/m.test(await r.info('replication')) ? true : undefined)),
    { timeoutMs, everyMs: 100 },
  );
}

/** How many WAIT commands the server on `port` has run (`INFO commandstats`). */
export function waitCalls(port: number): Promise<number> {
  return withServer(port, async (r) =>
    Number(/^cmdstat_wait:calls=(\d+)/m.exec(await r.info('commandstats'))?.[1] ?? 0),
  );
}

/** The port of the master the Sentinel on `sentinelPort` names for `name`. */
export async function masterPortOf(sentinelPort: number, name: string): Promise<number> {
  const s = new Redis({ port: sentinelPort, maxRetriesPerRequest: 0 });
  try {
    const [, port] = (await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as string[];
    return Number(port);
  } finally {
    s.disconnect();
  }
}

/** Waits until the server on `port` says it is a master taking writes. */
export function untilMaster(port: number): Promise<true> {
  return until(
    `master on ${port}`,
    async () => {
      const r = new Redis({ port, maxRetriesPerRequest: 0 });
      r.on('error', () => {});
      try {
        return String(await r.info('replication')).includes('role:master') ? true : undefined;
      } finally {
        r.disconnect();
      }
    },
    SERVER_WAIT,
  );
}

/**
 * A planned failover to the cluster replica on `port` (`CLUSTER FAILOVER`, as an operator runs before
 * maintenance), done when the replica says it is a master. Redis gives a manual failover 5 s (its fixed
 * CLUSTER_MF_TIMEOUT) to pause the master, catch up and win the masters' votes, then drops it and leaves the
 * replica a replica: on a loaded machine, or with failovers of several masters at once splitting the votes, it
 * may time out (a CI run waited 30 s for a master that never came). Asked again then, as the operator would.
 */
export function clusterFailOver(port: number): Promise<true> {
  let askedAt = -Infinity;
  return until(
    `a failover to ${port}`,
    () =>
      withServer(port, async (r) => {
        if (String(await r.info('replication')).includes('role:master')) return true;
        if (performance.now() - askedAt > MANUAL_FAILOVER_TIMEOUT_MS + 1000) {
          await r.call('CLUSTER', 'FAILOVER');
          askedAt = performance.now();
        }
        return undefined;
      }),
    { ...SERVER_WAIT, timeoutMs: 60_000 },
  );
}

/** Redis's CLUSTER_MF_TIMEOUT: how long a manual failover may take before the server gives it up, ms. */
const MANUAL_FAILOVER_TIMEOUT_MS = 5000;

/** A connection to the server on `port` for `use`, closed after. */
export async function withServer<T>(port: number, use: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({ port, maxRetriesPerRequest: 1, lazyConnect: true });
  r.on('error', () => {});
  try {
    await r.connect();
    return await use(r);
  } finally {
    r.disconnect();
  }
}

/**
 * Moves the slot of `key` (a hash tag such as `{u5}`) of the cluster on `ports` from its master to the next one,
 * keys and all, as `redis-cli --cluster reshard` does: IMPORTING and MIGRATING, MIGRATE in batches, then every
 * master told the new owner. Clients that knew the old owner get MOVED from it.
 */
export async function moveSlotOf(
  ports: number[],
  key: string,
): Promise<{ slot: number; owner: number; target: number; keys: number }> {
  const ids = new Map<number, string>();
  for (const port of ports) ids.set(port, await withServer(port, async (r) => String(await r.call('CLUSTER', 'MYID'))));
  const { slot, owner } = await withServer(ports[0]!, async (r) => {
    const slot = Number(await r.call('CLUSTER', 'KEYSLOT', key));
    const ranges = (await r.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>;
    return { slot, owner: ranges.find(([start, end]) => start <= slot && slot <= end)![2][1] };
  });
  const target = ports[(ports.indexOf(owner) + 1) % ports.length]!;
  const keys = await withServer(owner, async (source) =>
    withServer(target, async (dest) => {
      await dest.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', ids.get(owner)!);
      await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', ids.get(target)!);
      let moved = 0;
      for (;;) {
        const batch = (await source.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
        if (batch.length === 0) break;
        await source.call('MIGRATE', '127.0.0.1', target, '', 0, 5000, 'REPLACE', 'KEYS', ...batch);
        moved += batch.length;
      }
      for (const port of [target, owner, ...ports.filter((p) => p !== target && p !== owner)])
        await withServer(port, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'NODE', ids.get(target)!));
      return moved;
    }),
  );
  return { slot, owner, target, keys };
}

/** Stops every server these helpers started and deletes their directories. */
export async function stopAll(): Promise<void> {
  for (const { process: child, dir } of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
