/**
 * The follow-up of an outcome that never came by webhook, against a real sandbox over HTTP: one budgeted
 * read, the outcome told through the dispatcher (and so never twice), nothing read when the webhook came;
 * a payout request whose answer was lost found by one of its recipients' numbers and completed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { payoutMessage } from '../../adapters/slack/payout.js';
import { loadAccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { createLogger } from '../../src/log.js';
import { outcomesCsv } from '../../src/payouts/outcomes.js';
import { Payouts, type Payout } from '../../src/payouts/payouts.js';
import { REDIS_URL, cleanupQueues, inspector, uniquePrefix } from '../conversation/redis-helper.js';
import {
  API_KEY,
  payment,
  startProcess,
  startService,
  type Process,
  type ProcessOptions,
  type Service,
} from './stack.js';
import { until } from '../until.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

let n = 0;
const backends: Array<[string, () => ProcessOptions & { cleanup?: () => Promise<void> }]> = [
  ['memory', () => ({})],
  [
    'redis',
    () => {
      const keyPrefix = uniquePrefix('follow-up');
      const queueName = `test-follow-up-${process.pid}-${++n}`;
      return {
        redisUrl: REDIS_URL,
        keyPrefix,
        queueName,
        cleanup: async () => {
          await inspector(keyPrefix).cleanup();
          await cleanupQueues(queueName, keyPrefix);
        },
      };
    },
  ],
];

async function setup(
  backend: () => ProcessOptions & { cleanup?: () => Promise<void> },
  options: ProcessOptions = {},
): Promise<{ service: Service; product: Process }> {
  const env = backend();
  const service = await startService();
  open.push(service);
  if (env.cleanup) open.push({ close: env.cleanup });
  const product = await startProcess(service, { ...env, followUpDelaysSeconds: [0.3, 0.6], ...options });
  open.push(product);
  return { service, product };
}

/** A fetch that lets the create reach the service and then loses its answer, as a dropped connection does. */
const losingCreates: typeof fetch = async (input, init) => {
  const answer = await fetch(input, init);
  if (answer.ok && init?.method === 'POST' && String(input).endsWith('/api/payments')) {
    await answer.text();
    throw new TypeError('fetch failed: socket hang up');
  }
  return answer;
};

/** Delays no test waits for: the checks are run by hand, when the service is where the test wants it. */
const BY_HAND = [3600, 7200];

