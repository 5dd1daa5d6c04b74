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
 * `open()` returns the same migrated `Database` each time within one describe. `open({ fresh: true })` opens
 * another connection to the same database (a second process, say) that the helper closes too. For a test that
 * needs the server's URL (to start the product as a process, or to drop the database) use `serverDatabase()`.
 * `POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) names the server's admin database.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe } from 'vitest';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';

/** The admin URL of the test server. */
export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database created on the test server for one test file. */
export interface ServerDatabase {
  /** `postgres://…/<name>`. */
  url: string;
  name: string;
  /** Drops it (ending every connection to it first). */
  drop(): Promise<void>;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database with a unique name on the test server. */
export async function serverDatabase(label = 'test'): Promise<ServerDatabase> {
  const name = `momo_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase().slice(0, 30)}_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`create database "${name}"`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => admin((c) => c.query(`drop database if exists "${name}" with (force)`)).then(() => undefined),
  };
}

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
    describe(`${name} (${engine})`, () => {
      let server: ServerDatabase | undefined;
      let shared: Promise<Database> | undefined;
      const opened: Database[] = [];
      const open: Open = async (options = {}) => {
        if (!options.fresh && shared) return shared;
        const making = (async () => {
          if (engine === 'postgres') server ??= await serverDatabase(name);
          const database = await openDatabase(engine === 'postgres' ? { databaseUrl: server!.url, dataDir: 'memory://' } : { dataDir: 'memory://' });
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
