/**
 * Scale: the USSD benchmark's load (bench/ussd/bench.ts `drive`: 50 connections in all, each walking whole
 * sessions) on 1, 2 and 4 of our USSD processes at once, on one Redis server and on a local three-master
 * cluster, both started here (ports 7090 and 7091-7093, test/redis/servers.ts) so their CPU is theirs alone.
 * With k processes the 50 connections are split over k autocannon runs at once, one a process.
 *
 * Where the limit is: over each round the CPU of every process taking part is sampled from /proc/<pid>/stat
 * (the product's processes, each redis-server, this load generator: autocannon runs in this process) and the
 * machine's from /proc/stat. A single-threaded process near a whole core is the limit; else, the machine's
 * cores all busy (the rest of it: other people's work on a shared machine).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { startCluster, startRedis, stopAll } from '../../test/redis/servers.js';
import type { RedisTarget } from '../../src/redis/connect.js';
import { startChild, stop } from '../child.js';
import { drive, type UssdRound } from '../ussd/bench.js';

export type Mode = 'server' | 'cluster';
const PROCESSES = [1, 2, 4] as const;
const CONNECTIONS = 50;
const SERVER_PORT = 7090;
const CLUSTER_PORTS = [7091, 7092, 7093];
const PATH = '/ussd/africastalking';

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (clock ticks, 100 a second on Linux). */
export function procCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces: the fields after its closing parenthesis, state first.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The machine's busy and total CPU seconds so far (/proc/stat; idle and iowait are not busy). */
export function machineCpuSeconds(): { busy: number; total: number } {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const n = values.map(Number);
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - n[3]! - n[4]!) / 100, total: total / 100 };
}

/** CPU of each named process (and the machine) over a stretch, as a share of one core (1 = a whole core). */
export function cpuSampler(pids: Record<string, number>): () => Record<string, number> {
  const start = performance.now();
  const self0 = process.cpuUsage();
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, procCpuSeconds(pid)]));
  const machine0 = machineCpuSeconds();
  return () => {
    const seconds = (performance.now() - start) / 1000;
    const self = process.cpuUsage(self0);
    const machine1 = machineCpuSeconds();
    const out: Record<string, number> = {
      'load generator': (self.user + self.system) / 1e6 / seconds,
    };
    for (const [name, pid] of Object.entries(pids)) out[name] = (procCpuSeconds(pid) - before[name]!) / seconds;
    // The whole machine in cores (2 = both cores of a 2-core machine busy).
    out.machine = ((machine1.busy - machine0.busy) / (machine1.total - machine0.total)) * os.cpus().length;
    for (const key of Object.keys(out)) out[key] = Math.round(out[key]! * 100) / 100;
    return out;
  };
}

export interface ScaleRound {
  mode: Mode;
  processes: number;
  rps: number;
  /** The highest p99 of the k autocannon runs (percentiles of separate runs do not add up). */
  p99: number;
  p50: number;
  correctFinals: number;
  wrongFinals: number;
  errors: number;
  /** Cores each process used (1 = one whole core); `machine`: the whole machine's busy cores. */
  cpu: Record<string, number>;
  limit: string;
}

/** Names the limit of a round from its CPU: a single-threaded process near a core, else the machine's cores. */
export function limitOf(cpu: Record<string, number>, cores: number): string {
  const [name, top] = Object.entries(cpu)
    .filter(([n]) => n !== 'machine')
    .sort((a, b) => b[1] - a[1])[0]!;
  if (top >= 0.85) return `${name} (${Math.round(top * 100)}% of a core)`;
  const ours = Object.entries(cpu)
    .filter(([n]) => n !== 'machine')
    .reduce((a, [, v]) => a + v, 0);
  if (cpu.machine! >= cores * 0.9)
    return `the machine's ${cores} cores (${cpu.machine} busy: ${Math.round(ours * 100) / 100} ours, the rest others')`;
  return `none saturated (machine ${cpu.machine} of ${cores} cores busy): latency-bound`;
}

