/**
 * `npx tsx bench/redis/sentinel-switch.ts [failovers] [connections] [basePort] [leader] [stallMs] [late]`: where
 * the product's Sentinel connections are after a planned failover. Starts a master, its replica
 * (`repl-diskless-sync-delay 0`) and three Sentinels on `basePort`..`basePort+4` (default 7120), opens
 * `connections` (default 6) with `connectRedis` listing the Sentinels in port order, and asks `SENTINEL
 * FAILOVER` of the Sentinel `leader` (`last` by default; `first`: the one each connection asks first),
 * `failovers` times (default 4), the two servers taking turns. `stallMs`: the first Sentinel is stopped
 * (SIGSTOP) for that long from each ask; `late`: that many connections more are opened during each failover, one
 * every 100 ms from the ask (a process starting then). For 15 s after each ask, every connection sends `INFO
 * server` and an `RPUSH` of its own in one pipeline every 20 ms. Printed: when each Sentinel named the new
 * master, when the replica was promoted and the old master turned into a replica; per connection, when it
 * first answered from the new master and last from the old, its answers from the old master after the leader
 * named the new one and after it had answered from the new (stale reads), its writes the old master took and
 * those acknowledged that the new master lacks once the old one follows it (lost), READONLY and other errors.
 */
import { Redis } from 'ioredis';
import { connectRedis, dropRedis, type RedisClient, type RedisSettings } from '../../src/redis/connect.js';
import { masterPortOf, startSentinelSet, stopAll, untilInSync, withServer } from '../../test/redis/servers.js';

const failovers = Number(process.argv[2] ?? 4);
const connections = Number(process.argv[3] ?? 6);
const base = Number(process.argv[4] ?? 7120);
const leaderAt = process.argv[5] ?? 'last';
/** Ms the first Sentinel of the list is stopped (SIGSTOP) for from the ask: one the machine did not run. */
const stallMs = Number(process.argv[6] ?? 0);
/** Connections opened during each failover, one every 100 ms from the ask (as a process starting then). */
const late = Number(process.argv[7] ?? 0);
const NAME = 'switch';
const SAMPLE_MS = 20;
const WATCH_MS = 15_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Sample {
  at: number;
  port?: number;
  wrote?: boolean;
  /** The value written (pushed on the connection's list). */
  value: number;
  error?: string;
}

async function watch(port: number, ask: (r: Redis) => Promise<boolean>, until: number): Promise<number | undefined> {
  const r = new Redis({ port, maxRetriesPerRequest: 0 });
  r.on('error', () => {});
  try {
    while (Date.now() < until) {
      if (await ask(r).catch(() => false)) return Date.now();
      await sleep(SAMPLE_MS);
    }
    return undefined;
  } finally {
    r.disconnect();
  }
}

