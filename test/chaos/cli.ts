/**
 * `npm run chaos`: 500 pay conversations (CHAOS_CONVERSATIONS to change) through two product instances on
 * one Redis (CHAOS_REDIS_URL, default redis://127.0.0.1:6379/11, a database of its own) with faults injected
 * (see run.ts). Progress goes to stderr; the last line on stdout is the result:
 *   chaos: conversations=N confirmed=C payments=P duplicates=D lost=L told=T
 * Exit code 0 only when P == C, D == 0, L == 0 and T == C.
 */
import { createWriteStream } from 'node:fs';
import { runChaos } from './run.js';

const conversations = Number(process.env.CHAOS_CONVERSATIONS ?? process.argv[2] ?? 500);
const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : undefined;
const logFile = process.env.CHAOS_LOG;
// Buffered: a write per line would slow the product down at CHAOS_LOG_LEVEL=info and change what is measured.
const log = logFile ? createWriteStream(logFile) : undefined;

const result = await runChaos({
  conversations,
  seed,
  redisUrl: process.env.CHAOS_REDIS_URL,
  concurrency: process.env.CHAOS_CONCURRENCY ? Number(process.env.CHAOS_CONCURRENCY) : undefined,
  progress: (line) => process.stderr.write(`${line}\n`),
  productLog: log ? (line) => log.write(line) : undefined,
});
process.stderr.write(`chaos: faults ${JSON.stringify(result.faults)}\n`);
const restarts = result.records.reduce((sum, r) => sum + r.restarts, 0);
const channels = result.records.reduce<Record<string, number>>((acc, r) => ((acc[r.channel] = (acc[r.channel] ?? 0) + 1), acc), {});
process.stderr.write(`chaos: channels ${JSON.stringify(channels)}, restarts after a refusal ${restarts}\n`);
for (const problem of result.problems.slice(0, 30)) process.stderr.write(`chaos: problem: ${problem}\n`);
if (result.problems.length > 30) process.stderr.write(`chaos: ... ${result.problems.length - 30} more problems\n`);
process.stdout.write(`${result.line}\n`);
if (log) await new Promise((resolve) => log.end(resolve));
process.exit(result.ok ? 0 : 1);
