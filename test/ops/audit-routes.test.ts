/**
 * The operators' audit in the whole product, from outside over real HTTP on a real PostgreSQL database: a sign-in
 * (and a failed one), a search and an export of payments (with the filter and the row count, the token recorded
 * as `token`), an operator request made and approved, each a row; `/ops/audit`, `/ops/audit.json` and
 * `/ops/audit.csv` with exactly the credentials of `/ops/payments.json`, their search and keyset pages, each read of
 * them a row; and their refusals (no credentials, a wrong token, a wrong password, a change), each refusal itself
 * a row.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import type { Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { anIntent } from '../journal/intents.js';
import { postForm, postSignIn, signIn } from '../people/ops-session.js';
import { startWithTwoOperators, type TwoOperators } from '../people/two-operators.js';

const LEAD = { name: 'audit-lead', password: 'a long operator password' };
const SECOND = { name: 'audit-second', password: 'another quite long passphrase' };
const OPS_TOKEN = 'ops-token-audit-0123456789abcdef';
const BEARER = { authorization: `Bearer ${OPS_TOKEN}` };
const POLICY = {
  roles: { teller: { flows: ['pay', 'check'], perPaymentLimit: { UGX: '500000' }, dailyLimit: { UGX: '2000000' } } },
  users: { ussd: {}, slack: {}, telegram: {}, whatsapp: {} },
};
const basic = (name: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`,
});

interface Item {
  id: string;
  at: string;
  actor: string;
  action: string;
  detail: Record<string, unknown>;
}

let ops: TwoOperators;
let direct: Database;
let app: RunningApp;
beforeAll(async () => {
  ops = await startWithTwoOperators(
    'ops_audit',
    { OPS_TOKEN, ACCESS_POLICY: JSON.stringify(POLICY) },
    { lead: LEAD, second: SECOND },
  );
  ({ app, direct } = ops);
  const journal = new Journal(direct.db);
  for (const [i, state] of ['completed', 'completed', 'failed'].entries()) {
    const ref = `audit-pay-${i}`;
    await journal.intend(anIntent(ref, { at: new Date(Date.now() - 60_000 + i) }));
    await journal.answered(ref, { serviceId: `svc-audit-${i}` });
    await journal.stateReported(ref, { state: state as 'completed' | 'failed', source: 'notification' });
  }
}, 120_000);
afterAll(() => ops?.stop());

/** Every row, newest first, read straight from the table. */
const rows = async (): Promise<Item[]> =>
  (
    await direct.db
      .selectFrom('operator_audit' as never)
      .select(['id', 'at', 'actor', 'action', 'detail'] as never)
      .orderBy('id' as never, 'desc')
      .execute()
  ).map((r) => ({ ...(r as Item), id: String((r as Item).id), at: new Date((r as Item).at).toISOString() }));
/** The newest row matching `match`, waited for (refusals are recorded once their answer has gone). */
const waitForRow = async (match: (item: Item) => boolean): Promise<Item> =>
  vi.waitFor(
    async () => {
      const found = (await rows()).find(match);
      if (!found) throw new Error('not yet in the audit');
      return found;
    },
    { timeout: 10_000, interval: 50 },
  );

