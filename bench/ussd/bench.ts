/**
 * USSD benchmark: our engine + USSD adapter against ussd-menu-builder (the peer) and a GET+SET floor, each
 * in its own process on the same Redis, driven by autocannon over localhost with 50 connections. Every
 * connection walks whole sessions (5 requests: dial, 1, phone, amount, PIN) with a fresh session id each
 * time. A warm-up, then the three interleaved for five rounds of 8 s; medians reported.
 *
 * Then the money hop: ours again, its payment recorded as the product records it (our record in Redis and the
 * intent committed to the journal before the call), on PostgreSQL and then on PGlite, each server alone for
 * three rounds; the PIN hop (the PIN check, the intent, the payment) against the menu hop (`1`) of the same
 * rounds, by each hop's latency as the client timed it.
 */
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { startChild, stop } from '../child.js';

export type Kind = 'ours' | 'peer' | 'floor';
/** The benchmark's servers and the layers under ours that bench/profile/layers.ts measures (peer.ts layerApp). */
export type ServerKind = Kind | 'http' | 'http-redis' | 'node';

export interface UssdRound {
  kind: ServerKind;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  /** Redis server CPU per request (INFO cpu; shared Redis, so indicative). */
  redisCpuUsPerReq?: number;
  requests: number;
  sessions: number;
  correctFinals: number;
  wrongFinals: number;
  errors: number;
  /** The first wrong final screen, to see why. */
  firstWrong?: string;
  /** Each hop's latency as the client timed it (dial, menu `1`, phone, amount, PIN), ms. */
  hops?: HopLatency[];
}

/** One hop's latencies within a round, ms. */
export interface HopLatency {
  p50: number;
  p99: number;
  count: number;
}

/** The hop of a session that chooses from the menu (`1`), and the one that types the PIN and pays. */
export const MENU_HOP = 1;
export const PIN_HOP = 4;

/** The recipient every session types, and the words each server's final screen must hold. */
const RECIPIENT_TYPED = '0772123456';
/** Our final screen, exactly (the flow normalises the number and names the currency). */
export const OURS_FINAL = 'END Sent 5000 UGX to +256772123456';
/** The peer and the floor echo what was typed. */
export const PEER_FINAL = 'END Sent 5000 to 0772123456';

/**
 * A distinct caller per session: one phone has one USSD session at a time, and our engine keys the
 * conversation on the phone (as a gateway would), so sharing one number across 50 connections would make
 * every session fight over one conversation. Valid Ugandan MTN numbers +25677xxxxxxx.
 */
let callers = 0;
export function nextCaller(): string {
  callers = (callers + 1) % 10_000_000;
  return `+25677${String(callers).padStart(7, '0')}`;
}

/** Every key the servers write starts with this; each server adds its own `<kind>:` (see serve.ts). */
export const KEY_PREFIX = 'bench:ussd:';
/** Session ids of the benchmark, so a log line or key is recognisable. */
const SESSION_PREFIX = 'ab-';

export function startServer(
  kind: ServerKind,
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess }> {
  return startChild('bench/ussd/serve.ts', kind, nodeArgs, env);
}

/**
 * The Redis server's own CPU time in microseconds (INFO cpu). Redis shares the machine's cores with the
 * servers, so its work per request explains part of a rate; other clients of the same Redis add noise.
 */
async function redisCpu(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return Math.round((field('used_cpu_user') + field('used_cpu_sys')) * 1e6);
}

async function cpu(url: string): Promise<number> {
  const r = (await (await fetch(`${url}/__cpu`)).json()) as { user: number; system: number };
  return r.user + r.system;
}

function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

