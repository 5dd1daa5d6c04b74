/**
 * `npm run migrate`: brings the database to the latest migration and prints one line per migration it ran: as
 * the owner (DATABASE_OWNER_URL) when set, granting DATABASE_URL's role what the product needs; else as
 * DATABASE_URL's role (or the embedded PGlite under DATA_DIR). The product also migrates at start, under the
 * same advisory lock, so running this first is optional. Exits 1 (printing the cause) when a migration fails.
 */
import { loadConfig } from '../config.js';
import { openJournal } from './roles.js';

const config = loadConfig();
try {
  const journal = await openJournal(config);
  try {
    for (const name of journal.ran) console.log(`migrated ${name}`);
    const kind = journal.database.kind;
    console.log(journal.ran.length === 0 ? `${kind}: up to date` : `${kind}: ${journal.ran.length} migration(s) run`);
    console.log(journal.line);
  } finally {
    await journal.close();
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
}
