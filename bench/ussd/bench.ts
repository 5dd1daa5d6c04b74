/**
 * USSD benchmark: our engine + USSD adapter against ussd-menu-builder (the peer) and a GET+SET floor, each
 * in its own process on the same Redis, driven by autocannon over localhost with 50 connections. Every
 * connection walks whole sessions (5 requests: dial, 1, phone, amount, PIN) with a fresh session id each
 * time. A warm-up, then the three interleaved for three rounds; medians reported.
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';

export type Kind = 'ours' | 'peer' | 'floor';

export interface UssdRound {
  kind: Kind;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  requests: number;
  sessions: number;
  correctFinals: number;
  wrongFinals: number;
  errors: number;
}

const PHONE = '+256772123456';

async function startServer(kind: Kind): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/ussd/serve.ts', kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'silent' },
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function cpu(url: string): Promise<number> {
  const r = (await (await fetch(`${url}/__cpu`)).json()) as { user: number; system: number };
  return r.user + r.system;
}

function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

/** One autocannon run of whole sessions against `url`. */
export async function drive(kind: Kind, url: string, path: string, seconds: number): Promise<UssdRound> {
  let correct = 0;
  let wrong = 0;
  const answers = ['', '1', '1*0772123456', '1*0772123456*5000', '1*0772123456*5000*1234'];
  const requests = answers.map((text, hop) => ({
    method: 'POST' as const,
    path,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    setupRequest: (req: autocannon.Request, context: object) => {
      const ctx = context as { sessionId?: string };
      if (hop === 0) ctx.sessionId = randomUUID();
      return { ...req, body: form({ sessionId: ctx.sessionId!, serviceCode: '*384*123#', phoneNumber: PHONE, networkCode: '63902', text }) };
    },
    onResponse: (status: number, body: string) => {
      if (hop !== answers.length - 1) return;
      if (status === 200 && body.startsWith('END') && /5,?000/.test(body) && /772123456/.test(body)) correct++;
      else wrong++;
    },
  }));
  const before = await cpu(url);
  const result = await autocannon({ url, connections: 50, duration: seconds, requests });
  const after = await cpu(url);
  return {
    kind,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUsPerReq: (after - before) / Math.max(1, result.requests.total),
    requests: result.requests.total,
    sessions: correct + wrong,
    correctFinals: correct,
    wrongFinals: wrong,
    errors: result.errors + result.non2xx,
  };
}

/** Bytes Redis holds for one session after its fourth hop, summed over the keys the server wrote. */
async function bytesPerSession(kind: Kind, url: string, path: string, redis: Redis): Promise<number> {
  const sessionId = `bytes-${kind}-${randomUUID()}`;
  const before = new Set(await redis.keys('*'));
  for (const text of ['', '1', '1*0772123456', '1*0772123456*5000']) {
    await fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ sessionId, serviceCode: '*384*123#', phoneNumber: '+256772999888', networkCode: '63902', text }),
    });
  }
  const fresh = (await redis.keys('*')).filter((k) => !before.has(k));
  let total = 0;
  for (const key of fresh) total += Number((await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
  return total;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export interface UssdResult {
  rounds: UssdRound[];
  median: Record<Kind, { rps: number; p50: number; p99: number; cpuUsPerReq: number; correctFinals: number; wrongFinals: number; errors: number }>;
  bytesPerSession: Record<Kind, number>;
}

export async function runUssdBench(quick: boolean): Promise<UssdResult> {
  const kinds: Kind[] = ['ours', 'peer', 'floor'];
  const paths: Record<Kind, string> = { ours: '/ussd/africastalking', peer: '/ussd', floor: '/ussd' };
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const servers = new Map<Kind, { url: string; child: ChildProcess }>();
  try {
    for (const kind of kinds) servers.set(kind, await startServer(kind));
    const seconds = quick ? 1 : 8;
    for (const kind of kinds) await drive(kind, servers.get(kind)!.url, paths[kind], quick ? 1 : 3); // warm-up
    const rounds: UssdRound[] = [];
    for (let round = 0; round < 3; round++) {
      for (const kind of kinds) rounds.push(await drive(kind, servers.get(kind)!.url, paths[kind], seconds));
    }
    const med = {} as UssdResult['median'];
    const bytes = {} as UssdResult['bytesPerSession'];
    for (const kind of kinds) {
      const mine = rounds.filter((r) => r.kind === kind);
      med[kind] = {
        rps: median(mine.map((r) => r.rps)),
        p50: median(mine.map((r) => r.p50)),
        p99: median(mine.map((r) => r.p99)),
        cpuUsPerReq: median(mine.map((r) => r.cpuUsPerReq)),
        correctFinals: mine.reduce((a, r) => a + r.correctFinals, 0),
        wrongFinals: mine.reduce((a, r) => a + r.wrongFinals, 0),
        errors: mine.reduce((a, r) => a + r.errors, 0),
      };
      bytes[kind] = await bytesPerSession(kind, servers.get(kind)!.url, paths[kind], redis);
    }
    return { rounds, median: med, bytesPerSession: bytes };
  } finally {
    for (const { child } of servers.values()) child.kill('SIGTERM');
    redis.disconnect();
  }
}
