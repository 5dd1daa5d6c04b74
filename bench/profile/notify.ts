/**
 * CPU profile of a notifications server under the benchmark's load: `tsx bench/profile/notify.ts
 * [ours|ours-memory|bare] [seconds]`; see bench/profile/ussd.ts.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { NOTIFY_PREFIX, notifyRedisUrl, QUEUE_PREFIXES } from '../notify/config.js';
import { drive, startServer, type Kind } from '../notify/notify.js';
import { stop } from '../child.js';
import { cleanUp } from '../ussd/bench.js';
import { analyze } from './analyze.js';

const kind = (process.argv[2] ?? 'ours') as Kind;
const seconds = Number(process.argv[3] ?? 8);
const dir = 'bench/results/profiles';
mkdirSync(dir, { recursive: true });
const file = `${dir}/notify-${kind}-${Date.now()}.cpuprofile`;
process.env.BENCH_PROFILE = file;
const redis = new Redis(notifyRedisUrl());
const { url, child } = await startServer(kind);
try {
  await drive(kind, url, 2);
  await fetch(`${url}/__profile/start`);
  const r = await drive(kind, url, seconds);
  await fetch(`${url}/__profile/stop`);
  console.log(`${kind}: ${r.rate}/s, ${r.cpuUsPerDelivery} us CPU each, ${r.told} told of ${r.accepted}`);
} finally {
  await stop(child);
  await cleanUp(redis, NOTIFY_PREFIX);
  for (const prefix of QUEUE_PREFIXES) await cleanUp(redis, prefix);
  redis.disconnect();
}
console.log(file);
console.log(analyze(JSON.parse(readFileSync(file, 'utf8')), 30));
