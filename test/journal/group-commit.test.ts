/**
 * Intents handed to the journal while another statement of intents is under way are written together in the
 * next (src/journal/journal.ts `intend`), on PostgreSQL and PGlite: each committed once with its own short ref
 * and the chain whole; a refusal by the limit or a value the database refuses fails only its own intent; from
 * two pools at once (two processes) every intent is written once and no reservation passes a limit. On
 * PostgreSQL, a connection killed under a statement of several tells none of its callers "written".
 */
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { expect, it } from 'vitest';
import type { Reservation } from '../../src/conversation/services/limits.js';
import { verifyChain } from '../../src/journal/chain.js';
import type { Database } from '../../src/journal/database.js';
import { Journal, OverDailyLimit, type Intent } from '../../src/journal/journal.js';
import type { Schema } from '../../src/journal/schema.js';
import { until } from '../until.js';
import { forEachDatabase } from './databases.js';
import { anIntent } from './intents.js';

const DAY = '2026-11-20';

/** A reservation of `minor` hundredths (limit `limit`) for `person`, under the intent's ref. */
const reservation = (ref: string, person: string, minor = 100, limit = 1_000_000): Reservation => ({
  ref,
  person,
  currency: 'UGX',
  day: DAY,
  amount: (minor / 100).toFixed(2),
  minor,
  limit,
});

/** How many statements of several intents the database ran while `fn` ran. */
async function together<T>(database: Database, fn: () => Promise<T>): Promise<{ result: T; statements: number }> {
  let statements = 0;
  const stop = database.watch((text) => {
    if (text.includes('union all') && text.includes('insert into operation_events')) statements++;
  });
  try {
    return { result: await fn(), statements };
  } finally {
    stop();
  }
}

async function rowsOf(db: Kysely<Schema>, like: string) {
  const operations = await db.selectFrom('operations').select('ref').where('ref', 'like', like).execute();
  const events = await db
    .selectFrom('operation_events')
    .select('ref')
    .where('ref', 'like', like)
    .where('type', '=', 'intent')
    .execute();
  const { rows: reserved } = await sql<{ ref: string }>`
    select ref from spend_reservations where ref like ${like}`.execute(db);
  return {
    operations: operations.map((r) => r.ref),
    events: events.map((r) => r.ref),
    reserved: reserved.map((r) => r.ref),
  };
}

const settle = <T>(promises: Array<Promise<T>>) => Promise.allSettled(promises);

