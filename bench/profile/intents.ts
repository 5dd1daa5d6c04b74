/**
 * The intent's statement alone: `tsx bench/profile/intents.ts <postgres|pglite> [count] [--parallel N]
 * [--variants a,b,...]` writes `count` intents with their reservations (Journal.intend, as the money hop writes
 * them), N at a time, on a fresh database, and prints each statement's latency (p50, mean) and the intents a
 * second. Variants, interleaved in rounds on one database so the machine's load falls on each alike: `as-is`;
 * `answers` (each intent followed by its answer event through Journal.append, not awaited); `writer` (the answer
 * handed to the buffered writer, as the product does); `no-reserve` (the intent without its reservation);
 * `async-commit` (as-is through connections with `synchronous_commit=off`: what the commit's flush costs, for
 * measurement only); `select1` (one `select 1`: the round trip alone).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { openDatabase } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import { Journal, events } from '../../src/journal/index.js';
import { sql } from 'kysely';
import { JournalWriter } from '../../src/journal/writer.js';
import { createLogger } from '../../src/log.js';

const args = process.argv.slice(2);
const where = args[0] === 'pglite' ? 'pglite' : 'postgres';
const count = Number(args.find((a) => /^\d+$/.test(a)) ?? 500);
const opt = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const parallel = Number(opt('--parallel') ?? 1);
const variants = (opt('--variants') ?? 'as-is').split(',');
const ROUNDS = Number(opt('--rounds') ?? 4);
const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function database() {
  if (where === 'pglite') {
    const dir = await mkdtemp(path.join(tmpdir(), 'intents-profile-'));
    return { options: { dataDir: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
  }
  const name = `intents_profile_${randomBytes(6).toString('hex')}`;
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
// Measurement only: the same database through connections that do not wait for the WAL's flush at commit.
const asyncOpened =
  'databaseUrl' in db.options && variants.includes('async-commit')
    ? await openDatabase({
        ...db.options,
        databaseUrl: `${db.options.databaseUrl}?options=${encodeURIComponent('-c synchronous_commit=off')}`,
      })
    : undefined;
const asyncJournal = asyncOpened ? new Journal(asyncOpened.db) : journal;
// The buffered writer as the product has it (facts handed over while others are written go together).
const writer = new JournalWriter({ journal, logger: createLogger('silent') });
let callers = 0;

async function one(variant: string, times: number[], later: Promise<unknown>[]): Promise<void> {
  const ref = `${randomUUID()}:pay`;
  const user = `+25677${String(++callers).padStart(7, '0')}`;
  const start = performance.now();
  if (variant === 'select1') {
    await sql`select 1`.execute(opened.db);
    times.push(performance.now() - start);
    return;
  }
  await (variant === 'async-commit' ? asyncJournal : journal).intend(
    {
      ref,
      kind: 'payment',
      amount: '5000',
      currency: 'UGX',
      payee: '+256772123456',
      channel: 'ussd',
      channelUser: user,
      chat: `ussd:${user}`,
      role: '',
      flow: 'pay',
    },
    variant === 'no-reserve'
      ? undefined
      : {
          ref,
          person: `ussd:${user}`,
          currency: 'UGX',
          day: new Date().toISOString().slice(0, 10),
          amount: '5000',
          minor: 500000,
          limit: 100_000_000,
        },
  );
  times.push(performance.now() - start);
  const answer = events.answer(ref, { serviceId: String(callers), serviceState: 'new' });
  if (variant === 'answers') later.push(journal.append(answer));
  if (variant === 'writer') writer.write(answer);
}

async function round(variant: string, n: number) {
  const times: number[] = [];
  const later: Promise<unknown>[] = [];
  const start = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = 0; i < Math.ceil(n / parallel); i++) await one(variant, times, later);
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  await Promise.all(later);
  await writer.settled();
  return { times, perSecond: times.length / seconds };
}

const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;
try {
  for (const v of variants) await round(v, 100); // warm-up
  const all = new Map(variants.map((v) => [v, { times: [] as number[], rates: [] as number[] }]));
  for (let r = 0; r < ROUNDS; r++)
    for (const v of r % 2 ? [...variants].reverse() : variants) {
      const { times, perSecond } = await round(v, Math.ceil(count / ROUNDS));
      all.get(v)!.times.push(...times);
      all.get(v)!.rates.push(perSecond);
    }
  console.log(`${where}, ${parallel} at a time, ${ROUNDS} interleaved rounds:`);
  for (const [v, { times, rates }] of all) {
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    console.log(
      `  ${v.padEnd(10)} intent p50 ${pct(times, 0.5).toFixed(2)} ms, mean ${mean.toFixed(2)} ms, p99 ${pct(times, 0.99).toFixed(2)} ms; ${Math.round(pct(rates, 0.5))} intents/s`,
    );
  }
} finally {
  await asyncOpened?.close();
  await opened.close();
  await db.drop();
}
