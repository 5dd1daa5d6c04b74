/**
 * Bugs the chaos run found, each pinned by a small test of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { addPending } from '../../src/conversation/channels/ussd-inbox.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { AtSession, startProduct } from '../e2e/helpers.js';
import { TEST_REDIS_URL } from '../services.js';
import { RedisProxy } from './redis-proxy.js';

let app: RunningApp;
beforeAll(async () => {
  app = await startProduct();
});
afterAll(async () => {
  await app.stop();
});

describe('USSD outcomes kept for the next dial', () => {
  it('shows the newest first, so the payment outcome is not cut off the 182-character screen', async () => {
    const me = '+256701999001';
    const address = { channel: 'ussd' as const, conversationId: me };
    // A late run's answer, then the service's webhook outcome, as the chaos run produced them.
    await addPending(
      app.store,
      address,
      'We could not confirm the payment: it may or may not have been made. Do not pay again; you will be notified of the result.',
    );
    await addPending(app.store, address, 'Done: 3700.00 UGX reached +256772000001 (payment 9).');
    const screen = await new AtSession(app.url, me).dial();
    expect(screen.length).toBeLessThanOrEqual(182);
    expect(screen).toContain('Done: 3700.00 UGX reached +256772000001 (payment 9).');
    // Shown at two dials (the answer to the first may be lost), then no more.
    expect(await new AtSession(app.url, me).dial()).toContain('Done: 3700.00 UGX reached +256772000001 (payment 9).');
    expect(await new AtSession(app.url, me).dial()).not.toContain('Done:');
  });
});

describe('the Redis store when a dropped connection loses a reply', () => {
  // ioredis resends a command whose reply was lost; the resend must not read as someone else's claim or write.
  const REDIS = new URL(TEST_REDIS_URL);
  let cutter: RedisProxy;
  let store: RedisStore;
  const prefix = `test:chaos-regression:${process.pid}:`;
  beforeAll(async () => {
    cutter = await new RedisProxy({ host: REDIS.hostname, port: Number(REDIS.port || 6379) }).start();
    store = new RedisStore({ url: `redis://127.0.0.1:${cutter.port}${REDIS.pathname}`, keyPrefix: prefix });
    await store.get('warm-up');
  });
  afterAll(async () => {
    await store.delete('seen');
    await store.delete('conv');
    await store.close();
    await cutter.close();
  });

  it('a claim whose reply was lost is still ours (the delivery is not taken for a duplicate)', async () => {
    cutter.swallowNextReply = true;
    expect(await store.claim('seen', 60)).toBe(true);
    expect(await store.claim('seen', 60)).toBe(false);
  });

  it('a compare-and-set whose reply was lost answers its version (not a conflict)', async () => {
    const first = (await store.set('conv', { step: 1 }, null, 60))!;
    cutter.swallowNextReply = true;
    const second = (await store.set('conv', { step: 2 }, first, 60))!;
    expect(second).toBeGreaterThan(first);
    expect(await store.get('conv')).toEqual({ snapshot: { step: 2 }, version: second });
    expect(await store.set('conv', { step: 3 }, first, 60)).toBeNull();
  });
});