async function main(): Promise<void> {
  const [masterPort, replicaPort, ...sentinelPorts] = [0, 1, 2, 3, 4].map((i) => base + i) as [
    number,
    number,
    ...number[],
  ];
  const { sentinels } = await startSentinelSet(NAME, masterPort, replicaPort, sentinelPorts, {
    args: ['--repl-diskless-sync-delay', '0'],
  });
  const target: RedisSettings = {
    mode: 'sentinel',
    sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
    name: NAME,
    tls: false,
  };
  const leaderPort = leaderAt === 'first' ? sentinelPorts[0]! : sentinelPorts[sentinelPorts.length - 1]!;
  const clients = Array.from({ length: connections }, (_, i) => connectRedis(target, { name: `probe${i}` }));
  try {
    for (const c of clients) await c.ping();
    for (let f = 1; f <= failovers; f++) {
      const oldPort = await masterPortOf(leaderPort, NAME);
      const newPort = oldPort === masterPort ? replicaPort : masterPort;
      const probes: Array<{ name: string; client: RedisClient; opened?: number; samples: Sample[] }> = clients.map(
        (client, i) => ({ name: `probe${i}`, client, samples: [] }),
      );
      let t0 = 0;
      // The failover, retried while the Sentinels have not yet seen the replica fit to promote.
      const leader = new Redis({ port: leaderPort });
      await leader.ping();
      for (;;) {
        try {
          t0 = Date.now();
          await leader.call('SENTINEL', 'FAILOVER', NAME);
          break;
        } catch (error) {
          if (!/NOGOODSLAVE|INPROG/.test((error as Error).message)) throw error;
          await sleep(200);
        }
      }
      leader.disconnect();
      if (stallMs > 0) {
        sentinels[0]!.process.kill('SIGSTOP');
        setTimeout(() => sentinels[0]!.process.kill('SIGCONT'), stallMs);
      }
      const end = t0 + WATCH_MS;
      const named = Promise.all(
        sentinelPorts.map((port) =>
          watch(
            port,
            async (s) =>
              Number(((await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME)) as string[])[1]) === newPort,
            end,
          ),
        ),
      );
      const promoted = watch(newPort, async (r) => /^role:master/m.test(await r.info('replication')), end);
      const turned = watch(oldPort, async (r) => /^role:slave/m.test(await r.info('replication')), end);
      const sample = async (probe: (typeof probes)[number], i: number) => {
        while (Date.now() < end) {
          const at = Date.now();
          try {
            const results =
              (await probe.client.pipeline().info('server').rpush(`probe:${f}:${i}`, String(at)).exec()) ?? [];
            const [info, set] = results;
            const port = info && !info[0] ? Number(/^tcp_port:(\d+)/m.exec(String(info[1]))?.[1]) : undefined;
            probe.samples.push({
              at: Date.now(),
              ...(port !== undefined ? { port } : {}),
              wrote: !!set && !set[0],
              value: at,
              ...(set?.[0] ? { error: set[0].message.slice(0, 20) } : {}),
            });
          } catch (error) {
            probe.samples.push({ at: Date.now(), value: at, error: (error as Error).message.slice(0, 20) });
          }
          await sleep(SAMPLE_MS);
        }
      };
      const sampled = probes.map(sample);
      for (let k = 0; k < late; k++) {
        await sleep(Math.max(0, t0 + k * 100 - Date.now()));
        const probe = {
          name: `late${k}`,
          client: connectRedis(target, { name: `late${k}` }),
          opened: Date.now(),
          samples: [],
        };
        probes.push(probe);
        sampled.push(sample(probe, probes.length - 1));
      }
      await Promise.all(sampled);
      const namedAt = await named;
      const turnedAt = await turned;
      const promotedAt = await promoted;
      const rel = (t: number | undefined) => (t === undefined ? '-' : ((t - t0) / 1000).toFixed(2));
      const leaderNamed = namedAt[sentinelPorts.indexOf(leaderPort)];
      console.log(
        `failover ${f}: ${oldPort} -> ${newPort}, asked of ${leaderPort}; named by ${sentinelPorts
          .map((p, k) => `${p} at ${rel(namedAt[k])}`)
          .join(', ')}; new master promoted at ${rel(promotedAt)} s, old master a replica at ${rel(turnedAt)} s`,
      );
      // The next failover once the old master follows the new one and every Sentinel names the new master.
      await untilInSync(oldPort, 600);
      const held = await withServer(newPort, (r) =>
        Promise.all(probes.map(async (_, i) => new Set(await r.lrange(`probe:${f}:${i}`, 0, -1)))),
      );
      for (const [i, { name, opened, samples: list }] of probes.entries()) {
        const firstNew = list.find((s) => s.port === newPort)?.at;
        const staleAfterNew = list.filter((s) => s.port === oldPort && firstNew !== undefined && s.at > firstNew);
        const staleAfterSwitch = list.filter(
          (s) => s.port === oldPort && leaderNamed !== undefined && s.at > leaderNamed,
        );
        const lastOld = list.filter((s) => s.port === oldPort).at(-1)?.at;
        const oldWrites = list.filter((s) => s.port === oldPort && s.wrote).length;
        const lost = list.filter((s) => s.wrote && !held[i]!.has(String(s.value)));
        const readonly = list.filter((s) => s.error?.startsWith('READONLY')).length;
        const errors = list.filter((s) => s.error && !s.error.startsWith('READONLY')).length;
        console.log(
          `  ${name}${opened !== undefined ? ` (opened at ${rel(opened)} s)` : ''}: first on new ${rel(firstNew)} s, last on old ${rel(lastOld)} s; on old after the leader named the new: ${
            staleAfterSwitch.length
          } answers (${rel(staleAfterSwitch[0]?.at)} to ${rel(staleAfterSwitch.at(-1)?.at)} s), after being on the new: ${
            staleAfterNew.length
          }; writes the old master took after the ask: ${oldWrites}, lost: ${lost.length} (${rel(lost[0]?.at)} to ${rel(lost.at(-1)?.at)} s); READONLY ${readonly}, other errors ${errors}; ${list.length} samples`,
        );
      }
      for (const probe of probes) if (probe.opened !== undefined) dropRedis(probe.client);
      for (const port of sentinelPorts) while ((await masterPortOf(port, NAME)) !== newPort) await sleep(100);
      await sleep(2_000);
    }
  } finally {
    for (const c of clients) dropRedis(c);
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    void stopAll().finally(() => process.exit(1));
  },
);
