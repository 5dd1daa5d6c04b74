/**
 * The product's pool carries a server-side statement timeout (DATABASE_STATEMENT_TIMEOUT_MS): a statement the
 * database does not finish in time is cancelled by the server, so a hop fails instead of hanging. Migrations
 * and retention (the owner's pool, a pool of its own with one role too) are not bounded by it.
 */
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openJournal } from '../../src/journal/roles.js';
import { serverDatabase, type ServerDatabase } from './databases.js';

let server: ServerDatabase | undefined;
afterAll(async () => {
  await server?.drop();
});

describe('the statement timeout (PostgreSQL)', { timeout: 60_000 }, () => {
  it('defaults to 8 s', () => {
    expect(loadConfig({}).DATABASE_STATEMENT_TIMEOUT_MS).toBe(8000);
  });

  it("cancels the product's statement that runs past it, and leaves the owner's unbounded", async () => {
    server = await serverDatabase('statement_timeout');
    const journals = await openJournal({
      DATABASE_URL: server.url,
      DATA_DIR: 'memory://',
      DATABASE_STATEMENT_TIMEOUT_MS: 300,
    });
    try {
      expect(journals.owner).not.toBe(journals.database);
      const shown = async (db: typeof journals.database.db) =>
        (await sql<{ statement_timeout: string }>`show statement_timeout`.execute(db)).rows[0]!.statement_timeout;
      expect(await shown(journals.database.db)).toBe('300ms');
      expect(await shown(journals.owner.db)).toBe('0');
      // 57014: query_canceled, by the server (the client's own wait is 10 s).
      await expect(sql`select pg_sleep(3)`.execute(journals.database.db)).rejects.toMatchObject({ code: '57014' });
      // The pool is still good after it.
      expect(await shown(journals.database.db)).toBe('300ms');
    } finally {
      await journals.close();
    }
  });
});
