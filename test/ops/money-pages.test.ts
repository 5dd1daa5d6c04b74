/**
 * The money pages in headless Chromium, on the PostgreSQL server: the payments search (its form, its rows,
 * a refused value), an operation's timeline, the CSV export as the browser downloads it, the
 * reconciliation runs with their differences, and the journal's chain head with retention's receipts. Nothing from the journal runs as markup, the pages raise no
 * error (a Content-Security-Policy violation is one), and each writes its screenshot (docs/ops-*.png with
 * UPDATE_SCREENSHOTS: test/screenshots.ts).
 */
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainHead, verifyChain, type ChainHead } from '../../src/journal/chain.js';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../adapters/ussd/chromium.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { screenshotPath } from '../screenshots.js';
import { FORMULA_NAME, FORMULA_USER, seedJournal, seedReconciliation, startOps, type Refs } from './money-fixtures.js';

const AUTH = { user: 'operator', password: 'a long operator password', token: 'an-ops-token-for-scripts-0123456789' };

let server: ServerDatabase;
let database: Database;
let ops: { url: string; close(): Promise<void> };
let browser: Browser;
let context: BrowserContext;
let refs: Refs;
/** The chain's head before and after retention deleted the old operation. */
let retention: { before: ChainHead; after: ChainHead };
/** Page errors, console errors and dialogs (an alert would be markup from the journal running). */
const troubles: string[] = [];

beforeAll(async () => {
  server = await serverDatabase('ops_pages');
  database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
  await migrate(database.db);
  const journal = new Journal(database.db);
  // An operation of two years before, ended: retention deletes it below and writes its receipt. First in the
  // chain, as retention never deletes the head's event.
  await journal.intend({
    ref: 'ref-old-0000',
    kind: 'payment',
    amount: '800',
    currency: 'UGX',
    payee: '+256772000000',
    channel: 'ussd',
    channelUser: '+256772999000',
    chat: 'ussd:+256772999000',
    role: 'staff',
    flow: 'pay',
    at: new Date('2024-11-01T08:00:00Z'),
  });
  await journal.refused('ref-old-0000', { status: 400, reason: 'old', at: new Date('2024-11-01T08:00:01Z') });
  refs = await seedJournal(journal);
  await seedReconciliation(database.db, refs);
  const before = (await chainHead(database.db))!;
  expect(await journal.deleteOlderThan(365, new Date('2026-11-24T12:00:00Z'))).toEqual({
    operations: 1,
    events: 2,
    reconciliation: 0,
  });
  retention = { before, after: (await chainHead(database.db))! };
  ops = await startOps(journal, AUTH, () => new Date('2026-11-24T12:00:00Z'));
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
  context.setDefaultTimeout(10_000);
  // The operator signs in on the form (src/ops/access.ts); the session cookie carries every page after.
  const signIn = await context.newPage();
  await signIn.goto(`${ops.url}/ops/payments`);
  await signIn.fill('input[name=name]', AUTH.user);
  await signIn.fill('input[name=password]', AUTH.password);
  // Waits for /ops itself to load: the sign-in page's own URL matches /ops too, and a page closed while its
  // navigation commits may never close (microsoft/playwright#42366).
  await Promise.all([signIn.waitForURL(`${ops.url}/ops`, { waitUntil: 'load' }), signIn.click('button[type=submit]')]);
  await signIn.close();
}, 120_000);
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await ops?.close();
  await database?.close();
  await server?.drop();
});

