/**
 * The daily statement (src/ops/statement.ts) over real HTTP and as `npm run statement`, on a real database
 * (the PostgreSQL server and PGlite): summed against /ops/payments.csv for the same day it agrees, movement by
 * movement and total by total, in each currency; its head is one the chain holds; the day is the `TZ`
 * setting's; who may call the routes and who may not; bad arguments refused with their reason.
 */
import { spawn } from 'node:child_process';
import { parse } from 'csv-parse/sync';
import { Decimal } from 'decimal.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chainHead, headNotFound, parseHead } from '../../src/journal/chain.js';
import { openDatabase } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { setShownTimeZone } from '../../src/local-time.js';
import { parseStatementArgs } from '../../src/ops/statement-cli.js';
import { STATEMENT_COLUMNS } from '../../src/ops/statement.js';
import { forEachDatabase, serverDatabase } from '../journal/databases.js';
import { seedJournal, startOps, type Refs } from './money-fixtures.js';
import { productArgs, ROOT } from '../product.js';

const AUTH = { user: 'operator', password: 'a long operator password', token: 'an-ops-token-for-scripts-0123456789' };
const OPERATOR = { authorization: `Basic ${Buffer.from(`${AUTH.user}:${AUTH.password}`).toString('base64')}` };
const SCRIPT = { authorization: `Bearer ${AUTH.token}` };

type Row = Record<string, string>;
const table = (text: string): Row[] => {
  const [header, ...rows] = parse(text, { bom: true }) as string[][];
  return rows.map((row) => Object.fromEntries(header!.map((h, i) => [h, row[i]!])));
};

/** Count and sum per currency, kind and state of rows with those columns, as `cur|kind|state -> count sum`. */
function sums(rows: Row[]): Map<string, string> {
  const out = new Map<string, { count: number; sum: Decimal }>();
  for (const r of rows) {
    const key = `${r.currency}|${r.kind}|${r.state}`;
    const s = out.get(key) ?? { count: 0, sum: new Decimal(0) };
    s.count += 1;
    s.sum = s.sum.plus(r.amount!);
    out.set(key, s);
  }
  return new Map([...out].map(([k, s]) => [k, `${s.count} ${s.sum.toFixed()}`]));
}

/** 600 payouts on 2026-11-23 (more than a batch of the cursor), in UGX and KES, some failed. */
async function seedBulk(journal: Journal): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const ref = `ref-st-${String(i).padStart(4, '0')}`;
    await journal.intend({
      ref,
      kind: 'payout',
      amount: `${100 + i}.25`,
      currency: i % 3 === 0 ? 'KES' : 'UGX',
      payee: `+2567730${String(i).padStart(5, '0')}`,
      channel: 'slack',
      channelUser: 'U0BULK',
      chat: 'slack:C0BULK',
      role: 'finance',
      flow: 'payout',
      at: new Date(Date.UTC(2026, 10, 23, 0, 0, 0) + i * 140_000),
    });
  }
  // Their failures reported on the next day: after the 23rd's last event in the chain.
  for (let i = 0; i < 600; i += 5) {
    await journal.stateReported(`ref-st-${String(i).padStart(4, '0')}`, {
      state: 'failed',
      source: 'read',
      at: new Date('2026-11-24T01:00:00Z'),
    });
  }
}

