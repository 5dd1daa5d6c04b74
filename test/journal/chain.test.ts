/**
 * The hash chain (migration 0301, src/journal/chain.ts) and `npm run journal:verify`: each event chained to the
 * one before by the database, concurrent writers chained one after another, an event changed by hand or
 * removed found and named, and a retention deletion crossed with its receipt.
 */
import { spawn } from 'node:child_process';
import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { chainHead, receipts, verifyChain } from '../../src/journal/chain.js';
import { openDatabase } from '../../src/journal/database.js';
import { Journal, type Intent } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { parseVerifyArgs } from '../../src/journal/verify-cli.js';
import { forEachDatabase, serverDatabase } from './databases.js';
import { anIntent } from './intents.js';
import { pgliteDump } from './templates.js';
import { productArgs, ROOT } from '../product.js';

const intent = (ref: string, at: Date, over: Partial<Intent> = {}): Intent => anIntent(ref, { at, ...over });

/** Changes an event behind the triggers' back, as someone with the owner's rights could. */
async function tamper(db: Kysely<any>, statement: ReturnType<typeof sql>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`alter table operation_events disable trigger journal_append_only`.execute(trx);
    await statement.execute(trx);
    await sql`alter table operation_events enable trigger journal_append_only`.execute(trx);
  });
}

