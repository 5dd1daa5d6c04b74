import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/conversation/memory-store.js';
import { RedisStore } from '../../src/conversation/redis-store.js';
import type { Address, Notifier, SessionStore } from '../../src/conversation/types.js';
import { createDispatcher } from '../../src/notifications/dispatch.js';
import { createNotifications } from '../../src/notifications/index.js';
import { notificationBody } from '../../src/notifications/events.js';
import { createLogger } from '../../src/log.js';

const logger = createLogger('silent');
const redisStores: RedisStore[] = [];
afterAll(async () => {
  await Promise.all(redisStores.map((s) => s.close()));
});

class RecordingNotifier implements Notifier {
  readonly sent: Array<{ address: Address; text: string }> = [];
  failuresLeft = 0;
  async send(address: Address, text: string): Promise<void> {
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      throw new Error('chat api 502');
    }
    this.sent.push({ address, text });
  }
}

let paymentId = 1000;
const paymentEvent = (id: number, state: string, chat = 'telegram:55') =>
  notificationBody.parse({
    hook: { id: 1, event: 'payment.status.changed', target: 'https://bot.test/notifications/momo' },
    data: { id, state, amount: '2500', currency: 'UGX', metadata: { chat }, phone_nos: [{ phonenumber: '+256772000001' }], last_error: state === 'processed_with_errors' ? 'Recipient wallet full' : null },
  });

const stores: Array<[string, () => SessionStore]> = [
  ['memory', () => new MemoryStore()],
  [
    'redis',
    () => {
      const s = new RedisStore({ url: 'redis://127.0.0.1:6379', keyPrefix: `test:dispatch:${process.pid}:${Date.now()}:` });
      redisStores.push(s);
      return s;
    },
  ],
];

describe.each(stores)('dispatcher on the %s store', (_name, makeStore) => {
  it('tells each state change once although the service delivers it ten times, concurrently', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ store: makeStore(), notifiers: { telegram: notifier }, logger });
    const id = paymentId++;
    const results = await Promise.all(Array.from({ length: 10 }, () => d.dispatch(paymentEvent(id, 'processed'))));
    expect(results.filter((r) => r === 'sent')).toHaveLength(1);
    expect(notifier.sent).toHaveLength(1);
    expect(notifier.sent[0]!.address).toEqual({ channel: 'telegram', conversationId: '55' });
    expect(notifier.sent[0]!.text).toContain('2500 UGX');
  });

  it('never lets an older state follow a newer one', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ store: makeStore(), notifiers: { telegram: notifier }, logger });
    const id = paymentId++;
    expect(await d.dispatch(paymentEvent(id, 'validated'))).toBe('sent');
    expect(await d.dispatch(paymentEvent(id, 'processed_with_errors'))).toBe('sent');
    expect(await d.dispatch(paymentEvent(id, 'approved'))).toBe('stale');
    expect(await d.dispatch(paymentEvent(id, 'validated'))).toBe('stale');
    expect(notifier.sent.map((m) => m.text)).toEqual([
      expect.stringContaining('passed its checks'),
      expect.stringContaining('failed: Recipient wallet full'),
    ]);
  });

  it('frees the mark when the chat API fails, so a retry tells it', async () => {
    const notifier = new RecordingNotifier();
    notifier.failuresLeft = 1;
    const d = createDispatcher({ store: makeStore(), notifiers: { telegram: notifier }, logger });
    const id = paymentId++;
    await expect(d.dispatch(paymentEvent(id, 'processed'))).rejects.toThrow('chat api 502');
    expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
    expect(notifier.sent).toHaveLength(1);
  });

  it('keeps only outcomes for USSD users, who read them at their next dial', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ store: makeStore(), notifiers: { ussd: notifier }, logger });
    const id = paymentId++;
    expect(await d.dispatch(paymentEvent(id, 'validated', 'ussd:+256700000009'))).toBe('ignored');
    expect(await d.dispatch(paymentEvent(id, 'processed', 'ussd:+256700000009'))).toBe('sent');
    expect(notifier.sent.map((m) => m.address.conversationId)).toEqual(['+256700000009']);
  });

  it('speaks the user language when known', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ store: makeStore(), notifiers: { telegram: notifier }, logger, languageOf: async () => 'sw' });
    await d.dispatch(paymentEvent(paymentId++, 'processed'));
    expect(notifier.sent[0]!.text).toMatch(/^Imekamilika/);
  });
});

describe('notifications end to end in one process', () => {
  it('retries a failing chat API from the queue until the message is delivered', async () => {
    const notifier = new RecordingNotifier();
    notifier.failuresLeft = 3;
    const n = createNotifications({
      store: new MemoryStore(),
      notifiers: { slack: notifier },
      verify: { default: 'accept' },
      queue: { backoffMs: 1, attempts: 6 },
      logger,
    });
    n.start();
    const id = paymentId++;
    // Delivered out of order and repeated, as the service may.
    for (const state of ['processed', 'validated', 'processed', 'approved', 'processed']) {
      await n.queue.add(paymentEvent(id, state, 'slack:T1:U1'));
    }
    while ((await n.queue.depth()) > 0) await new Promise((r) => setTimeout(r, 5));
    await n.stop();
    expect(notifier.sent).toHaveLength(1);
    expect(notifier.sent[0]!.address).toEqual({ channel: 'slack', conversationId: 'T1:U1' });
    expect(notifier.sent[0]!.text).toMatch(/^Done/);
  });
});
