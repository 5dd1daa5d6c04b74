/**
 * `npm run statement -- --date YYYY-MM-DD [--json]`: the daily statement of that day (a calendar day of the `TZ`
 * setting's zone, UTC by default; src/ops/statement.ts) on standard output: CSV, or JSON with `--json`. Exits 0
 * once it is written whole, 1 when the journal could not be read (one line on stderr; what was written before
 * is not a statement), 2 on bad arguments (one line saying why). Reads DATABASE_URL (or the embedded PGlite
 * under DATA_DIR, with the product stopped); it changes nothing.
 */
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { loadConfig } from '../config.js';
import { csvWriter } from '../csv.js';
import { openDatabase } from '../journal/database.js';
import { Journal } from '../journal/journal.js';
import { headOfDay, isDay, statementCsvRows, statementJsonChunks, statementPeriod } from './statement.js';

export const USAGE = 'usage: npm run statement -- --date YYYY-MM-DD [--json]';

/** The day and the format, or why not. */
export function parseStatementArgs(argv: readonly string[]): { date: string; json: boolean } | { error: string } {
  let date: string | undefined;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json') {
      if (json) return { error: `--json given twice; ${USAGE}` };
      json = true;
      continue;
    }
    const m = /^--date(?:=(.*))?$/.exec(arg);
    if (!m) return { error: `unknown argument ${JSON.stringify(arg.slice(0, 40))}; ${USAGE}` };
    if (date !== undefined) return { error: `--date given twice; ${USAGE}` };
    const value = m[1] ?? argv[++i];
    if (value === undefined || value.startsWith('--')) return { error: `--date needs a day; ${USAGE}` };
    if (!isDay(value)) return { error: `--date ${JSON.stringify(value.slice(0, 40))} is not a day (YYYY-MM-DD)` };
    date = value;
  }
  if (date === undefined) return { error: `--date is required; ${USAGE}` };
  return { date, json };
}

/** Writes the statement of `date` in `zone` to `out`. */
export async function writeStatement(
  journal: Journal,
  o: { date: string; zone: string; json: boolean },
  out: Writable,
): Promise<void> {
  const period = statementPeriod(o.date, o.zone);
  const head = await headOfDay(journal.db, period.to);
  if (o.json) await pipeline(Readable.from(statementJsonChunks(journal, period, head)), out, { end: false });
  else await pipeline(Readable.from(statementCsvRows(journal, period, head)), csvWriter(), out, { end: false });
}

async function main(): Promise<number> {
  const args = parseStatementArgs(process.argv.slice(2));
  if ('error' in args) {
    process.stderr.write(`statement: ${args.error}\n`);
    return 2;
  }
  const config = loadConfig();
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 2 });
  try {
    await writeStatement(new Journal(database.db), { ...args, zone: config.TZ }, process.stdout);
    return 0;
  } finally {
    await database.close();
  }
}

if (process.argv[1] && /statement-cli\.[jt]s$/.test(process.argv[1])) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`statement failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