forEachDatabase('chain', (open, engine) => {
  it('chains every event to the one before, whole when nothing was touched', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    const at = new Date('2026-11-20T10:00:00Z');
    for (let i = 0; i < 5; i++) {
      await journal.intend(intent(`ch-${i}`, at));
      await journal.answered(`ch-${i}`, { serviceId: `svc-${i}`, at });
    }
    const rows = await db.selectFrom('operation_events').select(['seq', 'prev_hash', 'hash']).orderBy('seq').execute();
    expect(rows.map((r) => Number(r.seq))).toEqual(rows.map((_, i) => i + 1));
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.prev_hash).toBe(rows[i - 1]!.hash);
    expect(rows[0]!.prev_hash).toBe('');
    const result = await verifyChain(db, { from: new Date('2026-11-20'), to: new Date('2026-11-21') });
    expect(result.broken).toBeUndefined();
    expect(result.checked).toBe(10);
    expect(result.head).toEqual({ seq: '10', hash: rows[9]!.hash });
    expect(await chainHead(db)).toEqual(result.head);
    // What a writer sends for the chain's columns is not what is kept.
    await sql`insert into operation_events (ref, type, source, event_key, at, data, seq, prev_hash, hash)
              values ('ch-0', 'telling', 'notification', 'ch-forged', now(), '{}', 1, '', 'x')`.execute(db);
    expect((await verifyChain(db)).broken).toBeUndefined();
  });

  if (engine === 'postgres') {
    it('chains writers in several connections one after another', async () => {
      const a = new Journal((await open({ fresh: true })).db);
      const b = new Journal((await open({ fresh: true })).db);
      const at = new Date('2026-11-21T10:00:00Z');
      await Promise.all(
        [a, b].map(async (journal, w) => {
          for (let i = 0; i < 30; i++) {
            await journal.intend(intent(`cc-${w}-${i}`, at));
            await journal.stateReported(`cc-${w}-${i}`, { state: 'failed', source: 'read', at });
          }
        }),
      );
      const result = await verifyChain((await open()).db);
      expect(result.broken).toBeUndefined();
      expect(result.checked).toBeGreaterThanOrEqual(120);
    });
  }

  it('names the first event changed by hand, and one removed without a receipt', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    const at = new Date('2026-11-22T10:00:00Z');
    await journal.intend(intent('ct-1', at));
    await journal.intend(intent('ct-2', at));
    await journal.intend(intent('ct-3', at));
    const event = await db
      .selectFrom('operation_events')
      .select(['id', 'seq'])
      .where('ref', '=', 'ct-2')
      .executeTakeFirstOrThrow();
    await tamper(db, sql`update operation_events set data = jsonb_set(data, '{amount}', '"1"') where ref = 'ct-2'`);
    const changed = await verifyChain(db, { from: new Date('2026-11-22'), to: new Date('2026-11-23') });
    expect(changed.broken).toMatchObject({ id: String(event.id), seq: String(event.seq), ref: 'ct-2' });
    expect(changed.broken?.reason).toMatch(/content does not match/);
    await tamper(
      db,
      sql`update operation_events set data = jsonb_set(data, '{amount}', '"1500.50"') where ref = 'ct-2'`,
    );
    expect((await verifyChain(db)).broken).toBeUndefined();

    await db.transaction().execute(async (trx) => {
      await sql`select set_config('momo.retention', 'on', true)`.execute(trx);
      await sql`delete from operation_events where ref = 'ct-2'`.execute(trx);
    });
    const removed = await verifyChain(db);
    expect(removed.broken?.ref).toBe('ct-3');
    expect(removed.broken?.reason).toMatch(/missing, and no retention receipt/);
  });

  it('crosses a retention deletion with its receipt, and shows the receipt', async () => {
    // A database of its own: the one before holds a hole on purpose.
    const database = await openDatabase(
      engine === 'postgres'
        ? { databaseUrl: (await (retentionServer ??= serverDatabase('chain_retention'))).url, dataDir: 'memory://' }
        : { dataDir: 'memory://', dump: pgliteDump() },
    );
    try {
      await migrate(database.db);
      const db = database.db;
      const journal = new Journal(db);
      const now = new Date('2040-01-01T00:00:00Z');
      const old = new Date('2038-06-01T00:00:00Z');
      await journal.intend(intent('cr-keep-1', new Date('2039-12-01T00:00:00Z')));
      await journal.intend(intent('cr-old', old));
      await journal.refused('cr-old', { reason: 'no', at: old });
      await journal.intend(intent('cr-open', old));
      await journal.intend(intent('cr-keep-2', new Date('2039-12-02T00:00:00Z')));
      const before = await chainHead(db);
      const deleted = await journal.deleteOlderThan(365, now);
      expect(deleted).toMatchObject({ operations: 1, events: 2 });
      const [receipt] = await receipts(db);
      expect(receipt).toMatchObject({
        operations: 1,
        events: 2,
        headBefore: before!.hash,
        headBeforeSeq: before!.seq,
        firstSeq: '2',
        lastSeq: '3',
      });
      const head = await chainHead(db);
      expect(head).toEqual({ seq: String(Number(before!.seq) + 1), hash: receipt!.headAfter });
      const result = await verifyChain(db);
      expect(result.broken).toBeUndefined();
      expect(result.holes).toBe(1);
      // Nothing more to delete: no second receipt.
      await journal.deleteOlderThan(365, now);
      expect(await receipts(db)).toHaveLength(1);
      // A receipt whose event is changed breaks the chain too.
      await tamper(db, sql`update operation_events set data = '{}' where ref = 'journal:retention'`);
      expect((await verifyChain(db)).broken?.ref).toBe('journal:retention');
    } finally {
      await database.close();
      if (retentionServer) await (await retentionServer).drop();
    }
  });
});

let retentionServer: ReturnType<typeof serverDatabase> | undefined;

