/**
 * Two processes behind one webhook share a Redis store (TEST_REDIS_URL): a message redelivered to the other
 * process is still ignored, a button sent by one is taken by the other, and the 24-hour window one process
 * saw opening lets the other send free text. The records expire.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../src/store/redis-store.js';
import type { Prompt } from '../../../src/conversation/types.js';
import { inspector, REDIS_URL, uniquePrefix } from '../../conversation/redis-helper.js';
import { buttonReply, delivery, optionsOf, post, textMessage } from './deliveries.js';
import { ScriptedEngine, startHarness, type Harness } from './harness.js';

const USER = '256772600001';
const prefix = uniquePrefix('whatsapp');
let instances: Harness[] = [];
let store: RedisStore | undefined;
afterEach(async () => {
  for (const h of instances) await h.close();
  await store?.close();
  await inspector(prefix).cleanup();
  instances = [];
  store = undefined;
});

describe('WhatsApp on a shared Redis store', () => {
  it('dedups, takes taps and knows the window across processes, with expiring records', async () => {
    store = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
    const engine = new ScriptedEngine((inbound): Prompt =>
      inbound.choice
        ? { text: `Chose ${inbound.choice}`, final: false }
        : { text: 'Main menu', choices: [{ id: 'pay', label: 'Pay someone' }], final: false },
    );
    const a = await startHarness(engine, { store });
    const b = await startHarness(engine, { store });
    instances = [a, b];

    const hi = textMessage(USER, 'hi', 'wamid.REDIS1');
    expect((await post(a.url, delivery([hi]))).status).toBe(200);
    const [menu] = await a.graph.waitFor(USER, 1);
    expect((await post(b.url, delivery([hi]))).status).toBe(200);
    await b.whatsapp.idle();
    expect(engine.inbounds).toHaveLength(1);
    expect(b.graph.sent).toEqual([]);

    // The menu was sent by process a; the tap reaches process b.
    const [pay] = optionsOf(menu!);
    await post(b.url, delivery([buttonReply(USER, pay!.id, pay!.title, menu!.wamid)]));
    await b.graph.waitFor(USER, 1);
    expect(engine.inbounds[1]).toMatchObject({ choice: 'pay' });

    // Process b knows the user wrote (through a) a moment ago: free text, no template needed.
    await b.whatsapp.notifier.send({ channel: 'whatsapp', conversationId: USER }, 'Paid.');
    expect(b.graph.to(USER).at(-1)).toMatchObject({ type: 'text', text: { body: 'Paid.' } });

    const { redis, cleanup } = inspector(prefix);
    try {
      expect(await redis.ttl(`${prefix}wa:message:wamid.REDIS1`)).toBeGreaterThan(6 * 86_400);
      expect(await redis.ttl(`${prefix}wa:chat:${USER}`)).toBeGreaterThan(6 * 86_400);
    } finally {
      await cleanup();
    }
  });
});
