/**
 * 0400: the nightly reconciliation's rolling window (src/reconciliation/daily.ts). `reconciliation_looks`: per
 * kind of the service's records (payment, request, collection), when the last nightly run began to list it, so
 * the next asks only for what changed since (`modified_after`). On `reconciliation_runs`: `changed_since` (per
 * kind the `modified_after` a run asked; null: every record of its period) and `not_compared` (per kind of ours,
 * how many of the period were not compared because the service offers no list of them: vending purchases).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('reconciliation_looks')
    .addColumn('kind', 'text', (c) => c.primaryKey())
    .addColumn('looked', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('reconciliation_runs').addColumn('changed_since', 'jsonb').execute();
  await db.schema
    .alterTable('reconciliation_runs')
    .addColumn('not_compared', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('reconciliation_runs').dropColumn('not_compared').execute();
  await db.schema.alterTable('reconciliation_runs').dropColumn('changed_since').execute();
  await db.schema.dropTable('reconciliation_looks').execute();
}
