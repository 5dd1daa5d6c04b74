/**
 * Runs the migrations (./migrations/index.ts) with Kysely's Migrator. Its PostgreSQL adapter (used by both
 * the `pg` and the PGlite dialect) takes a session-level `pg_advisory_lock` before reading what ran, so
 * processes starting together run each migration once: the others wait, then find nothing left to do.
 * Each run happens in one transaction (PostgreSQL's DDL is transactional): a failed migration leaves nothing.
 */
import { Migrator, type Kysely, type MigrationResult } from 'kysely';
import { migrationProvider } from './migrations/index.js';
import type { Schema } from './schema.js';

/** Thrown when a migration fails; names it. */
export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** Brings the database to the latest migration. Returns the names it ran (empty when none were due). */
export async function migrate(db: Kysely<Schema>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r: MigrationResult) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? 'failed');
    throw new MigrationError(`migration ${failed?.migrationName ?? '(before any ran)'} failed: ${cause}`, {
      cause: error,
    });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
