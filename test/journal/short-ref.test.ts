/**
 * The short ref (migration 0340, src/journal/short-ref.ts): drawn by the intent's insert, the same on a
 * repeated intent, never given twice (also after the database is opened again, as a restart does), never
 * changed; rendered the same in SQL and in TypeScript, in an alphabet without 0, O, 1 and I; found by the
 * operator's search as typed.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { readShortRef, referenceOf, SHORT_REF_SHAPE, shortRefOf } from '../../src/journal/short-ref.js';
import { forEachDatabase, serverDatabase } from './databases.js';
import { anIntent } from './intents.js';

describe('short refs in TypeScript', () => {
  it('are MC- and five characters or more, none of 0, O, 1, I, one per number', () => {
    const seen = new Set<string>();
    for (let n = 0n; n < 20_000n; n++) {
      const ref = shortRefOf(n);
      expect(ref).toMatch(SHORT_REF_SHAPE);
      expect(ref).not.toMatch(/^MC-.*[01OI]/);
      seen.add(ref);
    }
    expect(seen.size).toBe(20_000);
    // Refs one after the other differ in more than their last character.
    expect(shortRefOf(1n).slice(0, -1)).not.toBe(shortRefOf(2n).slice(0, -1));
    expect(shortRefOf(32n ** 5n - 1n)).toHaveLength(8);
    expect(shortRefOf(32n ** 5n)).toHaveLength(9);
  });

  it('are read as typed: any case, with or without the dash or MC', () => {
    expect(readShortRef('mc7k2qx')).toBe('MC-7K2QX');
    expect(readShortRef('MC-7K2QX')).toBe('MC-7K2QX');
    expect(readShortRef(' mc 7k2-qx ')).toBe('MC-7K2QX');
    expect(readShortRef('7k2qx')).toBe('MC-7K2QX');
    expect(readShortRef('MC-MCABC')).toBe('MC-MCABC');
    expect(readShortRef('MC-7K2Q0')).toBeUndefined();
    expect(readShortRef('12')).toBeUndefined();
    expect(readShortRef('3f2a9c1e-6d1b-4c43-9d1e-0a6f7c1b2d3e:pay')).toBeUndefined();
  });

  it('stand beside the service id where there is one', () => {
    expect(referenceOf({ short_ref: 'MC-7K2QX', service_id: '12' })).toBe('MC-7K2QX (service 12)');
    expect(referenceOf({ short_ref: 'MC-7K2QX', service_id: null })).toBe('MC-7K2QX');
  });
});

forEachDatabase('short_ref', (open) => {
  it('renders in SQL as in TypeScript', async () => {
    const { db } = await open();
    const numbers = [0n, 1n, 2n, 31n, 32n, 1000n, 32n ** 5n - 1n, 32n ** 5n, 32n ** 6n + 5n, 2n ** 62n];
    const { rows } = await sql<{ n: string; ref: string }>`
      select n::text as n, journal_short_ref(n) as ref
      from unnest(${numbers.map(String)}::bigint[]) as n`.execute(db);
    expect(rows.map((r) => r.ref)).toEqual(numbers.map(shortRefOf));
  });

  it('is given by the intent, kept by a repeat, and never changed', async () => {
    const journal = new Journal((await open()).db);
    const first = await journal.intend(anIntent('sr-1'));
    expect(first).toMatch(SHORT_REF_SHAPE);
    expect(await journal.intend(anIntent('sr-1'))).toBe(first);
    const second = await journal.intend(anIntent('sr-2', { kind: 'request' }));
    expect(second).toMatch(SHORT_REF_SHAPE);
    expect(second).not.toBe(first);
    expect((await journal.byRef('sr-1'))?.short_ref).toBe(first);
    await expect(
      sql`update operations set short_ref = ${second} where ref = 'sr-1'`.execute(journal.db),
    ).rejects.toMatchObject({ code: '23514' });
    await expect(
      sql`update operations set short_ref = 'MC-22222' where ref = 'sr-1'`.execute(journal.db),
    ).rejects.toThrow(/short ref/);
  });

  it('is found as typed, and the search still finds our ref and the service id', async () => {
    const journal = new Journal((await open()).db);
    const short = await journal.intend(anIntent('sr-find'));
    await journal.answered('sr-find', { serviceId: '4041' });
    await journal.intend(anIntent('sr-other'));
    const typed = [short, short.toLowerCase(), short.replace('-', '').toLowerCase(), short.slice(3), 'sr-find', '4041'];
    for (const ref of typed) {
      expect(
        (await journal.search({ ref })).items.map((op) => op.ref),
        ref,
      ).toEqual(['sr-find']);
    }
    expect((await journal.search({ ref: 'MC-ZZZZZZZZ' })).items).toEqual([]);
  });
});

describe('short refs across a restart (PostgreSQL)', { timeout: 120_000 }, () => {
  it('are never given again by the database opened anew', async () => {
    const server = await serverDatabase('short_ref_restart');
    try {
      const refs: string[] = [];
      for (const round of [1, 2, 3]) {
        const database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
        try {
          await migrate(database.db);
          const journal = new Journal(database.db);
          for (let i = 0; i < 5; i++) refs.push(await journal.intend(anIntent(`restart-${round}-${i}`)));
        } finally {
          await database.close();
        }
      }
      expect(new Set(refs).size).toBe(15);
    } finally {
      await server.drop();
    }
  });
});
