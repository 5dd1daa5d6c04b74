/**
 * `node scripts/test-durations.js`: writes test/durations.json, each test file's seconds in the last whole run
 * (vitest's cache of it, node_modules/.vite/vitest/), which vitest.config.ts orders the files by, the longest
 * first, where a clean clone has no cache. Run it after an `npm test` when files have come, gone or changed
 * their length much, and commit the file.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cache = join(root, 'node_modules/.vite/vitest');
const durations = {};
for (const dir of readdirSync(cache)) {
  const { results } = JSON.parse(readFileSync(join(cache, dir, 'results.json'), 'utf8'));
  for (const [key, { duration }] of results) {
    const path = key.slice(key.indexOf(':') + 1);
    if (typeof duration === 'number') durations[path] = Math.round(duration / 100) / 10;
  }
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(root, 'test/durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.error(`test/durations.json: ${Object.keys(sorted).length} files`);
