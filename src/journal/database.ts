/**
 * The database that keeps money for good: a PostgreSQL server when `DATABASE_URL` is set (a `pg` pool behind
 * Kysely's PostgresDialect), else an embedded PGlite (PostgreSQL compiled to WebAssembly, in process) whose
 * files live under `<DATA_DIR>/pglite`. One schema and the same queries on both: everything above this file
 * sees a `Kysely<Schema>` and never asks which one it has, except for what PGlite cannot do (it is one
 * connection in one process, and never flushed to disk: a production start must use a server).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, type LogEvent } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import { ConfigError } from '../config.js';
import { lockDataDir } from './data-dir-lock.js';
import type { Schema } from './schema.js';

/** An open database: the typed query builder, which engine it is, and how to let it go. */
export interface Database {
  db: Kysely<Schema>;
  kind: 'postgres' | 'pglite';
  /** Ends the pool (or closes PGlite, flushing its files). Safe to call twice. */
  close(): Promise<void>;
  /**
   * Calls `listener` with the SQL of every statement run from now on (measurements and tests: which hop
   * writes what). Returns the unsubscribe.
   */
  watch(listener: (sql: string) => void): () => void;
}

export interface DatabaseOptions {
  /** `postgres://…`: use that server. Unset: embedded PGlite under `dataDir`. */
  databaseUrl?: string;
  /** Where PGlite keeps its files (`<dataDir>/pglite`). `memory://` keeps them in memory (tests). */
  dataDir: string;
  /**
   * A file of PGlite's `dumpDataDir` (an uncompressed or gzipped tar of a data directory) that an embedded
   * PGlite with no database yet (`memory://`, or an empty `dataDir`) starts from, instead of creating an empty
   * cluster, which costs seconds of CPU. The migrations still run over it. Ignored on PostgreSQL.
   */
  dump?: string;
  /** Largest number of pooled connections to the server. Default 10 (pg's own default). */
  poolSize?: number;
  /** The setting the URL came from, named when the server does not answer. Default DATABASE_URL. */
  setting?: string;
  /**
   * The server's `statement_timeout` on every pooled connection, ms (DATABASE_STATEMENT_TIMEOUT_MS). Unset: none
   * (the owner's migrations and retention may run long). PGlite ignores it.
   */
  statementTimeoutMs?: number;
}

/**
 * Opens the database and checks that it answers (one `select 1`), so a wrong URL fails at start and not on
 * the first payment. It does not migrate: call `migrate(db)` (./migrate.ts) next.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const listeners = new Set<(sql: string) => void>();
  const watch = (listener: (sql: string) => void) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  };
  const log = (event: LogEvent) => {
    for (const listener of listeners) listener(event.query.sql);
  };
  let database: Database;
  if (options.databaseUrl) {
    // Bounded waits: a server that does not answer fails the write (the intent: nothing moves; a later fact:
    // kept for later by the buffered writer) instead of holding a conversation.
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 5000,
      query_timeout: 10_000,
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    });
    // An idle client losing its server (a restart) emits 'error' on the pool; unhandled, it would end the
    // process. The next query gets a fresh connection, or fails and is handled where it is made.
    pool.on('error', () => {});
    // The same for a client whose connection drops between two queries of a checked-out connection.
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }), log });
    database = { db, kind: 'postgres', close: once(() => db.destroy()), watch };
  } else {
    const where = options.dataDir === 'memory://' ? 'memory://' : path.resolve(options.dataDir, 'pglite');
    let unlock = async () => {};
    if (where !== 'memory://') {
      await mkdir(where, { recursive: true });
      unlock = await lockDataDir(path.dirname(where));
    }
    const fresh = where === 'memory://' || !existsSync(path.join(where, 'PG_VERSION'));
    const loadDataDir = options.dump && fresh ? new Blob([await readFile(options.dump)]) : undefined;
    const lite = await PGlite.create(where, { loadDataDir }).catch(async (error: unknown) => {
      await unlock();
      throw error;
    });
    const db = new Kysely<Schema>({ dialect: new PGliteDialect(lite), log });
    database = { db, kind: 'pglite', close: once(() => db.destroy().finally(unlock)), watch };
  }
  try {
    await database.db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
  } catch (error) {
    await database.close().catch(() => {});
    // A server that does not take us (down, or a wrong host, port, name or password) refuses the start in one
    // line naming the setting, as a malformed one does; the URL's password is never repeated.
    if (options.databaseUrl) {
      throw new ConfigError(
        `${options.setting ?? 'DATABASE_URL'}: the PostgreSQL server at ${serverOf(options.databaseUrl)} did not answer (${reasonOf(error)}): start it, or correct the URL`,
      );
    }
    throw error;
  }
  return database;
}

/** host:port/name of a `postgres://` URL, without its user and password. */
function serverOf(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return 'that URL';
  }
}

/** An error's words on one line (a connection refused on every address has only a code). */
function reasonOf(error: unknown): string {
  const { message, code } = error as { message?: unknown; code?: unknown };
  const words = typeof message === 'string' && message ? message : typeof code === 'string' ? code : String(error);
  return words.replace(/\s+/g, ' ');
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
}
