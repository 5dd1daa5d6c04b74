/**
 * `npm test` starts here: the whole suite needs Redis (TEST_REDIS_URL), PostgreSQL (POSTGRES_URL) and
 * Chromium (CHROMIUM_PATH), test/services.ts. Each is checked in a second; a Redis on this machine that is
 * installed but stopped is started (`redis-server`, no persistence). What is still missing stops the run in
 * one line saying how to get it, before the typecheck and long before a test would time out on it.
 * `npm run test:unit` needs none of them.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { POSTGRES_URL } from './journal/databases.js';
import { CHROMIUM_PATH, TEST_REDIS_URL } from './services.js';
import { until } from './until.js';

const LOCAL = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

async function redisAnswers(): Promise<boolean> {
  const redis = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
  });
  redis.on('error', () => undefined); // the failed connect is the answer, read below
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** Starts a local redis-server on TEST_REDIS_URL's port, when one is installed; true once it answers. */
async function startRedis(): Promise<boolean> {
  const url = new URL(TEST_REDIS_URL);
  if (!LOCAL.has(url.hostname)) return false;
  const port = url.port || '6379';
  const started = spawnSync(
    'redis-server',
    ['--port', port, '--bind', '127.0.0.1', '--daemonize', 'yes', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  if (started.error || started.status !== 0) return false;
  const answering = await until('the started redis-server answering', redisAnswers, {
    timeoutMs: 5_000,
    everyMs: 100,
  }).catch(() => false);
  if (answering) console.error(`preflight: Redis was stopped; started redis-server on port ${port} (no persistence).`);
  return answering;
}

async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined); // never connected: nothing to end
  }
}

function chromiumThere(): boolean {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const missing: string[] = [];
if (!(await redisAnswers()) && !(await startRedis())) {
  missing.push(`Redis at ${TEST_REDIS_URL} (apt-get install redis-server, or set TEST_REDIS_URL)`);
}
if (!(await postgresAnswers())) {
  missing.push(
    `PostgreSQL at ${POSTGRES_URL.replace(/\/\/[^@/]*@/, '//')} (apt-get install postgresql with trust auth for postgres, or set POSTGRES_URL)`,
  );
}
if (!chromiumThere()) missing.push(`Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`);
if (missing.length > 0) {
  console.error(`npm test needs ${missing.join('; ')}. npm run test:unit needs none of them.`);
  process.exit(1);
}
