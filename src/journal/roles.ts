/**
 * The journal's two database roles (docs/journal.md, docs/security.md).
 *
 * With `DATABASE_OWNER_URL` set, migrations and retention connect as the owner, which grants the product's role
 * (the user of `DATABASE_URL`) only what the product needs: read and insert the append-only tables, read,
 * insert and update `operations` (whose trigger moves a state only forward) and the other tables the product
 * keeps, never UPDATE, DELETE or TRUNCATE of an event, no DDL. The same grants are made for tables made later
 * (default privileges). A start whose product role could still change an event (a superuser, or the owner of
 * the tables) is refused in one line.
 *
 * Without it, one role owns and writes the journal: the triggers of migration 0300 still refuse an UPDATE, a
 * DELETE (but retention's) and a TRUNCATE of an event, but that role could drop them.
 */
import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.js';
import { ConfigError } from '../config.js';
import { openDatabase, type Database } from './database.js';
import { migrate } from './migrate.js';

/** Tables the product may read and insert into, never change or delete from (events, receipts, the operators' audit). */
export const APPEND_ONLY_TABLES: readonly string[] = ['operation_events', 'journal_receipts', 'operator_audit'];
/**
 * Tables the product may read, insert into and update (through their triggers or its own conditional updates),
 * never delete from: a payment's state, its hold and decision, what it took from a day's limit, and an
 * operator's request with its decision, a reconciliation's difference with how it was closed.
 */
export const NO_DELETE_TABLES: readonly string[] = [
  'operations',
  'held_payments',
  'spend_reservations',
  'spend_days',
  'owed_outcomes',
  'operator_requests',
  'reconciliation_exceptions',
];
/** Tables only the owner uses (the migrations' own). */
const OWNER_TABLES: readonly string[] = ['kysely_migration', 'kysely_migration_lock'];

/** The line a start logs to say which roles the journal has. */
export const ROLE_LINES = {
  separated: "journal: the product's role may not change events (DATABASE_OWNER_URL set)",
  single: 'journal: one role owns and writes the journal; set DATABASE_OWNER_URL to separate them',
  embedded: 'journal: the embedded PGlite is one role, which owns and writes the journal (triggers refuse a change)',
} as const;

/** The product's database and, for migrations and retention, the owner's (the same one without the setting). */
export interface JournalDatabases {
  /** The product's: every read and write of the running product. */
  database: Database;
  /**
   * The owner's: migrations and retention (a pool of its own, without the product's statement timeout; with one
   * role, the same role's). The same object as `database` on the embedded PGlite.
   */
  owner: Database;
  /** Whether the product's role is another, restricted one. */
  separated: boolean;
  /** The migrations this open ran. */
  ran: string[];
  /** One of {@link ROLE_LINES}. */
  line: string;
  /** Closes both. */
  close(): Promise<void>;
}

export interface JournalSettings {
  DATABASE_URL?: string;
  DATABASE_OWNER_URL?: string;
  DATA_DIR: string;
  /** A PGlite dump the embedded database starts from when it has none yet (config.ts). */
  PGLITE_DUMP?: string;
  /** The product's pool's server-side statement_timeout (config.ts); unset: none. */
  DATABASE_STATEMENT_TIMEOUT_MS?: number;
}

/**
 * Opens the journal's database(s), migrates as the owner and, with two roles, grants the product's role what it
 * needs and checks it may not change an event. Throws ConfigError (one line) when the roles are not as they
 * should be; closes what it opened on any failure.
 */
export async function openJournal(settings: JournalSettings): Promise<JournalDatabases> {
  const opened: Database[] = [];
  try {
    const product = {
      databaseUrl: settings.DATABASE_URL,
      dataDir: settings.DATA_DIR,
      statementTimeoutMs: settings.DATABASE_STATEMENT_TIMEOUT_MS,
    };
    if (!settings.DATABASE_OWNER_URL) {
      if (!settings.DATABASE_URL) {
        const database = await openDatabase({ ...product, dump: settings.PGLITE_DUMP });
        opened.push(database);
        const ran = await migrate(database.db);
        return { database, owner: database, separated: false, ran, line: ROLE_LINES.embedded, close: database.close };
      }
      // One role, two pools: the product's statements are bounded by the statement timeout, the migrations' and
      // retention's (which may run long) are not.
      const owner = await openDatabase({ databaseUrl: settings.DATABASE_URL, dataDir: settings.DATA_DIR, poolSize: 2 });
      opened.push(owner);
      const database = await openDatabase(product);
      opened.push(database);
      const ran = await migrate(owner.db);
      return {
        database,
        owner,
        separated: false,
        ran,
        line: ROLE_LINES.single,
        close: async () => {
          await database.close();
          await owner.close();
        },
      };
    }
    const owner = await openDatabase({
      databaseUrl: settings.DATABASE_OWNER_URL,
      dataDir: settings.DATA_DIR,
      poolSize: 2,
      setting: 'DATABASE_OWNER_URL',
    });
    opened.push(owner);
    const database = await openDatabase(product);
    opened.push(database);
    const ownerRole = await currentRole(owner.db);
    const productRole = await currentRole(database.db);
    if (ownerRole === productRole) {
      throw new ConfigError(
        `DATABASE_OWNER_URL: it names the same role as DATABASE_URL (${productRole}): give the product a role of its own (CREATE ROLE … LOGIN) and put it in DATABASE_URL`,
      );
    }
    const ran = await migrate(owner.db);
    await grantProductRole(owner.db, productRole);
    await checkProductRole(database.db, productRole, ownerRole);
    return {
      database,
      owner,
      separated: true,
      ran,
      line: ROLE_LINES.separated,
      close: async () => {
        await database.close();
        await owner.close();
      },
    };
  } catch (error) {
    for (const database of opened) await database.close().catch(() => {});
    throw error;
  }
}