/** One autocannon run of whole sessions against `url` (50 connections unless told). */
export async function drive(
  kind: ServerKind,
  url: string,
  path: string,
  seconds: number,
  redis?: Redis,
  connections = 50,
): Promise<UssdRound> {
  let correct = 0;
  let wrong = 0;
  const answers = ['', '1', `1*${RECIPIENT_TYPED}`, `1*${RECIPIENT_TYPED}*5000`, `1*${RECIPIENT_TYPED}*5000*1234`];
  const expected = kind === 'ours' ? OURS_FINAL : PEER_FINAL;
  let firstWrong: string | undefined;
  // Each request is built just before it is sent (one at a time a connection), so the time from its build to
  // its response is its latency.
  const hopTimes: number[][] = answers.map(() => []);
  const requests = answers.map((text, hop) => ({
    method: 'POST' as const,
    path,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    setupRequest: (req: autocannon.Request, context: object) => {
      const ctx = context as { sessionId?: string; phone?: string; sentAt?: number };
      if (hop === 0) {
        ctx.sessionId = `${SESSION_PREFIX}${randomUUID()}`;
        ctx.phone = nextCaller();
      }
      ctx.sentAt = performance.now();
      return {
        ...req,
        body: form({
          sessionId: ctx.sessionId!,
          serviceCode: '*384*123#',
          phoneNumber: ctx.phone!,
          networkCode: '63902',
          text,
        }),
      };
    },
    onResponse: (status: number, body: string, context: object) => {
      const sentAt = (context as { sentAt?: number }).sentAt;
      if (sentAt !== undefined) hopTimes[hop]!.push(performance.now() - sentAt);
      if (hop !== answers.length - 1) return;
      if (status === 200 && body === expected) correct++;
      else {
        wrong++;
        firstWrong ??= `${status} ${body.slice(0, 120)}`;
      }
    },
  }));
  const before = await cpu(url);
  const redisBefore = redis ? await redisCpu(redis) : 0;
  const result = await autocannon({ url, connections, duration: seconds, requests });
  const after = await cpu(url);
  const redisAfter = redis ? await redisCpu(redis) : 0;
  return {
    kind,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUsPerReq: Math.round((after - before) / Math.max(1, result.requests.total)),
    ...(redis ? { redisCpuUsPerReq: Math.round((redisAfter - redisBefore) / Math.max(1, result.requests.total)) } : {}),
    requests: result.requests.total,
    sessions: correct + wrong,
    correctFinals: correct,
    wrongFinals: wrong,
    ...(firstWrong ? { firstWrong } : {}),
    errors: result.errors + result.non2xx + result.timeouts,
    hops: hopTimes.map(latencies),
  };
}

/** p50 and p99 of a hop's times, ms to two decimals. */
function latencies(times: number[]): HopLatency {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { p50: r(at(0.5)), p99: r(at(0.99)), count: sorted.length };
}

