/**
 * Child process of the USSD benchmark: `tsx bench/ussd/serve.ts <peer|floor|ours|http|http-redis|node>` serves POST /ussd on a
 * free port, prints `PORT <n>`, and answers GET /__cpu with its own CPU time (process.cpuUsage), so each
 * server's CPU per request is measured in its own process. `BENCH_JOURNAL` (ours only): a `postgres://` URL,
 * or `pglite:<dir>`, the database (migrated here) whose journal takes each payment's intent before its call.
 */
import express from 'express';
import { Redis } from 'ioredis';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DirectRoutes } from '../../src/http/direct-routes.js';
import type { RedisTarget } from '../../src/redis/connect.js';
import { profileRoutes } from '../profile/hooks.js';
import { floorApp, layerApp, nodeLayer, peerApp } from './peer.js';
import { createLogger } from '../../src/log.js';
import { openDatabase } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import { Journal, moneyJournal, type MoneyJournal } from '../../src/journal/index.js';
import { JournalWriter } from '../../src/journal/writer.js';

const kind = process.argv[2];
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

/** The server's express app and, for ours and the `node` layer, the direct routes served in front of it. */
async function build(): Promise<{ app: express.Express; direct?: DirectRoutes }> {
  if (kind === 'peer') return { app: peerApp(redis) };
  if (kind === 'floor') return { app: floorApp(redis) };
  if (kind === 'http') return { app: layerApp(undefined) };
  if (kind === 'http-redis') return { app: layerApp(redis) };
  if (kind === 'node') return { app: express(), direct: nodeLayer() };
  if (kind === 'ours')
    // BENCH_REDIS (bench/scale): a RedisTarget as JSON, e.g. a cluster's settings; else REDIS_URL.
    return (await import('./ours.js')).oursApp(
      process.env.BENCH_REDIS
        ? (JSON.parse(process.env.BENCH_REDIS) as RedisTarget)
        : (process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'),
      undefined,
      process.env.BENCH_JOURNAL ? await openJournal(process.env.BENCH_JOURNAL) : undefined,
    );
  throw new Error(`unknown kind ${kind}`);
}

/** The journal of BENCH_JOURNAL, as src/app.ts builds it (no Redis behind its buffered writer). */
async function openJournal(where: string): Promise<MoneyJournal> {
  const database = await openDatabase(
    where.startsWith('pglite:') ? { dataDir: where.slice('pglite:'.length) } : { databaseUrl: where, dataDir: '' },
  );
  await migrate(database.db);
  const journal = new Journal(database.db);
  const writer = new JournalWriter({ journal, logger: createLogger('silent') });
  writer.start();
  return moneyJournal(journal, writer, () => ({}));
}

const { app, direct } = await build();
profileRoutes(app);
app.get('/__cpu', (_req, res) => {
  const cpu = process.cpuUsage();
  res.json({ user: cpu.user, system: cpu.system });
});
const server = createServer(direct ? direct.serve(app) : app).listen(0, '127.0.0.1', () => {
  console.log(`PORT ${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  redis.disconnect();
  process.exit(0);
});
