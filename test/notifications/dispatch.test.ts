import express from 'express';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/conversation/memory-store.js';
import type { Address, Notifier } from '../../src/conversation/types.js';
import { createDispatcher } from '../../src/notifications/dispatch.js';
import { createNotifications } from '../../src/notifications/index.js';
import { notificationBody } from '../../src/notifications/events.js';
import { MemoryMarks, RedisMarks, type NotificationMarks } from '../../src/notifications/marks.js';
import { createLogger } from '../../src/log.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';

const logger = createLogger('silent');
const prefix = uniquePrefix('dispatch');
const redisMarks: RedisMarks[] = [];
afterAll(async () => {
  await Promise.all(redisMarks.map((m) => m.close()));
  await inspector(prefix).cleanup();
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

const marksOn: Array<[string, () => NotificationMarks]> = [
  ['memory', () => new MemoryMarks()],
  [
    'redis',
    () => {
      const m = new RedisMarks({ url: REDIS_URL, keyPrefix: prefix });
      redisMarks.push(m);
      return m;
    },
  ],
];

describe.each(marksOn)('dispatcher with %s marks', (_name, makeMarks) => {
  it('tells each state change once although the service delivers it ten times, concurrently', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ marks: makeMarks(), notifiers: { telegram: notifier }, logger });
    const id = paymentId++;
    const results = await Promise.all(Array.from({ length: 10 }, () => d.dispatch(paymentEvent(id, 'processed'))));
    expect(results.filter((r) => r === 'sent')).toHaveLength(1);
    expect(notifier.sent).toHaveLength(1);
    expect(notifier.sent[0]!.address).toEqual({ channel: 'telegram', conversationId: '55' });
    expect(notifier.sent[0]!.text).toContain('2500 UGX');
  });

  it('never lets an older state follow a newer one', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ marks: makeMarks(), notifiers: { telegram: notifier }, logger });
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
    const d = createDispatcher({ marks: makeMarks(), notifiers: { telegram: notifier }, logger });
    const id = paymentId++;
    await expect(d.dispatch(paymentEvent(id, 'processed'))).rejects.toThrow('chat api 502');
    expect(await d.dispatch(paymentEvent(id, 'processed'))).toBe('sent');
    expect(notifier.sent).toHaveLength(1);
  });

  it('keeps only outcomes for USSD users, who read them at their next dial', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ marks: makeMarks(), notifiers: { ussd: notifier }, logger });
    const id = paymentId++;
    expect(await d.dispatch(paymentEvent(id, 'validated', 'ussd:+256700000009'))).toBe('ignored');
    expect(await d.dispatch(paymentEvent(id, 'processed', 'ussd:+256700000009'))).toBe('sent');
    expect(notifier.sent.map((m) => m.address.conversationId)).toEqual(['+256700000009']);
  });

  it('tells a message in English when the language cannot be read', async () => {
    const notifier = new RecordingNotifier();
    const rejecting = createDispatcher({ marks: makeMarks(), notifiers: { telegram: notifier }, logger, languageOf: () => Promise.reject(new Error('redis down')) });
    const throwing = createDispatcher({
      marks: makeMarks(),
      notifiers: { telegram: notifier },
      logger,
      languageOf: () => {
        throw new Error('bug');
      },
    });
    expect(await rejecting.dispatch(paymentEvent(paymentId++, 'processed'))).toBe('sent');
    expect(await throwing.dispatch(paymentEvent(paymentId++, 'processed'))).toBe('sent');
    expect(notifier.sent.map((m) => m.text)).toEqual([expect.stringMatching(/^Done/), expect.stringMatching(/^Done/)]);
  });

  it('speaks the user language when known', async () => {
    const notifier = new RecordingNotifier();
    const d = createDispatcher({ marks: makeMarks(), notifiers: { telegram: notifier }, logger, languageOf: async () => 'sw' });
    await d.dispatch(paymentEvent(paymentId++, 'processed'));
    expect(notifier.sent[0]!.text).toMatch(/^Imekamilika/);
  });
});

