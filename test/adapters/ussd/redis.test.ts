/**
 * The USSD channel on the Redis store (unique key prefix, removed afterwards) with the real engine: a
 * gateway that delivers every request several times at once still gets one screen per hop and the
 * sandbox sees one payment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postAt } from './helpers.js';
import { ONE_CURRENCY_PAYMENT, paymentsOf, startRedisStack } from './stack.js';
import { keys } from '../../../src/store/keys.js';

const PHONE = '+256772150001';

let stack: Awaited<ReturnType<typeof startRedisStack>>;

beforeAll(async () => {
  stack = await startRedisStack('ussd-e2e');
});
afterAll(async () => {
  await stack?.close();
});

describe('USSD on Redis with the real engine', () => {
  it('three simultaneous deliveries of every hop: the same screen each time, one payment', async () => {
    const answers: string[] = [];
    const deliver = async () => {
      const fields = {
        sessionId: 'REDIS-1',
        serviceCode: '*384*123#',
        phoneNumber: PHONE,
        networkCode: '63902',
        text: answers.join('*'),
      };
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
    expect(last).toMatch(/^END Sent: [\d,]+ UGX to .+\. Ref \S+\./);
    expect(paymentsOf(stack.sandbox, PHONE)).toHaveLength(1);
    expect(await stack.store.get(keys.conversation({ channel: 'ussd', conversationId: PHONE }))).toMatchObject({
      snapshot: { channel: { sessionId: 'REDIS-1', hop: ONE_CURRENCY_PAYMENT.length } },
    });
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
