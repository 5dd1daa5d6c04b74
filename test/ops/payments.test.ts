/**
 * The operator's money routes over real HTTP, on a real database (the PostgreSQL server and PGlite): the
 * search as JSON, the CSV export as a spreadsheet reads it, the timeline; who may call them (Basic with
 * OPS_USER / OPS_PASSWORD, Bearer OPS_TOKEN for the JSON and CSV only) and who may not (401); hostile query
 * values (400 with a reason, never a 500).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'csv-parse/sync';
import express from 'express';
import { beforeAll, afterAll, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import type { Funnel } from '../../src/ops/funnel.js';
import { addOpsPage } from '../../src/ops/page.js';
import { headNotFound, parseHead, verifyChain } from '../../src/journal/chain.js';
import { CSV_COLUMNS, HEAD_COLUMN } from '../../src/ops/payments.js';
import { SHORT_REF_SHAPE } from '../../src/journal/short-ref.js';
import { forEachDatabase } from '../journal/databases.js';
import { FORMULA_NAME, FORMULA_USER, MARKUP_TEXT, seedJournal, type Refs } from './money-fixtures.js';

const USER = 'operator';
const PASSWORD = 'a long operator password';
const TOKEN = 'an-ops-token-for-scripts-0123456789';
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const OPERATOR = { authorization: basic(USER, PASSWORD) };
const SCRIPT = { authorization: `Bearer ${TOKEN}` };

/** A cell a spreadsheet would run: it starts with a formula character and is not a plain number. */
const runs = (cell: string): boolean => /^[=+\-@\t\r]/.test(cell) && !/^[+-]?\d+(\.\d+)?$/.test(cell);

