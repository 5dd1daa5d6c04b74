/** Real Redis for tests: a unique key prefix per test file, and a cleanup that deletes only those keys. */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { queuePrefixesOf } from '../../src/store/keys.js';
import { TEST_REDIS_URL } from '../services.js';

/** The Redis database of the tests (TEST_REDIS_URL, test/services.ts). */
export const REDIS_URL = TEST_REDIS_URL;

/** A prefix no other test file uses: `test:<name>:<uuid>:`. */
export function uniquePrefix(name: string): string {
  return `test:${name}:${randomUUID()}:`;
}

/** A raw client (no prefix) to inspect keys; `cleanup` deletes every key under the prefix and quits. */
export function inspector(prefix: string): { redis: Redis; cleanup: () => Promise<void> } {
  const redis = new Redis(REDIS_URL);
  return {
    redis,
    async cleanup() {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      await redis.quit();
    },
  };
}

/**
 * Deletes the keys of the BullMQ queue `name` and of its sibling queues (`-follow-ups`, `-sms`) under every
 * queue prefix of the product's key prefix `keyPrefix` (default `momo:`'s; keys.ts queuePrefixesOf).
 */
export async function cleanupQueues(name: string, keyPrefix?: string): Promise<void> {
  for (const prefix of queuePrefixesOf(keyPrefix).all()) await inspector(`${prefix}:${name}`).cleanup();
}
