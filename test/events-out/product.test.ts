/**
 * Events out in the whole product (embedded sandbox, PGlite), over real HTTP: an endpoint that holds its
 * requests without answering never slows a USSD payment (every hop is answered while it still holds one);
 * once it answers, every event of the payments arrives, each signature verified with the documented snippet.
 * Then /ops/deliveries: the log with its filter, and the replay, refused without a session or without the
 * page's CSRF token, and sent again with them.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import type { EventBody } from '../../src/events-out/derive.js';
import { AtSession, startProduct } from '../e2e/helpers.js';
import { postForm, signIn } from '../people/ops-session.js';
import { until } from '../until.js';
import { startEndpoint, type Endpoint } from './endpoint.js';
import { documentedVerify } from './snippet.js';

const SECRET = 'whsec-product-0123456789abcdef';
const USER = 'ops-lead';
const PASSWORD = 'a long operator password';
const verify = documentedVerify();

let endpoint: Endpoint;
let app: RunningApp;
beforeAll(async () => {
  endpoint = await startEndpoint();
  app = await startProduct({
    OPS_USER: USER,
    OPS_PASSWORD: PASSWORD,
    WEBHOOK_ENDPOINTS: endpoint.url,
    WEBHOOK_SECRET: SECRET,
    WEBHOOK_POLL_MS: '20',
    // Longer than the test: a held request stays held until the test releases it.
    WEBHOOK_TIMEOUT_MS: '120000',
    WEBHOOK_CONCURRENCY: '2',
    WEBHOOK_RETRY_BASE_MS: '20',
    WEBHOOK_RETRY_MAX_MS: '100',
  });
}, 120_000);
afterAll(async () => {
  await app?.stop();
  await endpoint?.close();
});

const taken = () =>
  endpoint.received
    .filter((r) => r.answered === 200)
    .map((r) => {
      expect(verify(SECRET, r.raw, r.signature)).toBe(true);
      return JSON.parse(r.raw) as EventBody;
    });

/** A USSD payment of 5,000 UGX to 0772000001, hop by hop; `eachHop` runs after every answered hop. */
async function pay(me: string, eachHop: (screen: string) => void): Promise<string> {
  const ussd = new AtSession(app.url, me);
  const hop = async (screen: Promise<string>) => {
    const answered = await screen;
    eachHop(answered);
    return answered;
  };
  await hop(ussd.dial());
  for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1']) await hop(ussd.answer(answer));
  return hop(ussd.answer('1234'));
}

