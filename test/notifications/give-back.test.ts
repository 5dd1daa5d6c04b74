/**
 * A payment of ours whose webhook says it ended without money moving (`processed_with_errors`, `rejected`,
 * `cancelled`) gives back the spend reserved under its Duplicate-Check-Key (our ref), once, through the
 * notifications layer as the product wires it (createNotifications with `onPaymentFailed`). A notice about a
 * payment we did not make gives nothing back, whatever ref its body names.
 */
import { describe, expect, it } from 'vitest';
import { MadeRecords } from '../../src/conversation/calls/made-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import type { Notifier } from '../../src/conversation/types.js';
import { createLogger } from '../../src/log.js';
import { MomoClient } from '../../src/momo/index.js';
import { notificationBody, parseNotice, type Notice } from '../../src/notifications/events.js';
import { createNotifications } from '../../src/notifications/index.js';

const logger = createLogger('silent');
const policy = new AccessPolicy({
  roles: { clerk: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '1000' } } },
  users: { telegram: { '55': { role: 'clerk' } }, slack: {}, ussd: {} },
});
const unusedClient = new MomoClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'unused', maxRetries: 0 });

const payment = (id: number, state: string, ref: string): Notice => {
  const parsed = parseNotice(
    notificationBody.parse({
      hook: { id: 1, event: 'payment.status.changed', target: 'https://bot.test/notifications/momo' },
      data: { id, state, amount: '1000', currency: 'UGX', metadata: { chat: 'telegram:55', ref }, phone_nos: [] },
    }),
  );
  if (!parsed.ok || !parsed.notice) throw new Error('not a notice');
  return parsed.notice;
};

const reserve = (store: MemoryStore, key: string) =>
  policy
    .reserveSpend(store, {
      channel: 'telegram',
      userId: '55',
      flow: 'pay',
      amount: '1000',
      currency: 'UGX',
      duplicateCheckKey: key,
    })
    .then(
      () => 'reserved',
      (failure: { code: string }) => failure.code,
    );

function product(store: MemoryStore, told: string[]) {
  const notifier: Notifier = { send: async (_address, text) => void told.push(text) };
  const made = new MadeRecords({ store, logger });
  const notifications = createNotifications({
    made,
    client: unusedClient,
    basicAuth: { user: 'momo', password: 'secret' },
    notifiers: { telegram: notifier },
    verify: { default: 'accept' },
    onPaymentFailed: (ref) => policy.giveBackSpend(store, ref),
    logger,
  });
  return { made, notifications };
}

describe('spend given back when a payment ends without money moving', () => {
  it.each(['processed_with_errors', 'rejected', 'cancelled'])(
    '%s: the day’s total drops by the payment, once',
    async (state) => {
      const store = new MemoryStore();
      const told: string[] = [];
      const { made, notifications } = product(store, told);
      try {
        await made.intend({
          kind: 'payment',
          ref: 'run-1:pay',
          chat: 'telegram:55',
          amount: '1000',
          currency: 'UGX',
          payee: '+256772000001',
        });
        await made.accepted('run-1:pay', '7');
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
    },
  );

  it('gives nothing back for a processed payment, nor for a payment we did not make naming our ref', async () => {
    const store = new MemoryStore();
    const told: string[] = [];
    const { made, notifications } = product(store, told);
    try {
      await made.intend({
        kind: 'payment',
        ref: 'run-1:pay',
        chat: 'telegram:55',
        amount: '1000',
        currency: 'UGX',
        payee: '+256772000001',
      });
      await made.accepted('run-1:pay', '7');
      expect(await reserve(store, 'run-1:pay')).toBe('reserved');
      await notifications.dispatcher.dispatch(payment(7, 'processed', 'run-1:pay'));
      // Another id naming our ref: not our payment (ours has id 7), so it is told to nobody and gives nothing back.
      await notifications.dispatcher.dispatch(payment(8, 'rejected', 'run-1:pay'));
      expect(await reserve(store, 'run-2:pay')).toBe('limit_exceeded');
      expect(told).toHaveLength(1);
    } finally {
      await notifications.stop();
    }
  });
});
