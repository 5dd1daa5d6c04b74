/**
 * `npm run bench [-- ussd chat notify upstream]`: runs the benchmarks (all by default), writes each one's
 * results to bench/results/<name>.json, then builds bench/results/summary.json (the headline figures under
 * the keys issue 9 fixes) and one markdown table from every result file present, and prints the table.
 * BENCH_QUICK=1: each benchmark in about 10 seconds, for a smoke check. `-- --tables`: no run, the tables only.
 *
 * Needs Redis (REDIS_URL, default redis://127.0.0.1:6379); only its own `bench:` keys are written, and
 * they are deleted afterwards. Everything else runs on localhost; child servers are stopped at the end.
 */
import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { runChatBench, type ChatResult } from './chat/chat.js';
import { runNotifyBench, type NotifyResult } from './notify/notify.js';
import { runUpstreamBench, type UpstreamResult } from './upstream/upstream.js';
import { runSoakBench, type SoakResult } from './soak/soak.js';
import { runUssdBench, type UssdResult } from './ussd/bench.js';
import { runScaleBench, type ScaleResult } from './scale/scale.js';
import { runNotifyLoadBench, type NotifyLoadResult } from './notify/load.js';
import { journalTable, runJournalBench, type JournalResult } from './journal/journal.js';
import { runReconcileBench } from './reconcile/reconcile.js';

const RESULTS = 'bench/results';
const quick = process.env.BENCH_QUICK === '1';
const all = ['ussd', 'chat', 'notify', 'upstream'] as const;
/**
 * Run only when named: the soak takes several minutes on its own; scale starts its own Redis servers; journal
 * fills a PostgreSQL database (POSTGRES_URL) with a million rows; reconcile makes a month of 100,000 payments at
 * the sandbox and in a PostgreSQL database.
 */
const named = ['soak', 'scale', 'notify-load', 'journal', 'reconcile'] as const;
type Name = (typeof all)[number] | (typeof named)[number];
const asked = process.argv.slice(2).filter((a) => ([...all, ...named] as readonly string[]).includes(a)) as Name[];
/** `--tables`: runs nothing, only rebuilds the tables from the result files present. */
const chosen: Name[] = asked.length ? asked : process.argv.includes('--tables') ? [] : [...all];

/** The load when the run started: a figure counts only from a quiet machine (under 1.5 before it starts). */
const loadBefore = os.loadavg().map((l) => Math.round(l * 100) / 100);

