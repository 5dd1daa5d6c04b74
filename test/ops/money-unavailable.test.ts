/**
 * The money routes when the database does not answer: each says so with a 503 and a reason, never a 500,
 * never a hang (the pool's connection attempt to a port nothing listens on fails at once).
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import type { Schema } from '../../src/journal/schema.js';
import { startOps } from './money-fixtures.js';

const AUTH = { user: 'operator', password: 'a long operator password', token: 'an-ops-token-for-scripts-0123456789' };
const OPERATOR = { authorization: `Basic ${Buffer.from(`${AUTH.user}:${AUTH.password}`).toString('base64')}` };

let db: Kysely<Schema>;
let ops: { url: string; close(): Promise<void> };
beforeAll(async () => {
  // Port 1 on the loopback: nothing listens, every connection is refused.
  const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1 });
  pool.on('error', () => {});
  db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  ops = await startOps(new Journal(db), AUTH);
});
afterAll(async () => {
  await ops?.close();
  await db?.destroy();
});

it('answers 503 with a reason on every money route when the database does not answer', async () => {
  for (const path of [
    '/ops/payments.json',
    '/ops/payments.csv',
    '/ops/payments',
    '/ops/payments/ref-1',
    '/ops/reconciliation',
    '/ops/journal',
    '/ops/statements?date=2026-11-23',
    '/ops/statements.csv?date=2026-11-23',
    '/ops/statements.json?date=2026-11-23',
    '/ops/money.json',
  ]) {
    const res = await fetch(`${ops.url}${path}`, { headers: OPERATOR });
    expect(res.status, path).toBe(503);
    expect(await res.text(), path).toMatch(/could not be read/);
  }
  // A bad value is still a 400: the query is read before the database is asked.
  expect((await fetch(`${ops.url}/ops/payments.json?state=paid`, { headers: OPERATOR })).status).toBe(400);
});
