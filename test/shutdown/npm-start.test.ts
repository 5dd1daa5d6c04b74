/**
 * `npm start` as an operator runs it: npm builds dist/ when needed and runs `node dist/src/main.js` as its
 * child, through `exec`, so the signal npm passes on reaches the product itself. `kill -TERM <pid of npm
 * start>` stops the product gracefully (its "shutting down" line, exit 0) and leaves no process serving.
 * Embedded sandbox and memory store: no Redis, no network. Its embedded PGlite starts empty (not from the run's
 * migrated dump, test/journal/templates.ts): the product migrates a fresh database at its start, as a first start
 * of an operator's does.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/journal/migrations/index.js';
import { until } from '../until.js';

/** True while a process with this id exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start', () => {
  it('runs the built product, and SIGTERM to npm stops it gracefully', async () => {
    const npm = spawn('npm', ['start'], {
      cwd: new URL('../../', import.meta.url).pathname,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', LOG_LEVEL: 'info', DATA_DIR: 'memory://' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      npm.once('exit', (code, signal) => resolve({ code, signal })),
    );

    // Started (after a build if dist/ was stale): the compiled product, not the TypeScript sources.
    await until(
      'npm start listening (or gone)',
      () => /listening on http:\/\/localhost:(\d+)/.test(output) || npm.exitCode !== null,
      { timeoutMs: 120_000, everyMs: 50 },
    );
    expect(output).toContain('node --enable-source-maps dist/src/main.js');
    const url = `http://127.0.0.1:${/listening on http:\/\/localhost:(\d+)/.exec(output)![1]}`;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    // The product's own pid, from its log lines: a child of npm, not npm itself.
    const pid = Number(/"pid":(\d+)/.exec(output)![1]);
    expect(pid).not.toBe(npm.pid);
    expect(alive(pid)).toBe(true);
    // Every migration, run by this start on its empty database.
    const migrated = output.split('\n').find((line) => line.includes('"msg":"database migrated"'));
    expect(JSON.parse(migrated ?? '{}')).toMatchObject({ database: 'pglite', migrations: Object.keys(MIGRATIONS) });

    npm.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/"signal":"SIGTERM".*"msg":"shutting down"/);
    // npm exits once its child has: nothing is left serving.
    expect(alive(pid)).toBe(false);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  }, 180_000);
});
