/**
 * The journal append-only in the database (migration 0300, src/journal/roles.ts): triggers that refuse a
 * change of an event and a state going back, whatever role writes; CHECKs and the foreign key; retention that
 * keeps what is open and the history of people who exist; and, on the server, the product's own role refused
 * an UPDATE, a DELETE, a TRUNCATE and a DROP of the events.
 */
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { Journal, type Intent } from '../../src/journal/journal.js';
import { openJournal, ROLE_LINES } from '../../src/journal/roles.js';
import { SHORT_REF_SHAPE } from '../../src/journal/short-ref.js';
import { forEachDatabase, POSTGRES_URL, serverDatabase } from './databases.js';
import { anIntent } from './intents.js';

const at = new Date('2026-11-20T10:00:00Z');
const intent = (ref: string, over: Partial<Intent> = {}): Intent => anIntent(ref, { at, ...over });

/** The SQLSTATE a statement fails with ('' when it passes). */
async function refusal(db: Kysely<any>, statement: ReturnType<typeof sql>): Promise<string> {
  try {
    await statement.execute(db);
    return '';
  } catch (error) {
    return String((error as { code?: unknown }).code ?? (error as Error).message);
  }
}

forEachDatabase('append_only', (open) => {
  it('refuses an UPDATE, a DELETE and a TRUNCATE of an event, whatever role asks', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    await journal.intend(intent('ao-1'));
    expect(await refusal(db, sql`update operation_events set data = '{"amount":"1"}' where ref = 'ao-1'`)).toBe(
      '42501',
    );
    expect(await refusal(db, sql`delete from operation_events where ref = 'ao-1'`)).toBe('42501');
    expect(await refusal(db, sql`truncate operation_events`)).toBe('42501');
    expect(await refusal(db, sql`delete from operations where ref = 'ao-1'`)).toBe('42501');
    expect(await refusal(db, sql`truncate operations cascade`)).toBe('42501');
    expect(await journal.timeline('ao-1')).toHaveLength(1);
  });

  it('moves a state only forward and never changes what was asked', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    await journal.intend(intent('ao-2'));
    await journal.answered('ao-2', { serviceId: 'svc-2' });
    await journal.stateReported('ao-2', { state: 'completed', source: 'notification' });
    expect(await refusal(db, sql`update operations set state = 'submitted' where ref = 'ao-2'`)).toBe('23514');
    expect(await refusal(db, sql`update operations set state = 'intended' where ref = 'ao-2'`)).toBe('23514');
    expect(await refusal(db, sql`update operations set amount = 1 where ref = 'ao-2'`)).toBe('23514');
    expect(await refusal(db, sql`update operations set currency = 'KES' where ref = 'ao-2'`)).toBe('23514');
    expect(await refusal(db, sql`update operations set kind = 'request' where ref = 'ao-2'`)).toBe('23514');
    expect(await refusal(db, sql`update operations set created = now() where ref = 'ao-2'`)).toBe('23514');
    expect(await refusal(db, sql`update operations set service_id = 'svc-x' where ref = 'ao-2'`)).toBe('23514');
    // A correction to another final word passes; one that would take the final word back is kept as an event,
    // and the row stays.
    await journal.stateReported('ao-2', { state: 'failed', source: 'reconciliation' });
    expect((await journal.byRef('ao-2'))?.state).toBe('failed');
    expect(await journal.stateReported('ao-2', { state: 'submitted', source: 'operator' })).toBe(true);
    expect((await journal.byRef('ao-2'))?.state).toBe('failed');
  });

  it('checks the amount, the currency, the state and the kind', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    const code = (p: Promise<unknown>) =>
      p.then(
        () => '',
        (e: { code?: string }) => e.code,
      );
    expect(await code(journal.intend(intent('ao-c1', { amount: '0' })))).toBe('23514');
    expect(await code(journal.intend(intent('ao-c2', { amount: '-5' })))).toBe('23514');
    expect(await code(journal.intend(intent('ao-c3', { currency: 'ugx' })))).toBe('23514');
    expect(await code(journal.intend(intent('ao-c4', { currency: 'UGXX' })))).toBe('23514');
    expect(await code(journal.intend(intent('ao-c5', { kind: 'gift' as never })))).toBe('23514');
    expect(await code(journal.intend(intent('ao-c6', { state: 'lost' as never })))).toBe('23514');
    expect(await code(journal.intend(intent('person:ao-c7')))).toBe('23514');
    expect(await journal.byRef('ao-c1')).toBeUndefined();
    expect(await code(journal.intend(intent('ao-c8', { amount: '0.01', currency: 'KES' })))).toBe('');
  });

  it('keeps no event of an operation that does not exist; people and operators have their own refs', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    await expect(journal.stateReported('ao-nothing', { state: 'completed', source: 'read' })).rejects.toMatchObject({
      code: '23503',
    });
    await journal.append({ ref: 'person:ao-p', type: 'person', source: 'operator', key: 'ao-p1', at, data: {} });
    expect(await journal.timeline('person:ao-p')).toHaveLength(1);
  });

  it('refuses an approval by the maker, without a name, or of what is not held', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    await journal.intend(intent('ao-h', { state: 'held' }));
    const approve = (ref: string, by?: string) =>
      journal.approvalDecided(ref, { decision: 'approved', ...(by ? { by } : {}) }).then(
        () => '',
        (e: { code?: string }) => e.code,
      );
    expect(await approve('ao-h', 'ussd:+256772999001')).toBe('23514');
    expect(await approve('ao-h')).toBe('23514');
    await journal.intend(intent('ao-nh'));
    expect(await approve('ao-nh', 'slack:U2')).toBe('23514');
    expect(await approve('ao-h', 'slack:U2')).toBe('');
    expect((await journal.byRef('ao-h'))?.state).toBe('intended');
    // Written again (a replay of the buffered writer): nothing, and no refusal.
    expect(await approve('ao-h', 'slack:U2')).toBe('');
  });

  it('retention keeps what is open and the history of people who exist', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    const now = new Date('2040-01-01T00:00:00Z');
    const old = new Date(now.getTime() - 400 * 86_400_000);
    for (const state of ['intended', 'held'] as const)
      await journal.intend(intent(`ao-r-${state}`, { at: old, state }));
    await journal.intend(intent('ao-r-submitted', { at: old }));
    await journal.answered('ao-r-submitted', { serviceId: 'svc-r', at: old });
    await journal.intend(intent('ao-r-done', { at: old }));
    await journal.stateReported('ao-r-done', { state: 'completed', source: 'notification', at: old });
    await sql`insert into persons (id, name, role, source, created, updated)
              values ('ao-alive', 'Alive', 'staff', 'policy', ${old}, ${old})`.execute(db);
    for (const id of ['ao-alive', 'ao-gone']) {
      await journal.append({
        ref: `person:${id}`,
        type: 'person',
        source: 'policy',
        key: `ao-${id}`,
        at: old,
        data: {},
      });
    }
    await sql`insert into reconciliation_runs (from_day, to_day, started, status, trigger)
              values ('2038-01-01', '2038-01-01', ${old}, 'done', 'daily')`.execute(db);
    // The chain's last event always stays (and so its operation): something newer is written.
    await journal.intend(intent('ao-r-new', { at: now }));
    const deleted = await journal.deleteOlderThan(365, now);
    expect(deleted.reconciliation).toBe(1);
    expect(deleted.operations).toBeGreaterThanOrEqual(1);
    expect(await journal.byRef('ao-r-done')).toBeUndefined();
    for (const state of ['intended', 'held', 'submitted']) expect(await journal.byRef(`ao-r-${state}`)).toBeDefined();
    expect(await journal.timeline('person:ao-alive')).toHaveLength(1);
    expect(await journal.timeline('person:ao-gone')).toHaveLength(0);
  });
});

