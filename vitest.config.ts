import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { unitTestFiles, waitsOnFailovers } from './test/kinds.js';
import { takesTurn } from './test/turn.js';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * The files that need no service and start no process (test/kinds.ts, the fast loop's): project `unit`. Every
 * other file is the `suite`'s. Each project's files share one module graph per worker (`isolate: false`)
 * instead of importing the product's modules again for each file: no test may count on a module's state being
 * fresh, nor leave a setting changed in `process.env` behind it. One project for every file that is not a
 * unit file, the product's processes among them, so a worker keeps its graph from one file to the next
 * (vitest starts a new worker when the next file is another project's: 146 s of imports in a clean clone).
 */
const UNIT_TESTS = unitTestFiles(root);

/**
 * Each file's seconds in a whole run (test/durations.json, written from vitest's cache by
 * `node scripts/test-durations.js` after an `npm test`). vitest orders by its own cache of earlier runs, which a
 * clean clone has not: it then takes the largest files first, and long ones started last make the run's tail.
 */
const DURATIONS: Record<string, number> = JSON.parse(readFileSync(join(root, 'test/durations.json'), 'utf8'));

/** `extra` put among the first `share` of `base`, one every so many places, in their order. */
function spread<T>(base: T[], extra: T[], share: number): T[] {
  const every = Math.max(1, Math.floor((base.length * share) / Math.max(1, extra.length)));
  const left = [...extra];
  const out = base.flatMap((item, i) => (i % every === 0 && left.length ? [left.shift()!, item] : [item]));
  return [...out, ...left];
}

/**
 * The order: the longest turn file first (it waits for the build, then holds the turn while the unit files
 * run), then the unit files (a worker takes them one after another in the graph it has), then the suite's files
 * with the other turn files (test/turn.ts) spread among the first two thirds of them: a worker that takes one
 * while another holds the turn waits for it, and none is left for the run's end, where the other files are
 * few. The files that wait on Redis failovers (test/kinds.ts) are spread over the first nine tenths: side by
 * side, the longest first, they left the cores over half idle for half a minute. In each part the longest first,
 * by {@link DURATIONS}; a file it does not know yet first of all, in vitest's order (the longest known to its
 * cache, else the largest).
 */
class Order extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const path = (file: TestSpecification) => relative(root, file.moduleId);
    const seconds = (file: TestSpecification) => DURATIONS[path(file)] ?? Infinity;
    const sorted = (await super.sort(files)).sort((a, b) => seconds(b) - seconds(a) || 0);
    type Part = TestSpecification[];
    const [unit, turns, failovers, suite]: [Part, Part, Part, Part] = [[], [], [], []];
    for (const file of sorted) {
      const part =
        file.project.name === 'unit'
          ? unit
          : takesTurn(path(file))
            ? turns
            : waitsOnFailovers(file.moduleId)
              ? failovers
              : suite;
      part.push(file);
    }
    const first = turns.splice(0, 1);
    return [...first, ...unit, ...spread(spread(suite, failovers, 0.9), turns, 2 / 3)];
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
          exclude: UNIT_TESTS,
          isolate: false,
          setupFiles: ['test/suite-setup.ts'],
        },
      },
    ],
  },
});
