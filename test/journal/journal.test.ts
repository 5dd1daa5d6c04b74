import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { openDatabase } from '../../src/journal/database.js';
import { Journal, SearchError } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { MIGRATIONS } from '../../src/journal/migrations/index.js';
import { forEachDatabase, serverDatabase } from './databases.js';
import { anIntent } from './intents.js';

const intent = anIntent;

forEachDatabase('journal', (open, engine) => {
  it('migrates once: a second run finds nothing to do', async () => {
    const { db } = await open({ bare: true });
    expect(await migrate(db)).toEqual(Object.keys(MIGRATIONS));
    expect(await migrate(db)).toEqual([]);
    const tables = await db.introspection.getTables();
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['operations', 'operation_events']));
  });

  it('writes the intent once: the row and one intent event, the amount a decimal string', async () => {
    const journal = new Journal((await open()).db);
    await journal.intend(intent('ref-intent'));
    await journal.intend(intent('ref-intent', { amount: '9' }));
    const row = await journal.byRef('ref-intent');
    expect(row).toMatchObject({
      ref: 'ref-intent',
      state: 'intended',
      amount: '1500.50',
      currency: 'UGX',
      channel_user: '+256772999001',
      role: 'staff',
      flow: 'pay',
    });
    expect(row?.created).toBeInstanceOf(Date);
    const events = await journal.timeline('ref-intent');
    expect(events.map((e) => e.type)).toEqual(['intent']);
    expect(events[0]?.data).toMatchObject({ amount: '1500.50', payee: '+256772000001', user: '+256772999001' });
  });

  it('keeps the same fact once, and moves the row only forward', async () => {
    const journal = new Journal((await open()).db);
    await journal.intend(intent('ref-forward'));
    expect(await journal.answered('ref-forward', { serviceId: 'pay_1', serviceState: 'pending' })).toBe(true);
    expect(await journal.answered('ref-forward', { serviceId: 'pay_1', serviceState: 'pending' })).toBe(false);
    expect(
      await journal.stateReported('ref-forward', {
        state: 'completed',
        serviceState: 'successful',
        source: 'notification',
      }),
    ).toBe(true);
    expect(
      await journal.stateReported('ref-forward', {
        state: 'completed',
        serviceState: 'successful',
        source: 'notification',
      }),
    ).toBe(false);
    // A late 'pending' (reordered notification) is kept as an event but does not move the row back.
    expect(
      await journal.stateReported('ref-forward', { state: 'submitted', serviceState: 'pending', source: 'read' }),
    ).toBe(true);
    let row = await journal.byRef('ref-forward');
    expect(row).toMatchObject({ state: 'completed', service_state: 'successful', service_id: 'pay_1' });
    // A notification saying otherwise does not override a final word; reconciliation does.
    await journal.stateReported('ref-forward', { state: 'failed', serviceState: 'failed', source: 'notification' });
    expect((await journal.byRef('ref-forward'))?.state).toBe('completed');
    await journal.stateReported('ref-forward', { state: 'failed', serviceState: 'failed', source: 'reconciliation' });
    row = await journal.byRef('ref-forward');
    expect(row).toMatchObject({ state: 'failed', service_state: 'failed' });
    expect(
      await journal.told('ref-forward', { channel: 'ussd', to: '+256772999001', text: 'Paid', outcome: 'completed' }),
    ).toBe(true);
    expect(
      await journal.told('ref-forward', { channel: 'ussd', to: '+256772999001', text: 'Paid', outcome: 'completed' }),
    ).toBe(false);
    expect((await journal.byRef('ref-forward'))?.told_state).toBe('completed');
    const types = (await journal.timeline('ref-forward')).map((e) => `${e.type}/${e.source}`);
    expect(types).toEqual([
      'intent/create',
      'answer/create',
      'state/notification',
      'state/read',
      'state/notification',
      'state/reconciliation',
      'telling/notification',
    ]);
    expect(await journal.byServiceId('pay_1')).toMatchObject({ ref: 'ref-forward' });
  });

  it('journals a held payment, its approval and a refusal', async () => {
    const journal = new Journal((await open()).db);
    await journal.intend(intent('ref-held', { state: 'held' }));
    expect((await journal.byRef('ref-held'))?.state).toBe('held');
    await journal.approvalDecided('ref-held', { decision: 'approved', by: 'U_APPROVER', reason: 'ok' });
    expect((await journal.byRef('ref-held'))?.state).toBe('intended');
    await journal.refused('ref-held', { status: 422, reason: 'insufficient funds' });
    expect((await journal.byRef('ref-held'))?.state).toBe('refused');
    const approval = (await journal.timeline('ref-held')).find((e) => e.type === 'approval');
    expect(approval?.data).toEqual({ decision: 'approved', by: 'U_APPROVER', reason: 'ok' });
  });

  it('searches by phone, ref, id, channel, state and dates, in pages', async () => {
    const journal = new Journal((await open()).db);
    for (let i = 0; i < 7; i++) {
      await journal.intend(
        intent(`s-${i}`, {
          payee: i % 2 ? '+256700000111' : '+256700000222',
          channel: i < 4 ? 'slack' : 'telegram',
          channelUser: `U${i}`,
          at: new Date(Date.UTC(2026, 9, 1 + i)),
        }),
      );
    }
    await journal.answered('s-3', { serviceId: 'svc-3' });
    await journal.stateReported('s-5', { state: 'completed', source: 'notification' });
    const refs = async (q: Parameters<Journal['search']>[0]) => (await journal.search(q)).items.map((o) => o.ref);
    expect(await refs({ phone: '+256700000111' })).toEqual(['s-5', 's-3', 's-1']);
    expect(await refs({ phone: 'U2' })).toEqual(['s-2']);
    expect(await refs({ ref: 's-4' })).toEqual(['s-4']);
    expect(await refs({ id: 'svc-3' })).toEqual(['s-3']);
    expect(await refs({ channel: 'telegram' })).toEqual(['s-6', 's-5', 's-4']);
    expect(await refs({ state: 'completed' })).toEqual(['s-5']);
    expect(
      await refs({ channel: 'slack', from: new Date('2026-10-02T00:00:00Z'), to: new Date('2026-10-04T00:00:00Z') }),
    ).toEqual(['s-2', 's-1']);
    const first = await journal.search({ channel: 'slack', limit: 3 });
    expect(first.items.map((o) => o.ref)).toEqual(['s-3', 's-2', 's-1']);
    const second = await journal.search({ channel: 'slack', limit: 3, cursor: first.next });
    expect(second.items.map((o) => o.ref)).toEqual(['s-0']);
    expect(second.next).toBeUndefined();
    const all: string[] = [];
    for await (const o of journal.stream({ channel: 'slack' }, 2)) all.push(o.ref);
    expect(all).toEqual(['s-3', 's-2', 's-1', 's-0']);
    // From a page's cursor on, as the next pages would give it.
    const rest: string[] = [];
    for await (const o of journal.stream(
      { channel: 'slack', cursor: (await journal.search({ channel: 'slack', limit: 2 })).next },
      2,
    ))
      rest.push(o.ref);
    expect(rest).toEqual(['s-1', 's-0']);
    await expect(journal.search({ cursor: 'nonsense' })).rejects.toThrow(SearchError);
    // A cursor forged in the right shape, its ref one no operation can have: refused as the caller's mistake
    // before the database sees it (PostgreSQL refuses a NUL in text, which would be a failed read).
    const forged = (ref: unknown) =>
      Buffer.from(JSON.stringify(['2026-10-01T12:00:00.000Z', ref])).toString('base64url');
    for (const ref of ['s-\u0000', '', 'a b', 'x'.repeat(101), 7]) {
      await expect(journal.search({ cursor: forged(ref) }), JSON.stringify(ref)).rejects.toThrow(SearchError);
    }
    expect((await journal.search({ cursor: forged('s-9') })).items.map((o) => o.ref)).toEqual(['s-0']);
  });

  it('pages on (created, ref) as one row value: rows of one instant split across pages, none lost or repeated', async () => {
    const journal = new Journal((await open()).db);
    const at = new Date('2026-09-01T08:00:00Z');
    const made = Array.from({ length: 7 }, (_, i) => `tie-${i}`);
    for (const ref of made) await journal.intend(intent(ref, { at, channel: 'whatsapp', channelUser: 'Utie' }));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await journal.search({ phone: 'Utie', limit: 3, cursor });
      seen.push(...page.items.map((o) => o.ref));
      cursor = page.next;
    } while (cursor);
    expect(seen).toEqual([...made].reverse());
    // The statement the index can read: a row-value comparison, not an OR of two.
    const { db, watch } = await open();
    const statements: string[] = [];
    const stop = watch((s) => statements.push(s));
    await new Journal(db).search({ cursor: (await journal.search({ phone: 'Utie', limit: 3 })).next });
    stop();
    expect(statements.at(-1)).toMatch(/\("created", "ref"\) < \(\$1, \$2\)/);
  });

  it('streams an export from one cursor, and closes it when the reader stops early', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    for (let i = 0; i < 25; i++)
      await journal.intend(
        intent(`st-${String(i).padStart(2, '0')}`, {
          channelUser: 'Ustream',
          at: new Date(Date.UTC(2026, 7, 1, 0, i)),
        }),
      );
    const got: string[] = [];
    for await (const o of journal.stream({ phone: 'Ustream' }, 4)) got.push(o.ref);
    expect(got).toEqual(Array.from({ length: 25 }, (_, i) => `st-${String(24 - i).padStart(2, '0')}`));
    expect(got.length).toBe(new Set(got).size);
    let taken = 0;
    for await (const o of journal.stream({ phone: 'Ustream' }, 4)) {
      expect(o.amount).toBe('1500.50');
      if (++taken === 6) break;
    }
    // PGlite keeps a held cursor in its one session until closed; a server's dies with its transaction.
    const open_ = await sql<{
      n: number;
    }>`select count(*)::int as n from pg_cursors where name like 'export_%'`.execute(db);
    expect(open_.rows[0]?.n).toBe(0);
    // And the journal still answers (the server's pinned connection went back to the pool).
    expect((await journal.search({ phone: 'Ustream', limit: 1 })).items[0]?.ref).toBe('st-24');
  });

  it('deletes nothing younger than the retention, and everything older', async () => {
    const journal = new Journal((await open()).db);
    const now = new Date('2033-12-01T00:00:00Z');
    const day = 86_400_000;
    await journal.intend(intent('old', { at: new Date(now.getTime() - 2556 * day) }));
    await journal.refused('old', { status: 400, reason: 'no', at: new Date(now.getTime() - 2556 * day) });
    await journal.told('old', { channel: 'ussd', to: 'x', text: 'y', at: new Date(now.getTime() - 2556 * day) });
    await journal.intend(intent('edge', { at: new Date(now.getTime() - 2554 * day) }));
    // Old but changed recently: kept whole.
    await journal.intend(intent('revived', { at: new Date(now.getTime() - 3000 * day) }));
    await journal.stateReported('revived', {
      state: 'failed',
      source: 'reconciliation',
      at: new Date(now.getTime() - 10 * day),
    });
    const deleted = await journal.deleteOlderThan(2555, now);
    expect(deleted.operations).toBeGreaterThanOrEqual(1);
    expect(await journal.byRef('old')).toBeUndefined();
    expect(await journal.timeline('old')).toEqual([]);
    expect(await journal.byRef('edge')).toBeDefined();
    expect((await journal.timeline('revived')).map((e) => e.type)).toEqual(['intent', 'state']);
    void engine;
  });
});