describe('the operators audit', { timeout: 60_000 }, () => {
  it('records a sign-in, a failed one, a search and an export with its filter and row count', async () => {
    expect((await postSignIn(app.url, LEAD.name, 'not the password')).status).toBe(401);
    await waitForRow(
      (r) => r.action === 'sign-in-failed' && r.actor === LEAD.name && r.detail.reason === 'wrong name or password',
    );
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const signedIn = await waitForRow((r) => r.action === 'sign-in' && r.actor === LEAD.name);
    expect(signedIn.detail).toMatchObject({ via: 'form' });

    const page = await fetch(`${app.url}/ops/payments?state=completed`, { headers: { cookie: lead.cookie } });
    expect(page.status).toBe(200);
    expect((await rows())[0]).toMatchObject({
      actor: LEAD.name,
      action: 'search',
      detail: { filter: { state: 'completed' }, rows: 2, via: 'session' },
    });

    // The token, as a script reads: its rows say `token`.
    const csv = await fetch(`${app.url}/ops/payments.csv?state=completed`, { headers: BEARER });
    expect(csv.status).toBe(200);
    expect((await csv.text()).trim().split(/\r?\n/)).toHaveLength(3);
    const exported = await waitForRow((r) => r.action === 'export' && r.detail.export === 'payments.csv');
    expect(exported).toMatchObject({
      actor: 'token',
      detail: { filter: { state: 'completed' }, rows: 2, via: 'token' },
    });
    expect(await waitForRow((r) => r.action === 'sign-in' && r.actor === 'token')).toMatchObject({
      detail: { via: 'token' },
    });

    const json = await fetch(`${app.url}/ops/payments.json?kind=payment`, { headers: basic(LEAD.name, LEAD.password) });
    expect(json.status).toBe(200);
    expect((await rows())[0]).toMatchObject({
      actor: LEAD.name,
      action: 'export',
      detail: { export: 'payments.json', filter: { kind: 'payment' }, rows: 3, via: 'basic' },
    });
  });

  it('records the exports of statements and of people, with their row counts', async () => {
    const date = new Date().toISOString().slice(0, 10);
    const csv = await fetch(`${app.url}/ops/statements.csv?date=${date}`, { headers: BEARER });
    expect(csv.status).toBe(200);
    const movements = (await csv.text()).split(/\r?\n/).filter((l) => l.startsWith('movement,')).length;
    expect(await waitForRow((r) => r.detail.export === 'statements.csv')).toMatchObject({
      actor: 'token',
      action: 'export',
      detail: { filter: { date }, rows: movements, via: 'token' },
    });
    const json = await fetch(`${app.url}/ops/statements.json?date=${date}`, {
      headers: basic(LEAD.name, LEAD.password),
    });
    expect(json.status).toBe(200);
    const statement = (await json.json()) as { movements: unknown[] };
    expect(await waitForRow((r) => r.detail.export === 'statements.json')).toMatchObject({
      actor: LEAD.name,
      detail: { filter: { date }, rows: statement.movements.length, via: 'basic' },
    });
    const people = (await (await fetch(`${app.url}/ops/people.json`, { headers: BEARER })).json()) as {
      persons: unknown[];
    };
    expect((await rows())[0]).toMatchObject({
      actor: 'token',
      action: 'export',
      detail: { export: 'people.json', rows: people.persons.length },
    });
  });

  it('records an operator request made and approved', async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const asked = await postForm(
      app.url,
      '/ops/people',
      { csrf: lead.csrf, name: 'Audit Ann', role: 'teller', ussd: '+256700555001' },
      { cookie: lead.cookie },
    );
    expect(asked.status).toBe(202);
    const id = /request <code>(r-[\w-]+)<\/code>/.exec(await asked.text())?.[1];
    expect(id).toBeTruthy();
    expect((await rows())[0]).toMatchObject({
      actor: LEAD.name,
      action: 'request.made',
      detail: { request: id, change: 'add-person' },
    });
    const second = await signIn(app.url, SECOND.name, SECOND.password);
    const approved = await postForm(
      app.url,
      `/ops/requests/${id}/approve`,
      { csrf: second.csrf },
      { cookie: second.cookie },
    );
    expect(approved.status).toBe(303);
    await waitForRow((r) => r.action === 'request.approved' && r.actor === SECOND.name && r.detail.request === id);
  });

  it('serves /ops/audit.json and /ops/audit.csv with the credentials of /ops/payments.json, each read a row', async () => {
    const res = await fetch(`${app.url}/ops/audit.json?action=export&size=1`, { headers: BEARER });
    expect(res.status).toBe(200);
    const page1 = (await res.json()) as { items: Item[]; next?: string };
    expect(page1.items).toHaveLength(1);
    expect(Object.keys(page1.items[0]!)).toEqual(expect.arrayContaining(['at', 'actor', 'action', 'detail']));
    expect(page1.items[0]!.action).toBe('export');
    expect(page1.next).toMatch(/^\d+$/);
    // The next page: older rows only, the keyset cursor.
    const page2 = (await (
      await fetch(`${app.url}/ops/audit.json?action=export&size=1&cursor=${page1.next}`, { headers: BEARER })
    ).json()) as { items: Item[] };
    expect(Number(page2.items[0]!.id)).toBeLessThan(Number(page1.items[0]!.id));
    // The export of the audit is itself in the audit.
    expect((await rows())[0]).toMatchObject({
      actor: 'token',
      action: 'export',
      detail: { export: 'audit.json', filter: { action: 'export' }, rows: 1 },
    });

    // Search by actor, by text in the detail, by a day range.
    const today = new Date().toISOString().slice(0, 10);
    const byText = (await (
      await fetch(`${app.url}/ops/audit.json?text=payments.csv&actor=token&from=${today}&to=${today}`, {
        headers: basic(LEAD.name, LEAD.password),
      })
    ).json()) as { items: Item[] };
    expect(byText.items.length).toBeGreaterThan(0);
    expect(byText.items.every((i) => i.actor === 'token' && JSON.stringify(i.detail).includes('payments.csv'))).toBe(
      true,
    );
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const none = (await (
      await fetch(`${app.url}/ops/audit.json?from=${yesterday}&to=${yesterday}`, { headers: BEARER })
    ).json()) as { items: Item[] };
    expect(none.items).toEqual([]);

    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const csv = await fetch(`${app.url}/ops/audit.csv?action=sign-in`, { headers: { cookie: lead.cookie } });
    expect(csv.status).toBe(200);
    const lines = (await csv.text()).trim().split(/\r?\n/);
    expect(lines[0]).toBe('id,at,actor,action,detail');
    expect(lines.length).toBeGreaterThan(2);
    const recorded = await waitForRow((r) => r.action === 'export' && r.detail.export === 'audit.csv');
    expect(recorded).toMatchObject({
      actor: LEAD.name,
      detail: { filter: { action: 'sign-in' }, rows: lines.length - 1 },
    });

    // The page: searchable, its rows shown.
    const html = await (await fetch(`${app.url}/ops/audit?actor=token`, { headers: { cookie: lead.cookie } })).text();
    expect(html).toContain('data-action="export"');
    expect(html).not.toContain(`>${LEAD.name}</td>`);
    // Reading the page is itself in the audit: who, with what search, how many rows were shown.
    const shown = (html.match(/<tr data-id=/g) ?? []).length;
    expect(shown).toBeGreaterThan(0);
    expect((await rows())[0]).toMatchObject({
      actor: LEAD.name,
      action: 'audit.read',
      detail: { filter: { actor: 'token' }, rows: shown, via: 'session' },
    });
    // A later page says which.
    const older = await fetch(`${app.url}/ops/audit?actor=token&size=1&cursor=${page1.next}`, {
      headers: basic(LEAD.name, LEAD.password),
    });
    expect(older.status).toBe(200);
    expect((await rows())[0]).toMatchObject({
      actor: LEAD.name,
      action: 'audit.read',
      detail: { filter: { actor: 'token' }, rows: 1, cursor: page1.next, via: 'basic' },
    });
  });

  it('refuses the audit to no credentials, a wrong token and a wrong password, and audits each refusal', async () => {
    for (const path of ['/ops/audit.json', '/ops/audit.csv']) {
      const none = await fetch(`${app.url}${path}`);
      expect(none.status).toBe(401);
      await waitForRow((r) => r.action === 'refused' && r.detail.path === path && r.detail.status === 401);

      const wrong = await fetch(`${app.url}${path}`, { headers: { authorization: 'Bearer not-the-token' } });
      expect(wrong.status).toBe(401);
      await waitForRow(
        (r) =>
          r.action === 'sign-in-failed' &&
          r.detail.via === 'token' &&
          r.detail.path === path &&
          r.actor === 'anonymous',
      );

      const badPassword = await fetch(`${app.url}${path}`, { headers: basic(LEAD.name, 'wrong password here') });
      expect(badPassword.status).toBe(401);
      await waitForRow((r) => r.action === 'sign-in-failed' && r.detail.via === 'basic' && r.detail.path === path);
    }
    // The page is not a script's: the token does not open it.
    const pageByToken = await fetch(`${app.url}/ops/audit`, { headers: BEARER });
    expect(pageByToken.status).toBe(401);
    // Nothing changes the audit from outside: a POST is refused (and recorded).
    const post = await fetch(`${app.url}/ops/audit.json`, { method: 'POST', headers: BEARER });
    expect(post.status).toBe(403);
    await waitForRow((r) => r.action === 'refused' && r.detail.method === 'POST' && r.detail.status === 403);
    // A query it does not take: a 400 with the reason.
    const bad = await fetch(`${app.url}/ops/audit.json?cursor=abc&size=9999`, { headers: BEARER });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { reasons: string[] }).reasons.join(' ')).toMatch(/cursor.*size|size.*cursor/s);
  });
});
