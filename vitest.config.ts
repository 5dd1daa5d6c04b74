import { defineConfig } from 'vitest/config';

/**
 * Tests that start the product as its own processes and kill or signal them (the chaos run, SIGTERM): one
 * file at a time, so that one's processes starting and dying do not eat the time another measures against
 * a deadline. They run beside the rest of the suite.
 */
const PROCESS_TESTS = [
  'test/chaos/chaos.test.ts',
  'test/chaos/rejections.test.ts',
  'test/shutdown/**/*.test.ts',
  'test/e2e/money-kept.test.ts',
];

export default defineConfig({
  test: {
    // Two cores: run files in two forks, keep each file's tests in order.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // dist/ built once, before any file: the tests that start the product run `node dist/src/main.js`.
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: PROCESS_TESTS } },
      { extends: true, test: { name: 'processes', include: PROCESS_TESTS, fileParallelism: false } },
    ],
  },
});
