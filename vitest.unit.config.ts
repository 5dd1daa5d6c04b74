import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { unitTestFiles } from './test/kinds.js';

/**
 * `npm run test:unit`: the fast loop. The test files that need no Redis, PostgreSQL or Chromium and start no
 * process (test/kinds.ts decides from what each imports); no preflight, no typecheck. Every service's setting
 * points at a closed port here, so a test that reaches for one fails in this loop rather than passing on a
 * machine that happens to run it. `npm test` stays the whole suite (vitest.config.ts).
 */
const root = fileURLToPath(new URL('.', import.meta.url));
const NOWHERE = '127.0.0.1:9';

export default defineConfig({
  test: {
    name: 'unit',
    include: unitTestFiles(root),
    pool: 'threads',
    isolate: false,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: {
      TEST_REDIS_URL: `redis://${NOWHERE}/0`,
      REDIS_URL: '',
      POSTGRES_URL: `postgres://postgres@${NOWHERE}/postgres`,
      DATABASE_URL: '',
      CHROMIUM_PATH: '/nonexistent/chromium',
    },
  },
});
