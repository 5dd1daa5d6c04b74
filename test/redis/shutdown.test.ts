/**
 * A process stops whatever Redis is doing: with its Redis killed (SIGKILL: no answer, connections refused),
 * `node src/main.ts` still exits after SIGTERM within its grace period (SHUTDOWN_GRACE_SECONDS), and while
 * Redis is away each connection logs its errors in one line, not one per reconnection attempt.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startRedis, stopAll } from './servers.js';

afterAll(stopAll);

describe('a product whose Redis dies', () => {
  it('logs its Redis errors boundedly, and stops within its grace period on SIGTERM', async () => {
    const server = await startRedis(7063);
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: new URL('../../', import.meta.url).pathname,
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        LOG_LEVEL: 'info',
        DATA_DIR: 'memory://',
        REDIS_URL: `redis://127.0.0.1:${server.port}`,
        SHUTDOWN_GRACE_SECONDS: '5',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const until = async (ok: () => boolean) => {
      while (!ok()) await new Promise((resolve) => setTimeout(resolve, 100));
    };
    await until(() => output.includes('listening on'));
    server.kill();
    // Every connection has failed to reconnect a few times (each attempt an error) before the stop.
    await until(() => (output.match(/redis: error, reconnecting/g) ?? []).length >= 5);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    child.kill('SIGTERM');
    const code = await exited;
    expect([0, 1]).toContain(code);
    if (code === 1) expect(output).toMatch(/grace period over/);

    const errors = output
      .split('\n')
      .filter((line) => /redis: error, reconnecting|queue worker error/.test(line))
      .map((line) => JSON.parse(line) as { redis?: string; queue?: string });
    const perSource = new Map<string, number>();
    for (const e of errors)
      perSource.set(e.redis ?? `worker ${e.queue}`, (perSource.get(e.redis ?? `worker ${e.queue}`) ?? 0) + 1);
    // One line per connection at most in the first 30 s however many attempts failed: a queue has two
    // connections (its own and its worker's), every other part one.
    for (const [source, n] of perSource) expect(n, source).toBeLessThanOrEqual(source.startsWith('queue ') ? 2 : 1);
  }, 120_000);
});
