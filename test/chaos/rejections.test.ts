/**
 * No unhandled rejection ends the product's process when Redis fails in the middle of a payment. On Node 20
 * an unhandled rejection ends the process (every conversation it holds with it): the suite once caught two,
 * `Error: Connection is closed.` from ioredis, while the chaos run stopped instances. Their source: a run
 * saves each busy state it enters (the spend reservation, the payment) while its flow goes on, and the chain
 * of those saves was awaited only once the flow settled; a save that failed meanwhile (a closed connection,
 * a refused write) was a rejection nobody handled for the length of the service call.
 *
 * Here the product is its own process (`node dist/src/main.js`, its embedded sandbox) on Redis through a proxy
 * that refuses the conversation record's writes right after the PIN hop's own write, as a Redis out of
 * memory does: the process lives on and answers.
 */
import { Redis } from 'ioredis';
import { keys } from '../../src/store/keys.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtSession } from '../e2e/helpers.js';
import { TEST_REDIS_URL } from '../services.js';
import { cleanProductKeys, productKeyPrefix } from '../shutdown/product.js';
import { Fleet } from './instances.js';
import { RedisProxy } from './redis-proxy.js';

/** The tests' Redis database (TEST_REDIS_URL), the product's keys under a prefix of this file's own. */
const REDIS = new URL(TEST_REDIS_URL);
const PREFIX = productKeyPrefix('rejections');
const PHONE = '+256701777001';

let redis: Redis;
let proxy: RedisProxy;
let fleet: Fleet;

beforeAll(async () => {
  redis = new Redis(REDIS.toString());
  await cleanProductKeys(redis, PREFIX);
  proxy = await new RedisProxy({ host: REDIS.hostname, port: Number(REDIS.port || 6379) }).start();
  fleet = new Fleet({
    size: 1,
    env: async () => ({
      PORT: '0',
      LOG_LEVEL: 'warn',
      REDIS_URL: `redis://127.0.0.1:${proxy.port}${REDIS.pathname}`,
      REDIS_KEY_PREFIX: PREFIX,
    }),
  });
  await fleet.start();
});

afterAll(async () => {
  await fleet?.stop();
  await proxy?.close();
  await cleanProductKeys(redis, PREFIX);
  await redis.quit();
});

describe('Redis refusing writes while a payment runs', () => {
  it('is answered, and the process lives on', async () => {
    const url = `http://127.0.0.1:${fleet.up(0)!.port}`;
    const ussd = new AtSession(url, PHONE);
    await ussd.dial();
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '2500', '1', '1']) await ussd.answer(answer);
    expect(ussd.screens.at(-1)).toMatch(/PIN/);

    // The PIN hop's own write passes; the run's saves of the states it enters next are refused.
    let writes = 0;
    proxy.refuseWhen(
      ({ name, args }) =>
        (name === 'evalsha' || name === 'eval') &&
        args[2] === `${PREFIX}${keys.conversation({ channel: 'ussd', conversationId: PHONE })}` &&
        ++writes > 1,
    );
    const answer = await ussd.answer('1234');
    proxy.refuseWhen(undefined);

    expect(proxy.refused).toBeGreaterThan(0);
    expect(answer).toMatch(/^END /);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(fleet.crashes).toEqual([]);
    expect(fleet.up(0)?.exited).toBeUndefined();
  }, 60_000);
});
