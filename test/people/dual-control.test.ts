/**
 * Dual control of operators, from outside over real HTTP on a real PostgreSQL database (OPS_DUAL_CONTROL=all):
 * the issue's attack (one operator adds a teller and a finance person, to approve their own payout) leaves
 * nobody added until a second operator approves; nobody approves their own request; an unauthenticated caller,
 * a wrong CSRF token, a request decided twice, each get a 4xx with the reason and change nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import type { Database } from '../../src/journal/database.js';
import { AtSession } from '../e2e/helpers.js';
import { postForm, postSignIn, signIn } from './ops-session.js';
import { LEAD, SECOND, startWithTwoOperators, type TwoOperators } from './two-operators.js';

const OPS_TOKEN = 'ops-token-0123456789abcdef';
const POLICY = {
  roles: {
    teller: { flows: ['pay', 'request', 'check'], perPaymentLimit: { UGX: '500000' }, dailyLimit: { UGX: '2000000' } },
    finance: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {} },
  },
  users: { ussd: {}, slack: {}, telegram: {}, whatsapp: {} },
};

let ops: TwoOperators;
let direct: Database;
let app: RunningApp;
beforeAll(async () => {
  ops = await startWithTwoOperators('dual_control', { OPS_TOKEN, ACCESS_POLICY: JSON.stringify(POLICY) });
  ({ app, direct } = ops);
});
afterAll(() => ops?.stop());

interface PeopleJson {
  persons: Array<{ id: string; name: string; role: string; identities: Array<{ channel: string; userId: string }> }>;
  requests: { pending: Array<{ id: string; action: string; askedBy: string; state: string }>; decided: unknown[] };
  operators: Array<{ name: string; status: string }>;
}
const peopleJson = async (): Promise<PeopleJson> =>
  (
    await fetch(`${app.url}/ops/people.json`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } })
  ).json() as Promise<PeopleJson>;
const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  postForm(app.url, path, fields, headers);
const requestId = async (res: Response): Promise<string> => {
  expect(res.status).toBe(202);
  const id = /request <code>(r-[\w-]+)<\/code>/.exec(await res.text())?.[1];
  expect(id).toBeTruthy();
  return id!;
};

describe('dual control of operators', () => {
  it("refuses the lone operator's maker and checker: nobody is added until a second operator approves", async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const teller = await requestId(
      await post(
        '/ops/people',
        { csrf: lead.csrf, name: 'Teller Tom', role: 'teller', ussd: '+256700444001', slack: 'UTOM' },
        { cookie: lead.cookie },
      ),
    );
    const finance = await requestId(
      await post(
        '/ops/people',
        { csrf: lead.csrf, name: 'Finance Fay', role: 'finance', slack: 'UFAY' },
        { cookie: lead.cookie },
      ),
    );
    let json = await peopleJson();
    expect(json.persons.map((p) => p.name)).not.toContain('Teller Tom');
    expect(json.persons.map((p) => p.name)).not.toContain('Finance Fay');
    expect(json.requests.pending.map((r) => r.id)).toEqual(expect.arrayContaining([teller, finance]));
    // The teller's number cannot dial: the person does not exist yet.
    expect(await new AtSession(app.url, '+256700444001').dial()).toMatch(/not allowed/);

    // The asker approving their own: refused, with the reason, nothing changed.
    for (const id of [teller, finance]) {
      const own = await post(`/ops/requests/${id}/approve`, { csrf: lead.csrf }, { cookie: lead.cookie });
      expect(own.status).toBe(403);
      expect(await own.text()).toMatch(/nobody approves their own request/);
    }
    // Unauthenticated, and a wrong CSRF token: refused, nothing changed.
    expect((await post(`/ops/requests/${teller}/approve`, { csrf: lead.csrf })).status).toBe(403);
    expect((await post(`/ops/requests/${teller}/approve`, { csrf: 'guessed' }, { cookie: lead.cookie })).status).toBe(
      403,
    );
    const basic = `Basic ${Buffer.from(`${SECOND.name}:${SECOND.password}`).toString('base64')}`;
    expect((await post(`/ops/requests/${teller}/approve`, {}, { authorization: basic })).status).toBe(403);
    // Made with the SQL check alone (the route's own check bypassed): the table refuses it.
    await expect(
      direct.db
        .updateTable('operator_requests' as never)
        .set({ state: 'approved', decided_by: LEAD.name, decided_at: new Date() } as never)
        .where('id' as never, '=', teller as never)
        .execute(),
    ).rejects.toThrow(/operator_requests_not_own/);
    json = await peopleJson();
    expect(json.persons.map((p) => p.name)).not.toContain('Teller Tom');
    expect(json.requests.pending.map((r) => r.id)).toEqual(expect.arrayContaining([teller, finance]));

    // A second operator sees both, and decides: the teller approved, the finance person rejected.
    const bo = await signIn(app.url, SECOND.name, SECOND.password);
    const page = await (await fetch(`${app.url}/ops/people`, { headers: { cookie: bo.cookie } })).text();
    expect(page).toContain('add Teller Tom as teller');
    expect((await post(`/ops/requests/${teller}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(303);
    expect(
      (
        await post(
          `/ops/requests/${finance}/reject`,
          { csrf: bo.csrf, reason: 'one person, two roles' },
          { cookie: bo.cookie },
        )
      ).status,
    ).toBe(303);
    // Decided once: a second press is a 409 with the reason.
    const again = await post(`/ops/requests/${teller}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie });
    expect(again.status).toBe(409);
    expect(await again.text()).toMatch(/already approved/);
    json = await peopleJson();
    expect(json.persons.map((p) => p.name)).toContain('Teller Tom');
    expect(json.persons.map((p) => p.name)).not.toContain('Finance Fay');
    expect(await new AtSession(app.url, '+256700444001').dial()).not.toMatch(/not allowed/);
    const tom = json.persons.find((p) => p.name === 'Teller Tom')!;
    const history = await (await fetch(`${app.url}/ops/people/${tom.id}`, { headers: { cookie: bo.cookie } })).text();
    expect(history).toMatch(/by operator:ops-lead, approved by operator:bo/);
  });

  it("a role change, a PIN reset, a link code and a new operator wait for a second operator's approval", async () => {
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    const tom = (await peopleJson()).persons.find((p) => p.name === 'Teller Tom')!;
    const role = await requestId(
      await post(`/ops/people/${tom.id}/role`, { csrf: lead.csrf, role: 'finance' }, { cookie: lead.cookie }),
    );
    const reset = await post(`/ops/people/${tom.id}/reset-pin`, { csrf: lead.csrf }, { cookie: lead.cookie });
    const resetPage = await reset.clone().text();
    expect(resetPage).not.toMatch(/data-testid="one-time-code"/);
    await requestId(reset);
    const link = await post(`/ops/people/${tom.id}/link-code`, { csrf: lead.csrf }, { cookie: lead.cookie });
    expect(await link.clone().text()).not.toMatch(/data-testid="link-code"/);
    await requestId(link);
    const weak = await post(
      '/ops/operators',
      { csrf: lead.csrf, name: 'eve', password: 'aaaaaaaaaaaa' },
      { cookie: lead.cookie },
    );
    expect(weak.status).toBe(400);
    const eve = await requestId(
      await post(
        '/ops/operators',
        { csrf: lead.csrf, name: 'eve', password: 'eve has a long passphrase' },
        { cookie: lead.cookie },
      ),
    );
    const json = await peopleJson();
    expect(json.persons.find((p) => p.id === tom.id)?.role).toBe('teller');
    expect(json.operators.map((o) => o.name)).not.toContain('eve');
    // The new operator's password is in no answer, not even as its hash.
    expect(JSON.stringify(json)).not.toMatch(/passwordHash|scrypt|eve has a long passphrase/);
    expect((await post(`/ops/requests/${role}/approve`, { csrf: lead.csrf }, { cookie: lead.cookie })).status).toBe(
      403,
    );
    const bo = await signIn(app.url, SECOND.name, SECOND.password);
    expect((await post(`/ops/requests/${role}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(303);
    expect((await post(`/ops/requests/${eve}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(303);
    const after = await peopleJson();
    expect(after.persons.find((p) => p.id === tom.id)?.role).toBe('finance');
    expect(after.operators.map((o) => o.name)).toContain('eve');
    // An unknown request: 404 with the reason, never a 500.
    const unknown = await post('/ops/requests/r-nothere/approve', { csrf: bo.csrf }, { cookie: bo.cookie });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toMatch(/no such request/);
  });

  it('suspends and removes an operator under dual control: their session ends and sign-in is refused', async () => {
    const eve = await signIn(app.url, 'eve', 'eve has a long passphrase');
    const lead = await signIn(app.url, LEAD.name, LEAD.password);
    // Who may not ask it: nobody signed in, a wrong CSRF token; refused with a reason, nothing asked.
    for (const refused of [
      await post('/ops/operators/eve/suspend', { csrf: lead.csrf }),
      await post('/ops/operators/eve/remove', { csrf: 'forged' }, { cookie: lead.cookie }),
    ]) {
      expect(refused.status).toBe(403);
      expect(await refused.text()).not.toMatch(/request <code>/);
    }
    const suspend = await requestId(
      await post('/ops/operators/eve/suspend', { csrf: lead.csrf }, { cookie: lead.cookie }),
    );
    // Asked, not yet done: eve still works.
    expect((await fetch(`${app.url}/ops/people.json`, { headers: { cookie: eve.cookie } })).status).toBe(200);
    expect((await post('/ops/operators/nobody/remove', { csrf: lead.csrf }, { cookie: lead.cookie })).status).toBe(404);
    const bo = await signIn(app.url, SECOND.name, SECOND.password);
    expect((await post(`/ops/requests/${suspend}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(303);
    expect((await fetch(`${app.url}/ops/people.json`, { headers: { cookie: eve.cookie } })).status).toBe(401);
    expect((await postSignIn(app.url, 'eve', 'eve has a long passphrase')).status).toBe(401);
    const remove = await requestId(await post('/ops/operators/eve/remove', { csrf: bo.csrf }, { cookie: bo.cookie }));
    expect((await post(`/ops/requests/${remove}/approve`, { csrf: bo.csrf }, { cookie: bo.cookie })).status).toBe(403);
    expect((await post(`/ops/requests/${remove}/approve`, { csrf: lead.csrf }, { cookie: lead.cookie })).status).toBe(
      303,
    );
    expect((await peopleJson()).operators.find((o) => o.name === 'eve')?.status).toBe('removed');
  });
});