/** Keys under a prefix (SCAN, never KEYS). */
async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** Deletes every key under a prefix (the benchmark's own; never FLUSHALL). */
export async function cleanUp(redis: Redis, prefix: string): Promise<number> {
  const keys = await keysUnder(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
  return keys.length;
}

/**
 * Bytes Redis holds for one session after its fourth hop (the PIN screen shown, nothing paid yet): the
 * server's keys are cleaned first, so everything under its prefix afterwards belongs to this one session.
 * Every key counts: session records, duplicate-delivery marks and kept answers.
 */
async function bytesPerSession(
  kind: Kind,
  url: string,
  path: string,
  redis: Redis,
): Promise<{ bytes: number; keys: Record<string, number> }> {
  const prefix = `${KEY_PREFIX}${kind}:`;
  await cleanUp(redis, prefix);
  const sessionId = `${SESSION_PREFIX}bytes-${randomUUID()}`;
  const phoneNumber = nextCaller();
  for (const text of ['', '1', `1*${RECIPIENT_TYPED}`, `1*${RECIPIENT_TYPED}*5000`]) {
    await fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ sessionId, serviceCode: '*384*123#', phoneNumber, networkCode: '63902', text }),
    });
  }
  const keys: Record<string, number> = {};
  let total = 0;
  for (const key of await keysUnder(redis, prefix)) {
    const bytes = Number((await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
    // Group by key shape (ids replaced) so the JSON shows where the bytes go.
    const shape = key
      .slice(prefix.length)
      .replace(sessionId, '<session>')
      .replace(phoneNumber, '<phone>')
      .replace(/:\d+(?=:|$)/g, ':<n>');
    keys[shape] = (keys[shape] ?? 0) + bytes;
    total += bytes;
  }
  return { bytes: total, keys };
}

/**
 * Walks `count` whole sessions at once (count-bounded, not time-bounded) and checks every final screen
 * exactly: the timed rounds only judge sessions that finished inside their window, which on a slow
 * machine or a quick run can be few.
 */
async function checkFinals(
  kind: Kind,
  url: string,
  path: string,
  count: number,
): Promise<{ correct: number; wrong: number; firstWrong?: string }> {
  const expected = kind === 'ours' ? OURS_FINAL : PEER_FINAL;
  let correct = 0;
  let wrong = 0;
  let firstWrong: string | undefined;
  await Promise.all(
    Array.from({ length: count }, async () => {
      const sessionId = `${SESSION_PREFIX}${randomUUID()}`;
      const phoneNumber = nextCaller();
      let body = '';
      let status = 0;
      for (const text of [
        '',
        '1',
        `1*${RECIPIENT_TYPED}`,
        `1*${RECIPIENT_TYPED}*5000`,
        `1*${RECIPIENT_TYPED}*5000*1234`,
      ]) {
        const res = await fetch(url + path, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form({ sessionId, serviceCode: '*384*123#', phoneNumber, networkCode: '63902', text }),
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        body = await res.text();
      }
      if (status === 200 && body === expected) correct++;
      else {
        wrong++;
        firstWrong ??= `${status} ${body.slice(0, 120)}`;
      }
    }),
  );
  return { correct, wrong, ...(firstWrong ? { firstWrong } : {}) };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export interface UssdMedian {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  /** Redis server CPU per request (indicative: the Redis is shared). */
  redisCpuUsPerReq: number;
  requests: number;
  /** Final screens of the timed rounds' finished sessions plus the finals check, all exact. */
  correctFinals: number;
  wrongFinals: number;
  errors: number;
}

export interface UssdResult {
  seconds: number;
  connections: number;
  rounds: UssdRound[];
  median: Record<Kind, UssdMedian>;
  bytesPerSession: Record<Kind, number>;
  bytesByKey: Record<Kind, Record<string, number>>;
  /** The count-bounded check of final screens (FINALS_CHECKED sessions at once per server). */
  finalsCheck: Record<Kind, { correct: number; wrong: number; firstWrong?: string }>;
  /** The money hop against the menu hop, with the intent journalled on each database (absent in older results). */
  moneyHop?: MoneyHop[];
  /** The same of the interleaved rounds' ours, whose payment is answered with nothing recorded: the PIN hop's own cost. */
  oursHops?: Pick<MoneyHop, 'menu' | 'pin' | 'ratioP50' | 'ratioP99'>;
}

/** The PIN hop that journals the payment's intent against the menu hop of the same rounds, on one database. */
export interface MoneyHop {
  database: 'postgres' | 'pglite';
  rounds: number;
  /** Medians over the rounds of each round's p50 and p99, ms. */
  menu: { p50: number; p99: number };
  pin: { p50: number; p99: number };
  /** pin ÷ menu: the target is at most 1.3 (p50). */
  ratioP50: number;
  ratioP99: number;
  rps: number;
  cpuUsPerReq: number;
  correctFinals: number;
  wrongFinals: number;
  errors: number;
  /** Intents the journal holds after the runs (each session's payment, once). */
  intents: number;
}

/** The PostgreSQL server the money hop's runs make a database of their own on (and drop). */
const POSTGRES_URL =
  process.env.BENCH_POSTGRES_URL ?? process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const MONEY_ROUNDS = 3;

/** A fresh database for one money-hop run: its URL (PostgreSQL) or `pglite:<dir>`, how many intents it holds, and its removal. */
async function moneyDatabase(
  database: MoneyHop['database'],
): Promise<{ where: string; intents: () => Promise<number>; drop: () => Promise<void> }> {
  if (database === 'pglite') {
    const dir = await mkdtemp(path.join(tmpdir(), 'bench-ussd-pglite-'));
    return {
      where: `pglite:${dir}`,
      intents: async () => -1, // PGlite is one process's: the server that wrote it holds it
      drop: () => rm(dir, { recursive: true, force: true }),
    };
  }
  const name = `bench_ussd_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    where: url.toString(),
    intents: async () => {
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      try {
        const { rows } = await client.query<{ n: string }>(`select count(*) as n from operations`);
        return Number(rows[0]?.n ?? 0);
      } catch {
        return -1;
      } finally {
        await client.end();
      }
    },
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** The menu and PIN hops' latencies (medians over the rounds of each round's p50 and p99) and PIN ÷ menu. */
function hopRatios(rounds: UssdRound[]): Pick<MoneyHop, 'menu' | 'pin' | 'ratioP50' | 'ratioP99'> {
  const of = (hop: number, q: 'p50' | 'p99') => median(rounds.map((r) => r.hops![hop]![q]));
  const menu = { p50: of(MENU_HOP, 'p50'), p99: of(MENU_HOP, 'p99') };
  const pin = { p50: of(PIN_HOP, 'p50'), p99: of(PIN_HOP, 'p99') };
  const r2 = (x: number) => Math.round(x * 100) / 100;
  return {
    menu,
    pin,
    ratioP50: r2(pin.p50 / Math.max(0.01, menu.p50)),
    ratioP99: r2(pin.p99 / Math.max(0.01, menu.p99)),
  };
}

/** The money hop on each database in turn: ours alone, its payments journalled, MONEY_ROUNDS rounds. */
async function runMoneyHop(
  quick: boolean,
  seconds: number,
  redis: Redis,
  log: (line: string) => void,
): Promise<MoneyHop[]> {
  const results: MoneyHop[] = [];
  for (const database of ['postgres', 'pglite'] as const) {
    const db = await moneyDatabase(database);
    let server: { url: string; child: ChildProcess } | undefined;
    try {
      server = await startServer('ours', [], { BENCH_JOURNAL: db.where });
      const path = '/ussd/africastalking';
      await drive('ours', server.url, path, quick ? 1 : 3); // warm-up
      const rounds: UssdRound[] = [];
      for (let round = 0; round < (quick ? 1 : MONEY_ROUNDS); round++) {
        const r = await drive('ours', server.url, path, seconds, redis);
        const [menu, pin] = [r.hops![MENU_HOP]!, r.hops![PIN_HOP]!];
        log(
          `ussd money hop ${database} round ${round + 1}: ${Math.round(r.rps)} req/s, menu hop p50 ${menu.p50} / p99 ${menu.p99} ms, PIN hop p50 ${pin.p50} / p99 ${pin.p99} ms, finals ${r.correctFinals} ok / ${r.wrongFinals} wrong${r.firstWrong ? ` (${r.firstWrong})` : ''}`,
        );
        rounds.push(r);
      }
      results.push({
        database,
        rounds: rounds.length,
        ...hopRatios(rounds),
        rps: Math.round(median(rounds.map((r) => r.rps))),
        cpuUsPerReq: median(rounds.map((r) => r.cpuUsPerReq)),
        correctFinals: rounds.reduce((a, r) => a + r.correctFinals, 0),
        wrongFinals: rounds.reduce((a, r) => a + r.wrongFinals, 0),
        errors: rounds.reduce((a, r) => a + r.errors, 0),
        intents: await db.intents(),
      });
    } finally {
      if (server) await stop(server.child);
      await cleanUp(redis, KEY_PREFIX).catch(() => 0);
      await db.drop();
    }
  }
  return results;
}

const FINALS_CHECKED = 50;

/**
 * Interleaved rounds per server, and their length. A shared machine's speed moves from one round to the next
 * (each server's CPU a request with it): five short rounds give medians one slow stretch does not move, where
 * three long ones let two slow rounds of one server decide its figures.
 */
const ROUNDS = 5;
const ROUND_SECONDS = 8;

export async function runUssdBench(quick: boolean, log: (line: string) => void = () => undefined): Promise<UssdResult> {
  const kinds: Kind[] = ['ours', 'peer', 'floor'];
  const paths: Record<Kind, string> = { ours: '/ussd/africastalking', peer: '/ussd', floor: '/ussd' };
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const servers = new Map<Kind, { url: string; child: ChildProcess }>();
  const seconds = quick ? 1 : ROUND_SECONDS;
  const roundCount = quick ? 3 : ROUNDS;
  try {
    await cleanUp(redis, KEY_PREFIX);
    // Started together (tsx compiles each on start); each then serves alone in its own process.
    const started = await Promise.all(kinds.map((kind) => startServer(kind)));
    kinds.forEach((kind, i) => servers.set(kind, started[i]!));
    for (const kind of kinds) await drive(kind, servers.get(kind)!.url, paths[kind], quick ? 1 : 3); // warm-up
    const rounds: UssdRound[] = [];
    for (let round = 0; round < roundCount; round++) {
      for (const kind of kinds) {
        const r = await drive(kind, servers.get(kind)!.url, paths[kind], seconds, redis);
        log(
          `ussd round ${round + 1} ${kind}: ${Math.round(r.rps)} req/s, p99 ${r.p99} ms, ${r.cpuUsPerReq} us CPU/req (Redis ${r.redisCpuUsPerReq} us), finals ${r.correctFinals} ok / ${r.wrongFinals} wrong${r.firstWrong ? ` (${r.firstWrong})` : ''}`,
        );
        rounds.push(r);
      }
    }
    const finals = {} as UssdResult['finalsCheck'];
    for (const kind of kinds) {
      finals[kind] = await checkFinals(kind, servers.get(kind)!.url, paths[kind], FINALS_CHECKED);
      log(
        `ussd finals check ${kind}: ${finals[kind].correct} correct, ${finals[kind].wrong} wrong${finals[kind].firstWrong ? ` (${finals[kind].firstWrong})` : ''}`,
      );
    }
    const med = {} as UssdResult['median'];
    const bytes = {} as UssdResult['bytesPerSession'];
    const byKey = {} as UssdResult['bytesByKey'];
    for (const kind of kinds) {
      const mine = rounds.filter((r) => r.kind === kind);
      med[kind] = {
        rps: Math.round(median(mine.map((r) => r.rps))),
        p50: median(mine.map((r) => r.p50)),
        p99: median(mine.map((r) => r.p99)),
        cpuUsPerReq: median(mine.map((r) => r.cpuUsPerReq)),
        redisCpuUsPerReq: median(mine.map((r) => r.redisCpuUsPerReq ?? 0)),
        requests: mine.reduce((a, r) => a + r.requests, 0),
        correctFinals: mine.reduce((a, r) => a + r.correctFinals, 0) + finals[kind].correct,
        wrongFinals: mine.reduce((a, r) => a + r.wrongFinals, 0) + finals[kind].wrong,
        errors: mine.reduce((a, r) => a + r.errors, 0),
      };
      const b = await bytesPerSession(kind, servers.get(kind)!.url, paths[kind], redis);
      bytes[kind] = b.bytes;
      byKey[kind] = b.keys;
    }
    await Promise.all([...servers.values()].map(({ child }) => stop(child)));
    servers.clear();
    await cleanUp(redis, KEY_PREFIX);
    const moneyHop = await runMoneyHop(quick, seconds, redis, log);
    return {
      moneyHop,
      oursHops: hopRatios(rounds.filter((r) => r.kind === 'ours')),
      seconds,
      connections: 50,
      rounds,
      median: med,
      bytesPerSession: bytes,
      bytesByKey: byKey,
      finalsCheck: finals,
    };
  } finally {
    // Wait for the servers to exit, so no hop still in flight writes after the cleanup.
    await Promise.all([...servers.values()].map(({ child }) => stop(child)));
    await cleanUp(redis, KEY_PREFIX).catch(() => 0);
    redis.disconnect();
  }
}
