/**
 * How tests start the product, and its command-line tools (`npm run reconcile`, `operator`, `journal:verify`,
 * `statement`, `ussd`), as a process: the compiled JavaScript `npm start` runs (dist/), built once per
 * run by {@link buildProduct} (vitest's globalSetup, test/global-setup.ts; the chaos CLI before its run), not
 * the TypeScript sources compiled again by tsx at every start. test/shutdown/npm-start.test.ts starts it
 * through `npm start` itself, as an operator does.
 */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository's root: the working directory of a product process. */
export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Node's arguments to run `entry` (a path from the root, without `.ts`) from dist/, as `npm start` does. */
export function productArgs(entry = 'src/main'): string[] {
  return ['--enable-source-maps', `dist/${entry}.js`];
}

/** The build of dist/ when it is missing or older than a source, without the type check: npm test's is its own. */
const BUILD = ['scripts/build.js', '--if-needed', '--no-check'];

/** Builds dist/ ({@link BUILD}); throws if it fails. */
export function buildProduct(): void {
  const built = spawnSync(process.execPath, BUILD, { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) throw new Error(`scripts/build.js --if-needed failed (exit ${built.status})`);
}

/** {@link buildProduct} in a child process the caller need not wait on at once (globalSetup works beside it). */
export function buildProductAsync(): Promise<void> {
  const built = spawn(process.execPath, BUILD, { cwd: ROOT, stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    built.once('error', reject);
    built.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`scripts/build.js --if-needed failed (exit ${code})`)),
    );
  });
}
