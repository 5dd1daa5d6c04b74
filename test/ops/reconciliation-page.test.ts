/**
 * The reconciliation's differences on /ops/reconciliation in headless Chromium, on the PostgreSQL server
 * (OPS_DUAL_CONTROL=all): an operator resolves a difference through the page's form (its CSRF token the
 * page's); a correction asked by one operator shows its asker no Approve button (and the route refuses their
 * own approval with the reason), and is approved by a second operator signed in in another browser context.
 * The pages raise no error (a Content-Security-Policy violation is one).
 */
import type { Kysely } from 'kysely';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import type { ReconciliationSchema } from '../../src/reconciliation/schema.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../adapters/ussd/chromium.js';
import { signInPage } from '../people/ops-session.js';
import { LEAD, SECOND, startWithTwoOperators, type TwoOperators } from '../people/two-operators.js';
import { seedDifferences } from './differences-fixtures.js';

let ops: TwoOperators;
let db: Kysely<ReconciliationSchema>;
let journal: Journal;
let ids: Record<'told' | 'ghost' | 'detail', string>;
let browser: Browser;
/** The lead's browser and the second operator's: one session each. */
let lead: BrowserContext;
let second: BrowserContext;
const troubles: string[] = [];
const ref = (name: string) => `${name}-page-0001:pay`;

beforeAll(async () => {
  ops = await startWithTwoOperators('recon_page');
  db = ops.direct.db as unknown as Kysely<ReconciliationSchema>;
  journal = new Journal(ops.direct.db);
  ids = await seedDifferences(journal, db, ref);
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  lead = await browser.newContext();
  second = await browser.newContext();
  for (const context of [lead, second]) context.setDefaultTimeout(10_000);
  await signInPage(lead, ops.app.url, LEAD.name, LEAD.password);
  await signInPage(second, ops.app.url, SECOND.name, SECOND.password);
}, 120_000);
afterAll(async () => {
  await lead?.close();
  await second?.close();
  await browser?.close();
  await ops?.stop();
});

async function open(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => troubles.push(`pageerror ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') troubles.push(`console ${message.text()}`);
  });
  const res = await page.goto(`${ops.app.url}/ops/reconciliation`);
  expect(res?.status()).toBe(200);
  return page;
}

const row = (page: Page, name: keyof typeof ids) => page.locator(`tr.difference[data-difference="${ids[name]}"]`);
const stateOf = async (name: keyof typeof ids) =>
  (await db.selectFrom('reconciliation_exceptions').selectAll().where('id', '=', ids[name]).executeTakeFirstOrThrow())
    .state;

describe('the differences page in Chromium', () => {
  it('resolves a difference through its form, and a correction waits for a second operator', async () => {
    const page = await open(lead);
    expect(await row(page, 'ghost').getAttribute('data-state')).toBe('open');

    // Resolved with a reason through the page's own form: back on the page, the row closed by the lead.
    await row(page, 'ghost').locator('form[action$="/resolve"] input[name=reason]').fill('the service lost it');
    await Promise.all([
      page.waitForURL(`${ops.app.url}/ops/reconciliation#differences`, { waitUntil: 'load' }),
      row(page, 'ghost').locator('form[action$="/resolve"] button[type=submit]').click(),
    ]);
    expect(await row(page, 'ghost').getAttribute('data-state')).toBe('resolved');
    expect(await row(page, 'ghost').innerText()).toContain(`by ${LEAD.name}`);
    expect(await stateOf('ghost')).toBe('resolved');

    // The correction asked: it waits, the page naming its request.
    await row(page, 'told').locator('form[action$="/correct"] input[name=reason]').fill('the network failed it');
    await Promise.all([
      page.waitForURL(new RegExp(`/ops/reconciliation/differences/${ids.told}/correct$`), { waitUntil: 'load' }),
      row(page, 'told').locator('form[action$="/correct"] button[type=submit]').click(),
    ]);
    const request = await page.locator('[data-testid=request] code').innerText();
    expect(request).toMatch(/^r-[\w-]+$/);
    expect(await stateOf('told')).toBe('open');

    // Its asker sees it waiting, with no Approve button (only their Withdraw), and the route refuses it too.
    await page.goto(`${ops.app.url}/ops/reconciliation`);
    const waiting = row(page, 'told');
    expect(await waiting.locator('[data-testid=waiting]').innerText()).toContain(LEAD.name);
    expect(await waiting.locator('button', { hasText: 'Approve' }).count()).toBe(0);
    expect(await waiting.locator('button', { hasText: 'Withdraw' }).count()).toBe(1);
    const csrf = await waiting.locator('form[action$="/reject"] input[name=csrf]').inputValue();
    const own = await lead.request.post(`${ops.app.url}/ops/reconciliation/requests/${request}/approve`, {
      form: { csrf, reason: 'mine' },
      maxRedirects: 0,
    });
    expect(own.status()).toBe(403);
    expect(await own.text()).toMatch(/nobody approves their own request/);
    expect(await stateOf('told')).toBe('open');

    // The second operator, in their own browser, approves it: corrected, as the lead asked, approved by them.
    const other = await open(second);
    expect(await row(other, 'told').locator('button', { hasText: 'Approve' }).count()).toBe(1);
    await row(other, 'told').locator('form[action$="/approve"] input[name=reason]').fill('checked with the network');
    await Promise.all([
      other.waitForURL(`${ops.app.url}/ops/reconciliation#differences`, { waitUntil: 'load' }),
      row(other, 'told').locator('form[action$="/approve"] button[type=submit]').click(),
    ]);
    expect(await row(other, 'told').getAttribute('data-state')).toBe('corrected');
    expect(await row(other, 'told').innerText()).toContain(`by ${LEAD.name}, approved by ${SECOND.name}`);
    expect(
      await db.selectFrom('reconciliation_exceptions').selectAll().where('id', '=', ids.told).executeTakeFirstOrThrow(),
    ).toMatchObject({ state: 'corrected', closed_by: LEAD.name, approved_by: SECOND.name, request });
    expect((await journal.byRef(ref('told')))?.state).toBe('failed');
    await page.close();
    await other.close();
    expect(troubles).toEqual([]);
  });
});
