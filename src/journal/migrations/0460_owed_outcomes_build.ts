/**
 * 0460: `owed_outcomes.build`, the build that wrote the row (src/conversation/flow/build.ts: ms since the epoch,
 * ordered), inserted in the intent's statement (Journal.intend). The owed-outcomes poller of an earlier build
 * leaves a later build's row to that build's poller (src/journal/owed.ts), so older code never works a newer
 * record; null for rows written before this migration: any build may work them.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table owed_outcomes add column build bigint check (build >= 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table owed_outcomes drop column build`.execute(db);
}