/** One round: the load split over the first `k` processes, at once. */
async function round(
  mode: Mode,
  servers: Array<{ url: string; child: ChildProcess }>,
  redisPids: number[],
  k: number,
  seconds: number,
): Promise<ScaleRound> {
  const used = servers.slice(0, k);
  const pids: Record<string, number> = {};
  used.forEach((s, i) => (pids[`product ${i + 1}`] = s.child.pid!));
  redisPids.forEach((pid, i) => (pids[redisPids.length > 1 ? `redis ${i + 1}` : 'redis'] = pid));
  const sample = cpuSampler(pids);
  const share = (i: number) => Math.floor(CONNECTIONS / k) + (i < CONNECTIONS % k ? 1 : 0);
  const runs: UssdRound[] = await Promise.all(
    used.map((s, i) => drive('ours', s.url, PATH, seconds, undefined, share(i))),
  );
  const cpu = sample();
  return {
    mode,
    processes: k,
    rps: Math.round(runs.reduce((a, r) => a + r.rps, 0)),
    p50: Math.max(...runs.map((r) => r.p50)),
    p99: Math.max(...runs.map((r) => r.p99)),
    correctFinals: runs.reduce((a, r) => a + r.correctFinals, 0),
    wrongFinals: runs.reduce((a, r) => a + r.wrongFinals, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    cpu,
    limit: limitOf(cpu, os.cpus().length),
  };
}

export interface ScaleConfig {
  mode: Mode;
  processes: number;
  rps: number;
  p50: number;
  p99: number;
  correctFinals: number;
  wrongFinals: number;
  errors: number;
  /** The CPU of the median round (by rate). */
  cpu: Record<string, number>;
  limit: string;
}

export interface ScaleResult {
  seconds: number;
  rounds: ScaleRound[];
  configs: ScaleConfig[];
  /** The load average before and after (1, 5, 15 minutes). */
  loadBefore: number[];
  loadAfter: number[];
}

/** Starts the Redis of a mode (its pids, and the target the product is given). */
async function startMode(mode: Mode): Promise<{ target: RedisTarget; pids: number[] }> {
  if (mode === 'server') {
    const server = await startRedis(SERVER_PORT);
    return { target: `redis://127.0.0.1:${SERVER_PORT}`, pids: [server.process.pid!] };
  }
  const servers = await startCluster(CLUSTER_PORTS);
  return {
    target: { mode: 'cluster', nodes: CLUSTER_PORTS.map((port) => ({ host: '127.0.0.1', port })), tls: false },
    pids: servers.map((s) => s.process.pid!),
  };
}

/** Starts `n` of our USSD servers on `target`. */
export function startProducts(target: RedisTarget, n: number): Promise<Array<{ url: string; child: ChildProcess }>> {
  return Promise.all(
    Array.from({ length: n }, () =>
      startChild('bench/ussd/serve.ts', 'ours', [], {
        BENCH_REDIS: JSON.stringify(target),
        // serve.ts keeps a plain connection for the other kinds: point it at a server of this run.
        REDIS_URL: typeof target === 'string' ? target : `redis://127.0.0.1:${CLUSTER_PORTS[0]}`,
      }),
    ),
  );
}

const median = <T>(xs: T[], by: (x: T) => number): T =>
  [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)]!;
const round2 = (x: number) => Math.round(x * 100) / 100;

export async function runScaleBench(
  quick: boolean,
  log: (line: string) => void = () => undefined,
): Promise<ScaleResult> {
  const seconds = quick ? 2 : 8;
  const roundCount = quick ? 1 : 3;
  const loadBefore = os.loadavg().map(round2);
  const rounds: ScaleRound[] = [];
  // Both Redis set-ups and their processes at once, the rounds interleaved, so a shared machine's slow
  // stretch does not fall on one of them only (idle processes cost memory, not CPU).
  const modes = ['server', 'cluster'] as const;
  const sets = new Map<Mode, { pids: number[]; servers: Array<{ url: string; child: ChildProcess }> }>();
  try {
    for (const mode of modes) {
      const { target, pids } = await startMode(mode);
      sets.set(mode, { pids, servers: await startProducts(target, Math.max(...PROCESSES)) });
    }
    // Warm-up: every process, the load split over all.
    for (const mode of modes)
      await round(mode, sets.get(mode)!.servers, sets.get(mode)!.pids, Math.max(...PROCESSES), quick ? 1 : 3);
    for (let r = 0; r < roundCount; r++) {
      for (const k of PROCESSES) {
        for (const mode of modes) {
          const result = await round(mode, sets.get(mode)!.servers, sets.get(mode)!.pids, k, seconds);
          log(
            `scale ${mode} × ${k}: ${result.rps} req/s, p99 ${result.p99} ms, finals ${result.correctFinals} ok / ${result.wrongFinals} wrong, CPU ${JSON.stringify(result.cpu)}; limit: ${result.limit}`,
          );
          rounds.push(result);
        }
      }
    }
  } finally {
    await Promise.all([...sets.values()].flatMap(({ servers }) => servers.map(({ child }) => stop(child))));
    await stopAll();
  }
  const configs: ScaleConfig[] = [];
  for (const mode of ['server', 'cluster'] as const) {
    for (const k of PROCESSES) {
      const mine = rounds.filter((r) => r.mode === mode && r.processes === k);
      const mid = median(mine, (r) => r.rps);
      configs.push({
        mode,
        processes: k,
        rps: mid.rps,
        p50: median(mine, (r) => r.p50).p50,
        p99: median(mine, (r) => r.p99).p99,
        correctFinals: mine.reduce((a, r) => a + r.correctFinals, 0),
        wrongFinals: mine.reduce((a, r) => a + r.wrongFinals, 0),
        errors: mine.reduce((a, r) => a + r.errors, 0),
        cpu: mid.cpu,
        limit: mid.limit,
      });
    }
  }
  return { seconds, rounds, configs, loadBefore, loadAfter: os.loadavg().map(round2) };
}
