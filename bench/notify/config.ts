/** Where the notifications benchmark keeps its Redis data (shared by its driver and its servers). */
import { queuePrefixes } from '../../src/store/keys.js';
import type { RedisTarget } from '../../src/redis/connect.js';

/**
 * This run's own name (BENCH_NOTIFY_RUN, set here by the driver on load and inherited by its servers): two
 * runs sharing a Redis database never take, nor delete at their cleanup, each other's jobs and records (they
 * did: told/s fell to a few hundred, with fewer told than received).
 */
const RUN = (process.env.BENCH_NOTIFY_RUN ??= String(process.pid));
/** Prefix of the session-store keys (our records, order and dedup marks) the benchmark's server writes. */
export const NOTIFY_PREFIX = `bench:notify:${RUN}:`;
/** The notification queue's name in this run (the follow-ups' is it with `-follow-ups`). */
export const QUEUE_NAME = `momo-notifications-bench-${RUN}`;
/** The keys of the run's BullMQ queues: one prefix each queue part (and the earlier shared prefix). */
export const QUEUE_PREFIXES = queuePrefixes.all().map((prefix) => `${prefix}:${QUEUE_NAME}`);

/**
 * REDIS_URL with the benchmark's own database (BENCH_NOTIFY_DB, default 9), away from the product's and the
 * tests' keys.
 */
export function notifyRedisUrl(): string {
  const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  url.pathname = `/${process.env.BENCH_NOTIFY_DB ?? '9'}`;
  return url.toString();
}

/**
 * Where the `ours` server keeps its data: {@link notifyRedisUrl}, or with BENCH_NOTIFY_CLUSTER_NODES
 * (`host:port,…`) a Redis Cluster (for comparisons by hand; the cluster's one database).
 */
export function notifyRedisTarget(): RedisTarget {
  const nodes = process.env.BENCH_NOTIFY_CLUSTER_NODES;
  if (!nodes) return notifyRedisUrl();
  return {
    mode: 'cluster',
    nodes: nodes.split(',').map((node) => ({ host: node.split(':')[0]!, port: Number(node.split(':')[1]) })),
    tls: false,
  };
}

/** The collection requests the benchmark's servers made (records of ours): each delivery is a new collection for one. */
export const BENCH_REQUESTS = 5000;
/** Our record of request `i`: its ref, the service's id, the chat that made it and the number asked to pay. */
export const benchRequest = (i: number) => ({
  ref: `bench-request-${i}`,
  id: String(100_000 + i),
  chat: `telegram:${1_000_000 + i}`,
  payee: `+2567721${String(i).padStart(5, '0')}`,
});

/** The notification credentials the servers check and the driver sends (as in production: bodies are authenticated). */
export const BENCH_WEBHOOK = { user: 'bench', password: 'bench-webhook-password' };
export const BENCH_AUTHORIZATION = `Basic ${Buffer.from(`${BENCH_WEBHOOK.user}:${BENCH_WEBHOOK.password}`).toString('base64')}`;