describe('migrations on the server', () => {
  it('two processes migrating at once run each migration once (advisory lock)', async () => {
    const server = await serverDatabase('migrate_race', { empty: true });
    const a = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
    const b = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
    try {
      const [ranA, ranB] = await Promise.all([migrate(a.db), migrate(b.db)]);
      expect([...ranA, ...ranB].sort()).toEqual(Object.keys(MIGRATIONS).sort());
      const rows = await a.db
        .selectFrom('kysely_migration' as never)
        .selectAll()
        .execute();
      expect(rows).toHaveLength(Object.keys(MIGRATIONS).length);
    } finally {
      await a.close();
      await b.close();
      await server.drop();
    }
  });
});

describe('a server that does not answer', () => {
  it('refuses the start in one line naming DATABASE_URL, without its password', async () => {
    // Port 9 (discard) has no PostgreSQL: the connection is refused at once.
    const refused = openDatabase({ databaseUrl: 'postgres://momo:hunter2@127.0.0.1:9/money', dataDir: 'memory://' });
    await expect(refused).rejects.toThrow(ConfigError);
    const message = await refused.then(
      () => '',
      (err: unknown) => (err as Error).message,
    );
    expect(message).toMatch(/^DATABASE_URL: the PostgreSQL server at 127\.0\.0\.1:9\/money did not answer \(.+\)/);
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('\n');
  });
});

describe('PGlite under DATA_DIR', () => {
  it('keeps what it was given across a close and a reopen', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const dir = await mkdtemp(path.join(tmpdir(), 'momo-data-'));
    try {
      const first = await openDatabase({ dataDir: dir });
      expect(first.kind).toBe('pglite');
      await migrate(first.db);
      await new Journal(first.db).intend(intent('kept'));
      await first.close();
      const second = await openDatabase({ dataDir: dir });
      // One process per folder (another process: test/journal/data-dir-lock.test.ts).
      await expect(openDatabase({ dataDir: dir })).rejects.toThrow(/^DATA_DIR: .* is in use by another process/);
      await second.close();
      // Closed, the folder is taken again.
      const third = await openDatabase({ dataDir: dir });
      expect(await migrate(third.db)).toEqual([]);
      expect((await new Journal(third.db).byRef('kept'))?.amount).toBe('1500.50');
      await third.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // Two PGlite starts from files: seconds each on a busy machine.
  }, 180_000);
});
