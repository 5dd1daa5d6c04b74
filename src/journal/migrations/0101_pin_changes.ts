/**
 * 0101: `pin_changes`, a person's change of their own PIN while it is under way (src/people/people.ts): one row
 * per person, made when they proved who they are (their old PIN, or the one-time code of a reset: `code_id`),
 * holding the scrypt hash of the new PIN between its first and second typing, for 10 minutes. The PIN itself is
 * never written anywhere; the row goes when the PIN is set.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('pin_changes')
    .addColumn('person_id', 'text', (c) => c.primaryKey().references('persons.id').onDelete('cascade'))
    .addColumn('code_id', 'bigint', (c) => c.references('person_codes.id').onDelete('cascade'))
    .addColumn('pin_hash', 'text')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('pin_changes').execute();
}
