/**
 * 0001: the journal. `operations` (one current-state row per operation, updated in place) and
 * `operation_events` (append-only facts, one row per `event_key`), with the indexes the operator's search uses.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('operations')
    .addColumn('ref', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('service_id', 'text')
    .addColumn('amount', 'numeric', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('payee', 'text', (c) => c.notNull())
    .addColumn('payee_name', 'text')
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('channel_user', 'text', (c) => c.notNull())
    .addColumn('chat', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('flow', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('service_state', 'text')
    .addColumn('told_state', 'text')
    .addColumn('parent_ref', 'text')
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .addColumn('updated', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('operations_service_id').on('operations').column('service_id').execute();
  await db.schema.createIndex('operations_payee').on('operations').column('payee').execute();
  await db.schema.createIndex('operations_channel_user').on('operations').column('channel_user').execute();
  await db.schema.createIndex('operations_channel').on('operations').columns(['channel', 'created']).execute();
  await db.schema.createIndex('operations_state').on('operations').columns(['state', 'created']).execute();
  await db.schema.createIndex('operations_created').on('operations').columns(['created', 'ref']).execute();
  await db.schema.createIndex('operations_parent_ref').on('operations').column('parent_ref').execute();

  await db.schema
    .createTable('operation_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('event_key', 'text', (c) => c.notNull().unique())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await db.schema.createIndex('operation_events_ref').on('operation_events').columns(['ref', 'at']).execute();
  await db.schema.createIndex('operation_events_at').on('operation_events').column('at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('operation_events').execute();
  await db.schema.dropTable('operations').execute();
}