async function open(path: string): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => troubles.push(`pageerror ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') troubles.push(`console ${message.text()}`);
  });
  page.on('dialog', (dialog) => {
    troubles.push(`dialog ${dialog.message()}`);
    void dialog.dismiss();
  });
  const res = await page.goto(`${ops.url}${path}`);
  expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
  expect(res?.headers()['x-frame-options']).toBe('DENY');
  return page;
}

const refsShown = (page: Page) =>
  page.$$eval('table.payments tbody tr', (rows) => rows.map((r) => r.getAttribute('data-ref')));

describe('the money pages in Chromium', () => {
  it('searches payments through the form, refuses a bad value with its reason, and shows data as text', async () => {
    const page = await open('/ops/payments');
    expect(await refsShown(page)).toEqual([
      refs.telegram,
      refs.hostile,
      refs.held,
      refs.open,
      refs.failed,
      refs.completed,
    ]);
    const hostile = page.locator(`tr[data-ref="${refs.hostile}"]`);
    expect(await hostile.locator('td').nth(4).innerText()).toContain(FORMULA_NAME);
    expect(await hostile.locator('td').nth(7).innerText()).toContain(FORMULA_USER);
    // An amount is money: grouped for reading, with its currency in the same cell.
    expect(await page.locator(`tr[data-ref="${refs.completed}"] td.num`).innerText()).toBe('1,500 UGX');
    await page.screenshot({ path: screenshotPath('ops-payments.png'), fullPage: true });

    await page.fill('input[name="phone"]', '0772 000 001');
    await Promise.all([page.waitForURL(/phone=/), page.click('form.search button[type="submit"]')]);
    expect(await refsShown(page)).toEqual([refs.completed]);

    await page.fill('input[name="phone"]', '');
    await page.selectOption('select[name="state"]', 'completed');
    await Promise.all([page.waitForURL(/state=completed/), page.click('form.search button[type="submit"]')]);
    expect(await refsShown(page)).toEqual([refs.telegram, refs.completed]);

    await page.selectOption('select[name="state"]', '');
    await page.fill('input[name="from"]', '2026-11-21');
    await page.fill('input[name="to"]', '2026-11-22');
    await Promise.all([page.waitForURL(/from=2026-11-21/), page.click('form.search button[type="submit"]')]);
    expect(await refsShown(page)).toEqual([refs.held, refs.open, refs.failed]);

    expect(troubles).toEqual([]);
    const refused = await page.goto(`${ops.url}/ops/payments?phone=not-a-phone&channel=fax`);
    expect(refused?.status()).toBe(400);
    expect(await page.locator('.reasons').innerText()).toMatch(/phone is not a mobile number[\s\S]*channel is one of/);
    // The browser reports the 400 it was sent, nothing else.
    expect(troubles).toEqual([expect.stringMatching(/status of 400/)]);
    troubles.length = 0;
  });

  it("opens an operation's timeline from its row: intent, answer, states, approvals, tellings", async () => {
    const page = await open('/ops/payments');
    await Promise.all([
      page.waitForURL(new RegExp(`/ops/payments/${refs.completed}$`)),
      page.click(`a[href="/ops/payments/${refs.completed}"]`),
    ]);
    expect(await page.$$eval('ol.timeline li', (items) => items.map((i) => i.getAttribute('data-type')))).toEqual([
      'intent',
      'answer',
      'state',
      'telling',
    ]);
    expect(await page.locator('dl.summary').innerText()).toMatch(/pay_completed_1[\s\S]*1,500 UGX[\s\S]*completed/);
    expect(await page.locator('li[data-type="telling"]').innerText()).toContain('You sent UGX 1,500 to John Okello.');
    await page.screenshot({ path: screenshotPath('ops-payment-timeline.png'), fullPage: true });

    await page.goto(`${ops.url}/ops/payments/${refs.held}`);
    const approval = await page.locator('li[data-type="approval"]').innerText();
    for (const said of ['Approval decision', 'approved', 'U0CHECKER', 'invoice 42']) expect(approval).toContain(said);
    // The journal's text is shown, never run: no image, no script from it.
    await page.goto(`${ops.url}/ops/payments/${refs.hostile}`);
    expect(await page.locator('li[data-type="refusal"]').innerText()).toContain('<script>alert(2)</script>');
    expect(await page.$$('main img, main script')).toHaveLength(0);
    expect(troubles).toEqual([]);
  });

  it('downloads the CSV of the search; opened as a spreadsheet reads it, no cell is a formula', async () => {
    const page = await open('/ops/payments?channel=whatsapp');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('.exports a[href^="/ops/payments.csv"]'),
    ]);
    expect(download.suggestedFilename()).toMatch(/^payments-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = parse(readFileSync((await download.path())!, 'utf8')) as string[][];
    expect(rows).toHaveLength(2);
    const [header, row] = rows as [string[], string[]];
    expect(row[header.indexOf('key')]).toBe(refs.hostile);
    expect(row[header.indexOf('user')]).toBe(`'${FORMULA_USER}`);
    expect(row[header.indexOf('payeeName')]).toBe(`'${FORMULA_NAME}`);
    expect(row[header.indexOf('payee')]).toBe('+256772000005');
    expect(troubles).toEqual([]);
  });

  it('shows on /ops the money as the journal says, per currency and day: completed, failed, still open', async () => {
    const page = await open('/ops');
    await page.waitForSelector('#money[data-state="ready"]');
    const card = (kind: string, currency: string, bucket: string) =>
      page
        .locator(`#money-totals .card[data-kind="${kind}"][data-currency="${currency}"][data-bucket="${bucket}"]`)
        .innerText();
    expect(await card('payment', 'UGX', 'completed')).toMatch(/^1,500 UGX\s+payments completed: 1$/);
    expect(await card('payment', 'UGX', 'failed')).toMatch(/^260\.5 UGX\s+payments failed: 2$/);
    expect(await card('payment', 'UGX', 'open')).toMatch(/^907,000 UGX\s+payments still open: 2$/);
    expect(await card('request', 'KES', 'completed')).toMatch(/^3,000 KES\s+requests completed: 1$/);
    expect(
      await page.$$eval('#money-days tbody tr', (rows) =>
        rows.map((r) => Array.from(r.querySelectorAll('td'), (c) => c.textContent)),
      ),
    ).toEqual([
      ['2026-11-23', 'KES', 'request', '1 · 3,000 KES', '0 · 0 KES', '0 · 0 KES'],
      ['2026-11-23', 'UGX', 'payment', '0 · 0 UGX', '1 · 10 UGX', '0 · 0 UGX'],
      ['2026-11-22', 'UGX', 'payment', '0 · 0 UGX', '0 · 0 UGX', '2 · 907,000 UGX'],
      ['2026-11-21', 'UGX', 'payment', '0 · 0 UGX', '1 · 250.5 UGX', '0 · 0 UGX'],
      ['2026-11-20', 'UGX', 'payment', '1 · 1,500 UGX', '0 · 0 UGX', '0 · 0 UGX'],
    ]);
    // One channel: the page asks again.
    await page.selectOption('#channel', 'ussd');
    await page.waitForFunction(() => document.querySelectorAll('#money-days tbody tr').length === 2);
    await page.selectOption('#channel', '');
    await page.waitForFunction(() => document.querySelectorAll('#money-days tbody tr').length === 5);
    await page.locator('#money').screenshot({ path: screenshotPath('ops-money.png') });
    expect(troubles).toEqual([]);
  });

  it('shows the reconciliation runs and the differences of the newest, each ref opening its timeline', async () => {
    const page = await open('/ops/reconciliation');
    expect(
      await page.$$eval('table.runs tbody tr', (rows) =>
        rows.map((r) => r.querySelector('.status-clean, .status-differences')?.textContent),
      ),
    ).toEqual(['differences', 'clean']);
    expect(
      await page.$$eval('table.items tbody tr', (rows) => rows.map((r) => r.getAttribute('data-outcome'))),
    ).toEqual(['detail_differs', 'not_ours', 'state_differs', 'unknown_to_service']);
    expect(await page.locator('tr[data-outcome="detail_differs"]').innerText()).toMatch(
      /amount[\s\S]*10 UGX[\s\S]*100 UGX/,
    );
    await page.screenshot({ path: screenshotPath('ops-reconciliation.png'), fullPage: true });

    await Promise.all([page.waitForURL(/outcome=matched/), page.click('.filters a[href$="outcome=matched"]')]);
    expect(await page.$$eval('table.items tbody tr', (rows) => rows.length)).toBe(2);
    await Promise.all([page.waitForURL(/\/ops\/payments\//), page.click(`a[href="/ops/payments/${refs.failed}"]`)]);
    expect(await page.locator('dl.summary').innerText()).toContain('pay_failed_2');

    // The older run, and what is not a run.
    await page.goto(`${ops.url}/ops/reconciliation`);
    await Promise.all([page.waitForURL(/run=\d+$/), page.click('table.runs a >> nth=1')]);
    expect(await page.locator('#items-title').innerText()).toMatch(/2026-11-20/);
    expect(await page.locator('.empty').innerText()).toMatch(/No differences/);
    expect(troubles).toEqual([]);
    expect((await page.goto(`${ops.url}/ops/reconciliation?run=999999`))?.status()).toBe(404);
    expect((await page.goto(`${ops.url}/ops/reconciliation?run=1;drop`))?.status()).toBe(400);
    expect(await page.locator('.reasons').innerText()).toMatch(/run is a run number/);
    expect((await page.goto(`${ops.url}/ops/reconciliation?outcome=all`))?.status()).toBe(400);
    expect(await page.locator('.reasons').innerText()).toMatch(/outcome is one of/);
  });

  it("shows the chain's head and each retention receipt: range, rows, heads before and after", async () => {
    // The test before ends on the 404 and 400s it asked for: what this page raises is counted from here.
    troubles.length = 0;
    const page = await open('/ops/payments');
    await Promise.all([page.waitForURL(/\/ops\/journal$/), page.click('header nav a[href="/ops/journal"]')]);
    expect(await page.locator('#chain-head').getAttribute('data-seq')).toBe(retention.after.seq);
    expect(await page.locator('#chain-head').innerText()).toContain(retention.after.hash);
    const cells = await page.$$eval('table.receipts tbody tr', (rows) =>
      rows.map((r) => Array.from(r.querySelectorAll('td'), (c) => (c as HTMLElement).innerText.trim())),
    );
    expect(cells).toHaveLength(1);
    const [, at, range, seqs, operations, events, reconciliation, headBefore, headAfter] = cells[0]!;
    expect(at).toBe('2026-11-24 12:00:00 UTC');
    expect(range).toBe('2024-11-01 08:00:00 UTC to 2025-11-24 12:00:00 UTC');
    expect(seqs).toBe('1 to 2');
    expect([operations, events, reconciliation]).toEqual(['1', '2', '0']);
    expect(headBefore).toMatch(new RegExp(`^seq ${retention.before.seq}\\s+${retention.before.hash}$`));
    expect(headAfter).toMatch(new RegExp(`^seq ${retention.after.seq}\\s+${retention.after.hash}$`));
    // The hole the page names is the one journal:verify crosses with this receipt.
    const verified = await verifyChain(database.db);
    expect(verified).toMatchObject({ holes: 1, head: retention.after });
    expect(verified.broken).toBeUndefined();
    await page.screenshot({ path: screenshotPath('ops-journal.png'), fullPage: true });
    expect(troubles).toEqual([]);

    // Operators and the demo only: not a script's token, not anyone else; it takes no query.
    for (const headers of [{}, { authorization: `Bearer ${AUTH.token}` }] as Record<string, string>[]) {
      const res = await fetch(`${ops.url}/ops/journal`, { headers });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(await res.text()).not.toContain(retention.after.hash);
    }
    expect((await page.goto(`${ops.url}/ops/journal?seq=1`))?.status()).toBe(400);
    troubles.length = 0;
  });

  it('picks a day on the statements page, shows its totals and downloads its CSV and JSON', async () => {
    troubles.length = 0;
    const page = await open('/ops/payments');
    await Promise.all([page.waitForURL(/\/ops\/statements$/), page.click('header nav a[href="/ops/statements"]')]);
    // Yesterday by default (the clock says 2026-11-24), no later day than today.
    expect(await page.inputValue('input[name="date"]')).toBe('2026-11-23');
    expect(await page.getAttribute('input[name="date"]', 'max')).toBe('2026-11-24');
    await page.fill('input[name="date"]', '2026-11-22');
    await Promise.all([page.waitForURL(/date=2026-11-22/), page.click('form button:has-text("Show")')]);
    const shown = () =>
      page.$$eval('table.statement tbody tr[data-kind]', (rows) =>
        rows.map((r) => Array.from(r.querySelectorAll('td'), (c) => (c as HTMLElement).innerText.trim()).join(' | ')),
      );
    expect(await shown()).toEqual([
      'UGX | payment | intended | 1 | 900,000 UGX',
      'UGX | payment | submitted | 1 | 7,000 UGX',
    ]);
    expect(await page.locator('tr.currency-count[data-currency="UGX"] td.num').innerText()).toBe('2');
    expect(await page.locator('#day-head').innerText()).toMatch(/seq \d+ [0-9a-f]{64}/);
    await page.screenshot({ path: screenshotPath('ops-statements.png'), fullPage: true });

    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      page.click('form button:has-text("Download CSV")'),
    ]);
    expect(csv.suggestedFilename()).toBe('statement-2026-11-22.csv');
    const [header, ...rows] = parse(readFileSync((await csv.path())!, 'utf8')) as string[][];
    const at = (name: string) => header!.indexOf(name);
    expect(
      rows.filter((r) => r[at('record')] === 'total').map((r) => [r[at('state')], r[at('count')], r[at('amount')]]),
    ).toEqual([
      ['intended', '1', '900000'],
      ['submitted', '1', '7000'],
    ]);
    const movements = rows.filter((r) => r[at('record')] === 'movement');
    expect(movements.map((r) => r[at('key')])).toEqual([refs.held, refs.open]);
    for (const r of movements) expect(r[at('ref')]).toMatch(/^MC-[0-9A-Z]+$/);
    const head = (await page.locator('#day-head code').innerText()).trim();
    expect(new Set(rows.map((r) => r[at('journalHead')]!.split(' ')[1]))).toEqual(new Set([head]));

    const [json] = await Promise.all([
      page.waitForEvent('download'),
      page.click('form button:has-text("Download JSON")'),
    ]);
    expect(json.suggestedFilename()).toBe('statement-2026-11-22.json');
    const statement = JSON.parse(readFileSync((await json.path())!, 'utf8')) as { journalHead: { hash: string } };
    expect(statement.journalHead.hash).toBe(head);
    expect(troubles).toEqual([]);
  });
});
