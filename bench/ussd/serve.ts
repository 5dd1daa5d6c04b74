/**
 * Child process of the USSD benchmark: `tsx bench/ussd/serve.ts <peer|floor|ours>` serves POST /ussd on a
 * free port, prints `PORT <n>`, and answers GET /__cpu with its own CPU time (process.cpuUsage), so each
 * server's CPU per request is measured in its own process.
 */
import express from 'express';
import { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import { floorApp, peerApp } from './peer.js';

const kind = process.argv[2];
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

async function build(): Promise<express.Express> {
  if (kind === 'peer') return peerApp(redis);
  if (kind === 'floor') return floorApp(redis);
  if (kind === 'ours') return (await import('./ours.js')).oursApp(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  throw new Error(`unknown kind ${kind}`);
}

const app = await build();
// CPU profile of the hot path only (startup excluded): bench/profile/ussd.ts calls these around a run.
if (process.env.BENCH_PROFILE) {
  const { Session } = await import('node:inspector/promises');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  app.get('/__profile/start', async (_req, res) => {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    res.json({ ok: true });
  });
  app.get('/__profile/stop', async (_req, res) => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(process.env.BENCH_PROFILE!, JSON.stringify(profile));
    res.json({ ok: true, file: process.env.BENCH_PROFILE });
  });
}
app.get('/__cpu', (_req, res) => {
  const cpu = process.cpuUsage();
  res.json({ user: cpu.user, system: cpu.system });
});
const server = app.listen(0, '127.0.0.1', () => {
  console.log(`PORT ${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  redis.disconnect();
  process.exit(0);
});
