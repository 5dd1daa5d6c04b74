import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { unitTestFiles } from './test/kinds.js';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * Tests that start the product as its own processes and kill or signal them (the chaos run, SIGTERM): one
 * file at a time (the turn, test/turn.ts), so that one's processes starting and dying do not eat the time
 * another measures against a deadline. They run beside the rest of the suite, in its two workers: a vitest
 * project of `fileParallelism: false` would be a group of its own, run only after every other file.
 */
const PROCESS_TESTS = [
  'test/chaos/chaos.test.ts',
  'test/chaos/rejections.test.ts',
  'test/shutdown/**/*.test.ts',
  'test/e2e/money-kept.test.ts',
];

/**
 * The files that need no service and start no process (test/kinds.ts, the fast loop's). They and the suite's
 * files share one module graph per worker (`isolate: false`) instead of importing the product's modules again
 * for each file (a whole run: import 195 s of worker time isolated, 72 s shared): no test may count on a module's
 * state being fresh, nor leave a setting changed in `process.env` behind it. The process files stay isolated.
 */
const UNIT_TESTS = unitTestFiles(root);

/**
 * vitest's order (the longest known first, else the largest), with the unit files ahead of the rest (their
 * longest, a flow's every path, starts first, and a worker takes them one after another in the graph it
 * has: it keeps its graph only while the next file in the line is one of them), then the suite's files with
 * the process files spread evenly among them: a worker that takes a process file while another holds the
 * turn waits for it.
 */
class Order extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const of = (name: string) => sorted.filter((file) => file.project.name === name);
    const [unit, suite, processes] = [of('unit'), of('suite'), of('processes')];
    const every = Math.max(1, Math.floor(suite.length / Math.max(1, processes.length)));
    const mixed = suite.flatMap((file, i) =>
      i % every === 0 && processes.length ? [processes.shift()!, file] : [file],
    );
    return [...unit, ...mixed, ...processes];
  }
}

export default defineConfig({
  test: {
    // Three forks on two cores, each file's tests in order: many files spend much of their time waiting (on
    // Redis failovers, product processes, leases), and with two forks the cores were a third idle.
    pool: 'forks',
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    sequence: { sequencer: Order },
    // dist/ built once, beside the unit files: the tests that start the product run `node dist/src/main.js`.
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT_TESTS, isolate: false } },
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...PROCESS_TESTS, ...UNIT_TESTS],
          isolate: false,
          setupFiles: ['test/ready-setup.ts'],
        },
      },
      {
        extends: true,
        test: { name: 'processes', include: PROCESS_TESTS, setupFiles: ['test/ready-setup.ts', 'test/turn-setup.ts'] },
      },
    ],
  },
});
