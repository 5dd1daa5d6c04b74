/**
 * The services the whole suite (`npm test`) uses, each named by one setting, none fixed in a test:
 *
 * - `TEST_REDIS_URL` (default `redis://127.0.0.1:6379/15`): the Redis database of the tests. Tests in one
 *   process share it under key prefixes of their own (test/conversation/redis-helper.ts); the tests that start
 *   the product as a process (test/shutdown/, test/chaos/) give it a REDIS_KEY_PREFIX of their own
 *   (test/shutdown/product.ts productKeyPrefix) and delete only the keys under it.
 * - `CHROMIUM_PATH` (default `/usr/bin/chromium`): the headless browser of the page tests.
 * - `POSTGRES_URL` (test/journal/databases.ts): the PostgreSQL server's admin database.
 *
 * `npm run test:unit` needs none of them (vitest.unit.config.ts points them nowhere).
 */

/** The Redis database of the tests. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379/15';

/** The Chromium the page tests drive (playwright-core's executablePath). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
