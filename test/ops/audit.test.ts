/**
 * The operators' audit (src/ops/audit.ts, migration 0420): a row a `record`, secrets masked and counted, and the
 * rows never changed: the triggers refuse an UPDATE, a DELETE and a TRUNCATE whatever role asks, and on the server
 * the product's own role may only insert and read.
 */
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openJournal } from '../../src/journal/roles.js';
import { maskSecrets, MASK, OperatorAudit, TOKEN_ACTOR } from '../../src/ops/audit.js';
import { forEachDatabase, POSTGRES_URL, serverDatabase } from '../journal/databases.js';

/** The SQLSTATE a statement fails with ('' when it passes). */
async function refusal(db: Kysely<any>, statement: ReturnType<typeof sql>): Promise<string> {
  try {
    await statement.execute(db);
    return '';
  } catch (error) {
    return String((error as { code?: unknown }).code ?? (error as Error).message);
  }
}

const rowsOf = async (db: Kysely<any>, actor: string) =>
  (
    await sql<{ actor: string; action: string; detail: Record<string, unknown> }>`
      select actor, action, detail from operator_audit where actor = ${actor} order by id`.execute(db)
  ).rows;

describe('maskSecrets', () => {
  it('masks every value under a secret name, at any depth, and counts them', () => {
    const { detail, masked } = maskSecrets({
      ref: 'r-1',
      pin: '1234',
      filter: { phone: '+256772000001', linkCode: 'ABCD-1234' },
      examPins: ['1111-2222', '3333-4444'],
      new_password: 'hunter2hunter2',
      csrf: 'abc',
      empty: '',
    });
    expect(detail).toEqual({
      ref: 'r-1',
      pin: MASK,
      filter: { phone: '+256772000001', linkCode: MASK },
      examPins: [MASK, MASK],
      new_password: MASK,
      csrf: MASK,
      empty: '',
    });
    expect(masked).toBe(6);
    expect(JSON.stringify(detail)).not.toMatch(/1234|2222|hunter2|ABCD/);
  });
});

forEachDatabase('operator_audit', (open) => {
  it('appends a row a record, secrets masked with their count', async () => {
    const { db } = await open();
    const audit = new OperatorAudit(db);
    const actor = `op-${randomBytes(3).toString('hex')}`;
    await audit.record(actor, 'export', { export: 'payments.csv', filter: { state: 'completed' }, rows: 3 });
    await audit.record(actor, 'change', { person: 'p1', pin: '4321' });
    await audit.record(TOKEN_ACTOR, 'export', { export: 'payments.json', rows: 0 });
    expect(await rowsOf(db, actor)).toEqual([
      { actor, action: 'export', detail: { export: 'payments.csv', filter: { state: 'completed' }, rows: 3 } },
      { actor, action: 'change', detail: { person: 'p1', pin: MASK, masked: 1 } },
    ]);
    // An action the table does not take is refused by the table itself.
    await expect(audit.record(actor, 'DROP TABLE', {})).rejects.toMatchObject({ code: '23514' });
  });

  it('refuses an UPDATE, a DELETE and a TRUNCATE of a row, whatever role asks', async () => {
    const { db } = await open();
    const audit = new OperatorAudit(db);
    const actor = `op-${randomBytes(3).toString('hex')}`;
    await audit.record(actor, 'sign-in', { via: 'form' });
    expect(await refusal(db, sql`update operator_audit set actor = 'someone' where actor = ${actor}`)).toBe('42501');
    expect(await refusal(db, sql`delete from operator_audit where actor = ${actor}`)).toBe('42501');
    expect(await refusal(db, sql`truncate operator_audit`)).toBe('42501');
    expect(await rowsOf(db, actor)).toHaveLength(1);
  });

  it('recordQuietly never throws', async () => {
    const { db } = await open();
    const warned: unknown[] = [];
    const audit = new OperatorAudit(db, { warn: (o: unknown) => warned.push(o) } as never);
    await audit.recordQuietly('x', 'NOT AN ACTION', {});
    expect(warned).toHaveLength(1);
  });
});

describe("the product's own role and the audit (PostgreSQL)", { timeout: 120_000 }, () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => {});
  });

  it('may insert and read audit rows, never update, delete, truncate or drop them', async () => {
    const server = await serverDatabase('audit_role');
    cleanup.push(server.drop);
    const role = `momo_audit_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`create role "${role}" login`);
    await admin.end();
    cleanup.push(async () => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`drop role if exists "${role}"`).finally(() => c.end());
    });
    const url = new URL(server.url);
    url.username = role;
    const journals = await openJournal({
      DATABASE_URL: url.toString(),
      DATABASE_OWNER_URL: server.url,
      DATA_DIR: 'memory://',
    });
    cleanup.push(() => journals.close());
    const db = journals.database.db as Kysely<any>;
    const audit = new OperatorAudit(db);
    await audit.record('ada', 'export', { export: 'payments.csv', rows: 2 });
    expect(await rowsOf(db, 'ada')).toHaveLength(1);
    // Refused by PostgreSQL's privileges (42501) before any trigger.
    expect(await refusal(db, sql`update operator_audit set detail = '{}'`)).toBe('42501');
    expect(await refusal(db, sql`delete from operator_audit`)).toBe('42501');
    expect(await refusal(db, sql`truncate operator_audit`)).toBe('42501');
    expect(await refusal(db, sql`drop table operator_audit`)).toBe('42501');
    expect(await refusal(db, sql`alter table operator_audit disable trigger user`)).toBe('42501');
    const privileges = await sql<{ update: boolean; delete: boolean; insert: boolean }>`
      select has_table_privilege('operator_audit', 'UPDATE') as update,
             has_table_privilege('operator_audit', 'DELETE') as delete,
             has_table_privilege('operator_audit', 'INSERT') as insert`.execute(db);
    expect(privileges.rows[0]).toEqual({ update: false, delete: false, insert: true });
    expect(await rowsOf(db, 'ada')).toHaveLength(1);
  });
});