forEachDatabase('ops-payments', (open) => {
  let server: Server;
  let url: string;
  let journal: Journal;
  let refs: Refs;

  beforeAll(async () => {
    journal = new Journal((await open()).db);
    refs = await seedJournal(journal);
    // 600 more: the CSV fetches from its cursor 500 rows at a time.
    for (let i = 0; i < 600; i++) {
      await journal.intend({
        ref: `ref-bulk-${String(i).padStart(5, '0')}`,
        kind: 'payout',
        amount: String(100 + i),
        currency: 'UGX',
        payee: `+2567730${String(i).padStart(5, '0')}`,
        channel: 'slack',
        channelUser: 'U0BULK',
        chat: 'slack:C0BULK',
        role: 'finance',
        flow: 'payout',
        at: new Date(Date.UTC(2026, 9, 1, 0, 0, i)),
      });
    }
    const app = express();
    addOpsPage(app, {
      funnel: { daysKept: 30 } as Funnel,
      metrics: {
        status: async () => ({ queueDepth: 0, service: { byStatus: {}, total: 0, rateLimited: 0, errors: 0 } }),
      },
      credentials: { user: USER, password: PASSWORD },
      opsToken: TOKEN,
      open: false,
      journal,
      country: { defaultCountry: 'UG' },
      signInLimit: { failures: 1000, windowSeconds: 60 },
      now: () => new Date('2026-11-24T12:00:00Z'),
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  const json = async (query: string, headers: Record<string, string> = OPERATOR) => {
    const res = await fetch(`${url}/ops/payments.json${query}`, { headers });
    expect(res.status, query).toBe(200);
    return (await res.json()) as { items: Array<Record<string, unknown>>; next?: string };
  };

  it('searches by phone (as typed locally), ref, service id, channel, state and days', async () => {
    expect((await json('?phone=0772000001')).items.map((i) => i.key)).toEqual([refs.completed]);
    // The user on USSD is a phone number too.
    expect((await json('?phone=%2B256772999003')).items.map((i) => i.key)).toEqual([refs.open]);
    expect((await json(`?ref=${refs.failed}`)).items).toEqual([
      expect.objectContaining({
        // Ours, the short ref people were told; the service's id and our key each in a field of their own.
        ref: expect.stringMatching(SHORT_REF_SHAPE),
        id: 'pay_failed_2',
        key: refs.failed,
        kind: 'payment',
        amount: '250.50',
        currency: 'UGX',
        payee: '+256772000002',
        state: 'failed',
        channel: 'slack',
        user: 'U0MAKER',
        created: '2026-11-21T10:00:00.000Z',
      }),
    ]);
    expect((await json('?id=req_6')).items.map((i) => i.key)).toEqual([refs.telegram]);
    expect((await json('?channel=telegram')).items.map((i) => i.key)).toEqual([refs.telegram]);
    expect((await json('?state=completed')).items.map((i) => i.key)).toEqual([refs.telegram, refs.completed]);
    expect((await json('?from=2026-11-21&to=2026-11-22')).items.map((i) => i.key)).toEqual([
      refs.held,
      refs.open,
      refs.failed,
    ]);
    expect((await json('?channel=slack&state=intended&from=2026-11-01')).items.map((i) => i.key)).toEqual([refs.held]);
    expect((await json('?phone=0772000009')).items).toEqual([]);
  });

  it('pages the JSON with size and next, newest first, every operation once', async () => {
    const seen: string[] = [];
    let page = await json('?size=250');
    seen.push(...page.items.map((i) => String(i.key)));
    while (page.next) {
      page = await json(`?size=250&cursor=${page.next}`);
      seen.push(...page.items.map((i) => String(i.key)));
    }
    expect(seen).toHaveLength(606);
    expect(new Set(seen).size).toBe(606);
    expect(seen[0]).toBe(refs.telegram);
  });

  it('streams the CSV of every operation found; a spreadsheet reads each cell as written, no formula to run', async () => {
    const res = await fetch(`${url}/ops/payments.csv`, { headers: OPERATOR });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toMatch(
      /^attachment; filename="?payments-\d{4}-\d{2}-\d{2}\.csv"?$/,
    );
    // Streamed: sent in chunks as it is read, not with a length known beforehand.
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const text = await res.text();
    const rows = parse(text, { bom: true }) as string[][];
    expect(rows[0]).toEqual([...CSV_COLUMNS, HEAD_COLUMN]);
    expect(rows).toHaveLength(1 + 606);
    for (const [r, row] of rows.entries()) {
      expect(row).toHaveLength(CSV_COLUMNS.length + 1);
      for (const cell of row) expect(runs(cell), `row ${r + 1}: ${JSON.stringify(cell)}`).toBe(false);
    }
    const col = (name: string) => CSV_COLUMNS.indexOf(name as (typeof CSV_COLUMNS)[number]);
    const hostile = rows.find((row) => row[col('key')] === refs.hostile)!;
    expect(hostile[col('user')]).toBe(`'${FORMULA_USER}`);
    expect(hostile[col('payeeName')]).toBe(`'${FORMULA_NAME}`);
    expect(hostile[col('chat')]).toBe(MARKUP_TEXT);
    // Plain numbers stay numbers: amounts, and phone numbers in + format.
    const completed = rows.find((row) => row[col('key')] === refs.completed)!;
    expect(completed[col('amount')]).toBe('1500');
    expect(completed[col('payee')]).toBe('+256772000001');
    expect(completed[col('state')]).toBe('completed');
    // The same filters as the JSON.
    const slack = parse(
      await (await fetch(`${url}/ops/payments.csv?channel=slack&from=2026-11-01`, { headers: OPERATOR })).text(),
    ) as string[][];
    expect(slack.slice(1).map((row) => row[col('key')])).toEqual([refs.held, refs.failed]);
  });

  it("carries the chain's head in the file: the CSV's last column on every row, the JSON's head", async () => {
    const res = await fetch(`${url}/ops/payments.csv?channel=slack`, { headers: OPERATOR });
    const shown = res.headers.get('journal-head')!;
    expect(shown).toMatch(/^\d+ [0-9a-f]{64}$/);
    const [header, ...rows] = parse(await res.text()) as string[][];
    expect(header!.at(-1)).toBe(HEAD_COLUMN);
    expect(rows.length).toBeGreaterThan(500);
    expect(new Set(rows.map((row) => row.at(-1)))).toEqual(new Set([shown]));
    const json = (await (await fetch(`${url}/ops/payments.json?size=1`, { headers: OPERATOR })).json()) as {
      head: { seq: string; hash: string };
    };
    expect(`${json.head.seq} ${json.head.hash}`).toBe(shown);

    // What journal:verify does with the head a saved file shows: the chain holds it, whole up to it, and still
    // after more events are chained on.
    const head = parseHead(rows[0]!.at(-1)!)!;
    expect(await headNotFound(journal.db, head)).toBeUndefined();
    await journal.told(refs.completed, {
      channel: 'ussd',
      to: '+256772999001',
      text: 'A later event.',
      outcome: 'completed',
      at: new Date('2026-11-24T09:00:00Z'),
    });
    expect(await headNotFound(journal.db, head)).toBeUndefined();
    expect((await verifyChain(journal.db)).broken).toBeUndefined();
    // A head that is not the chain's is named as such.
    const forged = { ...head, hash: head.hash.replace(/^./, (c) => (c === '0' ? '1' : '0')) };
    expect(await headNotFound(journal.db, forged)).toMatch(/differs: the chain has/);
    expect(await headNotFound(journal.db, { seq: '999999', hash: head.hash })).toMatch(/not in the chain/);
  });

  it('opens the timeline of an operation: intent, answer, states, approvals, tellings; data as text', async () => {
    const res = await fetch(`${url}/ops/payments/${refs.completed}`, { headers: OPERATOR });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('pay_completed_1');
    for (const word of ['Intent', 'The service&#39;s answer', 'State reported', 'Told']) expect(page).toContain(word);
    expect(page).toContain('You sent UGX 1,500 to John Okello.');
    const held = await (await fetch(`${url}/ops/payments/${refs.held}`, { headers: OPERATOR })).text();
    expect(held).toMatch(/Approval decision[\s\S]*U0CHECKER[\s\S]*invoice 42/);
    const hostile = await (await fetch(`${url}/ops/payments/${refs.hostile}`, { headers: OPERATOR })).text();
    expect(hostile).not.toContain('<script>alert');
    expect(hostile).not.toContain('<img src=x');
    expect(hostile).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect((await fetch(`${url}/ops/payments/ref-nobody-has`, { headers: OPERATOR })).status).toBe(404);
    expect((await fetch(`${url}/ops/payments/${'x'.repeat(101)}`, { headers: OPERATOR })).status).toBe(400);
  });

  it('gives the money per day, currency and kind as the journal says: completed, failed, still open', async () => {
    const res = await fetch(`${url}/ops/money.json?days=7`, { headers: OPERATOR });
    expect(res.status).toBe(200);
    const report = await res.json();
    expect(report.days).toEqual([
      '2026-11-18',
      '2026-11-19',
      '2026-11-20',
      '2026-11-21',
      '2026-11-22',
      '2026-11-23',
      '2026-11-24',
    ]);
    const none = { count: 0, total: '0' };
    expect(report.rows).toEqual([
      {
        day: '2026-11-23',
        currency: 'KES',
        kind: 'request',
        completed: { count: 1, total: '3000' },
        failed: none,
        open: none,
      },
      {
        day: '2026-11-23',
        currency: 'UGX',
        kind: 'payment',
        completed: none,
        failed: { count: 1, total: '10' },
        open: none,
      },
      {
        day: '2026-11-22',
        currency: 'UGX',
        kind: 'payment',
        completed: none,
        failed: none,
        open: { count: 2, total: '907000' },
      },
      {
        day: '2026-11-21',
        currency: 'UGX',
        kind: 'payment',
        completed: none,
        failed: { count: 1, total: '250.5' },
        open: none,
      },
      {
        day: '2026-11-20',
        currency: 'UGX',
        kind: 'payment',
        completed: { count: 1, total: '1500' },
        failed: none,
        open: none,
      },
    ]);
    expect(report.totals).toEqual([
      { currency: 'KES', kind: 'request', completed: { count: 1, total: '3000' }, failed: none, open: none },
      {
        currency: 'UGX',
        kind: 'payment',
        completed: { count: 1, total: '1500' },
        failed: { count: 2, total: '260.5' },
        open: { count: 2, total: '907000' },
      },
    ]);
    const ussd = await (await fetch(`${url}/ops/money.json?days=7&channel=ussd`, { headers: OPERATOR })).json();
    expect(ussd.totals).toEqual([
      {
        currency: 'UGX',
        kind: 'payment',
        completed: { count: 1, total: '1500' },
        failed: none,
        open: { count: 1, total: '7000' },
      },
    ]);
    // The bulk payouts of October are outside the last 30 days.
    expect(
      (await (await fetch(`${url}/ops/money.json?days=30`, { headers: OPERATOR })).json()).totals.map(
        (t: { kind: string }) => t.kind,
      ),
    ).toEqual(['request', 'payment']);
    for (const bad of ['days=0', 'days=31', 'days=x', 'channel=fax', 'from=2026-11-01']) {
      const refused = await fetch(`${url}/ops/money.json?${bad}`, { headers: OPERATOR });
      expect(refused.status, bad).toBe(400);
    }
    expect((await fetch(`${url}/ops/money.json`, { headers: SCRIPT })).status).toBe(401);
    expect((await fetch(`${url}/ops/money.json`)).status).toBe(401);
  });

  const money = ['/ops/payments', '/ops/payments.json', '/ops/payments.csv', `/ops/payments/ref-completed-0001`];

  it.each([
    ['no credentials', undefined],
    ['a wrong password', basic(USER, 'a long operator passwore')],
    ['a wrong Bearer token', `Bearer ${TOKEN}x`],
    ['an empty Bearer token', 'Bearer '],
    ['the password as a Bearer token', `Bearer ${PASSWORD}`],
    ['the token as a Basic password', basic(USER, TOKEN)],
  ])('refuses %s with 401 and shows nothing', async (_what, authorization) => {
    for (const path of money) {
      const res = await fetch(`${url}${path}`, { headers: authorization ? { authorization } : {} });
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
      expect(await res.text(), path).not.toMatch(/ref-completed|pay_completed/);
    }
  });

  it('lets a script read the JSON and the CSV with the OPS_TOKEN, not the pages', async () => {
    expect((await json(`?ref=${refs.completed}`, SCRIPT)).items).toHaveLength(1);
    const csv = await fetch(`${url}/ops/payments.csv?ref=${refs.completed}`, { headers: SCRIPT });
    expect(csv.status).toBe(200);
    expect(await csv.text()).toContain(refs.completed);
    for (const path of ['/ops/payments', `/ops/payments/${refs.completed}`, '/ops', '/ops/funnel.json']) {
      expect((await fetch(`${url}${path}`, { headers: SCRIPT })).status, path).toBe(401);
    }
    // The operator reaches everything.
    for (const path of money) expect((await fetch(`${url}${path}`, { headers: OPERATOR })).status, path).toBe(200);
  });

  it.each([
    ['phone=not-a-number', /phone/],
    ['phone=%2B1234', /phone/],
    [`phone=${'9'.repeat(40)}`, /phone/],
    [`ref=${'a'.repeat(101)}`, /ref/],
    ['ref=a%20b', /ref/],
    ['ref=%00', /ref/],
    [`id=${'x'.repeat(500)}`, /id/],
    ['channel=fax', /channel/],
    ['state=paid', /state/],
    ['state=completed&state=failed', /state/],
    ['from=2026-13-01', /from/],
    ['from=2026-02-30', /from/],
    ['from=yesterday', /from/],
    ['to=2026-11-01T00:00:00Z', /to/],
    ['from=2026-11-02&to=2026-11-01', /from is after to/],
    ['size=0', /size/],
    ['size=501', /size/],
    ['size=-1', /size/],
    ['size=1e3', /size/],
    ['cursor=bm90LWEtY3Vyc29y', /cursor/],
    ['cursor=..%2F..%2F', /cursor/],
    ['ref[$ne]=x', /not taken/],
    ['user=1', /not taken/],
    ['phone[]=0772000001', /not taken/],
  ])('answers ?%s with 400 and its reason, on each route', async (query, reason) => {
    for (const path of ['/ops/payments.json', '/ops/payments.csv', '/ops/payments']) {
      const res = await fetch(`${url}${path}?${query}`, { headers: OPERATOR });
      expect(res.status, path).toBe(400);
      expect(await res.text(), path).toMatch(reason);
    }
  });

  it('refuses a search in one shape whichever check refused it: {detail, reasons}', async () => {
    // A size out of bounds is refused by the query's parser; a well-formed cursor the search never gave, by
    // the journal's search itself.
    for (const [query, reason] of [
      ['size=0', /size/],
      ['cursor=bm90LWEtY3Vyc29y', /cursor/],
    ] as const) {
      for (const path of ['/ops/payments.json', '/ops/payments.csv']) {
        const res = await fetch(`${url}${path}?${query}`, { headers: OPERATOR });
        expect(res.status, `${path}?${query}`).toBe(400);
        const body = (await res.json()) as { detail?: unknown; reasons?: unknown };
        expect(body.detail, `${path}?${query}`).toEqual(expect.any(String));
        expect(body.reasons, `${path}?${query}`).toEqual([expect.stringMatching(reason)]);
      }
    }
  });
});
