/**
 * `npm test`: the preflight (test/preflight.ts: the services the suite needs, in seconds), then the type check
 * and every test at once. tsc is one core for a minute and more; run before the tests, that minute was the
 * suite's, while beside them it shares the two cores with the tests. The run fails if either fails; the type
 * check's findings are printed when it ends, so they do not cut through the test report, and dist/ is then
 * marked stale. Arguments go to vitest (`npm test -- test/some/file.test.ts`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const bin = (pkg, path) => join(dirname(require.resolve(`${pkg}/package.json`)), path);

const preflight = spawnSync(process.execPath, ['--import', 'tsx', 'test/preflight.ts'], {
  cwd: root,
  stdio: 'inherit',
});
if (preflight.status !== 0) process.exit(preflight.status ?? 1);

const children = [];

/** Runs `args` with node; resolves with its exit code (a signal counts as a failure). */
function run(args, stdio) {
  const child = spawn(process.execPath, args, { cwd: root, stdio });
  children.push(child);
  const exit = new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  return { child, exit };
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

const typecheck = run([bin('typescript', 'bin/tsc'), '--noEmit', '-p', '.'], ['ignore', 'pipe', 'pipe']);
let typeOutput = '';
typecheck.child.stdout.on('data', (chunk) => (typeOutput += chunk));
typecheck.child.stderr.on('data', (chunk) => (typeOutput += chunk));
const tests = run([bin('vitest', 'vitest.mjs'), 'run', ...process.argv.slice(2)], 'inherit');

const [typeCode, testCode] = await Promise.all([
  typecheck.exit.then((code) => {
    if (code !== 0) process.stderr.write(`\ntype check (tsc --noEmit -p .) failed:\n${typeOutput}\n`);
    return code;
  }),
  tests.exit,
]);
if (typeCode === 0) process.stderr.write('type check (tsc --noEmit -p .): no errors\n');
// The tests' build of dist/ skips the type check (test/product.ts): when this run's found errors, its stamp
// goes, so that `npm start` (scripts/build.js --if-needed) builds and checks again instead of running it.
else rmSync(join(root, 'dist', '.built'), { force: true });
process.exit(typeCode !== 0 ? typeCode : testCode);
