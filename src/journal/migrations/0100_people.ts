/**
 * 0100: the directory of people (src/people). `persons` (one row each: name, role, status, PIN hash and its
 * states, preferred chat), `person_identities` (a channel's user id, each belonging to one person),
 * `person_codes` (one-time PIN codes and link codes, hashed), `operators` (who signs in to /ops; their
 * sessions are kept in Redis), and `people_version`, one counter every change moves, which each process polls to know when to
 * read the directory again.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('persons')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
    .addColumn('pin_hash', 'text')
    .addColumn('pin_must_change', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('pin_locked_until', 'timestamptz')
    .addColumn('preferred_chat', 'text')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .addColumn('updated', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('person_identities')
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('person_id', 'text', (c) => c.notNull().references('persons.id').onDelete('cascade'))
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('person_identities_pk', ['channel', 'user_id'])
    .execute();
  await db.schema.createIndex('person_identities_person').on('person_identities').column('person_id').execute();
  await db.schema
    .createTable('person_codes')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('person_id', 'text', (c) => c.notNull().references('persons.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('lookup', 'text', (c) => c.unique())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('person_codes_person').on('person_codes').columns(['person_id', 'purpose']).execute();
  await db.schema
    .createTable('operators')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
    .addColumn('created', 'timestamptz', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('people_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into people_version (id, version) values (1, 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['people_version', 'operators', 'person_codes', 'person_identities', 'persons']) {
    await db.schema.dropTable(table).execute();
  }
}
