/** Real Redis for tests: a unique key prefix per test file, and a cleanup that deletes only those keys. */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

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
