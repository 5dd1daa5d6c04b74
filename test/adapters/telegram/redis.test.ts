/**
 * Two bot instances behind one webhook share a Redis store: a redelivery to the other instance is still
 * ignored, and a button shown by one instance works when its press reaches the other.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis-store.js';
import { inspector, REDIS_URL, uniquePrefix } from '../../conversation/redis-helper.js';
import { CHAT, pressUpdate, ScriptedEngine, startHarness, textUpdate, type Harness } from './harness.js';
import { keys } from '../../../src/store/keys.js';

const prefix = uniquePrefix('telegram');
let instances: Harness[] = [];
let store: RedisStore | undefined;
afterEach(async () => {
  for (const h of instances) await h.close();
  await store?.close();
  await inspector(prefix).cleanup();
  instances = [];
  store = undefined;
});

describe('Telegram on a shared Redis store', () => {
  it('dedups and answers buttons across instances, with expiring records', async () => {
    store = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
    const engine = new ScriptedEngine((inbound) =>
      inbound.nav === 'home'
        ? { text: 'Main menu', choices: [{ id: 'pay', label: 'Pay someone' }], final: false }
        : { text: 'Who do you pay?', final: false },
    );
    const a = await startHarness(engine, { store });
    const b = await startHarness(engine, { store });
    instances = [a, b];

    expect((await a.post(textUpdate(1, '/start'))).status).toBe(200);
    expect((await b.post(textUpdate(1, '/start'))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(1);
    expect(b.api.calls).toEqual([]);

    // The menu was sent by instance a as message 100; the press reaches instance b.
    expect((await b.post(pressUpdate(2, 100, 'c:0'))).status).toBe(200);
    expect(engine.inbounds[1]).toMatchObject({ choice: 'pay', messageId: '2' });
    expect(b.api.of('editMessageText')).toEqual([
      { chat_id: CHAT, message_id: 100, text: 'Who do you pay?', reply_markup: expect.any(Object) },
    ]);

    const { redis, cleanup } = inspector(prefix);
    try {
      expect(await redis.ttl(`${prefix}${keys.telegramUpdate(1)}`)).toBeGreaterThan(86_000);
      expect(await redis.ttl(`${prefix}${keys.telegramPrompt(String(CHAT))}`)).toBeGreaterThan(86_000);
    } finally {
      await cleanup();
    }
  });
});
