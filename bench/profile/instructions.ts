/**
 * Instructions a USSD session costs our built server, counted by valgrind's callgrind (deterministic where a
 * shared machine's timings are not): `tsx bench/profile/instructions.ts [sessions] [warm-up]` builds the
 * benchmark's servers (bench/dist/), starts ours (`node --single-threaded bench/dist/bench/ussd/serve.js ours`)
 * under `valgrind --tool=callgrind`, walks `warm-up` whole sessions (default 300), zeroes the counts
 * (`callgrind_control -z`), walks `sessions` more (default 200), dumps (`callgrind_control --dump`), and prints
 * the instructions of the server per session and per hop. Sessions are walked one request at a time, each with a
 * session id and caller of the script's own numbering, so two runs send the same bytes in the same order.
 * For an A/B, run it on each side of a change (a temporary patch of the sources: each run builds them).
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { compileBench, compiledPath, stop } from '../child.js';
import { cleanUp, KEY_PREFIX, OURS_FINAL } from '../ussd/bench.js';

const numbers = process.argv.slice(2).filter((a) => /^\d+$/.test(a));
const [sessions, warmUp] = [Number(numbers[0] ?? 200), Number(numbers[1] ?? 300)];
/** `--built`: the servers in bench/dist/ as they are (a patch of the compiled JavaScript, or a second run). */
const built = process.argv.includes('--built');
const TEXTS = ['', '1', '1*0772123456', '1*0772123456*5000', '1*0772123456*5000*1234'];
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
await cleanUp(redis, KEY_PREFIX);
if (!built) compileBench();
const dir = mkdtempSync(path.join(tmpdir(), 'callgrind-'));
const child = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    `--callgrind-out-file=${dir}/callgrind.out.%p`,
    process.execPath,
    '--single-threaded',
    compiledPath('bench/ussd/serve.ts'),
    'ours',
  ],
  { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'silent' } },
);
let valgrindLog = '';
child.stderr!.on('data', (chunk: Buffer) => (valgrindLog += chunk.toString()));
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const m = /PORT (\d+)/.exec(out);
    if (m) resolve(`http://127.0.0.1:${m[1]}`);
  });
  child.once('exit', (code) => reject(new Error(`the server exited with ${code}: ${valgrindLog.slice(-2000)}`)));
});

let numbered = 0;
/** One whole session, one request at a time; false when its final screen is not ours. */
async function session(): Promise<boolean> {
  numbered++;
  const sessionId = `cg-${numbered}`;
  const phoneNumber = `+25677${String(numbered).padStart(7, '0')}`;
  let body = '';
  for (const text of TEXTS) {
    const res = await fetch(`${url}/ussd/africastalking`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        sessionId,
        serviceCode: '*384*123#',
        phoneNumber,
        networkCode: '63902',
        text,
      }).toString(),
    });
    body = await res.text();
  }
  return body === OURS_FINAL;
}

const control = (...args: string[]) => execFileSync('callgrind_control', [...args, String(child.pid)]).toString();
try {
  let wrong = 0;
  for (let i = 0; i < warmUp; i++) if (!(await session())) wrong++;
  control('-z');
  for (let i = 0; i < sessions; i++) if (!(await session())) wrong++;
  control('--dump');
  // The dump asked for: what was counted since the zeroing (the file of the exit comes later).
  const dump = readdirSync(dir)
    .filter((f) => /\.\d+\.\d+$/.test(f))
    .map((f) => path.join(dir, f))[0]!;
  const totals = Number(/^(?:totals|summary): (\d+)/m.exec(readFileSync(dump, 'utf8'))?.[1] ?? 0);
  // Inclusive counts of V8's optimising compiler and of the timers (the store's sweeps, the record cache's
  // purge): the first is JIT warm-up still under way, the second grows with the wall time valgrind takes.
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump], {
    maxBuffer: 64 << 20,
  }).toString();
  const inclusive = (name: RegExp) =>
    Number(
      annotated
        .split('\n')
        .find((line) => name.test(line))
        ?.trim()
        .split(' ')[0]!
        .replace(/,/g, '') ?? 0,
    );
  const compile = inclusive(/Compiler::CompileOptimized\(/);
  const timers = inclusive(/uv__run_timers/);
  const a = (n: number) => Math.round(n / sessions);
  console.log(
    `instructions: ${totals} over ${sessions} sessions after ${warmUp} (${wrong} wrong finals): ${a(totals)} a session; ` +
      `optimising compiler ${a(compile)}, timers ${a(timers)}, the rest ${a(totals - compile - timers)} a session (${dump})`,
  );
} finally {
  await stop(child);
  await cleanUp(redis, KEY_PREFIX);
  redis.disconnect();
}
