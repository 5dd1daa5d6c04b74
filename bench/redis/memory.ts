/**
 * `npx tsx bench/redis/memory.ts [conversations]`: Redis memory per thousand conversations. Starts its own
 * redis-server (port 7070, a temporary directory), the whole product on it (embedded sandbox), and walks
 * `conversations` USSD users (default 300) to the PIN screen of a payment, the largest record a conversation
 * holds while it waits; then prints used_memory's growth per thousand conversations and the keys per one.
 * Indicative: one machine, one flow, one point of it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AtSession } from '../../test/e2e/helpers.js';

const PORT = 7070;
const n = Number(process.argv[2] ?? 300);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'momo-redis-memory-'));
  const server = spawn(
    'redis-server',
    ['--port', String(PORT), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const redis = new Redis({ port: PORT, retryStrategy: (times) => Math.min(times * 50, 500) });
  redis.on('error', () => {});
  try {
    await redis.ping();
    const app = await startApp(
      loadConfig({
        PORT: '0',
        LOG_LEVEL: 'silent',
        DATA_DIR: 'memory://',
        REDIS_URL: `redis://127.0.0.1:${PORT}`,
        RATE_LIMIT_MESSAGES: '100000',
        SOURCE_RATE_LIMIT_REQUESTS: '1000000',
      }),
    );
    const used = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
    const keysBefore = await redis.dbsize();
    const before = await used();
    for (let i = 0; i < n; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, n - i) }, async (_, j) => {
          const ussd = new AtSession(app.url, `+2567005${String(i + j).padStart(5, '0')}`);
          await ussd.dial();
          for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '5000', '1', '1']) await ussd.answer(answer);
        }),
      );
    }
    const after = await used();
    const keysAfter = await redis.dbsize();
    console.log(`conversations: ${n}`);
    console.log(
      `used_memory growth: ${after - before} bytes, ${Math.round((((after - before) / n) * 1000) / 1024)} KiB per thousand conversations`,
    );
    console.log(`keys per conversation: ${((keysAfter - keysBefore) / n).toFixed(2)}`);
    await app.stop();
  } finally {
    redis.disconnect();
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
