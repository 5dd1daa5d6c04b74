/**
 * Closing the reconciliation's differences on /ops/reconciliation, from outside over real HTTP on a real
 * PostgreSQL database (OPS_DUAL_CONTROL=all): a difference resolved by one operator with a reason; a correction
 * that tells a person and changes a final state waits for a second operator, is refused to its asker, and
 * takes effect (journal, the correction owed, the audit) once another approves. Every route refuses a caller
 * without a session, with another CSRF token, or by Basic auth, and changes nothing then.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import type { Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import type { ReconciliationSchema } from '../../src/reconciliation/schema.js';
import { postForm, signIn } from '../people/ops-session.js';
import { seedDifferences } from './differences-fixtures.js';
import { LEAD, SECOND, startWithTwoOperators, type TwoOperators } from '../people/two-operators.js';

let ops: TwoOperators;
let direct: Database;
let db: Kysely<ReconciliationSchema>;
let journal: Journal;
let app: RunningApp;
/** Difference ids by name. */
const ids: Record<string, string> = {};
const ref = (name: string) => `${name}-diff-0001:pay`;

beforeAll(async () => {
  ops = await startWithTwoOperators('recon_differences');
  ({ app, direct } = ops);
  db = direct.db as unknown as Kysely<ReconciliationSchema>;
  journal = new Journal(direct.db);
  Object.assign(ids, await seedDifferences(journal, db, ref));
});
afterAll(() => ops?.stop());

const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  postForm(app.url, path, fields, headers);
const stateOf = async (name: string) =>
  (await db.selectFrom('reconciliation_exceptions').selectAll().where('id', '=', ids[name]!).executeTakeFirstOrThrow())
    .state;
const audit = async (action: string) =>
  (
    await sql<{ actor: string; detail: Record<string, unknown> }>`
      select actor, detail from operator_audit where action = ${action} order by id`.execute(direct.db)
  ).rows;

