/**
 * The Redis connection factory: the REDIS_* settings (each mode, and the refusals that name the settings),
 * bounded error lines while Redis is away, a close that never waits on a dead Redis, and /readyz, which says
 * ready only when the store takes a write (a replica answers reads and refuses writes).
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Logger } from '../../src/log.js';
import { addHealthRoutes } from '../../src/ops/health.js';
import { boundedErrorLog, closeRedis, connectRedis } from '../../src/redis/connect.js';
import { startOwnRedis, stopAll } from './servers.js';

afterAll(stopAll);

/** A logger that keeps its lines. */
function keptLogger(): { logger: Logger; lines: Array<{ level: string; fields: unknown; message: string }> } {
  const lines: Array<{ level: string; fields: unknown; message: string }> = [];
  const at = (level: string) => (fields: unknown, message?: string) =>
    lines.push({ level, fields, message: message ?? String(fields) });
  const logger = { warn: at('warn'), info: at('info'), error: at('error'), debug: at('debug') } as unknown as Logger;
  return { logger, lines };
}

describe('REDIS_* settings', () => {
  it('read one server, a Sentinel set or a cluster', () => {
    expect(loadConfig({}).redis).toBeUndefined();
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/2' }).redis).toEqual({
      mode: 'server',
      url: 'redis://127.0.0.1:6379/2',
    });
    expect(
      loadConfig({
        REDIS_SENTINELS: '10.0.0.1:26379, sentinel-2:26380,[::1]:26381',
        REDIS_SENTINEL_NAME: 'momo',
        REDIS_PASSWORD: 'pw',
        REDIS_TLS: 'true',
      }).redis,
    ).toEqual({
      mode: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: 'sentinel-2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      name: 'momo',
      password: 'pw',
      tls: true,
    });
    expect(loadConfig({ REDIS_CLUSTER_NODES: '127.0.0.1:7000,127.0.0.1:7001' }).redis).toEqual({
      mode: 'cluster',
      nodes: [
        { host: '127.0.0.1', port: 7000 },
        { host: '127.0.0.1', port: 7001 },
      ],
      tls: false,
    });
  });

  it('refuse mixed, half and malformed settings, naming them', () => {
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error(`accepted: ${JSON.stringify(env)}`);
    };
    expect(refused({ REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'b:7000' })).toMatch(
      /^REDIS_URL, REDIS_CLUSTER_NODES: set one of/,
    );
    expect(refused({ REDIS_SENTINELS: 'a:26379' })).toMatch(
      /^REDIS_SENTINEL_NAME: REDIS_SENTINELS and REDIS_SENTINEL_NAME go together/,
    );
    expect(refused({ REDIS_SENTINEL_NAME: 'momo' })).toMatch(/^REDIS_SENTINELS: /);
    expect(refused({ REDIS_SENTINELS: 'a:26379,b', REDIS_SENTINEL_NAME: 'momo' })).toMatch(
      /REDIS_SENTINELS: a list of host:port .*not understood: b$/,
    );
    expect(refused({ REDIS_CLUSTER_NODES: 'a:70000' })).toMatch(/REDIS_CLUSTER_NODES: a list of host:port/);
    expect(refused({ REDIS_URL: 'redis://a:6379', REDIS_PASSWORD: 'pw' })).toMatch(
      /^REDIS_PASSWORD: only with REDIS_SENTINELS or REDIS_CLUSTER_NODES/,
    );
    expect(refused({ REDIS_PASSWORD: 'pw' })).toMatch(/^REDIS_PASSWORD: /);
    expect(refused({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_SENTINEL_PASSWORD: 'pw' })).toMatch(
      /^REDIS_SENTINEL_PASSWORD: only with REDIS_SENTINELS/,
    );
    expect(refused({ REDIS_URL: '127.0.0.1:26379' })).toMatch(/^REDIS_URL: a redis:\/\/ or rediss:\/\/ URL/);
    expect(refused({ REDIS_TLS: 'yes', REDIS_CLUSTER_NODES: 'a:7000' })).toMatch(/REDIS_TLS/);
  });
});

describe('a Redis that is away', () => {
  it('is reported in a bounded number of lines, and once when it is back', () => {
    const { logger, lines } = keptLogger();
    const log = boundedErrorLog(logger, { redis: 'sessions' }, 'redis: error, reconnecting', 60_000);
    for (let i = 0; i < 10_000; i++) log.error(new Error('connect ECONNREFUSED 127.0.0.1:7099'));
    expect(lines.map((l) => l.message)).toEqual(['redis: error, reconnecting']);
    log.back('redis: back');
    expect(lines.map((l) => l.message)).toEqual(['redis: error, reconnecting', 'redis: back']);
    expect(lines[1]!.fields).toMatchObject({ redis: 'sessions', unlogged: 9_999 });
  });

  it('keeps a real connection to a dead port to one line, and closes it at once', async () => {
    const { logger, lines } = keptLogger();
    const client = connectRedis('redis://127.0.0.1:7099', { name: 'sessions', logger });
    let errors = 0;
    await new Promise<void>((resolve) =>
      client.on('error', () => {
        if (++errors === 5) resolve();
      }),
    );
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
    const pending = client.get('k').catch((error: Error) => error.message);
    await closeRedis(client);
    // The command waiting for a connection fails instead of waiting on: nothing holds the stop.
    expect(await pending).toMatch(/Connection is closed/i);
    expect(client.status).toBe('end');
  });
});

describe('/readyz', () => {
  it('is ready on a master and not on a replica, which only reads', async () => {
    const master = await startOwnRedis();
    const replica = await startOwnRedis(['--replicaof', '127.0.0.1', String(master.port)]);
    const status = async (port: number) => {
      const store = new RedisStore({ url: `redis://127.0.0.1:${port}`, keyPrefix: 'test:readyz:' });
      const app = express();
      addHealthRoutes(app, {
        store,
        serviceUrl: 'http://service.invalid',
        fetch: async () => new Response(null, { status: 200 }),
      });
      const server = app.listen(0);
      try {
        const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`);
        return { status: res.status, body: await res.json() };
      } finally {
        server.close();
        await store.close();
      }
    };
    expect(await status(master.port)).toEqual({
      status: 200,
      body: { ok: true, store: { ok: true, detail: 'ok' }, service: { ok: true, detail: 'HTTP 200' } },
    });
    const onReplica = await status(replica.port);
    expect(onReplica.status).toBe(503);
    expect(onReplica.body.store.detail).toMatch(/READONLY/);
  });
});
