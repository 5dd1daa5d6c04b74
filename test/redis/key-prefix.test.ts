/**
 * REDIS_KEY_PREFIX: two products on one Redis database under prefixes of their own never see each other's
 * conversations, and write nothing outside their prefixes (deleting their keys leaves none of the person's).
 * A prefix that is none is refused at the start: test/config.test.ts and test/main.test.ts.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { keys } from '../../src/store/keys.js';
import { AtSession, startProduct } from '../e2e/helpers.js';
import { TEST_REDIS_URL } from '../services.js';
import { cleanProductKeys, productKeyPrefix } from '../shutdown/product.js';

const A = productKeyPrefix('prefix-a');
const B = productKeyPrefix('prefix-b');
/** One person, using both products. */
const PHONE = '+256709414243';
const conversation = keys.conversation({ channel: 'ussd', conversationId: PHONE });

let redis: Redis;
let a: RunningApp;
let b: RunningApp;

/** Every key of the database whose name holds the person's number. */
async function keysOfThePerson(): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `*${PHONE.slice(1)}*`, 'COUNT', 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

beforeAll(async () => {
  redis = new Redis(TEST_REDIS_URL);
  [a, b] = await Promise.all([
    startProduct({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: A }),
    startProduct({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: B }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await cleanProductKeys(redis, A);
  await cleanProductKeys(redis, B);
  await redis.quit();
});

describe('two products on one Redis under different REDIS_KEY_PREFIX', () => {
  it("never see each other's conversations, and keep every key under their own prefix", async () => {
    // Half way through a payment on A.
    const onA = new AtSession(a.url, PHONE);
    await onA.dial();
    for (const answer of ['1', '1']) await onA.answer(answer);
    expect(await onA.answer('0772000001')).toMatch(/first name/);

    // B knows nothing of it: its menu, no offer to continue.
    const onB = new AtSession(b.url, PHONE);
    const menu = await onB.dial();
    expect(menu).not.toMatch(/Continue where you left off/);
    expect(menu).toMatch(/What would you like to do\?/);

    // A still has it: a new dial there offers to take it up.
    expect(await new AtSession(a.url, PHONE).dial()).toMatch(/Continue where you left off/);

    // Each conversation record is under its product's prefix, and only A's holds the payee.
    const recordOf = async (prefix: string) => (await redis.get(`${prefix}${conversation}`)) ?? '';
    const [recordA, recordB] = await Promise.all([recordOf(A), recordOf(B)]);
    expect(recordA).toMatch(/772000001/);
    expect(recordB).not.toMatch(/772000001/);
    expect(recordB).not.toBe('');

    const written = await keysOfThePerson();
    expect(written.length).toBeGreaterThan(0);
    expect(written.filter((key) => !key.startsWith(A) && !key.startsWith(B))).toEqual([]);
    expect(written.some((key) => key.startsWith(A))).toBe(true);
    expect(written.some((key) => key.startsWith(B))).toBe(true);

    // Deleting B's keys leaves A's conversation as it was.
    await cleanProductKeys(redis, B);
    expect((await keysOfThePerson()).every((key) => key.startsWith(A))).toBe(true);
    expect(await recordOf(A)).toBe(recordA);
  }, 60_000);
});