describe.each(backends)('follow-up of an outcome (%s)', (_name, backend) => {
  it('an intent whose answer was lost gets its outcome told by one list read matched by our ref', async () => {
    const { service, product } = await setup(backend, { fetch: losingCreates, followUpDelaysSeconds: BY_HAND });
    const key = `lost-${n++}:pay`;
    // The create reached the service; its answer did not come back: the flow is told it is being confirmed.
    await expect(product.calls.createPayment(payment(key, 'telegram:41'))).rejects.toMatchObject({
      code: 'connection',
    });
    expect(await product.made.byRef(key)).not.toHaveProperty('id');
    // Another payment to the same number and amount, not ours: the read must pick ours by its ref.
    await (
      await fetch(`${service.url}/api/payments`, {
        method: 'POST',
        headers: { authorization: `Token ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          ...payment('other', 'telegram:99'),
          metadata: { chat: 'telegram:99', ref: 'not-ours' },
        }),
      })
    ).text();
    await service.sandbox.controls.advanceClock(5);
    // No webhook is registered: none will come. The first check is due.
    await product.notifications.followUp.check({ ref: key, step: 0 });
    expect(product.telegram.told).toEqual([
      {
        address: { channel: 'telegram', conversationId: '41' },
        text: expect.stringMatching(/^Done: 5,000 UGX reached \+256772000001/),
      },
    ]);
    expect(service.reads).toHaveLength(1);
    expect(service.reads[0]).toMatch(/^GET \/api\/payments\?.*phonenumber=%2B256772000001.*created_after=/);
    // The id is linked now; the next check finds the outcome told and reads nothing.
    expect((await product.made.byRef(key))?.id).toEqual(expect.any(String));
    await product.notifications.followUp.check({ ref: key, step: 1 });
    expect(service.reads).toHaveLength(1);
    expect(product.telegram.told).toHaveLength(1);
  });

  it("a payout request whose answer was lost is found by a recipient's number and our ref, and completes the payout's message and CSV", async () => {
    let payouts: Payouts | undefined;
    const { service, product } = await setup(backend, {
      fetch: losingCreates,
      followUpDelaysSeconds: BY_HAND,
      onRecipients: (ref, recipients) => payouts!.report(ref, recipients),
    });
    // As src/app.ts builds them: the process's store and recorded services, reported to by its dispatcher.
    payouts = new Payouts({
      store: product.store,
      policy: loadAccessPolicy(),
      calls: product.calls,
      currencies: ['UGX'],
      country: { defaultCountry: 'UG' },
      logger: createLogger('silent'),
    });
    const updates: Payout[] = [];
    payouts.attach({
      post: async () => ({ channel: 'C1', ts: '1.000100' }),
      update: async (payout) => void updates.push(payout),
    });
    const maker = { channel: 'slack' as const, userId: `UMAKER${n++}`, chat: 'telegram:47' };
    // The sandbox's +256772000001 is paid, +256772000002 is not registered for mobile money (it ends in error).
    const prepared = await payouts.prepare(maker, {
      rows: { pasted: '0772000001, 100\n0772000002, 200' },
      currency: 'UGX',
      description: 'Wages',
    });
    if (!prepared.ok) throw new Error('not prepared');
    const key = prepared.payout.requests[0]!.key;
    // The request reached the service; its answer did not come back: the maker reads "being confirmed".
    const confirmed = (await payouts.confirm(prepared.payout.id, maker))!;
    expect(confirmed.requests[0]!.result).toEqual({ kind: 'unconfirmed' });
    expect(outcomesCsv(confirmed)).toContain('being_confirmed');
    expect(await product.made.byRef(key)).not.toHaveProperty('id');
    await service.sandbox.controls.advanceClock(5);
    // No webhook is registered: only the follow-up can complete it.
    await product.notifications.followUp.check({ ref: key, step: 0 });
    // One list read by a recipient's number (the request's own payee is "2 recipients", a number nothing has),
    // without an amount (whether it would match the request's total is not in the contract).
    expect(service.reads).toHaveLength(1);
    expect(service.reads[0]).toMatch(/^GET \/api\/payments\?.*phonenumber=%2B256772000001.*created_after=/);
    expect(service.reads[0]).not.toContain('amount=');
    expect((await product.made.byRef(key))?.id).toEqual(expect.any(String));
    const completed = (await payouts.get(prepared.payout.id))!;
    expect(completed.requests[0]!.states).toEqual([
      { state: 'complete' },
      { state: 'error', error: expect.any(String) },
    ]);
    expect(
      outcomesCsv(completed)
        .split('\r\n')
        .slice(1, 3)
        .map((line) => line.split(',')[4]),
    ).toEqual(['complete', 'error']);
    const words = JSON.stringify(payoutMessage(updates.at(-1)!));
    expect(words).toContain('Paid 1 (100 UGX)');
    expect(words).not.toContain('being confirmed');
    // The maker's chat is told the request's outcome, in our record's words.
    expect(product.telegram.told).toEqual([
      { address: { channel: 'telegram', conversationId: '47' }, text: expect.stringContaining('2 recipients') },
    ]);
    // Told and final: the next check reads nothing.
    await product.notifications.followUp.check({ ref: key, step: 1 });
    expect(service.reads).toHaveLength(1);
  });

  it('the first check is queued when the intent is written and runs after its delay: one read by id, told once', async () => {
    const { service, product } = await setup(backend, { followUpDelaysSeconds: [0.2] });
    const key = `silent-${n++}:pay`;
    // The payment reached its outcome at the service; its webhook never came.
    const created = (await (
      await fetch(`${service.url}/api/payments`, {
        method: 'POST',
        headers: { authorization: `Token ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(payment(key, 'telegram:42')),
      })
    ).json()) as { id: number };
    await service.sandbox.controls.advanceClock(5);
    await product.made.intend({
      kind: 'payment',
      ref: key,
      chat: 'telegram:42',
      amount: '5000',
      currency: 'UGX',
      payee: '+256772000001',
    });
    await product.made.accepted(key, String(created.id));
    await until('the outcome told', () => product.telegram.told.length > 0);
    expect(service.reads).toEqual([`GET /api/payments/${created.id}`]);
    expect(product.telegram.told.map((t) => t.text)).toEqual([expect.stringMatching(/^Done/)]);
    // The service's webhook arrives late after all: a duplicate.
    const late = await fetch(`${product.url}/notifications/momo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        hook: { event: 'payment.status.changed' },
        data: { id: created.id, state: 'processed', metadata: { ref: key } },
      }),
    });
    expect(late.status).toBe(200);
    // Taken into the queue before the 200: once the queue is empty it has been worked.
    await until('the late notification worked', async () => (await product.notifications.queue.depth()) === 0);
    expect(product.telegram.told).toHaveLength(1);
    expect(service.reads).toHaveLength(1);
  });

  it('the webhook came: the outcome is told once and the follow-up reads nothing', async () => {
    const { service, product } = await setup(backend, { credentials: true, followUpDelaysSeconds: BY_HAND });
    await service.hook('payment.status.changed', `${product.url}/notifications/momo`);
    const key = `hooked-${n++}:pay`;
    await product.calls.createPayment(payment(key, 'telegram:43'));
    await service.sandbox.controls.advanceClock(5);
    await service.sandbox.controls.idle();
    await until('the outcome told', () => product.telegram.told.some((m) => /^Done/.test(m.text)));
    await product.notifications.followUp.check({ ref: key, step: 0 });
    expect(service.reads).toEqual([]);
    expect(product.telegram.told.filter((m) => /^Done/.test(m.text))).toHaveLength(1);
  });

  it('a refused create is not followed up; one never found is left "being confirmed" and logged for the operator, never told "not made"', async () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    const { service, product } = await setup(backend, { logger, followUpDelaysSeconds: BY_HAND });
    // Refused: a currency the service does not know.
    const refused = `refused-${n++}:pay`;
    await expect(
      product.calls.createPayment({ ...payment(refused, 'telegram:44'), currency: 'XXX' }),
    ).rejects.toMatchObject({ code: 'validation' });
    await product.notifications.followUp.check({ ref: refused, step: 0 });
    expect(service.reads).toEqual([]);
    // Lost, and not found by any read.
    const key = `vanished-${n++}:pay`;
    await product.made.intend({
      kind: 'payment',
      ref: key,
      chat: 'telegram:45',
      amount: '777',
      currency: 'UGX',
      payee: '+256772000001',
    });
    await product.notifications.followUp.check({ ref: key, step: 0 });
    expect(lines.some((line) => line.includes('outcome still unknown'))).toBe(false);
    await product.notifications.followUp.check({ ref: key, step: 1 });
    expect(service.reads).toHaveLength(2); // one list read per check
    expect(product.telegram.told).toEqual([]);
    expect(lines.find((line) => line.includes('outcome still unknown after the last check'))).toContain(key);
    // A purchase whose answer was lost cannot be read: the operator is told, the service is not asked.
    const purchase = `data-${n++}:data`;
    await product.made.intend({
      kind: 'purchase',
      ref: purchase,
      chat: 'telegram:46',
      amount: '500',
      currency: '',
      payee: '+2348030000001',
    });
    await product.notifications.followUp.check({ ref: purchase, step: 0 });
    expect(service.reads).toHaveLength(2);
    expect(lines.find((line) => line.includes('purchase outcome unknown'))).toContain(purchase);
  });
});