describe('events out in the product', () => {
  it('a hanging endpoint does not slow a USSD payment; once it answers, every event arrives signed', async () => {
    endpoint.hanging = true;
    await pay('+256700222001', () => {});
    // The first payment's first event is out, and the endpoint holds it without answering.
    await until('the endpoint to hold a request', () => endpoint.held() >= 1, { timeoutMs: 40_000 });

    // A whole second payment while the endpoint still holds: every hop answered, the request still held.
    let hops = 0;
    const outcome = await pay('+256700222002', (screen) => {
      expect(screen).toMatch(/^(CON|END) /);
      expect(endpoint.held()).toBeGreaterThanOrEqual(1);
      hops++;
    });
    expect(hops).toBe(10);
    expect(outcome).toMatch(/^END /);
    expect(endpoint.held()).toBeGreaterThanOrEqual(1);

    endpoint.hanging = false;
    endpoint.release();
    // Each payment: intended, submitted, then completed once the sandbox processed it.
    await until(
      'both payments intended, submitted and completed, delivered',
      () => taken().filter((e) => e.type === 'payment.completed').length >= 2 && taken().length >= 6,
      { timeoutMs: 40_000 },
    );
    const refs = [...new Set(taken().map((e) => e.ref))];
    expect(refs).toHaveLength(2);
    for (const ref of refs) {
      const types = taken()
        .filter((e) => e.ref === ref)
        .map((e) => e.type);
      expect(types).toEqual(expect.arrayContaining(['payment.intended', 'payment.submitted', 'payment.completed']));
      for (const e of taken().filter((x) => x.ref === ref)) {
        expect(e).toMatchObject({ ref, currency: 'UGX', amount: expect.stringMatching(/^5000(\.0+)?$/) });
      }
    }
  });

  it('/ops/deliveries lists the log by state, and replays only for a signed-in operator with the CSRF token', async () => {
    // Unauthenticated: a script gets 401, a change 403.
    expect((await fetch(`${app.url}/ops/deliveries`, { headers: { accept: 'application/json' } })).status).toBe(401);
    const event = taken().find((e) => e.type === 'payment.completed')!;
    const fields = { event: event.id, endpoint: endpoint.url };
    const anonymous = await postForm(app.url, '/ops/deliveries/replay', { ...fields, csrf: 'x' });
    expect(anonymous.status).toBe(403);

    const { cookie, csrf } = await signIn(app.url, USER, PASSWORD);
    await until(
      'nothing pending',
      async () => {
        const page = await (await fetch(`${app.url}/ops/deliveries?state=pending`, { headers: { cookie } })).text();
        return !/data-state="pending"/.test(page);
      },
      { timeoutMs: 40_000 },
    );
    const all = await fetch(`${app.url}/ops/deliveries`, { headers: { cookie } });
    expect(all.status).toBe(200);
    const page = await all.text();
    expect(page).toContain(event.id);
    expect(page).toContain('payment.completed');
    expect(page).toMatch(/data-state="delivered"/);
    const failed = await (await fetch(`${app.url}/ops/deliveries?state=failed`, { headers: { cookie } })).text();
    expect(failed).not.toMatch(/data-state=/);
    expect(failed).toMatch(/No deliveries failed/);
    expect((await fetch(`${app.url}/ops/deliveries?state=lost`, { headers: { cookie } })).status).toBe(400);

    // A signed-in operator without the page's token changes nothing.
    const before = endpoint.received.filter((r) => JSON.parse(r.raw).id === event.id).length;
    const noToken = await postForm(app.url, '/ops/deliveries/replay', fields, { cookie });
    expect(noToken.status).toBe(403);
    const wrongToken = await postForm(app.url, '/ops/deliveries/replay', { ...fields, csrf: `${csrf}x` }, { cookie });
    expect(wrongToken.status).toBe(403);
    const elsewhere = await postForm(
      app.url,
      '/ops/deliveries/replay',
      { ...fields, csrf },
      { cookie, origin: 'https://evil.example' },
    );
    expect(elsewhere.status).toBe(403);
    expect(endpoint.received.filter((r) => JSON.parse(r.raw).id === event.id).length).toBe(before);

    const unknown = await postForm(
      app.url,
      '/ops/deliveries/replay',
      { event: 'evt_000000000000000000000000', endpoint: endpoint.url, csrf },
      { cookie },
    );
    expect(unknown.status).toBe(404);
    const replayed = await postForm(app.url, '/ops/deliveries/replay', { ...fields, csrf }, { cookie });
    expect(replayed.status).toBe(303);
    await until(
      'the replayed event',
      () =>
        endpoint.received.filter((r) => r.answered === 200 && JSON.parse(r.raw).id === event.id).length === before + 1,
      { timeoutMs: 40_000 },
    );
    const after = await (await fetch(`${app.url}/ops/deliveries`, { headers: { cookie } })).text();
    expect(after).toContain(`replayed by ${USER}`);
    // The replay is a row of the operators' audit, and so is each refusal before it.
    const audit = await sql<{ actor: string; action: string; detail: Record<string, unknown> }>`
      select actor, action, detail from operator_audit where action in ('replay', 'refused') order by id`.execute(
      app.database.db,
    );
    expect(audit.rows).toContainEqual({
      actor: USER,
      action: 'replay',
      detail: { event: event.id, endpoint: fields.endpoint },
    });
    expect(
      audit.rows.filter((r) => r.action === 'refused' && r.detail.path === '/ops/deliveries/replay').length,
    ).toBeGreaterThan(0);
  });
});
