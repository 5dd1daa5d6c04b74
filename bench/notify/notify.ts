/**
 * Notifications: webhook deliveries per second from receipt to the notifier call, against an express route
 * that only answers 200 (bare). Ours as the product builds it with REDIS_URL (BullMQ queue, order and dedup
 * marks in Redis, the user's language from the store, words, notifier), and as it runs without Redis
 * (ours-memory: memory queue and store); see serve.ts.
 * Each in its own process, driven by autocannon over localhost with 50 connections and the notification
 * credentials; every delivery is a distinct `collection.received`, a new collection for one of the 5,000
 * collection requests the server recorded as made, so every one is found in our records, told once to that
 * request's chat and none is dropped as a duplicate: the lease and dedup mark are taken for each.
 * Ours is timed until its notifier has told every delivery it accepted (the queue drained), so a backlog
 * counts against it. A warm-up, then both interleaved for three rounds; medians.
 */
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { performance } from 'node:perf_hooks';
import { startChild, stop } from '../child.js';
import { cleanUp } from '../ussd/bench.js';
import {
  BENCH_AUTHORIZATION,
  BENCH_REQUESTS,
  benchRequest,
  NOTIFY_PREFIX,
  notifyRedisUrl,
  QUEUE_PREFIXES,
} from './config.js';

export type Kind = 'ours' | 'ours-memory' | 'bare';

export function startServer(kind: Kind): Promise<{ url: string; child: ChildProcess }> {
  return startChild('bench/notify/serve.ts', kind);
}

async function stats(url: string): Promise<{ received: number; notified: number; cpu: number }> {
  return (await (await fetch(`${url}/__stats`)).json()) as { received: number; notified: number; cpu: number };
}

let deliveries = 0;
const run = `${process.pid}-${Date.now()}`;

export interface NotifyRound {
  kind: Kind;
  /** Deliveries told (ours) or answered (bare) per second. */
  rate: number;
  /** Deliveries the server received. */
  accepted: number;
  told: number;
  seconds: number;
  p99: number;
  cpuUsPerDelivery: number;
  errors: number;
}

export async function drive(kind: Kind, url: string, seconds: number): Promise<NotifyRound> {
  const before = await stats(url);
  const t0 = performance.now();
  const result = await autocannon({
    url,
    connections: 50,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: '/notifications/momo',
        headers: { 'content-type': 'application/json', authorization: BENCH_AUTHORIZATION },
        setupRequest: (req: autocannon.Request) => {
          const id = `${run}-${++deliveries}`;
          const request = benchRequest(deliveries % BENCH_REQUESTS);
          return {
            ...req,
            body: JSON.stringify({
              hook: { id: 7, event: 'collection.received', target: 'https://bot.example/notifications/momo' },
              data: {
                id,
                status: 'successful',
                amount: '5000.00',
                currency: 'UGX',
                phonenumber: request.payee,
                reference: 'school fees',
                contact: { first_name: 'Sarah', last_name: 'Nakato' },
                collection_request: { id: Number(request.id), status: 'successful' },
              },
            }),
          };
        },
      },
    ],
  });
  let after = await stats(url);
  // Ours works after answering: wait (bounded) until every delivery received was told.
  const limit = performance.now() + 15_000;
  while (after.notified - before.notified < after.received - before.received && performance.now() < limit) {
    await new Promise((r) => setTimeout(r, 20));
    after = await stats(url);
  }
  const elapsed = (performance.now() - t0) / 1000;
  const told = after.notified - before.notified;
  const accepted = after.received - before.received;
  return {
    kind,
    rate: Math.round(told / elapsed),
    accepted,
    told,
    seconds: Math.round(elapsed * 100) / 100,
    p99: result.latency.p99,
    cpuUsPerDelivery: Math.round((after.cpu - before.cpu) / Math.max(1, told)),
    errors: result.errors + result.non2xx + result.timeouts,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface NotifyResult {
  rounds: NotifyRound[];
  median: Record<
    Kind,
    { rate: number; p99: number; cpuUsPerDelivery: number; told: number; accepted: number; errors: number }
  >;
}

export async function runNotifyBench(
  quick: boolean,
  log: (line: string) => void = () => undefined,
): Promise<NotifyResult> {
  const kinds: Kind[] = ['ours', 'ours-memory', 'bare'];
  const redis = new Redis(notifyRedisUrl());
  const clean = async () => {
    await cleanUp(redis, NOTIFY_PREFIX);
    for (const prefix of QUEUE_PREFIXES) await cleanUp(redis, prefix);
  };
  const servers = new Map<Kind, { url: string; child: ChildProcess }>();
  const seconds = quick ? 1 : 8;
  try {
    await clean();
    const started = await Promise.all(kinds.map((kind) => startServer(kind)));
    kinds.forEach((kind, i) => servers.set(kind, started[i]!));
    for (const kind of kinds) await drive(kind, servers.get(kind)!.url, quick ? 1 : 3);
    const rounds: NotifyRound[] = [];
    for (let round = 0; round < 3; round++) {
      for (const kind of kinds) {
        const r = await drive(kind, servers.get(kind)!.url, seconds);
        log(
          `notify round ${round + 1} ${kind}: ${r.rate}/s (${r.told} told of ${r.accepted} received in ${r.seconds} s), ${r.cpuUsPerDelivery} us CPU each`,
        );
        rounds.push(r);
      }
    }
    const med = {} as NotifyResult['median'];
    for (const kind of kinds) {
      const mine = rounds.filter((r) => r.kind === kind);
      med[kind] = {
        rate: median(mine.map((r) => r.rate)),
        p99: median(mine.map((r) => r.p99)),
        cpuUsPerDelivery: median(mine.map((r) => r.cpuUsPerDelivery)),
        told: mine.reduce((a, r) => a + r.told, 0),
        accepted: mine.reduce((a, r) => a + r.accepted, 0),
        errors: mine.reduce((a, r) => a + r.errors, 0),
      };
    }
    return { rounds, median: med };
  } finally {
    await Promise.all([...servers.values()].map(({ child }) => stop(child)));
    await clean().catch(() => undefined);
    redis.disconnect();
  }
}