forEachDatabase('daily statement', (open) => {
  let ops: { url: string; close(): Promise<void> };
  let journal: Journal;
  let refs: Refs;

  beforeAll(async () => {
    journal = new Journal((await open()).db);
    refs = await seedJournal(journal);
    await seedBulk(journal);
    ops = await startOps(journal, AUTH, () => new Date('2026-11-24T12:00:00Z'));
  }, 120_000);
  afterAll(() => ops?.close());
  afterEach(() => setShownTimeZone('UTC'));

  const get = async (path: string, headers: Record<string, string> = OPERATOR) => {
    const res = await fetch(`${ops.url}${path}`, { headers });
    expect(res.status, path).toBe(200);
    return res;
  };

  it('summed against /ops/payments.csv for the same day, agrees in every currency, kind and state', async () => {
    for (const day of ['2026-11-22', '2026-11-23']) {
      const statement = await get(`/ops/statements.csv?date=${day}`);
      expect(statement.headers.get('content-disposition')).toMatch(`statement-${day}.csv`);
      const rows = table(await statement.text());
      const payments = table(await (await get(`/ops/payments.csv?from=${day}&to=${day}`)).text());
      const movements = rows.filter((r) => r.record === 'movement');
      // The same operations, each with our ref and the service's id.
      expect(movements.map((m) => `${m.ref} ${m.id}`).sort()).toEqual(payments.map((p) => `${p.ref} ${p.id}`).sort());
      // The totals: what the payments export sums to, per currency, kind and state.
      const totals = new Map(
        rows
          .filter((r) => r.record === 'total')
          .map((t) => [`${t.currency}|${t.kind}|${t.state}`, `${t.count} ${t.amount}`]),
      );
      expect(totals).toEqual(sums(payments));
      expect(totals).toEqual(sums(movements));
      // Per currency, the count of its movements; no amount summed across kinds.
      const currencies = rows.filter((r) => r.record === 'currency');
      for (const c of currencies) {
        expect(Number(c.count)).toBe(payments.filter((p) => p.currency === c.currency).length);
        expect(c.amount).toBe('');
      }
      expect(currencies.map((c) => c.currency).sort()).toEqual([...new Set(payments.map((p) => p.currency))].sort());
      // The day and the head on every row, the head the response names.
      expect(new Set(rows.map((r) => r.date))).toEqual(new Set([day]));
      expect(new Set(rows.map((r) => r.journalHead))).toEqual(new Set([statement.headers.get('journal-head')]));
    }
    const day23 = table(await (await get('/ops/statements.csv?date=2026-11-23')).text());
    expect(day23.filter((r) => r.record === 'movement')).toHaveLength(602);
    expect(day23.find((r) => r.record === 'total' && r.currency === 'KES' && r.kind === 'request')).toMatchObject({
      state: 'completed',
      count: '1',
      amount: '3000',
    });
    expect(day23.find((r) => r.key === refs.telegram)).toMatchObject({ id: 'req_6', state: 'completed' });
  });

  it('gives the same as JSON, with the head of the day: one the chain holds', async () => {
    const csv = table(await (await get('/ops/statements.csv?date=2026-11-23', SCRIPT)).text());
    const res = await get('/ops/statements.json?date=2026-11-23', SCRIPT);
    const json = (await res.json()) as {
      date: string;
      zone: string;
      from: string;
      to: string;
      journalHead: { seq: string; hash: string };
      movements: Row[];
      currencies: Array<{ currency: string; count: number; totals: Row[] }>;
    };
    expect(json).toMatchObject({
      date: '2026-11-23',
      zone: 'UTC',
      from: '2026-11-23T00:00:00.000Z',
      to: '2026-11-24T00:00:00.000Z',
    });
    expect(json.movements.map((m) => m.ref)).toEqual(csv.filter((r) => r.record === 'movement').map((r) => r.ref));
    expect(
      json.currencies.flatMap((c) => c.totals.map((t) => `${t.currency} ${t.kind} ${t.state} ${t.count} ${t.amount}`)),
    ).toEqual(
      csv.filter((r) => r.record === 'total').map((t) => `${t.currency} ${t.kind} ${t.state} ${t.count} ${t.amount}`),
    );
    expect(`${json.journalHead.seq} ${json.journalHead.hash}`).toBe(res.headers.get('journal-head'));
    expect(await headNotFound(journal.db, json.journalHead)).toBeUndefined();
    // The head of a day is its last event: the 22nd's is before the 23rd's, and the 23rd's is before the
    // failures reported on the 24th.
    const head22 = parseHead((await get('/ops/statements.json?date=2026-11-22')).headers.get('journal-head')!)!;
    expect(await headNotFound(journal.db, head22)).toBeUndefined();
    expect(BigInt(head22.seq)).toBeLessThan(BigInt(json.journalHead.seq));
    expect(BigInt(json.journalHead.seq)).toBeLessThan(BigInt((await chainHead(journal.db))!.seq));
    // A day before anything: no movement, no head.
    const empty = (await (await get('/ops/statements.json?date=2020-01-01')).json()) as Record<string, unknown>;
    expect(empty).toMatchObject({ movements: [], currencies: [], journalHead: null });
  });

  it("takes the TZ setting's day: in Nairobi the 23rd begins at 21:00 UTC on the 22nd", async () => {
    setShownTimeZone('Africa/Nairobi');
    const json = (await (await get('/ops/statements.json?date=2026-11-23')).json()) as {
      zone: string;
      from: string;
      to: string;
      movements: Row[];
    };
    expect(json).toMatchObject({
      zone: 'Africa/Nairobi',
      from: '2026-11-22T21:00:00.000Z',
      to: '2026-11-23T21:00:00.000Z',
    });
    const payments = table(await (await get('/ops/payments.csv?from=2026-11-22&to=2026-11-23')).text()).filter(
      (p) => p.created! >= json.from && p.created! < json.to,
    );
    expect(json.movements.map((m) => m.ref).sort()).toEqual(payments.map((p) => p.ref).sort());
    expect(json.movements.length).toBeLessThan(602);
  });

  it('lets operators and the OPS_TOKEN read the files, only operators the page; refuses anyone else', async () => {
    for (const path of ['/ops/statements.csv?date=2026-11-23', '/ops/statements.json?date=2026-11-23']) {
      for (const headers of [{}, { authorization: `Bearer ${AUTH.token}x` }, { authorization: 'Bearer ' }] as Row[]) {
        const res = await fetch(`${ops.url}${path}`, { headers });
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(await res.text()).not.toContain('ref-st-');
      }
      await get(path, SCRIPT);
    }
    expect((await fetch(`${ops.url}/ops/statements`, { headers: SCRIPT })).status).toBe(401);
    expect((await fetch(`${ops.url}/ops/statements`)).status).toBe(401);
    expect(await (await get('/ops/statements')).text()).toContain('type="date"');
  });

  it.each([
    ['', /date is required/],
    ['date=', /date is a day/],
    ['date=2026-02-30', /date is a day/],
    ['date=23-11-2026', /date is a day/],
    ['date=2026-11-23&date=2026-11-24', /date is required, once/],
    ['date=2026-11-23&from=2026-11-01', /from: not taken/],
  ])('refuses ?%s with 400 and its reason', async (q, reason) => {
    for (const path of ['/ops/statements.csv', '/ops/statements.json', '/ops/statements']) {
      if (path === '/ops/statements' && q === '') continue;
      const res = await fetch(`${ops.url}${path}?${q}`, { headers: OPERATOR });
      expect(res.status, `${path}?${q}`).toBe(400);
      expect(await res.text(), `${path}?${q}`).toMatch(reason);
    }
  });
});