describe('closing reconciliation differences', () => {
  it('refuses every route to a caller without a session, with another CSRF token or by Basic auth', async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const basic = `Basic ${Buffer.from(`${LEAD.name}:${LEAD.password}`).toString('base64')}`;
    const routes = [
      `/ops/reconciliation/differences/${ids.ghost}/resolve`,
      `/ops/reconciliation/differences/${ids.told}/correct`,
      '/ops/reconciliation/requests/r-000000000000/approve',
      '/ops/reconciliation/requests/r-000000000000/reject',
    ];
    for (const path of routes) {
      expect((await post(path, { csrf: lead.csrf, reason: 'r' })).status, path).toBeGreaterThanOrEqual(401);
      expect((await post(path, { csrf: lead.csrf, reason: 'r' })).status, path).toBeLessThan(404);
      expect((await post(path, { csrf: 'guessed', reason: 'r' }, { cookie: lead.cookie })).status, path).toBe(403);
      expect((await post(path, { reason: 'r' }, { authorization: basic })).status, path).toBe(403);
    }
    expect([await stateOf('ghost'), await stateOf('told')]).toEqual(['open', 'open']);
  });

  it('resolves a difference by one operator with a reason, once', async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const path = `/ops/reconciliation/differences/${ids.ghost}/resolve`;
    const empty = await post(path, { csrf: lead.csrf, reason: '  ' }, { cookie: lead.cookie });
    expect(empty.status).toBe(400);
    expect(await empty.text()).toMatch(/give a reason/);
    expect(
      (
        await post(
          '/ops/reconciliation/differences/999999/resolve',
          { csrf: lead.csrf, reason: 'x' },
          { cookie: lead.cookie },
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await post(
          '/ops/reconciliation/differences/1;drop/resolve',
          { csrf: lead.csrf, reason: 'x' },
          { cookie: lead.cookie },
        )
      ).status,
    ).toBe(404);

    const done = await post(path, { csrf: lead.csrf, reason: 'the service lost it' }, { cookie: lead.cookie });
    expect(done.status).toBe(303);
    expect(await stateOf('ghost')).toBe('resolved');
    expect(
      (await journal.timeline(ref('ghost'))).filter((e) => e.source === 'operator').map((e) => [e.type, e.data.by]),
    ).toEqual([['resolution', LEAD.name]]);
    expect((await journal.byRef(ref('ghost')))?.state).toBe('submitted');
    expect(await audit('resolve')).toEqual([
      { actor: LEAD.name, detail: expect.objectContaining({ difference: ids.ghost, state: 'resolved' }) },
    ]);
    const twice = await post(path, { csrf: lead.csrf, reason: 'again' }, { cookie: lead.cookie });
    expect(twice.status).toBe(409);
    expect(await twice.text()).toMatch(/already resolved/);
    // An amount is never corrected.
    const detail = await post(
      `/ops/reconciliation/differences/${ids.detail}/correct`,
      { csrf: lead.csrf, reason: 'x' },
      { cookie: lead.cookie },
    );
    expect(detail.status).toBe(409);
    expect(await stateOf('detail')).toBe('open');
  });

  it('a correction that tells a person waits for a second operator, never its asker', async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const bo = await signIn(app.url, SECOND.name, SECOND.password);
    const asked = await post(
      `/ops/reconciliation/differences/${ids.told}/correct`,
      { csrf: lead.csrf, reason: 'the network failed it' },
      { cookie: lead.cookie },
    );
    expect(asked.status).toBe(202);
    const request = /request <code>(r-[\w-]+)<\/code>/.exec(await asked.text())?.[1];
    expect(request).toBeTruthy();
    // Nothing changed yet; nobody is owed anything.
    expect(await stateOf('told')).toBe('open');
    expect((await journal.byRef(ref('told')))?.state).toBe('completed');
    const owed = () => db.selectFrom('reconciliation_corrections').select(['ref', 'state', 'told_state']).execute();
    expect(await owed()).toEqual([]);
    // Asked twice: refused.
    expect(
      (
        await post(
          `/ops/reconciliation/differences/${ids.told}/correct`,
          { csrf: lead.csrf, reason: 'x' },
          { cookie: lead.cookie },
        )
      ).status,
    ).toBe(409);

    // The asker approving their own: refused with the reason; the People page does not decide it either.
    const own = await post(
      `/ops/reconciliation/requests/${request}/approve`,
      { csrf: lead.csrf },
      { cookie: lead.cookie },
    );
    expect(own.status).toBe(403);
    expect(await own.text()).toMatch(/nobody approves their own request/);
    expect((await post(`/ops/requests/${request}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(404);
    expect(await stateOf('told')).toBe('open');
    const page = await (await fetch(`${app.url}/ops/reconciliation`, { headers: { cookie: bo.cookie } })).text();
    expect(page).toContain(`/ops/reconciliation/requests/${request}/approve`);

    // A second operator approves: the journal takes failed (source operator), the person is owed the correction.
    const approved = await post(
      `/ops/reconciliation/requests/${request}/approve`,
      { csrf: bo.csrf, reason: 'checked' },
      { cookie: bo.cookie },
    );
    expect(approved.status).toBe(303);
    expect(
      await db
        .selectFrom('reconciliation_exceptions')
        .selectAll()
        .where('id', '=', ids.told!)
        .executeTakeFirstOrThrow(),
    ).toMatchObject({ state: 'corrected', closed_by: LEAD.name, approved_by: SECOND.name, request });
    expect((await journal.byRef(ref('told')))?.state).toBe('failed');
    expect(await owed()).toEqual([{ ref: ref('told'), state: 'failed', told_state: 'completed' }]);
    expect((await audit('request.made')).map((r) => r.actor)).toContain(LEAD.name);
    expect(await audit('request.approved')).toEqual(
      expect.arrayContaining([{ actor: SECOND.name, detail: expect.objectContaining({ request, change: 'correct' }) }]),
    );
    expect(
      (await post(`/ops/reconciliation/requests/${request}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie })).status,
    ).toBe(409);

    const listed = await (
      await fetch(`${app.url}/ops/reconciliation?state=corrected`, { headers: { cookie: bo.cookie } })
    ).text();
    expect(listed).toContain(`data-difference="${ids.told}" data-state="corrected"`);
    expect(listed).not.toContain(`data-difference="${ids.detail}"`);
    expect((await fetch(`${app.url}/ops/reconciliation?state=closed`, { headers: { cookie: bo.cookie } })).status).toBe(
      400,
    );
  });
});
