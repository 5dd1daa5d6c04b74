/**
 * The migrated databases every test database starts from, made once per run by vitest's globalSetup
 * (test/global-setup.ts), since a fresh one costs seconds of CPU in each of dozens of files:
 *
 * - PGlite: an empty in-memory PGlite takes seconds to create (its initdb) before the migrations run; one loaded
 *   from a dump (`dumpDataDir`) of a migrated one takes a fraction of that. The dump is a file in the temp
 *   folder named by a hash of the migrations' sources and PGlite's version, so a changed migration makes a new
 *   one and an unchanged one is made once. {@link embedded} gives it to the product (its PGLITE_DUMP setting),
 *   {@link pgliteDump} to a test's own `openDatabase`.
 * - PostgreSQL: a migrated template database on the test server, dropped at the end of the run; each test's
 *   database is a copy of it (`CREATE DATABASE … TEMPLATE`, test/journal/server-database.ts).
 *
 * Made by ./make-templates.ts. Outside vitest (the chaos CLI) neither exists: databases are made empty and
 * migrated, as the product does at its start. That path stays tested: test/shutdown/npm-start.test.ts starts
 * the product on an empty PGlite, test/security/production-start.test.ts on an empty PostgreSQL database,
 * test/journal/journal.test.ts migrates empty ones of both.
 */

/** The settings naming them to the test processes (set by globalSetup, inherited by every worker). */
export const DUMP_SETTING = 'MOMO_TEST_PGLITE_DUMP';
export const TEMPLATE_SETTING = 'MOMO_TEST_PG_TEMPLATE';

/** The run's PGlite dump, when globalSetup made one. */
export function pgliteDump(): string | undefined {
  return process.env[DUMP_SETTING] || undefined;
}

/** The run's PostgreSQL template database's name, when globalSetup made one. */
export function pgTemplate(): string | undefined {
  return process.env[TEMPLATE_SETTING] || undefined;
}

/**
 * The product's settings for an embedded in-memory PGlite, started from the run's dump when there is one:
 * spread where a test would write `DATA_DIR: 'memory://'`.
 */
export function embedded(): { DATA_DIR: string; PGLITE_DUMP?: string } {
  const dump = pgliteDump();
  return dump ? { DATA_DIR: 'memory://', PGLITE_DUMP: dump } : { DATA_DIR: 'memory://' };
}