describe('npm run statement', { timeout: 120_000 }, () => {
  it('takes one day and --json, and refuses anything else saying why', () => {
    expect(parseStatementArgs(['--date', '2026-11-23'])).toEqual({ date: '2026-11-23', json: false });
    expect(parseStatementArgs(['--json', '--date=2026-11-23'])).toEqual({ date: '2026-11-23', json: true });
    expect(parseStatementArgs([])).toEqual({ error: expect.stringMatching(/^--date is required/) });
    expect(parseStatementArgs(['--date', '2026-02-30'])).toEqual({ error: expect.stringMatching(/is not a day/) });
    expect(parseStatementArgs(['--date'])).toEqual({ error: expect.stringMatching(/needs a day/) });
    expect(parseStatementArgs(['--date', '2026-11-23', '--csv'])).toEqual({
      error: expect.stringMatching(/unknown argument "--csv"/),
    });
  });

  const run = (url: string, args: string[]) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const { TZ: _tz, ...env } = process.env;
      const child = spawn(process.execPath, [...productArgs('src/ops/statement-cli'), ...args], {
        cwd: ROOT,
        env: { ...env, DATABASE_URL: url, LOG_LEVEL: 'silent' },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (code) => resolve({ code, out, err }));
    });

  it('writes the CSV the route gives on standard output, the JSON with --json; exits 2 on bad arguments', async () => {
    const server = await serverDatabase('statement_cli');
    const database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
    const journal = new Journal(database.db);
    await migrate(database.db);
    await seedJournal(journal);
    const ops = await startOps(journal, AUTH, () => new Date('2026-11-24T12:00:00Z'));
    try {
      const csv = await run(server.url, ['--date', '2026-11-23']);
      expect(csv).toMatchObject({ code: 0, err: '' });
      const served = await (await fetch(`${ops.url}/ops/statements.csv?date=2026-11-23`, { headers: OPERATOR })).text();
      expect(csv.out).toBe(served);
      expect(table(csv.out)[0]).toEqual(Object.fromEntries(STATEMENT_COLUMNS.map((c) => [c, expect.any(String)])));
      const json = await run(server.url, ['--date', '2026-11-23', '--json']);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.out)).toMatchObject({
        date: '2026-11-23',
        zone: 'UTC',
        currencies: [
          { currency: 'KES', count: 1, totals: [{ kind: 'request', state: 'completed', count: 1, amount: '3000' }] },
          { currency: 'UGX', count: 1, totals: [{ kind: 'payment', state: 'refused', count: 1, amount: '10' }] },
        ],
      });
      const bad = await run(server.url, ['--date', 'yesterday']);
      expect(bad).toMatchObject({ code: 2, out: '' });
      expect(bad.err).toMatch(/^statement: --date "yesterday" is not a day \(YYYY-MM-DD\)\n$/);
    } finally {
      await ops.close();
      await database.close();
      await server.drop();
    }
  });
});
