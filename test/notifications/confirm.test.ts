/**
 * Without webhook credentials a final state is told only once one read of it from the service agrees, and
 * every such read takes one from the budget all processes share: against a real sandbox over HTTP, two
 * "processes" on one Redis, each receiving every notification.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { REDIS_URL, cleanupQueues, inspector, uniquePrefix } from '../conversation/redis-helper.js';
import type { PaymentResult } from '../../flows/calls.js';
import { until, reading } from '../until.js';
import { payment, startProcess, startService, type Process, type Service } from './stack.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

let n = 0;

describe('final states without webhook credentials', () => {
  it('are told only after the read agrees; open states are told without one', async () => {
    const service = await startService();
    open.push(service);
    const product = await startProcess(service);
    open.push(product);
    await service.hook('payment.status.changed', `${product.url}/notifications/momo`);
    const key = `confirm-${n++}:pay`;
    const made = (await product.calls.createPayment(payment(key, 'telegram:51'))) as PaymentResult;
    // validated, approved, processed: one read, for the outcome only.
    await service.sandbox.controls.advanceClock(5);
    await service.sandbox.controls.idle();
    await until(
      'the outcome told',
      reading(
        () => product.telegram.told,
        (t) => t.some((m) => /^Done/.test(m.text)),
      ),
    );
    expect(product.telegram.told.map((m) => m.text)).toEqual([
      expect.stringContaining('passed its checks'),
      expect.stringContaining('approved'),
      expect.stringMatching(/^Done: 5,000 UGX/),
    ]);
    expect(service.reads).toEqual([`GET /api/payments/${made.id}`]);
  });

  it('31 confirmations at once over two processes on one Redis never make more than 30 reads in the window; the 31st waits and is told', async () => {
    const keyPrefix = uniquePrefix('confirm');
    open.push({ close: () => inspector(keyPrefix).cleanup() });
    const service: Service = await startService();
    open.push(service);
    let now = 1_700_000_000_000;
    // Each ask of the budget reads its clock: counted, to see a waiting read ask again and be refused.
    let asked = 0;
    const budget = { now: () => (asked++, now), pollMs: 20 };
    const processes: Process[] = [];
    for (const name of ['a', 'b']) {
      const queueName = `test-confirm-${process.pid}-${name}-${n++}`;
      open.push({ close: () => cleanupQueues(queueName, keyPrefix) });
      const p = await startProcess(service, { redisUrl: REDIS_URL, keyPrefix, queueName, budget });
      open.push(p);
      processes.push(p);
      // Each process receives every notification (two webhooks), as two instances behind no balancer would.
      await service.hook('payment.status.changed', `${p.url}/notifications/momo`);
    }
    const [a, b] = processes as [Process, Process];
    for (let i = 0; i < 31; i++)
      await (i % 2 ? a : b).calls.createPayment(payment(`budget-${n}-${i}:pay`, `telegram:${600 + i}`));
    await service.sandbox.controls.advanceClock(5);
    await service.sandbox.controls.idle();

    const done = () => [...a.telegram.told, ...b.telegram.told].filter((m) => /^Done/.test(m.text));
    await until(
      '30 told',
      reading(done, (d) => d.length >= 30),
    );
    // Time stands still: the budget is spent, and stays spent however often the waiting read asks again.
    const before = asked;
    await until('the waiting read asking the budget 5 times more', () => asked >= before + 5);
    expect(service.reads).toHaveLength(30);
    expect(done()).toHaveLength(30);
    // A minute and a second later the waiting reads go out, and every outcome is told once.
    now += 61_000;
    await until(
      '31 told',
      reading(done, (d) => d.length >= 31),
    );
    // Every notification worked in both processes (no job waiting, active or retried later): nothing more to tell.
    await until(
      'both queues empty',
      async () => (await a.notifications.queue.depth()) + (await b.notifications.queue.depth()) === 0,
    );
    expect(done()).toHaveLength(31);
    expect(new Set(done().map((m) => m.address.conversationId)).size).toBe(31);
    // One read per confirmation: the process that did not read a payment found it being read, then told.
    expect(service.reads).toHaveLength(31);
  });
});
