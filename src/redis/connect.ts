/**
 * The one Redis connection factory of the product: conversations and their ledger, run leases, limits, the funnel,
 * the read budget, notification marks, approvals, payouts and BullMQ all open their connections here, in one
 * of three modes:
 * - one server: `REDIS_URL` (`redis://[:password@]host:port[/db]`, `rediss://` for TLS), as before;
 * - Sentinel: `REDIS_SENTINELS` (`host:port,…`) and `REDIS_SENTINEL_NAME` (the master's name); the client asks
 *   the Sentinels where the master is, follows a failover (Sentinel's `+switch-master`), and reconnects when a
 *   server answers READONLY (a master demoted under it), resending the command to the new master;
 * - Cluster: `REDIS_CLUSTER_NODES` (`host:port,…`, some of the masters: the rest is discovered); keys follow
 *   their slot (MOVED, ASK) and every script's keys share a hash tag (src/store/keys.ts).
 * `REDIS_PASSWORD`, `REDIS_TLS` (and `REDIS_SENTINEL_PASSWORD` when the Sentinels have their own) serve the
 * Sentinel and Cluster modes; a `REDIS_URL` carries its own.
 *
 * Every connection reconnects with a capped exponential backoff, and its errors are logged boundedly: the
 * first of a streak, then at most one line a {@link ERROR_LOG_EVERY_MS} with how many came meanwhile, and one
 * line when it is back ({@link logErrorsBoundedly}); a down Redis never floods the log. {@link closeRedis}
 * never waits on a Redis that does not answer, so a shutdown ends within its grace period.
 */
import { createRequire } from 'node:module';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { queuePrefixes } from '../store/keys.js';
import type { Logger } from '../log.js';

/** A server's address in a list setting. */
export interface HostPort {
  host: string;
  port: number;
}

/** Where Redis is, and how to talk to it (the parsed REDIS_* settings). */
export type RedisSettings =
  | { mode: 'server'; url: string }
  | {
      mode: 'sentinel';
      sentinels: HostPort[];
      /** The master's name the Sentinels monitor (REDIS_SENTINEL_NAME). */
      name: string;
      password?: string;
      sentinelPassword?: string;
      tls: boolean;
    }
  | { mode: 'cluster'; nodes: HostPort[]; password?: string; tls: boolean };

/** A one-server URL (REDIS_URL's form, what tests pass) or the settings of any mode. */
export type RedisTarget = string | RedisSettings;

/** A connection of any mode: both answer the same commands (a cluster routes each by its key's slot). */
export type RedisClient = Redis | Cluster;

/** At most one error line per connection in this many ms while Redis stays away (the first is logged at once). */
export const ERROR_LOG_EVERY_MS = 30_000;

/** How often a cluster connection asks for the slot map (CLUSTER SLOTS), ms: how long a moved slot may fail. */
export const SLOTS_REFRESH_MS = 2_000;

/** Longest wait between two reconnection attempts, ms: a failed-over master is found again within it. */
const MAX_RECONNECT_DELAY_MS = 2_000;

