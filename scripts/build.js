/**
 * `npm run build`: compiles the product (src/, flows/, adapters/) to dist/ with tsconfig.build.json and copies
 * the files it reads at run time (every file there that is neither TypeScript nor Markdown: the operator page's HTML, CSS and
 * script, the Slack manifest) beside the compiled modules, so `node dist/src/main.js` finds them where
 * `src/main.ts` does.
 *
 * `node scripts/build.js --bench` does the same into bench/dist/ with tsconfig.bench.json, which adds the
 * benchmark's servers (bench/child.ts): the benchmarks run the same JavaScript as `npm start`.
 *
 * `--no-check` emits without the type check (tsc's `--noCheck`: the same JavaScript, a third of the time): the
 * tests' build, whose type check is `npm test`'s own, run beside the tests (scripts/test.js).
 *
 * `node scripts/build.js --if-needed` (npm's prestart) builds only when dist/ is missing or older than a source:
 * a plain Node script, so a start with dist/ up to date needs no TypeScript installed. Building needs the
 * development dependencies (`npm ci`).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCES = ['src', 'flows', 'adapters'];
const INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts/build.js'];
const bench = process.argv.includes('--bench');
const check = !process.argv.includes('--no-check');
const PROJECT = join(root, bench ? 'tsconfig.bench.json' : 'tsconfig.build.json');
const DIST = join(root, bench ? 'bench/dist' : 'dist');
/** Written last by a build that finished: its time is the build's. */
const STAMP = join(DIST, '.built');

/** Every file under `dir`, as paths from the repository's root. */
function filesUnder(dir) {
  const out = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** True when dist/ was built after every source and build input last changed. */
function upToDate() {
  if (!existsSync(STAMP)) return false;
  const built = statSync(STAMP).mtimeMs;
  const inputs = [...SOURCES.flatMap(filesUnder), ...INPUTS];
  return inputs.every((path) => statSync(join(root, path)).mtimeMs <= built);
}

function build() {
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    console.error(
      'dist/ must be built and TypeScript is not installed: run `npm ci` (with dev dependencies), then `npm run build`.',
    );
    process.exit(1);
  }
  rmSync(DIST, { recursive: true, force: true });
  const compiled = spawnSync(process.execPath, [tsc, '-p', PROJECT, ...(check ? [] : ['--noCheck'])], {
    cwd: root,
    stdio: 'inherit',
  });
  if (compiled.status !== 0) {
    console.error('build: the TypeScript compiler refused the sources (above); dist/ not written.');
    process.exit(compiled.status ?? 1);
  }
  let assets = 0;
  for (const path of SOURCES.flatMap(filesUnder)) {
    if (path.endsWith('.ts') || path.endsWith('.md')) continue;
    const target = join(DIST, path);
    mkdirSync(dirname(target), { recursive: true });
    cpSync(join(root, path), target);
    assets++;
  }
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  console.error(
    `build: ${relative(root, DIST)}/ written (${assets} run-time files copied beside the modules), start with node ${relative(root, join(DIST, 'src', 'main.js'))}`,
  );
}

const ifNeeded = process.argv.includes('--if-needed');
if (ifNeeded && upToDate()) process.exit(0);
if (ifNeeded) console.error('build: dist/ is missing or older than the sources; building it first (under a minute).');
build();
