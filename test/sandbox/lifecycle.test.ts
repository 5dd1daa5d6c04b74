/**
 * The whole lifecycle the contract describes, driven over raw HTTP through the /sandbox controls on a
 * virtual clock: payment approvals, rejections, cancellations and recipient states; collection reversal,
 * cash-out and failure; request statuses in order, retries and recurring series; faults. Each state change
 * must reach a webhook (`{hook, data}`) and the events list.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { startReceiver, startSandbox, type Received, type RunningSandbox } from './harness.js';

const number = (behaviour: string) => TEST_NUMBERS.find((t) => t.behaviour === behaviour)!.phonenumber;
const SARAH = number('registered');

let sb: RunningSandbox;
let hooks: Awaited<ReturnType<typeof startReceiver>>;
beforeEach(async () => {
  sb = await startSandbox({ allowHttpWebhooks: true });
  hooks = await startReceiver();
  for (const event of ['payment.status.changed', 'collection.received', 'collectionrequest.status.changed']) {
    expect((await sb.api('POST', '/webhooks', { json: { event, target: `${hooks.url}/hook` } })).status).toBe(201);
  }
});
afterEach(async () => {
  await sb.close();
  await hooks.close();
});

/** A control under /sandbox with the test key (or another, or none). */
const control = (method: string, path: string, json?: unknown, key: string | null = 'test-key') =>
  sb.raw(`/sandbox${path}`, {
    method,
    headers: {
      ...(key === null ? {} : { authorization: `Token ${key}` }),
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });

const advance = async (seconds: number) => {
  expect((await control('POST', '/clock/advance', { seconds })).status).toBe(200);
  await sb.controls.idle();
};

/** The states a resource's webhooks told, in order, for the resource with this id. */
const told = (event: string, id: number, field: 'state' | 'status') =>
  hooks.received
    .filter((r: Received) => r.body.hook.event === event && r.body.data.id === id)
    .map((r) => r.body.data[field] as string);

const pay = async (json: Record<string, unknown>) => {
  const res = await sb.api('POST', '/payments', {
    json: { currency: 'UGX', description: 'Rent', amount: '5000', phonenumber: SARAH, ...json },
  });
  expect(res.status).toBe(201);
  return res.body as { id: number };
};
const payment = async (id: number) => (await sb.api('GET', `/payments/${id}`)).body;

describe('payments: approval rules and the portal decisions', () => {
  it('holds a payment above a rule in approval_needed, then approval_requested, until approved; below it goes straight on', async () => {
    const rules = await control('PATCH', '/organization', { approvalRules: [{ currency: 'UGX', above: '1000000' }] });
    expect(rules.status).toBe(200);
    expect(rules.body.approvalRules).toEqual([{ currency: 'UGX', above: '1000000' }]);
    const big = await pay({ amount: '1500000' });
    const small = await pay({ amount: '1000000' });
    await advance(5);
    expect((await payment(big.id)).state).toBe('approval_requested');
    expect((await payment(small.id)).state).toBe('processed');
    expect(told('payment.status.changed', big.id, 'state')).toEqual([
      'validated',
      'approval_needed',
      'approval_requested',
    ]);

    const approved = await control('POST', `/payments/${big.id}/approve`, {});
    expect(approved.status).toBe(200);
    expect(approved.body.state).toBe('approved');
    await advance(5);
    expect(await payment(big.id)).toMatchObject({ state: 'processed', rejected_reason: null, cancelled_reason: null });
    expect(told('payment.status.changed', big.id, 'state')).toEqual([
      'validated',
      'approval_needed',
      'approval_requested',
      'approved',
      'processed',
    ]);
    const events = (await sb.api('GET', '/events?type=payment.status.changed&limit=100')).body.results;
    expect(
      events
        .filter((e: any) => e.data.id === big.id)
        .map((e: any) => e.data.state)
        .reverse(),
    ).toEqual(told('payment.status.changed', big.id, 'state'));
  });

  it('rejects with rejected_reason, rejected_time and rejected_by; KES rules leave UGX alone', async () => {
    await control('PATCH', '/organization', {
      approvalRules: [
        { currency: 'UGX', above: 0 },
        { currency: 'KES', above: '10' },
      ],
    });
    const p = await pay({});
    await advance(1);
    const rejected = await control('POST', `/payments/${p.id}/reject`, { reason: 'Not budgeted', by: 77 });
    expect(rejected.status).toBe(200);
    expect(rejected.body).toMatchObject({ state: 'rejected', rejected_reason: 'Not budgeted', rejected_by: 77 });
    expect(rejected.body.rejected_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Number(sb.controls.balances().UGX)).toBe(50_000_000);
    await advance(60);
    expect(told('payment.status.changed', p.id, 'state').at(-1)).toBe('rejected');
    // A decided payment takes no other decision.
    for (const decision of ['approve', 'reject', 'cancel']) {
      const again = await control('POST', `/payments/${p.id}/${decision}`, { reason: 'x' });
      expect(again.status, decision).toBe(409);
      expect(again.body.detail).toMatch(/rejected/);
    }
  });

  it('lists by modified_after (included, to the minute) what changed since: a payment rejected days later', async () => {
    await control('PATCH', '/organization', { approvalRules: [{ currency: 'UGX', above: '100000' }] });
    const held = await pay({ amount: '150000' });
    const plain = await pay({});
    await advance(60);
    const minute = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
    const changedSince = async (ms: number) =>
      (await sb.api('GET', `/payments?ordering=id&modified_after=${encodeURIComponent(minute(ms))}`)).body.results.map(
        (p: { id: number }) => p.id,
      );
    await advance(3 * 86_400);
    const look = sb.controls.now().getTime();
    expect(await changedSince(look)).toEqual([]);
    expect((await control('POST', `/payments/${held.id}/reject`, { reason: 'Not budgeted' })).status).toBe(200);
    // The minute of the change is included; the payment left alone is not listed.
    expect(await changedSince(look)).toEqual([held.id]);
    expect(await changedSince(look - 4 * 86_400_000)).toEqual([held.id, plain.id].sort((a, b) => a - b));
  });

  it('cancels a payment not yet sent with cancelled_*, but not one already processed', async () => {
    const p = await pay({ start_date: '2 hours' });
    await advance(5);
    expect((await payment(p.id)).state).toBe('scheduled');
    const cancelled = await control('POST', `/payments/${p.id}/cancel`, { reason: 'Paid in cash' });
    expect(cancelled.body).toMatchObject({ state: 'cancelled', cancelled_reason: 'Paid in cash', cancelled_by: 1 });
    await advance(3 * 3600);
    expect((await payment(p.id)).state).toBe('cancelled');
    expect(Number(sb.controls.balances().UGX)).toBe(50_000_000);
    const done = await pay({});
    await advance(5);
    expect((await control('POST', `/payments/${done.id}/cancel`, { reason: 'late' })).status).toBe(409);
  });

  it('refuses what a portal user could not do: no key, another organization, no payment, no reason, a wrong body or method', async () => {
    const p = await pay({});
    expect((await control('POST', `/payments/${p.id}/cancel`, { reason: 'x' }, null)).status).toBe(401);
    sb.controls.addOrganization({ apiKey: 'other' });
    expect((await control('POST', `/payments/${p.id}/cancel`, { reason: 'x' }, 'other')).status).toBe(403);
    expect((await control('POST', '/payments/999/cancel', { reason: 'x' })).status).toBe(404);
    const noReason = await control('POST', `/payments/${p.id}/reject`, {});
    expect(noReason.status).toBe(400);
    expect(noReason.body.reason).toEqual(['This field is required.']);
    expect((await control('POST', `/payments/${p.id}/cancel`, { reason: 'x', extra: 1 })).status).toBe(400);
    expect((await control('GET', `/payments/${p.id}/approve`)).status).toBe(405);
    expect((await control('PATCH', '/organization', { approvalRules: [{ currency: 'USD', above: '1' }] })).status).toBe(
      400,
    );
    expect(
      (await control('PATCH', '/organization', { approvalRules: [{ currency: 'UGX', above: '-1' }] })).status,
    ).toBe(400);
    expect((await payment(p.id)).state).not.toBe('cancelled');
  });
});

describe('payments: recipient states through the directory', () => {
  it('queued, paused (with paused_reason) and parked wait their time, then complete', async () => {
    const queued = await pay({ phonenumber: number('payment_queued') });
    const paused = await pay({ phonenumber: number('payment_paused') });
    const parked = await pay({ phonenumber: number('payment_parked') });
    await advance(2);
    const recipientState = async (id: number) => (await payment(id)).phone_nos[0].state;
    expect(await recipientState(queued.id)).toBe('queued');
    expect(await recipientState(paused.id)).toBe('paused');
    expect(await recipientState(parked.id)).toBe('parked');
    expect((await payment(paused.id)).paused_reason).toMatch(/unavailable/);
    expect((await sb.api('GET', '/payments?payment_state=paused')).body.results.map((p: any) => p.id)).toEqual([
      paused.id,
    ]);
    expect(
      (await sb.api('GET', `/payments?paused_reason=${encodeURIComponent((await payment(paused.id)).paused_reason)}`))
        .body.count,
    ).toBe(1);
    await advance(3600);
    for (const p of [queued, paused, parked])
      expect(await payment(p.id)).toMatchObject({ state: 'processed', paused_reason: null });
    const recipientStates = hooks.received
      .filter((r) => r.body.data.id === paused.id && r.body.hook.event === 'payment.status.changed')
      .map((r) => r.body.data.phone_nos[0].state);
    expect(recipientStates).toEqual(['processing', 'processing', 'paused', 'complete']);
  });

  it('paused_for_admin_action waits for approve; aborted ends processed_with_errors with last_error', async () => {
    const held = await pay({ phonenumber: number('payment_needs_admin') });
    const aborted = await pay({ phonenumber: number('payment_aborted') });
    await advance(3600);
    expect(await payment(held.id)).toMatchObject({
      state: 'approved',
      phone_nos: [expect.objectContaining({ state: 'paused_for_admin_action' })],
    });
    expect(await payment(aborted.id)).toMatchObject({
      state: 'processed_with_errors',
      last_error: expect.stringMatching(/aborted/),
    });
    expect((await payment(aborted.id)).phone_nos[0]).toMatchObject({
      state: 'aborted',
      last_error: expect.stringMatching(/aborted/),
    });
    expect((await control('POST', `/payments/${held.id}/approve`, {})).body.state).toBe('processed');
  });
});

describe('collections: reversal, cash-out, failure', () => {
  it('reverses a successful collection: the wallet is debited back and its request becomes reversed', async () => {
    const req = (
      await sb.api('POST', '/collectionrequests', { json: { phonenumber: SARAH, amount: '20000', currency: 'UGX' } })
    ).body;
    const c = await control('POST', '/collections', { phonenumber: SARAH, amount: '20000', currency: 'UGX' });
    expect(c.body).toMatchObject({ status: 'successful', collection_request: { id: req.id } });
    const before = Number(sb.controls.balances().UGX);
    const reversed = await control('POST', `/collections/${c.body.id}/reverse`);
    expect(reversed.status).toBe(200);
    expect(reversed.body.status).toBe('reversed');
    expect(Number(sb.controls.balances().UGX)).toBe(before - 20_000);
    expect((await sb.api('GET', `/collectionrequests/${req.id}`)).body.status).toBe('reversed');
    await sb.controls.idle();
    expect(told('collectionrequest.status.changed', req.id, 'status')).toEqual([
      'processing_started',
      'successful',
      'reversed',
    ]);
    expect(told('collection.received', c.body.id, 'status')).toEqual(['successful', 'reversed']);
    expect((await sb.api('GET', '/collections?status=reversed')).body.map((x: any) => x.id)).toEqual([c.body.id]);
    expect((await control('POST', `/collections/${c.body.id}/cash-out`)).status).toBe(409);
  });

  it('cashes out a successful collection, and refuses another organization, a missing one or a second time', async () => {
    const c = await control('POST', '/collections', { phonenumber: SARAH, amount: '700', currency: 'UGX' });
    sb.controls.addOrganization({ apiKey: 'other' });
    expect((await control('POST', `/collections/${c.body.id}/cash-out`, undefined, 'other')).status).toBe(403);
    expect((await control('POST', '/collections/999/reverse')).status).toBe(404);
    expect((await control('POST', `/collections/${c.body.id}/cash-out`)).body.status).toBe('cashed_out');
    expect((await control('POST', `/collections/${c.body.id}/cash-out`)).status).toBe(409);
  });

  it('money from the collection_fails number arrives failed, and fails the request it was for', async () => {
    const payer = number('collection_fails');
    const req = (
      await sb.api('POST', '/collectionrequests', {
        json: { phonenumber: payer, amount: '300', currency: 'UGX', expiry_date: '1 hour' },
      })
    ).body;
    const before = sb.controls.balances().UGX;
    const c = await control('POST', '/collections', { phonenumber: payer, amount: '300', currency: 'UGX' });
    expect(c.body).toMatchObject({ status: 'failed', organization: 1, transaction: null });
    expect(sb.controls.balances().UGX).toBe(before);
    expect((await sb.api('GET', `/collectionrequests/${req.id}`)).body).toMatchObject({
      status: 'failed',
      error_message: expect.stringMatching(/not hold enough/),
    });
  });
});

describe('collection requests: statuses in order, retries, recurring', () => {
  const create = async (json: Record<string, unknown>) => {
    const res = await sb.api('POST', '/collectionrequests', {
      json: { amount: '1000', currency: 'UGX', phonenumber: SARAH, ...json },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: number; status: string };
  };

  it('a subscriber who pays: pending, instructions_sent, processing_started, successful', async () => {
    const req = await create({ phonenumber: number('pays_requests'), send_instructions: true });
    expect(req.status).toBe('pending');
    await advance(60);
    expect(told('collectionrequest.status.changed', req.id, 'status')).toEqual([
      'instructions_sent',
      'processing_started',
      'successful',
    ]);
    const done = (await sb.api('GET', `/collectionrequests/${req.id}`)).body;
    expect(done.collection).toEqual(expect.any(Number));
    expect(sb.controls.sms().map((s) => s.to)).toEqual([number('pays_requests'), number('pays_requests')]);
  });

  it('a failing subscriber: failed with error_message, retried every retry_interval_minutes up to max_attempts', async () => {
    const req = await create({ phonenumber: number('collection_fails'), retry_interval_minutes: 10, max_attempts: 2 });
    await advance(4 * 3600);
    expect(told('collectionrequest.status.changed', req.id, 'status')).toEqual([
      'processing_started',
      'failed',
      'pending',
      'processing_started',
      'failed',
      'pending',
      'processing_started',
      'failed',
    ]);
    expect((await sb.api('GET', `/collectionrequests/${req.id}`)).body).toMatchObject({
      status: 'failed',
      error_message: expect.any(String),
    });
    expect(sb.controls.collections().filter((c) => c.status === 'failed')).toHaveLength(3);
  });

  it('refuses retry settings past the contract bounds', async () => {
    for (const body of [{ retry_interval_minutes: 9 }, { max_attempts: 4 }, { max_attempts: -1 }]) {
      expect(
        (
          await sb.api('POST', '/collectionrequests', {
            json: { phonenumber: SARAH, amount: '1', currency: 'UGX', ...body },
          })
        ).status,
      ).toBe(400);
    }
  });

  it('a recurring request makes each occurrence a new request on the clock, with its own notifications', async () => {
    const start = new Date(sb.controls.now().getTime() + 3600_000);
    const fmt = (d: Date) =>
      `${String(d.getUTCDate()).padStart(2, '0')}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${d.getUTCFullYear()} ` +
      `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}:${String(d.getUTCSeconds()).padStart(2, '0')}`;
    const end = new Date(start.getTime() + 2 * 86_400_000 + 60_000);
    const first = await create({
      expiry_date: undefined,
      metadata: { chat: 'telegram:5' },
      subscription_settings: { start_date: fmt(start), end_date: fmt(end), frequency: 'daily' },
    });
    expect(first.status).toBe('new');
    await advance(3601);
    expect((await sb.api('GET', `/collectionrequests/${first.id}`)).body.status).toBe('pending');
    await advance(3 * 86_400);
    const all = sb.controls.collectionRequests();
    expect(all.map((r) => r.id)).toEqual([first.id, first.id + 1, first.id + 2]);
    for (const occurrence of all.slice(1)) {
      expect(occurrence).toMatchObject({ amount: '1000.00', phonenumber: SARAH, metadata: { chat: 'telegram:5' } });
      expect(told('collectionrequest.status.changed', occurrence.id as number, 'status')).toEqual([
        'pending',
        'expired',
      ]);
    }
    const times = all.map((r) => Date.parse(r.created as string));
    expect(times[2]! - times[1]!).toBe(86_400_000);
  });
});

describe('in-process controls', () => {
  it('decide payments, change collections and set faults as the HTTP controls do', async () => {
    sb.controls.setOrganization({ approvalRules: [{ currency: 'UGX', above: '100' }] });
    const p = await pay({});
    await advance(1);
    expect(sb.controls.decidePayment(p.id, 'cancel', { reason: 'Duplicate' })).toMatchObject({
      state: 'cancelled',
      cancelled_reason: 'Duplicate',
    });
    expect(() => sb.controls.decidePayment(p.id, 'approve')).toThrow(/cancelled/);
    const c = await sb.controls.sendCollection({ phonenumber: SARAH, amount: '50', currency: 'UGX' });
    expect(sb.controls.changeCollection(c.id as number, 'cash-out').status).toBe('cashed_out');
    expect(sb.controls.setFaults({ maintenance: true })).toEqual({ maintenance: true, latencyMs: 0 });
    expect((await sb.api('GET', '/contacts')).status).toBe(503);
    sb.controls.setFaults({ maintenance: false });
  });
});

describe('faults', () => {
  it('maintenance answers 503 on every API and vending call and changes nothing; latency delays answers; controls stay open', async () => {
    expect((await control('GET', '/faults')).body).toEqual({ maintenance: false, latencyMs: 0 });
    expect((await control('POST', '/faults', { maintenance: true })).body).toEqual({ maintenance: true, latencyMs: 0 });
    for (const key of ['test-key', 'wrong']) {
      const res = await sb.api('POST', '/payments', {
        key,
        json: { phonenumber: SARAH, amount: '1', currency: 'UGX', description: 'x' },
      });
      expect(res.status).toBe(503);
      expect(res.body.detail).toMatch(/maintenance/);
    }
    const vending = await sb.raw('/vending/services/epin/bundles', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(vending.status).toBe(503);
    expect(vending.body).toMatchObject({ status: 'error', code: 503 });
    expect(sb.controls.payments()).toHaveLength(0);
    expect((await control('GET', '/clock')).status).toBe(200);
    expect((await control('POST', '/faults', { maintenance: 'False', latencyMs: 300 })).body).toEqual({
      maintenance: false,
      latencyMs: 300,
    });
    const started = performance.now();
    expect((await sb.api('GET', '/contacts')).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    for (const body of [
      { latencyMs: -1 },
      { latencyMs: 600_001 },
      { latencyMs: 'slow' },
      { maintenance: 'maybe' },
      { other: 1 },
    ]) {
      expect((await control('POST', '/faults', body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await control('POST', '/faults', { maintenance: true }, null)).status).toBe(401);
    expect((await control('GET', '/faults')).body).toEqual({ maintenance: false, latencyMs: 300 });
  });
});
