/**
 * Notifications under load (`npm run bench -- notify-load`): notifications told a second while USSD traffic
 * runs at the same time, against each alone. On one redis-server started here (port 7094, so its CPU and
 * keys are the benchmark's alone): our notifications server as the product builds it with Redis (BullMQ) and
 * without (memory), and one of our USSD processes on the same Redis; the notification load is
 * bench/notify/notify.ts's `drive` (50 connections, timed until every received delivery was told), the USSD
 * load bench/ussd/bench.ts's `drive` (50 connections, whole sessions).
 *
 * Interleaved rounds of: each notification server alone, USSD alone, and each notification server with USSD
 * at once. The figure: told/s with USSD ÷ told/s alone, beside USSD's req/s with notifications ÷ alone: the
 * same two cores shared by both loads, so each should keep about the same share.
 */
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import { startRedis, stopAll } from '../../test/redis/servers.js';
import { startChild, stop } from '../child.js';
import { drive as driveUssd } from '../ussd/bench.js';
import { drive as driveNotify, type Kind as NotifyKind, type NotifyRound } from './notify.js';
import { cpuSampler } from '../scale/scale.js';

const PORT = 7094;
const ROUNDS = 3;
const round2 = (x: number) => Math.round(x * 100) / 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type Kind = Exclude<NotifyKind, 'bare'>;

export interface NotifyLoadRound {
  round: number;
  what: 'notify' | 'ussd' | 'both';
  kind?: Kind;
  told?: NotifyRound;
  ussdRps?: number;
  ussdP99?: number;
  cpu: Record<string, number>;
}

export interface NotifyLoadResult {
  seconds: number;
  rounds: NotifyLoadRound[];
  /** Medians: told/s alone and with USSD; USSD req/s alone and with each notification server. */
  median: Record<Kind, { alone: number; withUssd: number; ratio: number; ussdWith: number; ussdRatio: number }> & {
    ussdAlone: number;
  };
  loadBefore: number[];
  loadAfter: number[];
}

export async function runNotifyLoadBench(
  quick: boolean,
  log: (line: string) => void = () => undefined,
): Promise<NotifyLoadResult> {
  const seconds = quick ? 2 : 8;
  const kinds: Kind[] = ['ours', 'ours-memory'];
  const loadBefore = os.loadavg().map(round2);
  const redis = await startRedis(PORT);
  const env = { REDIS_URL: `redis://127.0.0.1:${PORT}` };
  const children: ChildProcess[] = [];
  const rounds: NotifyLoadRound[] = [];
  try {
    const started = await Promise.all([
      startChild('bench/ussd/serve.ts', 'ours', [], env),
      ...kinds.map((kind) => startChild('bench/notify/serve.ts', kind, [], env)),
    ]);
    children.push(...started.map((s) => s.child));
    const [ussd, ...notifiers] = started;
    const servers = new Map(kinds.map((kind, i) => [kind, notifiers[i]!]));
    const pids = (kind?: Kind): Record<string, number> => ({
      ...(kind ? { [kind]: servers.get(kind)!.child.pid! } : {}),
      ussd: ussd!.child.pid!,
      redis: redis.process.pid!,
    });
    const ussdRun = () => driveUssd('ours', ussd!.url, '/ussd/africastalking', seconds);
    // Warm-up.
    await Promise.all([driveUssd('ours', ussd!.url, '/ussd/africastalking', quick ? 1 : 3)]);
    for (const kind of kinds) await driveNotify(kind, servers.get(kind)!.url, quick ? 1 : 3);
    for (let round = 1; round <= (quick ? 1 : ROUNDS); round++) {
      let sample = cpuSampler(pids());
      const alone = await ussdRun();
      rounds.push({ round, what: 'ussd', ussdRps: Math.round(alone.rps), ussdP99: alone.p99, cpu: sample() });
      log(`notify-load round ${round}: USSD alone ${Math.round(alone.rps)} req/s, p99 ${alone.p99} ms`);
      for (const kind of kinds) {
        const url = servers.get(kind)!.url;
        sample = cpuSampler(pids(kind));
        const told = await driveNotify(kind, url, seconds);
        rounds.push({ round, what: 'notify', kind, told, cpu: sample() });
        log(`notify-load round ${round}: ${kind} alone ${told.rate} told/s (${told.told} of ${told.accepted})`);
        sample = cpuSampler(pids(kind));
        const [both, withUssd] = await Promise.all([driveNotify(kind, url, seconds), ussdRun()]);
        const cpu = sample();
        rounds.push({
          round,
          what: 'both',
          kind,
          told: both,
          ussdRps: Math.round(withUssd.rps),
          ussdP99: withUssd.p99,
          cpu,
        });
        log(
          `notify-load round ${round}: ${kind} with USSD ${both.rate} told/s (${both.told} of ${both.accepted} in ${both.seconds} s), USSD ${Math.round(withUssd.rps)} req/s p99 ${withUssd.p99} ms, CPU ${JSON.stringify(cpu)}`,
        );
      }
    }
  } finally {
    await Promise.all(children.map((child) => stop(child)));
    await stopAll();
  }
  const ussdAlone = median(rounds.filter((r) => r.what === 'ussd').map((r) => r.ussdRps!));
  const med = { ussdAlone } as NotifyLoadResult['median'];
  for (const kind of kinds) {
    const alone = median(rounds.filter((r) => r.what === 'notify' && r.kind === kind).map((r) => r.told!.rate));
    const both = rounds.filter((r) => r.what === 'both' && r.kind === kind);
    const withUssd = median(both.map((r) => r.told!.rate));
    const ussdWith = median(both.map((r) => r.ussdRps!));
    med[kind] = {
      alone,
      withUssd,
      ratio: round2(withUssd / Math.max(1, alone)),
      ussdWith,
      ussdRatio: round2(ussdWith / Math.max(1, ussdAlone)),
    };
  }
  return { seconds, rounds, median: med, loadBefore, loadAfter: os.loadavg().map(round2) };
}
