/**
 * A database of its own on the test PostgreSQL server (127.0.0.1:5432, or POSTGRES_URL), created with a unique
 * name and dropped after: a copy of the run's migrated template (./templates.ts) when there is one, else empty.
 * Free of vitest, so the chaos run's CLI (tsx) can use it too.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pgTemplate } from './templates.js';

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

/** Runs `fn` on a connection to the test server's admin database ({@link POSTGRES_URL}), closed after. */
export async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface ServerDatabaseOptions {
  /** An empty database even when the run has a migrated template (a test of the migrations themselves). */
  empty?: boolean;
}

/**
 * Creates a database with a unique name on the test server: migrated (a copy of the run's template, made by
 * globalSetup) unless `empty` or outside vitest, where it is empty and its first user migrates it.
 */
export async function serverDatabase(label = 'test', options: ServerDatabaseOptions = {}): Promise<ServerDatabase> {
  const name = `momo_${label
    .replace(/[^a-z0-9]/gi, '_')
    .toLowerCase()
    .slice(0, 30)}_${randomBytes(5).toString('hex')}`;
  const template = options.empty ? undefined : pgTemplate();
  await admin((c) => c.query(`create database "${name}"${template ? ` template "${template}"` : ''}`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => admin((c) => c.query(`drop database if exists "${name}" with (force)`)).then(() => undefined),
  };
}

/** The databases {@link productDatabase} made for the file running in this worker, dropped at its end. */
const productDatabases: ServerDatabase[] = [];

/**
 * The settings of a product started in a test's own process (startApp) on a database of its own: a copy of the
 * run's migrated template on the test server, in place of an embedded PGlite (`...embedded()`), whose start
 * costs a second of CPU and more where the copy costs the server a fraction. Dropped when the file ends
 * (test/suite-setup.ts, {@link dropProductDatabases}), after the file's own hooks have stopped the product.
 */
export async function productDatabase(): Promise<{ DATABASE_URL: string }> {
  const database = await serverDatabase('product');
  productDatabases.push(database);
  return { DATABASE_URL: database.url };
}

/** Drops every database {@link productDatabase} made since the last call. */
export async function dropProductDatabases(): Promise<void> {
  const made = productDatabases.splice(0);
  await Promise.all(made.map((database) => database.drop()));
}
