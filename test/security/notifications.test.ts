/**
 * Notifications are believed only for what this product made (issue 16 item 3): a correctly authenticated
 * notification about a payment we never made is told to nobody, and a forged body cannot pre-claim (and so
 * silence) the outcome of a real one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedNotes } from '../../src/conversation/channels/ussd-inbox.js';
import { keys } from '../../src/store/keys.js';
import type { PaymentResult } from '../../flows/calls.js';
import { AtSession } from '../e2e/helpers.js';
import { BASIC_AUTH, startFuzzProduct, type Product } from '../fuzz/harness.js';
import { payment, startProcess, startService } from '../notifications/stack.js';
import { reading, until } from '../until.js';

let product: Product;
beforeAll(async () => {
  product = await startFuzzProduct();
});
afterAll(async () => {
  await product?.stop();
});

const post = (url: string, body: unknown, authorization?: string) =>
  fetch(`${url}/notifications/momo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });

/** Waits until the product's notification queue has nothing left to do (its depth on /metrics is 0). */
async function drained(url: string): Promise<void> {
  await until(
    'the notification queue empty',
    reading(
      async () => /^momo_notification_queue_depth (\d+)/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1],
      (depth) => depth === '0',
    ),
  );
}

describe('notifications about what this product did not make', () => {
  it("a correctly authenticated notification about a payment never made here is told to nobody; the USSD user's next dial shows nothing of it", async () => {
    const victim = '+256700222333';
    await new AtSession(product.url, victim).dial();
    const forged = await post(
      product.url,
      {
        hook: { id: 1, event: 'payment.status.changed', target: `${product.url}/notifications/momo` },
        data: {
          id: 987654,
          state: 'processed',
          amount: '1500000',
          currency: 'UGX',
          phone_nos: [{ phonenumber: '+256772000001', amount: '1500000' }],
          metadata: { chat: `ussd:${victim}`, ref: 'not-ours:pay' },
        },
      },
      BASIC_AUTH,
    );
    expect(forged.status).toBe(200);
    await drained(product.url);
    const screen = await new AtSession(product.url, victim).dial();
    expect(screen).not.toMatch(/1500000|reached/);
    expect(
      (await product.app.store.get(keys.pending({ channel: 'ussd', conversationId: victim })))?.snapshot ?? [],
    ).toEqual([]);
  });

  it("a forged body pre-claiming a real payment's final state (no credentials) does not silence the real one", async () => {
    const service = await startService();
    const side = await startProcess(service);
    try {
      await service.hook('payment.status.changed', `${side.url}/notifications/momo`);
      const user = { channel: 'ussd' as const, conversationId: '+256700333444' };
      const attacker = { channel: 'ussd' as const, conversationId: '+256700999999' };
      const key = 'preclaim-1:pay';
      const made = (await side.calls.createPayment(payment(key, `ussd:${user.conversationId}`))) as PaymentResult;
      // Before the service is done, anyone may post: the outcome, claimed for the attacker's chat.
      for (const state of ['processed', 'processed_with_errors']) {
        const forged = await post(side.url, {
          hook: { event: 'payment.status.changed' },
          data: {
            id: made.id,
            state,
            amount: '5000',
            currency: 'UGX',
            metadata: { chat: `ussd:${attacker.conversationId}`, ref: key },
          },
        });
        expect(forged.status).toBe(200);
      }
      await until('the notification queue empty', async () => (await side.notifications.queue.depth()) === 0);
      expect(await side.store.get(keys.pending(user))).toBeNull();
      // The service completes the payment: the real outcome is told, to our record's chat only.
      await service.sandbox.controls.advanceClock(5);
      await service.sandbox.controls.idle();
      const told = await until(
        'the outcome in the pending record',
        reading(
          async () => storedNotes((await side.store.get(keys.pending(user)))?.snapshot),
          (p) => p.length > 0,
        ),
      );
      expect(told).toEqual([
        { words: expect.anything(), text: expect.stringMatching(/^Done: 5,000 UGX reached \+256772000001/) },
      ]);
      expect(await side.store.get(keys.pending(attacker))).toBeNull();
    } finally {
      await side.close();
      await service.close();
    }
  });
});
