/**
 * 0310: `owed_outcomes`, the outcomes still owed to a person and the checks that settle them (src/journal/owed.ts),
 * kept in the database so a Redis loss loses none. One row per money-moving intent (payment, collection
 * request, purchase), inserted in the same statement as the intent, before the money call: our ref, the chat to
 * tell (`<channel>:<conversation>`), what is owed (our record of it, in whose words it is told), why it is in
 * doubt (`intent`; `conflict`: the service answered 409 on our own key; `unanswered`: no answer came), the next
 * check and how many were tried, and once settled when and with which state. The product reads, inserts and
 * updates it, never deletes it; a row goes with its operation (retention).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('owed_outcomes')
    .addColumn('ref', 'text', (c) => c.primaryKey().references('operations.ref').onDelete('cascade'))
    .addColumn('chat', 'text', (c) => c.notNull())
    .addColumn('owed', 'jsonb', (c) => c.notNull())
    .addColumn('reason', 'text', (c) =>
      c
        .notNull()
        .defaultTo('intent')
        .check(sql`reason in ('intent', 'conflict', 'unanswered')`),
    )
    .addColumn('step', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`step >= 0`),
    )
    .addColumn('next_check', 'timestamptz', (c) => c.notNull())
    .addColumn('tries', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`tries >= 0`),
    )
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .addColumn('settled_at', 'timestamptz')
    .addColumn('outcome', 'text')
    .addCheckConstraint('owed_outcomes_settled', sql`(settled_at is null) = (outcome is null)`)
    .execute();
  await db.schema
    .createIndex('owed_outcomes_due')
    .on('owed_outcomes')
    .column('next_check')
    .where(sql.ref('settled_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('owed_outcomes').execute();
}