const log = (line: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

function machine() {
  let commit = '';
  try {
    commit = execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    /* not a git checkout */
  }
  return {
    date: new Date().toISOString(),
    quick,
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? '',
    loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
    platform: `${os.platform()} ${os.release()}`,
    commit,
  };
}

const runners: Record<Name, () => Promise<unknown>> = {
  ussd: () => runUssdBench(quick, log),
  chat: () => runChatBench(quick, log),
  notify: () => runNotifyBench(quick, log),
  upstream: () => runUpstreamBench(quick, log),
  soak: () => runSoakBench(quick, log),
  scale: () => runScaleBench(quick, log),
  'notify-load': () => runNotifyLoadBench(quick, log),
  journal: () => runJournalBench(quick, log),
  reconcile: () => runReconcileBench(quick, log),
};

mkdirSync(RESULTS, { recursive: true });
for (const name of chosen) {
  const started = machine();
  log(`${name}: start${quick ? ' (quick)' : ''}`);
  const result = await runners[name]();
  writeFileSync(`${RESULTS}/${name}.json`, JSON.stringify({ machine: started, result }, null, 2) + '\n');
  log(`${name}: done`);
}

function read<T>(name: Name): { machine: ReturnType<typeof machine>; result: T } | undefined {
  const file = `${RESULTS}/${name}.json`;
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
}

const ussd = read<UssdResult>('ussd');
const chat = read<ChatResult>('chat');
const notify = read<NotifyResult>('notify');
const upstream = read<UpstreamResult>('upstream');
const soak = read<SoakResult>('soak');
const scale = read<ScaleResult>('scale');
const notifyLoad = read<NotifyLoadResult>('notify-load');
const journalRun = read<JournalResult>('journal');

const r2 = (x: number) => Math.round(x * 100) / 100;
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? null : r2(a / b);

const u = ussd?.result.median;
const c20 = chat?.result;
const summary = {
  ussd_vs_peer_rps_ratio: ratio(u?.ours.rps, u?.peer.rps),
  ussd_vs_floor_rps_ratio: ratio(u?.ours.rps, u?.floor.rps),
  ussd_p99_ms: u?.ours.p99 ?? null,
  peer_p99_ms: u?.peer.p99 ?? null,
  ussd_cpu_us_per_req: u?.ours.cpuUsPerReq ?? null,
  peer_cpu_us_per_req: u?.peer.cpuUsPerReq ?? null,
  redis_bytes_per_session: ussd?.result.bytesPerSession.ours ?? null,
  ussd_money_hop_ratio_postgres: ussd?.result.moneyHop?.find((m) => m.database === 'postgres')?.ratioP50 ?? null,
  ussd_money_hop_ratio_pglite: ussd?.result.moneyHop?.find((m) => m.database === 'pglite')?.ratioP50 ?? null,
  chat_depth20_speedup: ratio(c20?.peer['20']?.wallMs, c20?.ours['20']?.wallMs),
  chat_depth20_cpu_speedup: ratio(c20?.peer['20']?.cpuMs, c20?.ours['20']?.cpuMs),
  chat_depth20_over_depth2: ratio(c20?.ours['20']?.wallMs, c20?.ours['2']?.wallMs),
  notify_vs_bare_ratio: ratio(notify?.result.median.ours.rate, notify?.result.median.bare.rate),
  reads_pay_flow: upstream?.result.perFlow.pay?.reads ?? null,
  reads_request_flow: upstream?.result.perFlow.request?.reads ?? null,
  throttled_429: upstream
    ? upstream.result.concurrent.throttled + Object.values(upstream.result.perFlow).reduce((a, f) => a + f.throttled, 0)
    : null,
};
writeFileSync(`${RESULTS}/summary.json`, JSON.stringify(summary, null, 2) + '\n');

const yes = (ok: boolean | undefined) => (ok === undefined ? '' : ok ? 'met' : '**missed**');
const n = (x: number | null | undefined, digits = 0) =>
  x === null || x === undefined ? '-' : x.toLocaleString('en-US', { maximumFractionDigits: digits });
const rows: string[][] = [];
if (u && ussd) {
  const correct = u.ours.wrongFinals === 0 && u.ours.correctFinals > 0;
  rows.push(
    [
      'USSD req/s (50 conn.)',
      n(u.ours.rps),
      `${n(u.peer.rps)} (peer) / ${n(u.floor.rps)} (floor)`,
      `${summary.ussd_vs_peer_rps_ratio} / ${summary.ussd_vs_floor_rps_ratio}`,
      '>= 1.1 / >= 0.95',
      yes(summary.ussd_vs_peer_rps_ratio! >= 1.1 && summary.ussd_vs_floor_rps_ratio! >= 0.95),
    ],
    [
      'USSD p50 / p99 ms',
      `${n(u.ours.p50)} / ${n(u.ours.p99)}`,
      `${n(u.peer.p50)} / ${n(u.peer.p99)}`,
      '',
      'p99 <= peer',
      yes(u.ours.p99 <= u.peer.p99),
    ],
    [
      'USSD server CPU µs/req',
      n(u.ours.cpuUsPerReq),
      n(u.peer.cpuUsPerReq),
      `${ratio(u.ours.cpuUsPerReq, u.peer.cpuUsPerReq)}`,
      '<= 0.9 × peer',
      yes(u.ours.cpuUsPerReq <= 0.9 * u.peer.cpuUsPerReq),
    ],
    [
      'USSD Redis server CPU µs/req',
      n(u.ours.redisCpuUsPerReq),
      `${n(u.peer.redisCpuUsPerReq)} / ${n(u.floor.redisCpuUsPerReq)} (floor)`,
      `${ratio(u.ours.redisCpuUsPerReq, u.peer.redisCpuUsPerReq)}`,
      '',
      '',
    ],
    [
      'USSD correct final screens',
      `${n(u.ours.correctFinals)} of ${n(u.ours.correctFinals + u.ours.wrongFinals)}`,
      `${n(u.peer.correctFinals)} of ${n(u.peer.correctFinals + u.peer.wrongFinals)}`,
      '',
      'all',
      yes(correct),
    ],
    [
      'USSD Redis bytes/session',
      n(ussd.result.bytesPerSession.ours),
      n(ussd.result.bytesPerSession.peer),
      '',
      '<= 1,536',
      yes(ussd.result.bytesPerSession.ours <= 1536),
    ],
  );
  const h = ussd.result.oursHops;
  if (h)
    rows.push([
      'USSD PIN hop (nothing journalled) ÷ menu hop, p50 ms',
      `${n(h.pin.p50, 2)} / ${n(h.menu.p50, 2)} (p99 ${n(h.pin.p99, 2)} / ${n(h.menu.p99, 2)})`,
      '',
      `${h.ratioP50} (p99 ${h.ratioP99})`,
      '',
      '',
    ]);
  for (const m of ussd.result.moneyHop ?? []) {
    const where = m.database === 'postgres' ? 'PostgreSQL' : 'PGlite';
    rows.push([
      `USSD money hop (PIN, intent journalled on ${where}) ÷ menu hop, p50 ms`,
      `${n(m.pin.p50, 2)} / ${n(m.menu.p50, 2)} (p99 ${n(m.pin.p99, 2)} / ${n(m.menu.p99, 2)}; ${n(m.rps)} req/s, ${m.correctFinals} of ${m.correctFinals + m.wrongFinals} finals right)`,
      '',
      `${m.ratioP50} (p99 ${m.ratioP99})`,
      '<= 1.3',
      yes(m.ratioP50 <= 1.3 && m.wrongFinals === 0 && m.correctFinals > 0),
    ]);
  }
}
if (chat) {
  const o = chat.result.ours;
  const p = chat.result.peer;
  for (const d of chat.result.depths) {
    rows.push([
      `Chat depth ${d}: wall / CPU ms per update`,
      `${o[d]!.wallMs} / ${o[d]!.cpuMs}`,
      `${p[d]!.wallMs} / ${p[d]!.cpuMs}`,
      `${ratio(p[d]!.wallMs, o[d]!.wallMs)}x / ${ratio(p[d]!.cpuMs, o[d]!.cpuMs)}x`,
      d === 20 ? '>= 5x / >= 3x' : '',
      d === 20 ? yes(summary.chat_depth20_speedup! >= 5 && summary.chat_depth20_cpu_speedup! >= 3) : '',
    ]);
  }
  const checked = chat.result.checked;
  rows.push([
    'Chat: every reply the right question',
    String(checked.ours),
    String(checked.peer),
    '',
    'true',
    yes(checked.ours),
  ]);
  rows.push([
    'Chat depth 20 / depth 2 (ours, wall)',
    `${summary.chat_depth20_over_depth2}`,
    `${ratio(p['20']!.wallMs, p['2']!.wallMs)}`,
    '',
    '<= 1.1',
    yes(summary.chat_depth20_over_depth2! <= 1.1),
  ]);
}
if (notify) {
  const m = notify.result.median;
  rows.push([
    'Notifications told/s, dedup on (Redis, BullMQ)',
    n(m.ours.rate),
    `${n(m.bare.rate)} (bare 200)`,
    `${summary.notify_vs_bare_ratio}`,
    '>= 0.5',
    yes(summary.notify_vs_bare_ratio! >= 0.5),
  ]);
  if (m['ours-memory'])
    rows.push([
      'Notifications told/s, dedup on (no Redis: memory)',
      n(m['ours-memory'].rate),
      `${n(m.bare.rate)} (bare 200)`,
      `${ratio(m['ours-memory'].rate, m.bare.rate)}`,
      '',
      '',
    ]);
}
if (upstream) {
  const f = upstream.result.perFlow;
  const reads = (id: string) =>
    f[id]
      ? `${n(f[id].reads, 2)}${f[id].completed < f[id].conversations ? ` (${f[id].completed}/${f[id].conversations} completed)` : ''}`
      : '-';
  rows.push(
    [
      'Reads per conversation: pay / request',
      `${reads('pay')} / ${reads('request')}`,
      '',
      '',
      '0 / 0',
      yes(summary.reads_pay_flow === 0 && summary.reads_request_flow === 0),
    ],
    [
      'Reads per conversation: check / data / pin',
      `${reads('check')} / ${reads('data')} / ${reads('pin')}`,
      '',
      '',
      '',
      '',
    ],
    [
      `429s, ${upstream.result.concurrent.users} users at once (${upstream.result.concurrent.flows.join(', ')})`,
      `${summary.throttled_429} (${upstream.result.concurrent.completed} completed)`,
      '',
      '',
      '0',
      yes(summary.throttled_429 === 0),
    ],
  );
}
if (soak) {
  const s = soak.result;
  const plateau = (p: SoakResult['rss']) => `${n(p.startMb)} / ${n(p.earlierMaxMb)} / ${n(p.lastMb)}`;
  rows.push(
    [
      `Soak: ${s.users} USSD users, ${s.minutes} min, production start (${n(s.sessions)} sessions, ${n(s.paid)} paid, ${s.sandboxPayments} payments at the sandbox, ${s.errors} errors)`,
      `${n(s.sessionsPerSecond, 1)} sessions/s, hop p50 / p99 ${n(s.hopP50Ms)} / ${n(s.hopP99Ms)} ms`,
      '',
      '',
      'no errors, one payment a paid session',
      yes(s.errors === 0 && s.paid === s.sandboxPayments),
    ],
    [
      'Soak: RSS MB (start / highest of the first two thirds / last third)',
      plateau(s.rss),
      '',
      '',
      'plateau (last <= highest + 5%)',
      yes(s.rss.plateaus),
    ],
    [
      'Soak: heap after GC MB (same)',
      plateau(s.heapAfterGc),
      '',
      '',
      'plateau (last <= highest + 5%)',
      yes(s.heapAfterGc.plateaus),
    ],
  );
}
/** The scale benchmark's own table (docs/benchmarks.md's Scale section), with its run's machine and load. */
function scaleTable({ machine: at, result: s }: { machine: ReturnType<typeof machine>; result: ScaleResult }): string {
  const base = s.configs.find((c) => c.mode === 'server' && c.processes === 1)?.rps;
  const cores = (cpu: Record<string, number>, prefix: string) =>
    Object.entries(cpu)
      .filter(([name]) => name.startsWith(prefix))
      .map(([, v]) => v)
      .join(' + ');
  const lines = [
    '| Redis | Processes | req/s | p50 / p99 ms | × 1 process, one Redis | CPU in cores: product / redis / load generator / machine | Limit | Finals wrong, errors |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...s.configs
      .map((c) =>
        [
          c.mode === 'server' ? 'one server' : '3-master cluster',
          String(c.processes),
          n(c.rps),
          `${n(c.p50)} / ${n(c.p99)}`,
          String(ratio(c.rps, base)),
          `${cores(c.cpu, 'product')} / ${cores(c.cpu, 'redis')} / ${c.cpu['load generator']} / ${c.cpu.machine}`,
          c.limit,
          `${c.wrongFinals}, ${c.errors}`,
        ].join(' | '),
      )
      .map((row) => `| ${row} |`),
  ];
  return `${lines.join('\n')}\n\n${at.quick ? 'QUICK run (BENCH_QUICK=1), ' : ''}${at.cpus} × ${at.cpuModel}, Node ${at.node}, load average ${s.loadBefore.join(' ')} before and ${s.loadAfter.join(' ')} after, commit ${at.commit}, ${at.date}\n`;
}
/** The notifications-under-load table (docs/benchmarks.md), with its run's machine and load. */
function notifyLoadTable({
  machine: at,
  result: s,
}: {
  machine: ReturnType<typeof machine>;
  result: NotifyLoadResult;
}): string {
  const m = s.median;
  const lines = [
    '| Notifications | told/s alone | told/s with USSD | ratio | USSD req/s alone | USSD req/s with them | ratio |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...(['ours', 'ours-memory'] as const).map(
      (kind) =>
        `| ${kind === 'ours' ? 'Redis (BullMQ)' : 'memory'} | ${n(m[kind].alone)} | ${n(m[kind].withUssd)} | ${m[kind].ratio} | ${n(m.ussdAlone)} | ${n(m[kind].ussdWith)} | ${m[kind].ussdRatio} |`,
    ),
  ];
  return `${lines.join('\n')}\n\n${at.quick ? 'QUICK run (BENCH_QUICK=1), ' : ''}${at.cpus} × ${at.cpuModel}, Node ${at.node}, load average ${s.loadBefore.join(' ')} before and ${s.loadAfter.join(' ')} after, commit ${at.commit}, ${at.date}\n`;
}
const header = ['Benchmark', 'Ours', 'Peer', 'Ratio', 'Target', ''];
const table = [header, header.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
const m = machine();
const note = `${quick ? 'QUICK run (BENCH_QUICK=1), ' : ''}${m.cpus} × ${m.cpuModel}, Node ${m.node}, load average ${loadBefore.join(' ')} before and ${m.loadavg.join(' ')} after, commit ${m.commit}, ${m.date}`;
writeFileSync(`${RESULTS}/table.md`, `${table}\n\n${note}\n`);
if (scale) writeFileSync(`${RESULTS}/scale.md`, scaleTable(scale));
if (notifyLoad) writeFileSync(`${RESULTS}/notify-load.md`, notifyLoadTable(notifyLoad));
if (journalRun) writeFileSync(`${RESULTS}/journal.md`, journalTable(journalRun.machine, journalRun.result));
console.log(table);
console.log(`\n${note}`);
process.exit(0);
