/**
 * 0200: limits and lock-outs kept by the database, not by Redis (src/people/limits.ts).
 * - `spend_reservations`: one row per payment's reservation in its person's daily total, keyed by our ref (the
 *   payment's Duplicate-Check-Key): who, currency, UTC day, the amount (decimal, and in minor units as the limit
 *   counts it), when reserved, and when and why it was given back (the service refused it, it ended without
 *   money moving, its intent could not be written).
 * - `spend_days`: one row per person, currency and UTC day: the total of its reservations not given back, in
 *   minor units. A reservation or a give-back takes this row `FOR UPDATE` first, so two channels of one person
 *   paying at once are counted one after the other.
 * - `secret_tries`: wrong tries counted per subject and scope (`pin`: a person's PINs and one-time codes;
 *   `link-tries`: link codes tried from one chat account; `link-made`: link codes made for a person) until
 *   `until` (the window, moved by every counted try).
 * - `persons.pin_locked_why`: why `pin_locked_until` was set (wrong PIN, wrong one-time code).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('spend_reservations')
    .addColumn('ref', 'text', (c) => c.primaryKey())
    .addColumn('person_id', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull().check(sql`day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`))
    .addColumn('amount', 'numeric', (c) => c.notNull().check(sql`amount >= 0`))
    .addColumn('minor', 'bigint', (c) => c.notNull().check(sql`minor >= 0`))
    .addColumn('reserved_at', 'timestamptz', (c) => c.notNull())
    .addColumn('given_back_at', 'timestamptz')
    .addColumn('given_back_reason', 'text')
    .addCheckConstraint('spend_reservations_given_back', sql`(given_back_at is null) = (given_back_reason is null)`)
    .execute();
  await db.schema
    .createIndex('spend_reservations_day')
    .on('spend_reservations')
    .columns(['person_id', 'currency', 'day'])
    .execute();
  await db.schema
    .createTable('spend_days')
    .addColumn('person_id', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('total', 'bigint', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`total >= 0`),
    )
    .addPrimaryKeyConstraint('spend_days_pk', ['person_id', 'currency', 'day'])
    .execute();
  await db.schema
    .createTable('secret_tries')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('tries', 'integer', (c) => c.notNull().check(sql`tries >= 0`))
    .addColumn('until', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('secret_tries_pk', ['scope', 'subject'])
    .execute();
  await db.schema.alterTable('persons').addColumn('pin_locked_why', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('persons').dropColumn('pin_locked_why').execute();
  for (const table of ['secret_tries', 'spend_days', 'spend_reservations']) await db.schema.dropTable(table).execute();
}
