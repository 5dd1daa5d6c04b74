/**
 * CPU profile of our USSD server under the benchmark's load: `tsx bench/profile/ussd.ts [seconds]` starts
 * ours with --cpu-prof, drives whole sessions for a while, stops it (the profile is written on exit) and
 * prints the analysis. Profiles land in bench/results/profiles/ (not committed).
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { cleanUp, drive, KEY_PREFIX, startServer } from '../ussd/bench.js';
import { analyze } from './analyze.js';

const seconds = Number(process.argv[2] ?? 10);
const dir = 'bench/results/profiles';
mkdirSync(dir, { recursive: true });
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const { url, child } = await startServer('ours', ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
try {
  await drive('ours', url, '/ussd/africastalking', 2);
  const r = await drive('ours', url, '/ussd/africastalking', seconds);
  console.log(`${Math.round(r.rps)} req/s, ${r.cpuUsPerReq} us CPU/req, finals ${r.correctFinals}/${r.sessions}`);
} finally {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  await cleanUp(redis, KEY_PREFIX);
  redis.disconnect();
}
const newest = readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .map((f) => join(dir, f))
  .sort((a, b) => statSync(b).size - statSync(a).size)[0]!; // the main thread (the loader thread is small)
console.log(newest);
console.log(analyze(JSON.parse(readFileSync(newest, 'utf8')), 30));
