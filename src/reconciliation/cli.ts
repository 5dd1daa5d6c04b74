/**
 * `npm run reconcile -- --from YYYY-MM-DD --to YYYY-MM-DD`: one reconciliation of those whole UTC days against
 * the service named by MOMO_BASE_URL / MOMO_API_KEY, with the journal of DATABASE_URL (or the embedded PGlite
 * under DATA_DIR: then with the product stopped, PGlite being one process). Reads through the read budget all
 * processes share (in Redis with REDIS_URL), behind the product's own reads, so a run never takes the product's
 * reads past the service's limit nor keeps them waiting.
 *
 * Prints one line per outcome, `<outcome> <count>` (matched, unknown_to_service, not_ours, state_differs,
 * detail_differs) on stdout, on stderr the run's id, status and open differences, and what it did not compare
 * (vending purchases: `purchase N not compared: ...`); exits 1 while a difference it found (an operation of ours
 * unknown to the service, or not as the service holds it) is open (src/reconciliation/exceptions.ts: an operator
 * resolves or corrects it on /ops/reconciliation), 0 when none is, 2 when it could not run. The corrections it finds
 * owed are told by the product (its next daily tick), which holds the channels.
 */
import { loadConfig } from '../config.js';
import { openJournal } from '../journal/roles.js';
import { Journal } from '../journal/journal.js';
import { createLogger } from '../log.js';
import { MomoClient } from '../momo/index.js';
import { createReadBudget } from '../ops/read-budget.js';
import { countLines, parseArgs } from './args.js';
import { OUTCOMES } from './match.js';
import { dayOf, runReconciliation } from './run.js';
import type { ReconciliationSchema } from './schema.js';
import { serviceSide } from './service.js';
import type { Kysely } from 'kysely';

async function main(): Promise<number> {
  const parsed = parseArgs(process.argv.slice(2), dayOf(Date.now()));
  if (!parsed.ok) {
    process.stderr.write(`${parsed.error}\n`);
    return 2;
  }
  const config = loadConfig();
  if (!config.MOMO_BASE_URL || !config.MOMO_API_KEY) {
    process.stderr.write(
      'MOMO_BASE_URL: set it (and MOMO_API_KEY) to the service to reconcile with; the embedded sandbox lives inside a running product: use its URL and SANDBOX_API_KEY\n',
    );
    return 2;
  }
  const logger = createLogger(process.env.LOG_LEVEL ?? 'warn');
  const journalDatabases = await openJournal(config);
  const { database } = journalDatabases;
  const budget = createReadBudget(config.redis, config.MOMO_API_KEY, { keyPrefix: config.REDIS_KEY_PREFIX });
  try {
    const client = new MomoClient({
      baseUrl: config.MOMO_BASE_URL,
      apiKey: config.MOMO_API_KEY,
      version: config.MOMO_VERSION,
      // After the product's own reads, whichever process sends them.
      readBudget: budget.behind(),
    });
    const db = database.db as unknown as Kysely<ReconciliationSchema>;
    const result = await runReconciliation({
      db,
      journal: new Journal(database.db),
      service: serviceSide(client),
      period: parsed.period,
      trigger: 'command',
      logger,
    });
    process.stderr.write(
      `reconciliation run ${result.id}, ${parsed.period.from} to ${parsed.period.to}: ${result.status}, ${result.open} open\n`,
    );
    process.stdout.write(`${countLines(result.counts, OUTCOMES).join('\n')}\n`);
    for (const [kind, { count, why }] of Object.entries(result.notCompared))
      process.stderr.write(`${kind} ${count} not compared: ${why}\n`);
    return result.open > 0 ? 1 : 0;
  } finally {
    await budget.close();
    await journalDatabases.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`reconcile failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