/** A login role of the test's own, dropped after (roles belong to the whole server). */
async function loginRole(): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = `momo_product_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create role "${name}" login`);
  await admin.end();
  return {
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`drop role if exists "${name}"`).finally(() => c.end());
    },
  };
}

const as = (url: string, user: string): string => {
  const u = new URL(url);
  u.username = user;
  return u.toString();
};

describe("the product's own role (PostgreSQL)", { timeout: 120_000 }, () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => {});
  });

  it('may insert and read the journal, never change, delete, truncate or drop an event', async () => {
    const server = await serverDatabase('product_role');
    const role = await loginRole();
    cleanup.push(role.drop, server.drop);
    const journals = await openJournal({
      DATABASE_URL: as(server.url, role.name),
      DATABASE_OWNER_URL: server.url,
      DATA_DIR: 'memory://',
    });
    cleanup.push(() => journals.close());
    expect(journals.separated).toBe(true);
    expect(journals.line).toBe(ROLE_LINES.separated);
    const db = journals.database.db;
    const journal = new Journal(db);
    // The short ref's sequence is the product's to draw from (USAGE), in the intent's insert.
    expect(await journal.intend(intent('pr-1', { state: 'held' }))).toMatch(SHORT_REF_SHAPE);
    await journal.approvalDecided('pr-1', { decision: 'approved', by: 'slack:U9' });
    await journal.answered('pr-1', { serviceId: 'svc-pr' });
    expect((await journal.byRef('pr-1'))?.state).toBe('submitted');

    // As the product: refused by PostgreSQL's privileges (42501), before any trigger.
    expect(await refusal(db, sql`update operation_events set data = '{}' where ref = 'pr-1'`)).toBe('42501');
    expect(await refusal(db, sql`delete from operation_events`)).toBe('42501');
    expect(await refusal(db, sql`truncate operation_events`)).toBe('42501');
    expect(await refusal(db, sql`drop table operation_events`)).toBe('42501');
    expect(await refusal(db, sql`delete from operations`)).toBe('42501');
    // Nor a hold and its decision, nor what a payment took from the day's limit.
    for (const table of ['held_payments', 'spend_reservations', 'spend_days'])
      expect(await refusal(db, sql`delete from ${sql.table(table)}`)).toBe('42501');
    expect(await refusal(db, sql`alter table operation_events disable trigger user`)).toBe('42501');
    expect(await refusal(db, sql`create table forged (x int)`)).toBe('42501');
    expect(await refusal(db, sql`update operations set amount = 1 where ref = 'pr-1'`)).toBe('23514');
    expect(await refusal(db, sql`update operations set short_ref = 'MC-22222' where ref = 'pr-1'`)).toBe('23514');
    // A forged approval by the maker, and a forged operator.
    await journal.intend(intent('pr-2', { state: 'held' }));
    expect(
      await refusal(
        db,
        sql`insert into operation_events (ref, type, source, event_key, at, data)
            values ('pr-2', 'approval', 'approval', 'forged', now(), '{"decision":"approved","by":"ussd:+256772999001"}')`,
      ),
    ).toBe('23514');
    expect(
      await refusal(
        db,
        sql`insert into operators (name, password_hash, created, created_by) values ('mallory', 'x', now(), 'mallory')`,
      ),
    ).toBe('23514');
    expect(await journal.timeline('pr-1')).toHaveLength(3);

    // The owner runs retention (its transaction may delete).
    const owner = new Journal(journals.owner.db);
    await journal.stateReported('pr-1', { state: 'completed', source: 'notification' });
    await journal.intend(intent('pr-3', { at: new Date(Date.now() + 400 * 86_400_000) }));
    const deleted = await owner.deleteOlderThan(365, new Date(Date.now() + 400 * 86_400_000));
    expect(deleted.operations).toBe(1);
    await expect(journal.deleteOlderThan(365, new Date(Date.now() + 400 * 86_400_000))).rejects.toMatchObject({
      code: '42501',
    });
  });

  it('refuses a start whose product role could still change the journal, in one line', async () => {
    const role = await loginRole();
    cleanup.push(role.drop);
    // Empty: the test's own role migrates it as the owner.
    const server = await serverDatabase('product_role_bad', { empty: true });
    cleanup.push(server.drop);
    // The same role twice.
    await expect(
      openJournal({ DATABASE_URL: server.url, DATABASE_OWNER_URL: server.url, DATA_DIR: 'memory://' }),
    ).rejects.toThrow(/^DATABASE_OWNER_URL: it names the same role as DATABASE_URL/);
    // A superuser as the product's role.
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`grant create on schema public to "${role.name}"`);
    await admin.end();
    const error = await openJournal({
      DATABASE_URL: server.url,
      DATABASE_OWNER_URL: as(server.url, role.name),
      DATA_DIR: 'memory://',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(String((error as Error).message)).toMatch(/could still change the journal: it is a superuser/);
  });
});
