/**
 * Which test files make the fast loop (`npm run test:unit`, vitest.unit.config.ts): every `*.test.ts` under
 * test/ that needs no service and starts no process. A file is left to the whole suite (`npm test`) when it,
 * or a helper of test/ it imports (followed through), uses any of:
 *
 * - Redis: `ioredis`, the Redis store or proxy, `TEST_REDIS_URL`, test/conversation/redis-helper.ts;
 * - Chromium: `playwright-core`, `CHROMIUM_PATH`;
 * - PostgreSQL: `pg`, PGlite, test/journal/databases.ts;
 * - the whole product (`src/app.ts`, `startProduct`), which opens its database (embedded PGlite in tests);
 * - child processes: `node:child_process`, the product as a process (test/shutdown/product.ts, test/chaos/);
 *
 * and the folders of whole runs are the suite's too: test/e2e/ (conversations over HTTP), test/fuzz/
 * (properties over every route), test/chaos/, test/shutdown/, test/bench/. A new test file needs no list:
 * what it imports says where it runs. The fast loop points every service's setting nowhere, so a file this
 * misjudges fails there instead of quietly using the machine's Redis.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

/** What in a test file (or its helpers) means it needs a service or a process. */
export const NEEDS: Record<string, RegExp> = {
  redis: /from 'ioredis'|redis-helper\.js|\bRedisStore\b|\bRedisProxy\b|\bTEST_REDIS_URL\b/,
  chromium: /from 'playwright-core'|\bCHROMIUM_PATH\b/,
  postgres: /from 'pg'|@electric-sql\/pglite|journal\/databases\.js|\bPOSTGRES_URL\b/,
  // The whole product (src/app.ts) opens its database of record: PGlite when DATABASE_URL is unset.
  product: /src\/app\.js'|\bstartProduct\(/,
  processes: /from 'node:child_process'|shutdown\/product\.js|\bFleet\b/,
};

/** Folders (under test/) whose files are whole runs, kept for the suite. */
export const WHOLE_RUNS = ['e2e', 'fuzz', 'chaos', 'shutdown', 'bench'];

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });

/** The needs of each test file under `root`/test, keyed by its path from `root` (empty: a unit test). */
export function testNeeds(root: string): Map<string, string[]> {
  const testDir = join(root, 'test');
  const memo = new Map<string, Set<string>>();
  const needsOf = (file: string, seen: Set<string>): Set<string> => {
    const known = memo.get(file);
    if (known) return known;
    const found = new Set<string>();
    // test/services.ts names every service's setting; what uses one says so by the name it imports.
    if (seen.has(file) || file === join(testDir, 'services.ts')) return found;
    seen.add(file);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return found; // an import of a file that is not there: the compiler says so
    }
    for (const [need, re] of Object.entries(NEEDS)) if (re.test(text)) found.add(need);
    for (const [, spec] of text.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)) {
      const target = normalize(join(dirname(file), `${spec}.ts`));
      if (target.startsWith(testDir + sep)) for (const need of needsOf(target, seen)) found.add(need);
    }
    memo.set(file, found);
    return found;
  };
  const out = new Map<string, string[]>();
  for (const file of filesUnder(testDir)
    .filter((f) => f.endsWith('.test.ts'))
    .sort()) {
    const path = relative(root, file).split(sep).join('/');
    const folder = path.split('/')[1] ?? '';
    const needs = [...needsOf(file, new Set())];
    if (WHOLE_RUNS.includes(folder)) needs.push('whole run');
    out.set(path, needs);
  }
  return out;
}

/** The fast loop's files: those that need nothing. */
export function unitTestFiles(root: string): string[] {
  return [...testNeeds(root)].filter(([, needs]) => needs.length === 0).map(([path]) => path);
}

/**
 * A file that starts a Redis Sentinel set, a cluster or a replica of its own and waits through its failovers
 * (test/redis/servers.ts): most of its time is the servers' timeouts, not the machine's cores, so the suite's
 * order (vitest.config.ts) spreads such files out. Read from the file itself, not its helpers: servers.ts, which
 * every Redis file imports, defines these functions.
 */
const FAILOVERS = /\b(startSentinelSet|startCluster|clusterFailOver|startEmptyReplica)\(/;

/** Whether the test file at `path` (absolute) waits mostly on Redis failovers ({@link FAILOVERS}). */
export function waitsOnFailovers(path: string): boolean {
  return FAILOVERS.test(readFileSync(path, 'utf8'));
}
