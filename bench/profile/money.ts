/**
 * Where the money hop's time goes: `tsx bench/profile/money.ts <postgres|pglite> [sessions] [--parallel N]`
 * runs the USSD benchmark's flow through the real hop handler, engine and Redis store in this process, with
 * the payment's intent journalled as the money hop's runs journal it (bench/ussd/ours.ts), and times every
 * round trip the menu hop and the PIN hop wait for: each Redis command (ioredis's sendCommand) and each SQL
 * statement (the pool's or PGlite's query), by name, summed per hop. `--parallel N`: N callers at once (the
 * benchmark has 50 connections, about a fifth of them on a PIN hop at any time), so waits on locks show.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { codecs } from '../../adapters/ussd/codecs/index.js';
import { createHopHandler } from '../../adapters/ussd/hop.js';
import { cleanUp, nextCaller, OURS_FINAL } from '../ussd/bench.js';
import { oursEngine } from '../ussd/ours.js';
import { openDatabase } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import { Journal, moneyJournal } from '../../src/journal/index.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { createLogger } from '../../src/log.js';

const args = process.argv.slice(2);
const where = args[0] === 'pglite' ? 'pglite' : 'postgres';
const sessions = Number(args.find((a) => /^\d+$/.test(a)) ?? 300);
const parallelAt = args.indexOf('--parallel');
const parallel = parallelAt >= 0 ? Number(args[parallelAt + 1]) : 1;
const PREFIX = `bench:ussd:money:${randomBytes(3).toString('hex')}:`;
const TEXTS = ['', '1', '1*0772123456', '1*0772123456*5000', '1*0772123456*5000*1234'];
const NAMES = ['dial', 'menu', 'phone', 'amount', 'PIN'];
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The spans of the hop under way (each caller's own, through the async context). */
const current = new AsyncLocalStorage<Map<string, number>>();
function span<T>(name: string, work: () => Promise<T>): Promise<T> {
  const spans = current.getStore();
  if (!spans) return work();
  const start = performance.now();
  spans.set(`#${name}`, (spans.get(`#${name}`) ?? 0) + 1);
  return work().finally(() => spans.set(name, (spans.get(name) ?? 0) + performance.now() - start));
}

// Every Redis command and SQL statement of a hop, timed.
const sendCommand = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, command: Parameters<typeof sendCommand>[0]) {
  const spans = current.getStore();
  if (!spans) return sendCommand.call(this, command);
  const start = performance.now();
  const key = String(command.args[command.name === 'evalsha' ? 2 : 0] ?? '')
    .replace(PREFIX, '')
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27}|\{[^}]+\}|\+?\d{6,}|(?<=payment:)\d+/g, '<id>');
  const name = `redis ${command.name}${command.name === 'evalsha' ? ` ${String(command.args[0]).slice(0, 6)}` : ''} ${key}`;
  spans.set(`#${name}`, (spans.get(`#${name}`) ?? 0) + 1);
  const done = () => spans.set(name, (spans.get(name) ?? 0) + performance.now() - start);
  command.promise.then(done, done);
  return sendCommand.call(this, command);
} as typeof sendCommand;
const sqlName = (text: string) => `sql ${text.replace(/\s+/g, ' ').trim().slice(0, 60)}`;
const poolQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...a: unknown[]) {
  const q = a[0] as string | { text: string };
  const result = (poolQuery as (...x: unknown[]) => unknown).apply(this, a);
  if (current.getStore() && result instanceof Promise)
    void span(sqlName(typeof q === 'string' ? q : q.text), () => result).catch(() => {});
  return result;
} as typeof poolQuery;
const liteQuery = PGlite.prototype.query;
PGlite.prototype.query = function (this: PGlite, ...a: Parameters<typeof liteQuery>) {
  return span(sqlName(a[0]), () => liteQuery.apply(this, a)) as never;
} as typeof liteQuery;

async function database() {
  if (where === 'pglite') {
    const dir = await mkdtemp(path.join(tmpdir(), 'money-profile-'));
    return { options: { dataDir: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
  }
  const name = `money_profile_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    options: { databaseUrl: url.toString(), dataDir: '' },
    drop: async () => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

const db = await database();
const opened = await openDatabase(db.options);
await migrate(opened.db);
const journal = new Journal(opened.db);
const writer = new JournalWriter({ journal, logger: createLogger('silent') });
writer.start();
const ours = oursEngine(redisUrl, PREFIX, { journal: moneyJournal(journal, writer, () => ({})) });
const handle = createHopHandler({
  engine: ours.engine,
  deadlineMs: 3000,
  logger: ours.logger,
  defaultCountry: 'UG',
  digestKey: 'bench-digest-key',
  serviceCode: '*384*123#',
  resumeSeconds: 120,
})(codecs.find((c) => c.name === 'africastalking')!);

function hop(fields: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const res = { writeHead: () => res, end: (body: string) => resolve(body) };
    void handle({ body: fields } as never, res as never);
  });
}

/** Per hop: wall times, and each span's summed time. */
const walls = TEXTS.map(() => [] as number[]);
const spansOf = TEXTS.map(() => new Map<string, number>());

async function walker(count: number, record: boolean): Promise<void> {
  for (let i = 0; i < count; i++) {
    const fields = {
      sessionId: randomUUID(),
      serviceCode: '*384*123#',
      phoneNumber: nextCaller(),
      networkCode: '63902',
    };
    let last = '';
    for (const [n, text] of TEXTS.entries()) {
      const spans = new Map<string, number>();
      const start = performance.now();
      last = await current.run(spans, () => hop({ ...fields, text }));
      if (!record) continue;
      walls[n]!.push(performance.now() - start);
      for (const [k, v] of spans) spansOf[n]!.set(k, (spansOf[n]!.get(k) ?? 0) + v);
    }
    if (last !== OURS_FINAL) throw new Error(`wrong final screen: ${last}`);
  }
}

const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;
const redis = new Redis(redisUrl);
try {
  await Promise.all(Array.from({ length: parallel }, () => walker(Math.ceil(200 / parallel), false)));
  await writer.settled();
  await Promise.all(Array.from({ length: parallel }, () => walker(Math.ceil(sessions / parallel), true)));
  const n = walls[0]!.length;
  console.log(`${where}, ${n} sessions, ${parallel} at a time; per hop: p50 / mean wall ms, then mean ms a span`);
  for (const hopAt of [1, 4]) {
    const w = walls[hopAt]!;
    const mean = w.reduce((a, b) => a + b, 0) / w.length;
    console.log(`${NAMES[hopAt]} hop: p50 ${pct(w, 0.5).toFixed(2)}  mean ${mean.toFixed(2)}`);
    const all = spansOf[hopAt]!;
    for (const [k, v] of [...all].filter(([k]) => !k.startsWith('#')).sort((a, b) => b[1] - a[1]))
      console.log(`  ${(v / n).toFixed(3).padStart(8)} ms  x${((all.get(`#${k}`) ?? 0) / n).toFixed(2)}  ${k}`);
  }
} finally {
  await ours.engine.drain();
  await writer.close();
  await ours.store.close();
  await ours.funnel?.close();
  await cleanUp(redis, PREFIX);
  await cleanUp(redis, ours.funnelPrefix);
  redis.disconnect();
  await opened.close();
  await db.drop();
}
