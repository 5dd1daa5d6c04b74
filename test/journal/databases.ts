/**
 * Runs a test file's database tests against both engines the product supports: the PostgreSQL server on
 * 127.0.0.1:5432 (a fresh database per file, created before and dropped after) and an in-memory PGlite.
 *
 * Usage (one `describe` per engine, each with its own database for the whole file):
 *
 * ```ts
 * import { forEachDatabase } from '../journal/databases.js';
 *
 * forEachDatabase('my-thing', (open) => {
 *   it('keeps it', async () => {
 *     const { db } = await open(); // migrated, shared by the tests of this describe; closed after them
 *     ...
 *   });
 * });
 * ```
 *
 * Each starts migrated from the run's template or dump (./templates.ts), `bare` ones empty.
 * `open()` returns the same migrated `Database` each time within one describe. `open({ fresh: true })` opens
 * another connection to the same database (a second process, say) that the helper closes too. For a test that
 * needs the server's URL (to start the product as a process, or to drop the database) use `serverDatabase()`.
 * `POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) names the server's admin database.
 */
import { afterAll, describe } from 'vitest';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import { serverDatabase, type ServerDatabase } from './server-database.js';
import { pgliteDump } from './templates.js';

export { POSTGRES_URL, serverDatabase, type ServerDatabase } from './server-database.js';

export interface OpenOptions {
  /** Another connection (pool) to the same database instead of the shared one. PostgreSQL only. */
  fresh?: boolean;
  /** Leave it unmigrated. */
  bare?: boolean;
}

export type Open = (options?: OpenOptions) => Promise<Database>;

/** Engines to run under; `JOURNAL_TEST_ENGINES=pglite` (or `postgres`) narrows it. */
const ENGINES = (process.env.JOURNAL_TEST_ENGINES ?? 'postgres,pglite').split(',') as Array<'postgres' | 'pglite'>;

/** Declares `body` once per engine, inside `describe('<name> (<engine>)')`. */
export function forEachDatabase(name: string, body: (open: Open, engine: 'postgres' | 'pglite') => void): void {
  for (const engine of ENGINES) {
    // A PGlite start takes seconds on a busy machine, and it happens inside the first test.
    describe(`${name} (${engine})`, { timeout: 120_000 }, () => {
      let server: ServerDatabase | undefined;
      let shared: Promise<Database> | undefined;
      const opened: Database[] = [];
      const open: Open = async (options = {}) => {
        if (!options.fresh && shared) return shared;
        const making = (async () => {
          if (engine === 'postgres') server ??= await serverDatabase(name, { empty: options.bare });
          const database = await openDatabase(
            engine === 'postgres'
              ? { databaseUrl: server!.url, dataDir: 'memory://' }
              : { dataDir: 'memory://', dump: options.bare ? undefined : pgliteDump() },
          );
          opened.push(database);
          if (!options.bare) await migrate(database.db);
          return database;
        })();
        if (!options.fresh) shared = making;
        return making;
      };
      afterAll(async () => {
        for (const database of opened) await database.close().catch(() => {});
        await server?.drop();
      });
      body(open, engine);
    });
  }
}