/** Reconnection delay after `times` failed attempts: 100, 200, 400 ms … capped, with a little jitter. */
export function reconnectDelay(times: number): number {
  const base = Math.min(MAX_RECONNECT_DELAY_MS, 100 * 2 ** Math.max(0, times - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** What a part asks of its connection (ioredis's meaning; unset: ioredis's default). */
export interface ConnectOptions {
  /** Named in the connection's log lines (`sessions`, `queue`, …). */
  name: string;
  /** Where its error lines go; unset: nowhere (its callers see failed commands). */
  logger?: Logger;
  /** Prefix of every key the connection sends (not BullMQ's: it keeps its own `prefix`). */
  keyPrefix?: string;
  /** Commands of a tick in one write; one server and Sentinel only (a cluster connection never: connectRedis). */
  enableAutoPipelining?: boolean;
  /** Tries of a command across reconnections; null: forever (BullMQ's blocking connections need it). */
  maxRetriesPerRequest?: number | null;
  /** False: a command while disconnected fails at once instead of waiting for the connection. */
  enableOfflineQueue?: boolean;
}

/** Reconnects (and resends the command) when the server it reached is no master any more. */
const reconnectOnReadonly = (error: Error): 2 | false => (error.message.startsWith('READONLY') ? 2 : false);

/** The settings' name for one-server strings; the others as they are. */
export function settingsOf(target: RedisTarget): RedisSettings {
  return typeof target === 'string' ? { mode: 'server', url: target } : target;
}

/** Opens a connection to `target` for one part of the product. */
export function connectRedis(target: RedisTarget, options: ConnectOptions): RedisClient {
  const settings = settingsOf(target);
  const common: RedisOptions = {
    ...(options.keyPrefix !== undefined ? { keyPrefix: options.keyPrefix } : {}),
    ...(options.maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest: options.maxRetriesPerRequest } : {}),
    ...(options.enableOfflineQueue !== undefined ? { enableOfflineQueue: options.enableOfflineQueue } : {}),
    ...(options.enableAutoPipelining ? { enableAutoPipelining: true } : {}),
    retryStrategy: reconnectDelay,
  };
  let client: RedisClient;
  if (settings.mode === 'server') {
    client = new Redis(settings.url, common);
  } else if (settings.mode === 'sentinel') {
    client = new Redis({
      ...common,
      sentinels: settings.sentinels,
      name: settings.name,
      ...(settings.password !== undefined ? { password: settings.password } : {}),
      ...(settings.sentinelPassword !== undefined ? { sentinelPassword: settings.sentinelPassword } : {}),
      ...(settings.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
      sentinelRetryStrategy: reconnectDelay,
      // A master demoted under us answers READONLY: ask the Sentinels again and resend to the new one. (One
      // server's READONLY is left to fail: /readyz says so, and reconnecting would find the same server.)
      reconnectOnError: reconnectOnReadonly,
      // Sentinel tells of a failover at once (+switch-master): the client moves without waiting for an error.
      failoverDetector: true,
    });
    restartWhenEnded(client);
  } else {
    // Never auto-pipelined, whatever the part asks. ioredis sends a tick's commands for one master as one
    // pipeline, and follows a redirection for a pipeline only when every command of it got the same one
    // (redis/ioredis#2075): in a pipeline over several slots of one master, a moved slot's commands failed
    // with MOVED, and after the master failed over every command did; with replicas its retry could fail with
    // "All keys in the pipeline should belong to the same slots allocation group". Each was a person's "start
    // again". Sent one by one, each command follows its own MOVED or ASK (test/redis/cluster-batch.test.ts).
    const {
      keyPrefix,
      enableAutoPipelining: _notOnACluster,
      enableOfflineQueue,
      maxRetriesPerRequest,
      ...perNode
    } = common;
    const clusterOptions: ClusterOptions = {
      ...(keyPrefix !== undefined ? { keyPrefix } : {}),
      ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
      clusterRetryStrategy: reconnectDelay,
      redisOptions: {
        ...perNode,
        ...(maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest } : {}),
        ...(settings.password !== undefined ? { password: settings.password } : {}),
        ...(settings.tls ? { tls: {} } : {}),
      },
      // ioredis follows a MOVED only when every command of a pipeline got it (a MULTI, BullMQ's own pipelines),
      // and learns nothing from the rest: a slot moved under a mixed pipeline would fail its commands until
      // something else refreshed the map. Asked again on a timer, it is stale for that long at most.
      slotsRefreshInterval: SLOTS_REFRESH_MS,
      // A slot moving or a master failing over: try again shortly rather than fail the command.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 300,
      retryDelayOnTryAgain: 200,
    };
    client = new Cluster(settings.nodes, clusterOptions);
  }
  logErrorsBoundedly(client, options.name, options.logger);
  return client;
}

/**
 * Listens to the connection's errors (without a listener ioredis prints every reconnection failure) and logs
 * them boundedly: the first of a streak at once, then one line a {@link ERROR_LOG_EVERY_MS} at most with how
 * many errors came since; `redis: back` when the connection is ready again after errors.
 */
export function logErrorsBoundedly(
  client: RedisClient,
  name: string,
  logger: Logger | undefined,
  everyMs = ERROR_LOG_EVERY_MS,
): void {
  const errors = boundedErrorLog(logger, { redis: name }, 'redis: error, reconnecting', everyMs);
  client.on('error', errors.error);
  client.on('ready', () => errors.back('redis: back'));
}

/**
 * A log of a repeating error, bounded: the first of a streak at once, then one line a `everyMs` at most with
 * how many came since (`since`); back() ends the streak with one line when there was one. For the Redis
 * connections and BullMQ's worker loop, which report the same failure again and again while Redis is away.
 */
export function boundedErrorLog(
  logger: Logger | undefined,
  fields: Record<string, unknown>,
  message: string,
  everyMs = ERROR_LOG_EVERY_MS,
): { error: (error: Error) => void; back: (message: string) => void } {
  let lastLogged = 0;
  let unlogged = 0;
  let streak = false;
  return {
    error: (error: Error) => {
      const now = Date.now();
      if (!streak || now - lastLogged >= everyMs) {
        logger?.warn({ ...fields, err: error.message, ...(unlogged > 0 ? { since: unlogged } : {}) }, message);
        lastLogged = now;
        unlogged = 0;
      } else {
        unlogged += 1;
      }
      streak = true;
    },
    back: (back: string) => {
      if (streak) logger?.info({ ...fields, ...(unlogged > 0 ? { unlogged } : {}) }, back);
      streak = false;
      unlogged = 0;
    },
  };
}

/** Connections ended on purpose here ({@link closeRedis}, {@link dropRedis}): a Sentinel one is not started again. */
const ended = new WeakSet<RedisClient>();

/** Drops a connection at once (no QUIT): its queued commands fail. */
export function dropRedis(client: RedisClient): void {
  ended.add(client);
  client.disconnect();
}

/**
 * A Sentinel connection that ioredis ended by itself is started again. ioredis ends one for good when a
 * reconnection (a failover's `+switch-master`, a READONLY answer's) overlaps its asking a Sentinel for the
 * master: in the chaos runs a product process was left with its sessions connection closed ("Connection is
 * closed." on every message) after a master kill. One ended on purpose stays ended.
 */
function restartWhenEnded(client: Redis): void {
  client.on('end', () => {
    if (ended.has(client)) return;
    setTimeout(() => {
      if (!ended.has(client) && client.status === 'end') client.connect().catch(() => undefined);
    }, reconnectDelay(1)).unref();
  });
}

/**
 * Closes a connection without waiting on a Redis that does not answer: QUIT when it is ready (bounded by
 * `ms`), else at once. Commands still queued fail; their callers have had their time.
 */
export async function closeRedis(client: RedisClient, ms = 1_000): Promise<void> {
  ended.add(client);
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let giveUp: () => void = () => undefined;
  const timer = setTimeout(() => giveUp(), ms);
  timer.unref();
  await Promise.race([
    client.quit().catch(() => undefined),
    new Promise<void>((resolve) => {
      giveUp = resolve;
    }),
  ]);
  clearTimeout(timer);
  client.disconnect();
}

/** How long a write waits for a replica to hold it (Sentinel and Cluster modes: {@link heldByReplica}), ms. */
export const REPLICATED_WITHIN_MS = 1_000;

/**
 * Sentinel and Cluster modes: {@link heldByReplica} for the writes of `client`, asked by many callers at once.
 * Per server: on Sentinel the one master (`key` is ignored); on a cluster the master serving `key`'s slot, as
 * the connection routes it now (the key as the caller names it: the connection's `keyPrefix` is added), on the
 * one connection ioredis keeps to that master, which carried the key's writes (WAIT counts the writes of the
 * connection it is sent on). Per server one check at a time, and the callers who ask while one runs share the
 * next (issued when it ends, so it counts every write they made before asking: the running one may have been
 * sent before theirs). WAIT blocks the connection, every command behind it waits: when no replica answers (a
 * failover) N callers asking in turn held the connection N seconds; shared, at most two. False when the
 * cluster knows no master of the slot (its map not read yet).
 */
export function replicaCheck(
  client: RedisClient,
  target: RedisTarget,
  ms = REPLICATED_WITHIN_MS,
): (key: string) => Promise<boolean> {
  if (client instanceof Cluster) {
    const checks = new WeakMap<Redis, () => Promise<boolean>>();
    return (key) => {
      const master = masterOf(client, key);
      if (!master) return Promise.resolve(false);
      let check = checks.get(master);
      if (!check) {
        check = oneAtATime(() => heldByReplica(master, target, ms));
        checks.set(master, check);
      }
      return check();
    };
  }
  const check = oneAtATime(() => heldByReplica(client, target, ms));
  return () => check();
}

/** Redis Cluster's slot of a key (CRC16 of its hash tag): the function ioredis routes commands by. */
const slotOf = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/**
 * The connection of `cluster` to the master it sends `key`'s commands to now (`key` without the connection's
 * prefix, as commands name it): the first node of the slot in its map (ioredis's choice for a command that
 * may write), from its pool (one connection per node). Undefined while the map has no node for the slot.
 */
function masterOf(cluster: Cluster, key: string): Redis | undefined {
  const prefix = cluster.options.keyPrefix ?? '';
  const node = cluster.slots[slotOf(`${prefix}${key}`)]?.[0];
  if (node === undefined) return undefined;
  return cluster.nodes('all').find((server) => `${server.options.host}:${server.options.port}` === node);
}

/**
 * `check` for many callers: one at a time, and those who ask while one runs share the next, started when it
 * ends ({@link replicaCheck}).
 */
function oneAtATime(check: () => Promise<boolean>): () => Promise<boolean> {
  let running: Promise<boolean> | undefined;
  let next: Promise<boolean> | undefined;
  const start = (): Promise<boolean> => {
    const run: Promise<boolean> = check().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  return () => {
    if (!running) return start();
    next ??= running
      .catch(() => false)
      .then(() => {
        next = undefined;
        return start();
      });
    return next;
  };
}

/**
 * Whether every replica the master `client` is connected to has in sync (`state=online`) holds every write
 * `client` sent so far (`WAIT`, up to `ms`), so a failover cannot drop them (a replica is promoted; the old
 * master's writes it lacks are discarded at resync). On Sentinel `client` is the product's connection; on a
 * cluster its connection to one master ({@link replicaCheck}). Every one, not one: the Sentinels choose among
 * the replicas by the offsets they last read (every 10 s until the master is down), and in a cluster the first
 * replica to win its election (the one ahead asks sooner, not alone), so with two a write only one held could
 * be dropped. True as well when the master has no replica connected and none is counted up elsewhere
 * ({@link replicaUp}: the Sentinels of `target`; on a cluster the master's own table of nodes, as there are no
 * Sentinels to ask): no failover can drop what it alone holds. A replica not connected but counted up is one
 * being promoted (a failover under way), an old master not yet turned into a replica, or (on a cluster) one
 * cut off from the master yet eligible: false unless one takes them within `ms`, as when one connected (or
 * still syncing) lags. A server that is no master (one demoted under the connection: its writes may be the
 * ones dropped) holds nothing: false, after `ms`. So every answer but "alone" may take up to `ms`: a caller
 * asking again paces itself by it. WAIT counts the writes of this connection only: after a reconnection (a
 * failover) it proves nothing of the writes sent before it, which the caller reads back.
 */
export async function heldByReplica(
  client: RedisClient,
  target: RedisTarget,
  ms = REPLICATED_WITHIN_MS,
): Promise<boolean> {
  const replication = await client.info('replication');
  if (!/^role:master\b/m.test(replication)) {
    // Paced as the other answers but "alone": the connection moves to the new master meanwhile.
    await new Promise((resolve) => setTimeout(resolve, ms));
    return false;
  }
  const online = replication.match(/^slave\d+:.*\bstate=online\b/gm)?.length ?? 0;
  if (online > 0) return replicasHold(client, online, ms);
  if (/^connected_slaves:0\b/m.test(replication) && !(await replicaUp(client, target))) return true;
  // A replica still syncing, or one counted up that is not here yet (being promoted, the old master not yet
  // turned into this one's replica after a failover, or cut off): given the time to take them, as one that lags.
  return replicasHold(client, 1, ms);
}

/**
 * `WAIT replicas ms` answered with at least `replicas`. A master demoted while the WAIT blocks (a planned
 * failover: `CLUSTER FAILOVER`, `SENTINEL FAILOVER`) ends it with `UNBLOCKED … (master -> replica?)`, and one
 * demoted between the `INFO` that found it master and the WAIT refuses it (`ERR WAIT cannot be used with
 * replica instances`): it holds nothing, so false, as for a server found no master (the next ask finds it so
 * and paces itself); any other error is thrown.
 */
async function replicasHold(client: RedisClient, replicas: number, ms: number): Promise<boolean> {
  try {
    return (await client.wait(replicas, ms)) >= replicas;
  } catch (error) {
    if (error instanceof Error && DEMOTED.test(error.message)) return false;
    throw error;
  }
}

/** The errors of a WAIT sent to, or blocked on, a master demoted under it. */
const DEMOTED = /^UNBLOCKED |^ERR WAIT cannot be used with replica/;

/**
 * Whether a replica of the master is counted up (not down) though the master has none connected. Sentinel:
 * asked of each Sentinel in turn over a connection of its own; none answering: true (not proved alone). A
 * replica the Sentinel only lost its link to (`disconnected`) counts up: in a planned failover the leading
 * Sentinel flags the promoted replica so (it kills that server's clients, its own link among them) while the
 * old master, left with none connected, still takes the writes it will drop; and after the switch the old
 * master is the new one's replica, flagged so at first. A dead one is flagged down within
 * `down-after-milliseconds`. Cluster: the master's own table of nodes (`CLUSTER NODES`: a replica of it not flagged
 * failing, `fail` or `fail?`, nor its link down), which is what the cluster's masters vote on; a replica cut off
 * from every node, which none could promote, is counted down after `cluster-node-timeout`. One server: false.
 */
async function replicaUp(client: RedisClient, target: RedisTarget): Promise<boolean> {
  const settings = settingsOf(target);
  if (settings.mode === 'cluster') return clusterReplicaUp(String(await client.call('CLUSTER', 'NODES')));
  if (settings.mode !== 'sentinel') return false;
  for (const sentinel of settings.sentinels) {
    const client = new Redis({
      ...sentinel,
      ...(settings.sentinelPassword !== undefined ? { password: settings.sentinelPassword } : {}),
      ...(settings.tls ? { tls: {} } : {}),
      lazyConnect: true,
      connectTimeout: 1_000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const replicas = (await client.call('SENTINEL', 'REPLICAS', settings.name)) as string[][];
      return replicas.some((fields) => {
        const flags = fields[fields.indexOf('flags') + 1] ?? '';
        return !/s_down|o_down/.test(flags);
      });
    } catch {
      // The next Sentinel.
    } finally {
      client.disconnect();
    }
  }
  return true;
}

/**
 * Whether a `CLUSTER NODES` reply (`<id> <address> <flags> <master id> <ping> <pong> <epoch> <link> <slots>…`
 * a line) names a replica of the node flagged `myself` that is not flagged failing (`fail`, `fail?`) nor
 * without an address (`noaddr`), nor has its link down. The node not found in it: true (not proved alone).
 */
export function clusterReplicaUp(nodes: string): boolean {
  const lines = nodes.split('\n').map((line) => line.trim().split(' '));
  const myself = lines.find((fields) => (fields[2] ?? '').split(',').includes('myself'))?.[0];
  if (myself === undefined) return true;
  return lines.some((fields) => {
    const flags = (fields[2] ?? '').split(',');
    return fields[3] === myself && !flags.some((flag) => /^fail\??$|^noaddr$/.test(flag)) && fields[7] === 'connected';
  });
}

/**
 * Why REDIS_URL's database cannot be used, or undefined when it can (or when the server could not be asked: a
 * Redis away at start is the other checks' business). A server has a fixed number of databases (`databases`,
 * 16 by default): with one it does not have, every connection would fail its SELECT for ever. Asked over a
 * connection of its own to database 0, given up after `ms`; one server only (Sentinel and Cluster modes name
 * no database).
 */
export async function missingDatabase(target: RedisTarget, ms = 2_000): Promise<string | undefined> {
  const settings = settingsOf(target);
  if (settings.mode !== 'server') return undefined;
  const url = new URL(settings.url);
  const database = Number(url.pathname.replace(/^\//, '') || '0');
  if (database === 0) return undefined;
  url.pathname = '';
  const client = new Redis(url.toString(), {
    lazyConnect: true,
    connectTimeout: ms,
    commandTimeout: ms,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    try {
      await client.select(database);
      return undefined;
    } catch (error) {
      if (!/DB index is out of range/i.test(error instanceof Error ? error.message : String(error))) return undefined;
    }
    const count = await client
      .config('GET', 'databases')
      .then((reply) => Number((reply as string[])[1]))
      .catch(() => NaN);
    const has = Number.isInteger(count) && count > 0 ? ` (it has ${count}: 0 to ${count - 1})` : '';
    return `database ${database} is not on the server at ${url.host}${has}, so every connection would fail to select it: name one of its databases`;
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/** BullMQ's prefix of a BullQueue given none (the product gives each queue part its own: keys.ts queuePrefixes). */
export const QUEUE_PREFIX = queuePrefixes.shared;

/**
 * The eviction policy of every master: a warning line naming `maxmemory-policy` when one evicts (BullMQ's jobs
 * and our records must not be dropped to make room: `noeviction` refuses writes instead), undefined when all
 * say `noeviction`. A server that refuses CONFIG (some managed Redis) gets a line saying it could not be read.
 */
export async function evictionWarning(client: RedisClient): Promise<string | undefined> {
  const servers: Redis[] = client instanceof Cluster ? client.nodes('master') : [client];
  const policies = await Promise.all(
    servers.map(async (server) => {
      try {
        const reply = (await server.config('GET', 'maxmemory-policy')) as string[];
        return reply[1] ?? 'unknown';
      } catch (error) {
        return `unreadable (${error instanceof Error ? error.message : String(error)})`;
      }
    }),
  );
  const others = [...new Set(policies.filter((policy) => policy !== 'noeviction'))];
  if (others.length === 0) return undefined;
  return `maxmemory-policy is ${others.join(', ')}, not noeviction: under memory pressure Redis would drop queued notifications and conversation records; set maxmemory-policy noeviction`;
}

/**
 * Logs {@link evictionWarning}'s line (warn) when Redis may evict, over a connection of its own closed after;
 * never throws, and gives up after `ms` (a Redis away at start is the other checks' business).
 */
export async function warnOfEviction(target: RedisTarget, logger: Logger, ms = 10_000): Promise<void> {
  const client = connectRedis(target, { name: 'start check', maxRetriesPerRequest: 1 });
  let giveUp: () => void = () => undefined;
  const timer = setTimeout(() => giveUp(), ms);
  timer.unref();
  try {
    const warning = await Promise.race([
      (async () => {
        if (client instanceof Cluster && client.status !== 'ready')
          await new Promise((resolve) => client.once('ready', resolve));
        return evictionWarning(client);
      })(),
      new Promise<undefined>((resolve) => {
        giveUp = () => resolve(undefined);
      }),
    ]);
    if (warning) logger.warn(warning);
  } catch {
    // Not checked: nothing to say beyond what the connection's users log.
  } finally {
    clearTimeout(timer);
    dropRedis(client);
  }
}
