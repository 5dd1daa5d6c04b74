/**
 * The USSD channel on the Redis store (unique key prefix, removed afterwards) with the real engine: a
 * gateway that delivers every request several times at once still gets one screen per hop and the
 * sandbox sees one payment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisStore } from '../../../src/conversation/index.js';
import { REDIS_URL } from '../../conversation/redis-helper.js';
import { postAt } from './helpers.js';
import { ONE_CURRENCY_PAYMENT, paymentsOf, startStack, type Stack } from './stack.js';


const PREFIX = `test:ussd-e2e:${process.pid}:${Date.now()}:`;
const PHONE = '+256772150001';

let store: RedisStore;
let stack: Stack;

beforeAll(async () => {
  store = new RedisStore({ url: REDIS_URL, keyPrefix: PREFIX });
  stack = await startStack({ store, deadlineMs: 3000 });
});
afterAll(async () => {
  await stack?.close();
  await store?.close();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${PREFIX}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

describe('USSD on Redis with the real engine', () => {
  it('three simultaneous deliveries of every hop: the same screen each time, one payment', async () => {
    const answers: string[] = [];
    const deliver = async () => {
      const fields = { sessionId: 'REDIS-1', serviceCode: '*384*123#', phoneNumber: PHONE, networkCode: '63902', text: answers.join('*') };
      const replies = await Promise.all([1, 2, 3].map(() => postAt(stack.url, fields)));
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(new Set(replies.map((r) => r.body)).size).toBe(1);
      return replies[0]?.body ?? '';
    };
    expect(await deliver()).toMatch(/^CON .*\n1\. Pay someone/);
    let last = '';
    for (const answer of ONE_CURRENCY_PAYMENT) {
      answers.push(answer);
      last = await deliver();
    }
    expect(last).toMatch(/^END Payment \d+ submitted/);
    expect(paymentsOf(stack.sandbox, PHONE)).toHaveLength(1);
    expect(await store.get(`conv:ussd:${PHONE}`)).toMatchObject({ snapshot: { channel: { sessionId: 'REDIS-1', hop: ONE_CURRENCY_PAYMENT.length } } });
    // Nothing the whole stack logged (router, engine, services, sandbox) holds the PIN or the full number.
    const logged = stack.logs.map((line) => {
      const { time: _time, pid: _pid, ...entry } = JSON.parse(line) as Record<string, unknown>;
      return JSON.stringify(entry);
    });
    expect(logged.some((line) => line.includes('"gateway":"africastalking"'))).toBe(true);
    for (const line of logged) {
      expect(line).not.toContain(ONE_CURRENCY_PAYMENT.at(-1));
      expect(line).not.toContain(PHONE.slice(1));
    }
  });
});
