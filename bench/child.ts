/**
 * The benchmark servers as child processes, so each one's CPU is its own: start one (`<script> <kind>`, which
 * prints `PORT <n>` once listening) and stop it.
 *
 * Every server runs compiled JavaScript with plain `node`, as the product runs in production: the product's
 * sources and the benchmark's servers are compiled once per run by `tsc` with the product's build settings
 * (`node scripts/build.js --bench`: tsconfig.bench.json extends tsconfig.build.json) into bench/dist/, the same
 * JavaScript `npm run build` writes to dist/.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

/** Where tsconfig.bench.json writes the compiled sources. */
export const BENCH_DIST = 'bench/dist';
let compiled = false;

/** Compiles the product and the benchmark's servers into bench/dist/, run-time files beside them (once per process). */
export function compileBench(): void {
  if (compiled) return;
  const result = spawnSync(process.execPath, ['scripts/build.js', '--bench'], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('the build of the benchmark and the product failed (above)');
  compiled = true;
}

/** The compiled twin of a TypeScript source of this repository: `bench/ussd/serve.ts` → `bench/dist/bench/ussd/serve.js`. */
export function compiledPath(source: string): string {
  return `${BENCH_DIST}/${source.replace(/\.ts$/, '.js')}`;
}

/** Starts `node [...nodeArgs] <compiled script> <kind>` with logging off (and `env` added); its URL once it listens. */
export async function startChild(
  script: string,
  kind: string,
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess }> {
  compileBench();
  const child = spawn(process.execPath, [...nodeArgs, compiledPath(script), kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env, LOG_LEVEL: 'silent' },
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** SIGTERM, then the exit (SIGKILL after 5 s). */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
