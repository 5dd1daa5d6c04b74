import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { unitTestFiles } from './test/kinds.js';

const root = fileURLToPath(new URL('.', import.meta.url));

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

/**
 * The files that need no service and start no process (test/kinds.ts, the fast loop's): they keep no state
 * but their modules', so they share one module graph per worker (`isolate: false`) instead of importing the
 * product's modules again for each file.
 */
const UNIT_TESTS = unitTestFiles(root);

/**
 * vitest's order (the longest known first, else the largest), with the unit files ahead of the rest: their
 * longest (a flow's every path) starts first, and a worker takes them one after another in the graph it has
 * (a worker keeps its graph only while the next file in the line is one of them).
 */
class Order extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const unit = (file: TestSpecification) => file.project.name === 'unit';
    return [...sorted.filter(unit), ...sorted.filter((file) => !unit(file))];
  }
}

export default defineConfig({
  test: {
    // Two cores: run files in two forks, keep each file's tests in order.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    sequence: { sequencer: Order },
    // dist/ built once, before any file: the tests that start the product run `node dist/src/main.js`.
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT_TESTS, isolate: false } },
      {
        extends: true,
        test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: [...PROCESS_TESTS, ...UNIT_TESTS] },
      },
      { extends: true, test: { name: 'processes', include: PROCESS_TESTS, fileParallelism: false } },
    ],
  },
});
