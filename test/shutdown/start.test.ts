/**
 * SIGTERM while the product starts: `node dist/src/main.js` takes the signal from before its start, so a signal
 * that comes while it starts (or right after it printed that it listens: an orchestrator replacing it at
 * once, as the chaos run does) stops it gracefully, exit code 0, instead of Node's default ending the
 * process with whatever it holds. The start is held on Redis (a proxy that refuses connections) so the
 * signal lands inside it for sure.
 */
import { spawn } from 'node:child_process';
import { productArgs, ROOT } from '../product.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../services.js';
import { cleanProductKeys, productKeyPrefix } from './product.js';
import { RedisProxy } from '../chaos/redis-proxy.js';
import { until } from '../until.js';
import { productDatabase } from '../journal/server-database.js';

/** The tests' Redis database (TEST_REDIS_URL), the product's keys under a prefix of this file's own. */
const REDIS = new URL(TEST_REDIS_URL);
const PREFIX = productKeyPrefix('start');

let proxy: RedisProxy;

beforeAll(async () => {
  proxy = await new RedisProxy({ host: REDIS.hostname, port: Number(REDIS.port || 6379) }).start();
});

afterAll(async () => {
  await proxy?.close();
  const redis = new Redis(REDIS.toString());
  await cleanProductKeys(redis, PREFIX);
  await redis.quit();
});

describe('SIGTERM during the start', () => {
  it('lets the start finish, stops gracefully and exits 0', async () => {
    proxy.cut();
    const child = spawn(process.execPath, productArgs(), {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        // info: its 'shutting down' line says when it has taken the signal.
        LOG_LEVEL: 'info',
        ...(await productDatabase()),
        REDIS_URL: `redis://127.0.0.1:${proxy.port}${REDIS.pathname}`,
        REDIS_KEY_PREFIX: PREFIX,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );

    // Its Redis clients try to connect: it is inside its start, which waits for Redis.
    await until('its Redis clients connecting', () => proxy.connections > 0 || child.exitCode !== null, {
      timeoutMs: 60_000,
    });
    child.kill('SIGTERM');
    // Redis comes back only once the process has taken the signal, inside its start.
    await until('the signal taken', () => /shutting down/.test(output) || child.exitCode !== null, {
      timeoutMs: 30_000,
    });
    proxy.restore();

    expect(await exit, output).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/listening on/);
  }, 90_000);
});