async function currentRole(db: Kysely<Schema>): Promise<string> {
  const { rows } = await sql<{ role: string }>`select current_user as role`.execute(db);
  return rows[0]!.role;
}

/**
 * As the owner: grants `role` exactly what the product needs on every table of the schema the owner owns (and
 * on those it makes later), taking back anything else the owner had granted it. Idempotent; run at each start.
 */
export async function grantProductRole(owner: Kysely<Schema>, role: string): Promise<void> {
  const r = sql.id(role);
  await owner.transaction().execute(async (trx) => {
    await sql`grant usage on schema public to ${r}`.execute(trx);
    await sql`revoke create on schema public from ${r}`.execute(trx);
    const { rows } = await sql<{ name: string }>`
      select tablename as name from pg_tables where schemaname = 'public' and tableowner = current_user`.execute(trx);
    for (const { name } of rows) {
      const table = sql.id('public', name);
      await sql`revoke all on table ${table} from ${r}`.execute(trx);
      if (OWNER_TABLES.includes(name)) continue;
      if (APPEND_ONLY_TABLES.includes(name)) await sql`grant select, insert on table ${table} to ${r}`.execute(trx);
      else if (NO_DELETE_TABLES.includes(name))
        await sql`grant select, insert, update on table ${table} to ${r}`.execute(trx);
      else await sql`grant select, insert, update, delete on table ${table} to ${r}`.execute(trx);
    }
    await sql`grant usage, select on all sequences in schema public to ${r}`.execute(trx);
    // Tables a later migration makes: the product may use them (a migration making an append-only one names it
    // in APPEND_ONLY_TABLES, and the next start takes back what it must not have).
    await sql`alter default privileges in schema public grant select, insert, update, delete on tables to ${r}`.execute(
      trx,
    );
    await sql`alter default privileges in schema public grant usage, select on sequences to ${r}`.execute(trx);
  });
}

/** As the product: refuses the start (ConfigError) when this role could still change or delete an event. */
export async function checkProductRole(db: Kysely<Schema>, role: string, ownerRole: string): Promise<void> {
  const { rows } = await sql<{ superuser: boolean; owns: boolean; change: boolean; ddl: boolean }>`
    select r.rolsuper as superuser,
           pg_get_userbyid(c.relowner) = current_user as owns,
           has_table_privilege(c.oid, 'UPDATE') or has_table_privilege(c.oid, 'DELETE')
             or has_table_privilege(c.oid, 'TRUNCATE') as change,
           has_schema_privilege('public', 'CREATE') as ddl
    from pg_roles r, pg_class c
    where r.rolname = current_user and c.oid = 'public.operation_events'::regclass`.execute(db);
  const found = rows[0];
  if (!found) throw new ConfigError('DATABASE_OWNER_URL: the journal has no operation_events table');
  const why = found.superuser
    ? 'it is a superuser'
    : found.owns
      ? `it owns the tables (move them to the owner: REASSIGN OWNED BY ${role} TO ${ownerRole}, as a superuser)`
      : found.change
        ? 'it holds UPDATE, DELETE or TRUNCATE on operation_events (granted by another role: revoke it)'
        : found.ddl
          ? `it may create tables in schema public (REVOKE CREATE ON SCHEMA public FROM PUBLIC, ${role})`
          : undefined;
  if (why) {
    throw new ConfigError(
      `DATABASE_OWNER_URL: DATABASE_URL's role ${role} could still change the journal: ${why}; give the product a role that owns nothing`,
    );
  }
}
