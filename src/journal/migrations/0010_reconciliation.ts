/**
 * 0010: the reconciliation (src/reconciliation). `reconciliation_runs` (one row per run of a period),
 * `reconciliation_items` (its result, one row per record compared) and `reconciliation_corrections` (what a
 * person who was told another outcome is owed, until told).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('reconciliation_runs')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    // Days as `YYYY-MM-DD` text (UTC): read back as written by both drivers (a `date` comes back as a local Date).
    .addColumn('from_day', 'text', (c) => c.notNull().check(sql`from_day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`))
    .addColumn('to_day', 'text', (c) => c.notNull().check(sql`to_day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`))
    .addColumn('started', 'timestamptz', (c) => c.notNull())
    .addColumn('finished', 'timestamptz')
    .addColumn('counts', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('trigger', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('reconciliation_runs_days')
    .on('reconciliation_runs')
    .columns(['from_day', 'to_day'])
    .execute();

  await db.schema
    .createTable('reconciliation_items')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('run_id', 'bigint', (c) => c.notNull().references('reconciliation_runs.id').onDelete('cascade'))
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('ref', 'text')
    .addColumn('service_id', 'text')
    .addColumn('ours', 'jsonb')
    .addColumn('theirs', 'jsonb')
    .addColumn('differs', 'jsonb')
    .execute();
  await db.schema
    .createIndex('reconciliation_items_run')
    .on('reconciliation_items')
    .columns(['run_id', 'outcome'])
    .execute();
  await db.schema.createIndex('reconciliation_items_ref').on('reconciliation_items').column('ref').execute();

  await db.schema
    .createTable('reconciliation_corrections')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('run_id', 'bigint', (c) => c.notNull())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('chat', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('told_state', 'text', (c) => c.notNull())
    .addColumn('service_state', 'text', (c) => c.notNull())
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .addColumn('claimed', 'timestamptz')
    .addColumn('told', 'timestamptz')
    .execute();
  // One correction per operation and state, whatever the runs that find it.
  await db.schema
    .createIndex('reconciliation_corrections_once')
    .on('reconciliation_corrections')
    .columns(['ref', 'state'])
    .unique()
    .execute();
  await db.schema
    .createIndex('reconciliation_corrections_untold')
    .on('reconciliation_corrections')
    .columns(['told', 'created'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('reconciliation_corrections').execute();
  await db.schema.dropTable('reconciliation_items').execute();
  await db.schema.dropTable('reconciliation_runs').execute();
}
