/**
 * A payment whose webhook says it ended without money moving (`processed_with_errors`, `rejected`,
 * `cancelled`) gives back the spend reserved under its Duplicate-Check-Key (its `metadata.ref`), once,
 * through the notifications layer as the product wires it (createNotifications over the session store).
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/conversation/memory-store.js';
import { AccessPolicy } from '../../src/conversation/policy.js';
import type { Notifier } from '../../src/conversation/types.js';
import { createLogger } from '../../src/log.js';
import { failedPaymentRef, notificationBody } from '../../src/notifications/events.js';
import { createNotifications } from '../../src/notifications/index.js';

const policy = new AccessPolicy({
  roles: { clerk: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '1000' } } },
  users: { telegram: { '55': { role: 'clerk' } }, slack: {}, ussd: {} },
});

const payment = (id: number, state: string, ref?: string) =>
  notificationBody.parse({
    hook: { id: 1, event: 'payment.status.changed', target: 'https://bot.test/notifications/momo' },
    data: { id, state, amount: '1000', currency: 'UGX', metadata: { chat: 'telegram:55', ...(ref ? { ref } : {}) }, phone_nos: [] },
  });

const reserve = (store: MemoryStore, key: string) =>
  policy.reserveSpend(store, { channel: 'telegram', userId: '55', flow: 'pay', amount: '1000', currency: 'UGX', duplicateCheckKey: key }).then(
    () => 'reserved',
    (failure: { code: string }) => failure.code,
  );

describe('spend given back when a payment ends without money moving', () => {
  it.each(['processed_with_errors', 'rejected', 'cancelled'])('%s: the day’s total drops by the payment, once', async (state) => {
    const store = new MemoryStore();
    const told: string[] = [];
    const notifier: Notifier = { send: async (_address, text) => void told.push(text) };
    const notifications = createNotifications({ store, notifiers: { telegram: notifier }, verify: { default: 'accept' }, logger: createLogger('silent') });
    try {
      expect(await reserve(store, 'run-1:pay')).toBe('reserved');
      expect(await reserve(store, 'run-2:pay')).toBe('limit_exceeded');
      // Delivered twice, as the service may: given back once.
      await notifications.dispatcher.dispatch(payment(7, state, 'run-1:pay'));
      await notifications.dispatcher.dispatch(payment(7, state, 'run-1:pay'));
      expect(told).toHaveLength(1);
      expect(await reserve(store, 'run-2:pay')).toBe('reserved');
      expect(await reserve(store, 'run-3:pay')).toBe('limit_exceeded');
    } finally {
      await notifications.stop();
    }
  });

  it('only a final failure with our ref gives back: not a processed payment, not one without a ref', () => {
    expect(failedPaymentRef(payment(1, 'rejected', 'run-9:pay'))).toBe('run-9:pay');
    expect(failedPaymentRef(payment(1, 'processed', 'run-9:pay'))).toBeUndefined();
    expect(failedPaymentRef(payment(1, 'scheduled', 'run-9:pay'))).toBeUndefined();
    expect(failedPaymentRef(payment(1, 'cancelled'))).toBeUndefined();
  });
});
