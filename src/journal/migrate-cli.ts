/**
 * `npm run migrate`: brings the database named by DATABASE_URL (or the embedded PGlite under DATA_DIR) to the
 * latest migration and prints one line per migration it ran. The product also migrates at start, under the
 * same advisory lock, so running this first is optional. Exits 1 (printing the cause) when a migration fails.
 */
import { loadConfig } from '../config.js';
import { openDatabase } from './database.js';
import { migrate } from './migrate.js';

const config = loadConfig();
const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
try {
  const ran = await migrate(database.db);
  for (const name of ran) console.log(`migrated ${name}`);
  console.log(ran.length === 0 ? `${database.kind}: up to date` : `${database.kind}: ${ran.length} migration(s) run`);
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
} finally {
  await database.close();
}
