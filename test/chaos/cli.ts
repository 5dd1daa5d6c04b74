/**
 * `npm run chaos`: 500 pay conversations (`--conversations N` or CHAOS_CONVERSATIONS to change) through product
 * instances that are child processes on one Redis (CHAOS_REDIS_URL, default redis://127.0.0.1:6379/11, a
 * database of its own), with faults injected and instances killed (see run.ts). `--redis sentinel`: on a master,
 * replica and three Sentinels of the run's own, failed over (SENTINEL FAILOVER, and SIGKILL of the master) again
 * and again; `--redis cluster`: on a three-master cluster of its own, with slots moved (redis-modes.ts). Those
 * print a line more before the result: `chaos: redis faults=… touched=… processing=… repeated=…` (run.ts
 * FailoverCost: what the answers during the faults were). Progress, faults and the diagnosis of every failed
 * conversation go to stderr; the last line on stdout is the result (count.ts says what each figure counts):
 *   chaos: conversations=N confirmed=C payments=P duplicates=D lost=L told=T kills=K
 * Exit code 0 only when P == C, D == 0, L == 0, T == C, K >= N/100 (5 in a run of 500), no instance died
 * by itself, and the journal holds an intent per payment and each confirmed one final and told (the line
 * before: `chaos: journal payments=P intents=I confirmed=C final=F told=T`, journal.ts).
 */
import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { buildProduct } from '../product.js';
import { failoverCostLine, runChaos } from './run.js';

const number = (value: string | undefined) => (value ? Number(value) : undefined);
const { values, positionals } = parseArgs({
  options: { redis: { type: 'string' }, conversations: { type: 'string' } },
  allowPositionals: true,
});
if (values.redis !== undefined && values.redis !== 'sentinel' && values.redis !== 'cluster') {
  process.stderr.write(`chaos: --redis takes sentinel or cluster, not ${values.redis}\n`);
  process.exit(2);
}
const conversations = Number(values.conversations ?? process.env.CHAOS_CONVERSATIONS ?? positionals[0] ?? 500);
const logFile = process.env.CHAOS_LOG;
// Buffered: a write per line would slow the instances' output down at CHAOS_LOG_LEVEL=info.
const log = logFile ? createWriteStream(logFile) : undefined;
const say = (line: string) => process.stderr.write(`${line}\n`);

buildProduct();
const result = await runChaos({
  conversations,
  seed: number(process.env.CHAOS_SEED),
  redisUrl: process.env.CHAOS_REDIS_URL,
  redis: values.redis,
  concurrency: number(process.env.CHAOS_CONCURRENCY),
  instances: number(process.env.CHAOS_INSTANCES),
  progress: say,
  productLog: log ? (line) => log.write(line) : undefined,
});
say(`chaos: faults ${JSON.stringify(result.faults)}`);
const restarts = result.records.reduce((sum, r) => sum + r.restarts, 0);
const channels = result.records.reduce<Record<string, number>>(
  (acc, r) => ((acc[r.channel] = (acc[r.channel] ?? 0) + 1), acc),
  {},
);
say(
  `chaos: channels ${JSON.stringify(channels)}, restarts ${restarts}, acknowledged by news ${result.records.filter((r) => r.ackBy === 'news').length}`,
);
for (const failure of result.failures.slice(0, 30)) say(`chaos: failed: ${failure}`);
if (result.failures.length > 30) say(`chaos: ... ${result.failures.length - 30} more failed conversations`);
const kinds = result.failures.reduce<Record<string, number>>((acc, f) => {
  for (const kind of /\[([^\]]*)\]/.exec(f)?.[1]?.split(', ') ?? []) acc[kind] = (acc[kind] ?? 0) + 1;
  return acc;
}, {});
if (result.failures.length > 0) say(`chaos: failed conversations by kind ${JSON.stringify(kinds)}`);
for (const user of result.gaveUp.slice(0, 10)) say(`chaos: gave up: ${user}`);
if (result.gaveUp.length > 10) say(`chaos: ... ${result.gaveUp.length - 10} more gave up`);
for (const problem of result.problems.slice(0, 30)) say(`chaos: problem: ${problem}`);
if (result.problems.length > 30) say(`chaos: ... ${result.problems.length - 30} more problems`);
if (result.failoverCost) process.stdout.write(`${failoverCostLine(result.failoverCost)}\n`);
process.stdout.write(`${result.journal.line}\n`);
process.stdout.write(`${result.line}\n`);
if (log) await new Promise((resolve) => log.end(resolve));
process.exit(result.ok ? 0 : 1);
