/**
 * The money routes of the product itself, started in-process on the PostgreSQL server: a payment made over
 * USSD (Africa's Talking, real HTTP) is found by the operator's search with its final state and who made
 * it, in the JSON, the streamed CSV (read as a spreadsheet would) and its timeline, and counted in the money
 * figures. Who may not call: no credentials, a wrong Bearer token, the token on a page (401); hostile values
 * (400, never a 500).
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { CSV_COLUMNS, HEAD_COLUMN, type PaymentItem } from '../../src/ops/payments.js';
import { AtSession, startProduct } from '../e2e/helpers.js';
import { reading, until } from '../until.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';

const USER = 'operator';
const PASSWORD = 'a long operator password';
const TOKEN = 'an-ops-token-for-scripts-0123456789';
const OPERATOR = { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` };
const SCRIPT = { authorization: `Bearer ${TOKEN}` };
const PAYER = '+256700222001';

let server: ServerDatabase;
let app: RunningApp;

beforeAll(async () => {
  server = await serverDatabase('ops_product');
  app = await startProduct({ DATABASE_URL: server.url, OPS_USER: USER, OPS_PASSWORD: PASSWORD, OPS_TOKEN: TOKEN });
}, 60_000);
afterAll(async () => {
  await app?.stop();
  await server?.drop();
});

const items = async (query: string, headers: Record<string, string> = SCRIPT): Promise<PaymentItem[]> => {
  const res = await fetch(`${app.url}/ops/payments.json${query}`, { headers });
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: PaymentItem[] }).items;
};

describe('the money routes of the product', () => {
  it('finds a USSD payment by the payee, the payer and its ids, with its final state and who made it', async () => {
    const at = new AtSession(app.url, PAYER);
    await at.dial();
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1', '1234']) await at.answer(answer);
    expect(at.screens.at(-1)).toMatch(/^END /);

    const [paid] = await until(
      'the payment completed in the journal',
      reading(
        () => items('?phone=0772000001&state=completed'),
        (found) => found.length === 1,
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    expect(paid).toMatchObject({
      kind: 'payment',
      amount: '5000',
      payee: '+256772000001',
      state: 'completed',
      channel: 'ussd',
      user: PAYER,
    });
    expect(paid!.id).toBeTruthy();
    // (Compared by ref: a telling may still move the row's `updated` meanwhile.)
    const refs = (found: PaymentItem[]) => found.map((item) => item.key);
    expect(refs(await items(`?phone=${encodeURIComponent(PAYER)}`))).toEqual([paid!.key]);
    expect(refs(await items(`?ref=${paid!.key}`, OPERATOR))).toEqual([paid!.key]);
    // Ours, as a teller reads it out: any case, without its dash.
    expect(refs(await items(`?ref=${paid!.ref.replace('-', '').toLowerCase()}`, OPERATOR))).toEqual([paid!.key]);
    expect(refs(await items(`?id=${paid!.id}&channel=ussd`))).toEqual([paid!.key]);
    expect(await items('?channel=slack')).toEqual([]);

    // The CSV a script downloads, read back as a spreadsheet reads it.
    const csv = await fetch(`${app.url}/ops/payments.csv?phone=0772000001`, { headers: SCRIPT });
    expect(csv.status).toBe(200);
    const rows = parse(await csv.text()) as string[][];
    expect(rows[0]).toEqual([...CSV_COLUMNS, HEAD_COLUMN]);
    expect(rows.slice(1).map((row) => Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, row[i]])))).toEqual([
      expect.objectContaining({
        ref: paid!.ref,
        id: paid!.id,
        amount: '5000',
        payee: '+256772000001',
        state: 'completed',
        user: PAYER,
      }),
    ]);

    // Its timeline, from the intent to the telling.
    const timeline = await fetch(`${app.url}/ops/payments/${encodeURIComponent(paid!.key)}`, { headers: OPERATOR });
    expect(timeline.status).toBe(200);
    const page = await timeline.text();
    for (const type of ['intent', 'answer', 'state']) expect(page).toContain(`data-type="${type}"`);

    // Counted in the money as completed.
    const money = await (await fetch(`${app.url}/ops/money.json?days=1&channel=ussd`, { headers: OPERATOR })).json();
    expect(money.totals).toEqual([
      expect.objectContaining({ kind: 'payment', completed: { count: 1, total: '5000' } }),
    ]);
  });

  it('refuses callers without the credentials, the token on a page, and hostile values', async () => {
    for (const path of [
      '/ops/payments',
      '/ops/payments.json',
      '/ops/payments.csv',
      '/ops/reconciliation',
      '/ops/money.json',
    ]) {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}0` }, { authorization: 'Bearer ' }] as Record<
        string,
        string
      >[]) {
        expect((await fetch(`${app.url}${path}`, { headers })).status, `${path} ${JSON.stringify(headers)}`).toBe(401);
      }
    }
    for (const path of ['/ops/payments', '/ops/reconciliation', '/ops/money.json'])
      expect((await fetch(`${app.url}${path}`, { headers: SCRIPT })).status, path).toBe(401);
    for (const query of [
      'phone=%00',
      `ref=${'r'.repeat(5000)}`,
      'from=2026-02-29',
      'state[]=completed',
      'cursor=%7B%7D',
      'size=NaN',
      'channel=ussd&channel=slack',
    ]) {
      for (const path of ['/ops/payments.json', '/ops/payments.csv']) {
        const res = await fetch(`${app.url}${path}?${query}`, { headers: SCRIPT });
        expect(res.status, `${path}?${query}`).toBe(400);
        expect((await res.json()).reasons.length, query).toBeGreaterThan(0);
      }
    }
    expect((await fetch(`${app.url}/ops/reconciliation`, { headers: OPERATOR })).status).toBe(200);
  });
});