describe('journal:verify arguments', () => {
  it('takes two days and refuses anything else, saying why', () => {
    expect(parseVerifyArgs(['--from', '2026-11-01', '--to=2026-11-30'])).toEqual({
      from: '2026-11-01',
      to: '2026-11-30',
    });
    expect(parseVerifyArgs([])).toEqual({ error: expect.stringMatching(/^--from is required/) });
    expect(parseVerifyArgs(['--from', '2026-02-30', '--to', '2026-03-01'])).toEqual({
      error: expect.stringMatching(/is not a day/),
    });
    expect(parseVerifyArgs(['--from', '2026-03-02', '--to', '2026-03-01'])).toEqual({
      error: expect.stringMatching(/before --from/),
    });
    expect(parseVerifyArgs(['--since', 'x'])).toEqual({ error: expect.stringMatching(/unknown argument/) });
  });

  it('takes a head as an export shows it, with the days or alone (the whole chain)', () => {
    const hash = 'ab'.repeat(32);
    expect(parseVerifyArgs(['--head', `12 ${hash}`])).toEqual({ head: { seq: '12', hash } });
    expect(parseVerifyArgs(['--from', '2026-11-01', '--to', '2026-11-30', `--head=12 ${hash}`])).toEqual({
      from: '2026-11-01',
      to: '2026-11-30',
      head: { seq: '12', hash },
    });
    expect(parseVerifyArgs(['--head', `12 ${hash}`, '--from', '2026-11-01'])).toEqual({
      error: expect.stringMatching(/^--to is required/),
    });
    for (const bad of ['12', hash, `0 ${hash}`, `12 ${hash.slice(1)}`, `x ${hash}`, `12 ${hash.toUpperCase()}`])
      expect(parseVerifyArgs(['--head', bad]), bad).toEqual({ error: expect.stringMatching(/is not a head/) });
  });
});

describe('npm run journal:verify (PostgreSQL)', { timeout: 120_000 }, () => {
  const run = (url: string, args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [...productArgs('src/journal/verify-cli'), ...args], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent' },
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });

  it('exits 0 when whole, 1 naming the event changed, 2 on bad arguments', async () => {
    const server = await serverDatabase('verify_cli');
    const database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
    try {
      await migrate(database.db);
      const journal = new Journal(database.db);
      const at = new Date('2026-11-25T10:00:00Z');
      await journal.intend(intent('cv-1', at));
      await journal.intend(intent('cv-2', at));
      const whole = await run(server.url, ['--from', '2026-11-25', '--to', '2026-11-25']);
      expect(whole).toMatchObject({ code: 0 });
      expect(whole.out).toMatch(
        /^journal:verify: 2 events from 2026-11-25 to 2026-11-25 .*chain whole; head seq 2 [0-9a-f]{64}\n$/,
      );
      // The head an export carried, alone: the whole chain, and that head in it.
      const head = (await chainHead(database.db))!;
      const withHead = await run(server.url, ['--head', `${head.seq} ${head.hash}`]);
      expect(withHead).toMatchObject({ code: 0 });
      expect(withHead.out).toMatch(
        /^journal:verify: 2 events in the whole journal .*chain whole; head seq 2 [0-9a-f]{64}; the given head seq 2 is in the chain\n$/,
      );
      const otherHead = await run(server.url, ['--head', `1 ${head.hash}`]);
      expect(otherHead.code).toBe(1);
      expect(otherHead.out).toMatch(/^journal:verify: the head seq 1 [0-9a-f]{64} differs: the chain has/);
      const { id } = await database.db
        .selectFrom('operation_events')
        .select('id')
        .where('ref', '=', 'cv-1')
        .executeTakeFirstOrThrow();
      await tamper(database.db, sql`update operation_events set at = at + interval '1 second' where ref = 'cv-1'`);
      const broken = await run(server.url, ['--from', '2026-11-25', '--to', '2026-11-25']);
      expect(broken.code).toBe(1);
      expect(broken.out).toMatch(
        new RegExp(`^journal:verify: event ${id} \\(seq 1, ref cv-1, at [^)]+\\) does not match`),
      );
      const bad = await run(server.url, ['--from', 'yesterday']);
      expect(bad.code).toBe(2);
      expect(bad.out).toMatch(/^journal:verify: --from "yesterday" is not a day \(YYYY-MM-DD\)\n$/);
    } finally {
      await database.close();
      await server.drop();
    }
  });
});
