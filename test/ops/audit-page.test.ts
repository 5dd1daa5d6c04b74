/**
 * The operators' audit page in headless Chromium, on the PostgreSQL server: the operator's sign-in and search of
 * payments are rows of it; the form searches by action, actor and text; the next page follows the keyset cursor;
 * a secret is shown masked with its count, never in clear; nothing from a row runs as markup; the page raises no
 * error (a Content-Security-Policy violation is one) and writes its screenshot (docs/ops-audit.png with
 * UPDATE_SCREENSHOTS: test/screenshots.ts).
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { OperatorAudit } from '../../src/ops/audit.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../adapters/ussd/chromium.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { screenshotPath } from '../screenshots.js';
import { seedJournal, startOps } from './money-fixtures.js';

const AUTH = { user: 'auditor', password: 'a long operator password', token: 'an-ops-token-for-scripts-0123456789' };
const HOSTILE = '<img src=x onerror=alert(1)>';

let server: ServerDatabase;
let database: Database;
let ops: { url: string; close(): Promise<void> };
let browser: Browser;
let context: BrowserContext;
const troubles: string[] = [];

beforeAll(async () => {
  server = await serverDatabase('ops_audit_page');
  database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
  await migrate(database.db);
  const journal = new Journal(database.db);
  await seedJournal(journal);
  const audit = new OperatorAudit(database.db);
  // Rows another part wrote: one holding secrets, one holding markup.
  await audit.record('lead', 'change', { person: 'p-7', examPins: ['1111-2222-3333', '4444-5555-6666'] });
  await audit.record(HOSTILE, 'refused', { status: 403, path: HOSTILE });
  ops = await startOps(journal, AUTH);
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  context.setDefaultTimeout(10_000);
  const signIn = await context.newPage();
  await signIn.goto(`${ops.url}/ops/payments`);
  await signIn.fill('input[name=name]', AUTH.user);
  await signIn.fill('input[name=password]', AUTH.password);
  // Waits for /ops itself to load: the sign-in page's own URL matches /ops too, and a page closed while its
  // navigation commits may never close (microsoft/playwright#42366).
  await Promise.all([signIn.waitForURL(`${ops.url}/ops`, { waitUntil: 'load' }), signIn.click('button[type=submit]')]);
  await signIn.goto(`${ops.url}/ops/payments?state=completed`);
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
  return page;
}

const actions = (page: Page) =>
  page.$$eval('table.audit tbody tr', (rows) => rows.map((r) => r.getAttribute('data-action')));

describe('the audit page in Chromium', () => {
  it('shows the sign-in and the search, searches by action and text, pages, and masks secrets', async () => {
    const page = await open('/ops/audit');
    const shown = await actions(page);
    expect(shown.slice(0, 2)).toEqual(['search', 'sign-in']);
    expect(shown).toEqual(expect.arrayContaining(['change', 'refused']));
    const search = page.locator('tr[data-action="search"]');
    expect(await search.locator('td').nth(1).innerText()).toBe(AUTH.user);
    expect(await search.innerText()).toMatch(/filter\s+\{"state":"completed"\}/);
    expect(await search.innerText()).toMatch(/rows\s+2\b/);
    // The secrets: masked, counted, never in clear.
    const change = page.locator('tr[data-action="change"]');
    expect(await change.locator('.masked').innerText()).toBe('2 secrets masked');
    expect(await page.content()).not.toMatch(/1111-2222|4444-5555/);
    // Markup in a row is text.
    expect(await page.locator('tr[data-action="refused"] td').nth(1).innerText()).toBe(HOSTILE);
    await page.screenshot({ path: screenshotPath('ops-audit.png'), fullPage: true });

    await page.selectOption('select[name="action"]', 'sign-in');
    await Promise.all([page.waitForURL(/action=sign-in/), page.click('form.search button[type="submit"]')]);
    expect(await actions(page)).toEqual(['sign-in']);

    await page.selectOption('select[name="action"]', '');
    await page.fill('input[name="text"]', 'P-7');
    await Promise.all([page.waitForURL(/text=P-7/), page.click('form.search button[type="submit"]')]);
    expect(await actions(page)).toEqual(['change']);

    // A page of one row, then the next: an older row, never the same.
    await page.goto(`${ops.url}/ops/audit?size=1`);
    const first = await page.$$eval('table.audit tbody tr', (rows) => rows.map((r) => r.getAttribute('data-id')));
    await Promise.all([page.waitForURL(/cursor=/), page.click('a[rel="next"]')]);
    const second = await page.$$eval('table.audit tbody tr', (rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(first).toHaveLength(1);
    expect(Number(second[0])).toBeLessThan(Number(first[0]));

    const refused = await page.goto(`${ops.url}/ops/audit?from=2026-13-01&what=1`);
    expect(refused?.status()).toBe(400);
    expect(await page.locator('.reasons').innerText()).toMatch(/what: not taken/);
    expect(troubles.filter((t) => !/status of 400/.test(t))).toEqual([]);
  });
});
