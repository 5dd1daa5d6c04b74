/**
 * CPU profile of one USSD server's hot path under the benchmark's load: `tsx bench/profile/ussd.ts
 * [ours|peer|floor] [seconds]` starts the server with BENCH_PROFILE, warms it up, profiles one run
 * (startup excluded, via node:inspector in the server) and prints the analysis (bench/profile/analyze.ts).
 * Profiles land in bench/results/profiles/ (not committed).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { stop } from '../child.js';
import { cleanUp, drive, KEY_PREFIX, startServer, type Kind } from '../ussd/bench.js';
import { analyze } from './analyze.js';

const kind = (process.argv[2] ?? 'ours') as Kind;
const seconds = Number(process.argv[3] ?? 10);
const dir = 'bench/results/profiles';
mkdirSync(dir, { recursive: true });
const file = `${dir}/ussd-${kind}-${Date.now()}.cpuprofile`;
process.env.BENCH_PROFILE = file;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const { url, child } = await startServer(kind);
const path = kind === 'ours' ? '/ussd/africastalking' : '/ussd';
try {
  await drive(kind, url, path, 3);
  await fetch(`${url}/__profile/start`);
  const r = await drive(kind, url, path, seconds);
  await fetch(`${url}/__profile/stop`);
  console.log(
    `${kind}: ${Math.round(r.rps)} req/s, ${r.cpuUsPerReq} us CPU/req, finals ${r.correctFinals}/${r.sessions}, ${r.requests} requests`,
  );
} finally {
  await stop(child);
  await cleanUp(redis, KEY_PREFIX);
  redis.disconnect();
}
console.log(file);
console.log(analyze(JSON.parse(readFileSync(file, 'utf8')), 30));
