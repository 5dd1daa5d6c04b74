/**
 * 0350: signed events out (src/events-out, docs/webhooks-out.md). Events are derived from the journal's own
 * events by a cursor over their chain order (`operation_events.seq`, which is commit order), so an event
 * committed to the journal cannot be missed, whatever Redis or a restart does:
 * - `events_out_cursor`: one row, the last journal `seq` read (moved in the same transaction as what it read
 *   made);
 * - `events_out_states`: the last state sent out per operation (so a stale report makes no event);
 * - `events_out`: one row per state change, with the exact JSON body posted (its `id` is stable across retries);
 * - `event_deliveries`: one row per event and endpoint, the delivery log: attempts, last status, next try,
 *   delivered at, until when it is retried.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('events_out_cursor')
    .addColumn('id', 'smallint', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('events_out_states')
    .addColumn('ref', 'text', (c) => c.primaryKey())
    .addColumn('state', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('events_out')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // The journal event it was made from.
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    // The raw JSON body, the same bytes at every attempt.
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_out_ref').on('events_out').column('ref').execute();
  await db.schema
    .createTable('event_deliveries')
    .addColumn('event_id', 'text', (c) => c.notNull().references('events_out.id').onDelete('cascade'))
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('pending', 'delivered', 'failed')`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('next_try', 'timestamptz')
    .addColumn('retry_until', 'timestamptz', (c) => c.notNull())
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .addColumn('replayed_by', 'text')
    .addColumn('replayed_at', 'timestamptz')
    .addPrimaryKeyConstraint('event_deliveries_pk', ['event_id', 'endpoint'])
    .execute();
  await sql`create index event_deliveries_due on event_deliveries (next_try) where state = 'pending'`.execute(db);
  await db.schema.createIndex('event_deliveries_listed').on('event_deliveries').columns(['state', 'created']).execute();
  await db.schema.createIndex('event_deliveries_created').on('event_deliveries').column('created').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['event_deliveries', 'events_out', 'events_out_states', 'events_out_cursor'])
    await db.schema.dropTable(table).execute();
}