/** A notifier whose sends to some chats fail a number of times first. */
class FlakyNotifier implements Notifier {
  readonly sent: string[] = [];
  constructor(private readonly failures: Map<string, number>) {}
  async send(address: Address, text: string): Promise<void> {
    const left = this.failures.get(address.conversationId) ?? 0;
    if (left > 0) {
      this.failures.set(address.conversationId, left - 1);
      throw new Error(`chat api 502 for ${address.conversationId}`);
    }
    this.sent.push(`${address.conversationId} ${text.slice(0, 4)}`);
  }
}

const settle = async (n: { queue: { depth(): Promise<number> } }, told: () => number, expected: number) => {
  const limit = Date.now() + 10_000;
  while (((await n.queue.depth()) > 0 || told() < expected) && Date.now() < limit) await new Promise((r) => setTimeout(r, 10));
};

const backends: Array<[string, () => { redisUrl?: string; keyPrefix?: string; queueName?: string; cleanup(): Promise<void> }]> = [
  ['memory', () => ({ cleanup: async () => undefined })],
  [
    'redis',
    () => {
      const keyPrefix = uniquePrefix('notify-e2e');
      const queueName = `test-notify-e2e-${process.pid}-${Date.now()}`;
      return {
        redisUrl: REDIS_URL,
        keyPrefix,
        queueName,
        async cleanup() {
          await inspector(keyPrefix).cleanup();
          await inspector(`bull:${queueName}:`).cleanup();
        },
      };
    },
  ],
];

describe.each(backends)('notifications end to end on the %s queue', (_name, backend) => {
  it('answers each delivery 200 once queued (deliveries of one turn share a job) and tells each once', async () => {
    const env = backend();
    const notifier = new FlakyNotifier(new Map());
    const n = createNotifications({ store: new MemoryStore(), ...env, notifiers: { telegram: notifier }, verify: { default: 'accept' }, logger });
    const app = express();
    n.addRoutes(app);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const first = paymentId;
      paymentId += 30;
      // 30 payments, each delivered twice, all at once; nothing is worked yet.
      const posts = Array.from({ length: 60 }, (_, i) =>
        fetch(`${base}/notifications/momo`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            hook: { id: 1, event: 'payment.status.changed' },
            data: { id: first + (i % 30), state: 'processed', amount: '10', currency: 'UGX', metadata: { chat: `telegram:${first + (i % 30)}` } },
          }),
        }),
      );
      expect((await Promise.all(posts)).map((r) => r.status)).toEqual(Array(60).fill(200));
      const jobs = await n.queue.depth();
      expect(jobs).toBeGreaterThan(0);
      expect(jobs).toBeLessThanOrEqual(60);
      n.start();
      await settle(n, () => notifier.sent.length, 30);
      expect(notifier.sent.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `${first + i} Done`).sort());
    } finally {
      await new Promise((r) => server.close(r));
      await n.stop();
      await env.cleanup();
    }
  });

  it('retries a job of several whose one chat API call failed: that one is told, none twice', async () => {
    const env = backend();
    const [a, b, c] = [paymentId++, paymentId++, paymentId++];
    const notifier = new FlakyNotifier(new Map([[String(b), 2]]));
    const n = createNotifications({
      store: new MemoryStore(),
      ...env,
      notifiers: { telegram: notifier },
      verify: { default: 'accept' },
      queue: { backoffMs: 1, attempts: 5 },
      logger,
    });
    try {
      n.start();
      await n.queue.add([a, b, c, a].map((id) => paymentEvent(id, 'processed', `telegram:${id}`)));
      await settle(n, () => notifier.sent.length, 3);
      // Give a wrongly repeated message the time to show.
      await new Promise((r) => setTimeout(r, 50));
      expect(notifier.sent.sort()).toEqual([`${a} Done`, `${b} Done`, `${c} Done`].sort());
    } finally {
      await n.stop();
      await env.cleanup();
    }
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
