/**
 * An interleaved A/B of the money hop on whole built servers: `tsx bench/profile/money-ab.ts <base checkout>
 * [postgres|pglite] [rounds] [seconds]` starts the compiled `bench/dist/bench/ussd/serve.js ours` of the base
 * checkout (built there first: `node scripts/build.js --bench`) and of this one, each journalling its payments'
 * intents in a database of its own, and drives them in turn with the USSD benchmark's load (bench/ussd/bench.ts
 * `drive`: 50 connections walking whole sessions), which goes first alternating by round. Prints each round's
 * menu and PIN hop p50 and their ratio, then the medians: the same load falls on both sides of a round.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, loadavg } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { cleanUp, drive, KEY_PREFIX, MENU_HOP, PIN_HOP } from '../ussd/bench.js';
import { stop } from '../child.js';

const [baseDir, whereArg, roundsArg, secondsArg] = process.argv.slice(2);
if (!baseDir) throw new Error('usage: money-ab.ts <base checkout> [postgres|pglite] [rounds] [seconds]');
const where = whereArg === 'pglite' ? 'pglite' : 'postgres';
const rounds = Number(roundsArg ?? 6);
const seconds = Number(secondsArg ?? 5);
const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function database(): Promise<{ where: string; drop: () => Promise<void> }> {
  if (where === 'pglite') {
    const dir = await mkdtemp(path.join(tmpdir(), 'money-ab-'));
    return { where: `pglite:${dir}`, drop: () => rm(dir, { recursive: true, force: true }) };
  }
  const name = `money_ab_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    where: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** The compiled server of a checkout, journalling into `journal`; its URL once it listens. */
async function start(dir: string, journal: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(dir, 'bench/dist/bench/ussd/serve.js'), 'ours'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_JOURNAL: journal, LOG_LEVEL: 'silent' },
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`server of ${dir} exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sides = [
  { name: 'base', dir: path.resolve(baseDir) },
  { name: 'this', dir: process.cwd() },
] as const;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const dbs = await Promise.all(sides.map(() => database()));
const servers: Array<{ url: string; child: ChildProcess }> = [];
const seen = new Map<string, { menu: number[]; pin: number[]; ratio: number[]; wrong: number }>();
console.log(
  `load before: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
try {
  for (const [i, side] of sides.entries()) servers.push(await start(side.dir, dbs[i]!.where));
  for (const [i] of sides.entries()) await drive('ours', servers[i]!.url, '/ussd/africastalking', 3); // warm-up
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const r = await drive('ours', servers[i]!.url, '/ussd/africastalking', seconds);
      const menu = r.hops![MENU_HOP]!.p50;
      const pin = r.hops![PIN_HOP]!.p50;
      const s = seen.get(sides[i]!.name) ?? { menu: [], pin: [], ratio: [], wrong: 0 };
      s.menu.push(menu);
      s.pin.push(pin);
      s.ratio.push(pin / menu);
      s.wrong += r.wrongFinals + r.errors;
      seen.set(sides[i]!.name, s);
      console.log(
        `round ${round + 1} ${sides[i]!.name}: ${Math.round(r.rps)} req/s, menu p50 ${menu} ms, PIN p50 ${pin} ms, ratio ${(pin / menu).toFixed(2)}, finals ${r.correctFinals} ok / ${r.wrongFinals} wrong, load ${loadavg()[0]!.toFixed(2)}`,
      );
    }
  }
  console.log(`${where}, ${rounds} rounds of ${seconds} s, medians:`);
  for (const [name, s] of seen)
    console.log(
      `  ${name}: menu p50 ${median(s.menu).toFixed(2)} ms, PIN p50 ${median(s.pin).toFixed(2)} ms, PIN ÷ menu ${median(s.ratio).toFixed(2)}, wrong finals or errors ${s.wrong}`,
    );
  console.log(
    `load after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await Promise.all(servers.map((s) => stop(s.child)));
  await cleanUp(redis, KEY_PREFIX).catch(() => 0);
  redis.disconnect();
  await Promise.all(dbs.map((d) => d.drop()));
}
