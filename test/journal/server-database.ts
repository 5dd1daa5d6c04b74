/**
 * A database of its own on the test PostgreSQL server (127.0.0.1:5432, or POSTGRES_URL), created with a unique
 * name and dropped after. Free of vitest, so the chaos run's CLI (tsx) can use it too.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

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
  const name = `momo_${label
    .replace(/[^a-z0-9]/gi, '_')
    .toLowerCase()
    .slice(0, 30)}_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`create database "${name}"`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => admin((c) => c.query(`drop database if exists "${name}" with (force)`)).then(() => undefined),
  };
}
