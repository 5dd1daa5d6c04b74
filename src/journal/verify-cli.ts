/**
 * `npm run journal:verify -- --from YYYY-MM-DD --to YYYY-MM-DD [--head '<seq> <sha256>']`: recomputes the
 * journal's hash chain over the events written in those UTC days (both included), and every event between them
 * in the chain (src/journal/chain.ts). With `--head` (what an export carried: its `Journal-Head` header, the
 * CSV's `journalHead` column, the statement's head) it also checks that the chain holds that head; the days may
 * then be left out, and the whole chain is recomputed. Exits 0 when it is whole (one line: events, holes
 * crossed with a retention receipt, the chain's head, the head found), 1 naming the first event that does not
 * match or why the head is not the chain's, 2 on bad arguments (one line saying why).
 * Reads DATABASE_URL (or the embedded PGlite under DATA_DIR, with the product stopped); it changes nothing.
 */
import { loadConfig } from '../config.js';
import { headNotFound, parseHead, verifyChain, type ChainHead } from './chain.js';
import { openDatabase } from './database.js';

export const USAGE = "usage: npm run journal:verify -- --from YYYY-MM-DD --to YYYY-MM-DD [--head '<seq> <sha256>']";

const DAY = /^\d{4}-\d{2}-\d{2}$/;

export type VerifyArgs = { from?: string; to?: string; head?: ChainHead };

/** The two days (or none, with a head) and the head, or why not. */
export function parseVerifyArgs(argv: readonly string[]): VerifyArgs | { error: string } {
  const given: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--(from|to|head)(?:=(.*))?$/.exec(arg);
    if (!m) return { error: `unknown argument ${JSON.stringify(arg.slice(0, 40))}; ${USAGE}` };
    const name = m[1]!;
    if (name in given) return { error: `--${name} given twice; ${USAGE}` };
    const value = m[2] ?? argv[++i];
    if (value === undefined || value.startsWith('--'))
      return { error: `--${name} needs ${name === 'head' ? 'a head' : 'a day'}; ${USAGE}` };
    given[name] = value;
  }
  let head: ChainHead | undefined;
  if (given.head !== undefined) {
    head = parseHead(given.head);
    if (!head)
      return { error: `--head ${JSON.stringify(given.head.slice(0, 80))} is not a head ('<seq> <sha256 hex>')` };
    if (given.from === undefined && given.to === undefined) return { head };
  }
  for (const name of ['from', 'to']) {
    const value = given[name];
    if (value === undefined) return { error: `--${name} is required; ${USAGE}` };
    const day = new Date(`${value}T00:00:00Z`);
    if (!DAY.test(value) || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== value)
      return { error: `--${name} ${JSON.stringify(value.slice(0, 40))} is not a day (YYYY-MM-DD)` };
  }
  if (given.to! < given.from!) return { error: `--to ${given.to} is before --from ${given.from}` };
  return { from: given.from!, to: given.to!, ...(head ? { head } : {}) };
}

async function main(): Promise<number> {
  const args = parseVerifyArgs(process.argv.slice(2));
  if ('error' in args) {
    process.stderr.write(`journal:verify: ${args.error}\n`);
    return 2;
  }
  const config = loadConfig();
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 1 });
  try {
    const range =
      args.from !== undefined && args.to !== undefined
        ? {
            from: new Date(`${args.from}T00:00:00Z`),
            to: new Date(new Date(`${args.to}T00:00:00Z`).getTime() + 86_400_000),
          }
        : {};
    const result = await verifyChain(database.db, range);
    const head = result.head ? `head seq ${result.head.seq} ${result.head.hash}` : 'the journal is empty';
    if (result.broken) {
      const b = result.broken;
      process.stdout.write(
        `journal:verify: event ${b.id} (seq ${b.seq}, ref ${b.ref}, at ${b.at}) does not match: ${b.reason}\n`,
      );
      return 1;
    }
    if (args.head) {
      const why = await headNotFound(database.db, args.head);
      if (why) {
        process.stdout.write(`journal:verify: ${why}\n`);
        return 1;
      }
    }
    const span = result.firstSeq ? ` (seq ${result.firstSeq} to ${result.lastSeq})` : '';
    const holes = result.holes ? `, ${result.holes} deletion(s) covered by retention receipts` : '';
    const days = args.from !== undefined ? `from ${args.from} to ${args.to}` : 'in the whole journal';
    const found = args.head ? `; the given head seq ${args.head.seq} is in the chain` : '';
    process.stdout.write(
      `journal:verify: ${result.checked} events ${days}${span} chain whole${holes}; ${head}${found}\n`,
    );
    return 0;
  } finally {
    await database.close();
  }
}

if (process.argv[1] && /verify-cli\.[jt]s$/.test(process.argv[1])) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`journal:verify failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(2);
    },
  );
}