forEachDatabase('group-commit', (open, engine) => {
  it('writes many intents handed over at once together, each once, with its own short ref', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    const refs = Array.from({ length: 40 }, (_, i) => `many-${i}:pay`);
    const { result, statements } = await together(database, () =>
      Promise.all(
        refs.map((ref, i) =>
          // Some with a reservation (of four persons), some without, some owing an outcome.
          i % 3 === 0
            ? journal.intend(anIntent(ref))
            : journal.intend(
                anIntent(ref, i % 2 ? { owed: { record: { ref }, checkAt: new Date('2026-11-20T10:05:00Z') } } : {}),
                reservation(ref, `p${i % 4}`),
              ),
        ),
      ),
    );
    expect(statements).toBeGreaterThan(0);
    expect(new Set(result).size).toBe(40);
    const rows = await rowsOf(database.db, 'many-%');
    expect(rows.operations.sort()).toEqual([...refs].sort());
    expect(rows.events.sort()).toEqual([...refs].sort());
    expect(rows.reserved).toHaveLength(refs.filter((_, i) => i % 3 !== 0).length);
    const owed = await sql<{ n: number }>`select count(*)::int as n from owed_outcomes where ref like 'many-%'`.execute(
      database.db,
    );
    expect(owed.rows[0]!.n).toBe(refs.filter((_, i) => i % 3 !== 0 && i % 2 === 1).length);
    // Each caller was told the short ref its own row holds.
    const byRef = await database.db
      .selectFrom('operations')
      .select(['ref', 'short_ref'])
      .where('ref', 'like', 'many-%')
      .execute();
    expect(Object.fromEntries(byRef.map((r) => [r.ref, r.short_ref]))).toEqual(
      Object.fromEntries(refs.map((ref, i) => [ref, result[i]])),
    );
    // Written again, together, it changes nothing and gives the same short refs.
    expect(await Promise.all(refs.map((ref) => journal.intend(anIntent(ref))))).toEqual(result);
    expect((await verifyChain(database.db)).broken).toBeUndefined();
  });

  it('refuses only the intent the limit refuses in the middle of a statement of several', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    // Amina's limit is 1,000 hundredths: her 600, then 600 again (refused: 1,200), then 300 (fits: 900).
    const plan: Array<[string, Reservation]> = [
      ['lim-0:pay', reservation('lim-0:pay', 'bo', 100)],
      ['lim-1:pay', reservation('lim-1:pay', 'amina', 600, 1000)],
      ['lim-2:pay', reservation('lim-2:pay', 'cy', 100)],
      ['lim-3:pay', reservation('lim-3:pay', 'amina', 600, 1000)],
      ['lim-4:pay', reservation('lim-4:pay', 'amina', 300, 1000)],
      ['lim-5:pay', reservation('lim-5:pay', 'di', 100)],
    ];
    const { result, statements } = await together(database, () =>
      settle(plan.map(([ref, r]) => journal.intend(anIntent(ref), r))),
    );
    // The first went alone (nothing was under way), the other five together.
    expect(statements).toBe(1);
    expect(result.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    const refused = (result[3] as PromiseRejectedResult).reason as unknown;
    expect(refused).toBeInstanceOf(OverDailyLimit);
    expect((refused as OverDailyLimit).total).toBe(600);
    const rows = await rowsOf(database.db, 'lim-%');
    const written = plan.map(([ref]) => ref).filter((ref) => ref !== 'lim-3:pay');
    expect(rows.operations.sort()).toEqual(written);
    expect(rows.events.sort()).toEqual(written);
    expect(rows.reserved.sort()).toEqual(written);
    const { rows: day } = await sql<{ total: string }>`
      select total::text from spend_days where person_id = 'amina' and day = ${DAY}`.execute(database.db);
    expect(day[0]!.total).toBe('900');
    expect((await verifyChain(database.db)).broken).toBeUndefined();
  });

  it('fails only the intent whose value the database refuses; the others of its statement are committed', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    const alone = await journal.intend(anIntent('bad-alone:pay', { amount: 'twelve' })).catch((e: unknown) => e);
    const refs = ['bad-0:pay', 'bad-1:pay', 'bad-2:pay', 'bad-3:pay'];
    const { result, statements } = await together(database, () =>
      settle(
        refs.map((ref, i) =>
          journal.intend(anIntent(ref, i === 2 ? { amount: 'twelve' } : {}), reservation(ref, `q${i}`)),
        ),
      ),
    );
    expect(statements).toBe(1);
    expect(result.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    // Its error is the one it has when written alone.
    const error = (result[2] as PromiseRejectedResult).reason as { code?: string; message?: string };
    expect(error.code).toBe('22P02');
    expect(error.code).toBe((alone as { code?: string }).code);
    const rows = await rowsOf(database.db, 'bad-%');
    expect(rows.operations.sort()).toEqual(['bad-0:pay', 'bad-1:pay', 'bad-3:pay']);
    expect(rows.events.sort()).toEqual(['bad-0:pay', 'bad-1:pay', 'bad-3:pay']);
    expect(rows.reserved.sort()).toEqual(['bad-0:pay', 'bad-1:pay', 'bad-3:pay']);
    expect((await verifyChain(database.db)).broken).toBeUndefined();
  });

  it('writes a repeat of a waiting intent after it: one row, the same short ref to both', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    const intents: Intent[] = ['rep-0:pay', 'rep-1:pay', 'rep-1:pay', 'rep-2:pay', 'rep-1:pay'].map((ref) =>
      anIntent(ref),
    );
    const refs = await Promise.all(intents.map((intent) => journal.intend(intent, reservation(intent.ref, 'rae'))));
    expect(refs[1]).toBe(refs[2]);
    expect(refs[1]).toBe(refs[4]);
    const rows = await rowsOf(database.db, 'rep-%');
    expect(rows.operations.sort()).toEqual(['rep-0:pay', 'rep-1:pay', 'rep-2:pay']);
    expect(rows.events.sort()).toEqual(['rep-0:pay', 'rep-1:pay', 'rep-2:pay']);
    const { rows: day } = await sql<{ total: string }>`
      select total::text from spend_days where person_id = 'rae' and day = ${DAY}`.execute(database.db);
    expect(day[0]!.total).toBe('300');
  });

  if (engine !== 'postgres') return;

  it('from two pools at once: every intent once, the limits kept, the chain whole', async () => {
    const one = new Journal((await open()).db);
    const two = new Journal((await open({ fresh: true })).db);
    // 120 intents of six persons (limit 2,000: 20 of 100 each fit), alternately from each pool.
    const refs = Array.from({ length: 120 }, (_, i) => `pools-${i}:pay`);
    const result = await settle(
      refs.map((ref, i) =>
        (i % 2 ? one : two).intend(anIntent(ref), reservation(ref, `s${Math.floor(i / 2) % 6}`, 100, 2000)),
      ),
    );
    const rejected = result.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
    expect(rejected).toEqual([]);
    const again = await settle(
      Array.from({ length: 12 }, (_, i) => `pools-over-${i}:pay`).map((ref, i) =>
        (i % 2 ? one : two).intend(anIntent(ref), reservation(ref, `s${i % 6}`, 100, 2000)),
      ),
    );
    expect(again.every((r) => r.status === 'rejected' && r.reason instanceof OverDailyLimit)).toBe(true);
    const rows = await rowsOf(one.db, 'pools-%');
    expect(rows.operations.sort()).toEqual([...refs].sort());
    expect(rows.events.sort()).toEqual([...refs].sort());
    expect(rows.reserved.sort()).toEqual([...refs].sort());
    expect((await verifyChain(one.db)).broken).toBeUndefined();
  });

  it('tells no caller "written" when the connection is killed under a statement of several', async () => {
    const database = await open({ fresh: true });
    const journal = new Journal(database.db);
    // Another connection holds Kim's day row: the statement of several waits on it, and is killed there.
    const holder = new pg.Client({ connectionString: await urlOf(database) });
    await holder.connect();
    try {
      await holder.query(
        `insert into spend_days (person_id, currency, day, total) values ('kim', 'UGX', $1, 0)
        on conflict do nothing`,
        [DAY],
      );
      await holder.query('begin');
      await holder.query(`select 1 from spend_days where person_id = 'kim' and day = $1 for update`, [DAY]);
      const first = journal.intend(anIntent('kill-0:pay'), reservation('kill-0:pay', 'lee'));
      const waiting = ['kill-1:pay', 'kill-2:pay', 'kill-3:pay'].map((ref, i) =>
        journal.intend(anIntent(ref), reservation(ref, i === 1 ? 'kim' : `m${i}`)),
      );
      // Every caller's answer is awaited, whatever happens to the test.
      const rest = settle(waiting);
      await first;
      // Asked outside the holder's transaction, which keeps the first look at pg_stat_activity it took.
      const admin = new pg.Client({ connectionString: await urlOf(database) });
      await admin.connect();
      try {
        const pid = await until('the statement of several waiting on the held row', async () => {
          const { rows } = await admin.query<{ pid: number }>(
            `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
               and query like '%union all%'`,
          );
          return rows[0]?.pid;
        });
        await admin.query('select pg_terminate_backend($1)', [pid]);
      } finally {
        await admin.end();
      }
      const result = await rest;
      expect(result.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      await holder.query('rollback');
      const rows = await rowsOf(database.db, 'kill-%');
      expect(rows.operations).toEqual(['kill-0:pay']);
      expect(rows.reserved).toEqual(['kill-0:pay']);
      // The journal goes on: the next intents are written.
      expect(await journal.intend(anIntent('kill-4:pay'), reservation('kill-4:pay', 'kim'))).toBeTruthy();
      expect((await verifyChain(database.db)).broken).toBeUndefined();
    } finally {
      await holder.end();
    }
  });
});

/** The URL of a test database (its pool's). */
async function urlOf(database: Database): Promise<string> {
  const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(database.db);
  const url = new URL(process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/${rows[0]!.name}`;
  return url.toString();
}
