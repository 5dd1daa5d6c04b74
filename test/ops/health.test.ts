/**
 * /readyz under a flood: anyone may call it, so however many calls come at once or in a row, the store takes
 * one probe write and the service one HEAD per check; the store is probed again only once that result is
 * `STORE_CHECK_MS` old. A replica (it reads, refuses writes) is still said not ready, flood or not, and ready
 * once promoted and its old result is past. On Redis servers of this file's own; the clock is held still
 * (`Date` faked) so "at once" and "old" are the test's to say, not the machine's speed.
 */
import type { AddressInfo, Server } from 'node:net';
import express from 'express';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisStore } from '../../src/store/redis-store.js';
import { addHealthRoutes, STORE_CHECK_MS } from '../../src/ops/health.js';
import { startOwnRedis, stopAll, type Server as RedisServer } from '../redis/servers.js';

let master: RedisServer;
let replica: RedisServer;
const opened: Array<{ server: Server; store: RedisStore }> = [];

beforeAll(async () => {
  master = await startOwnRedis();
  replica = await startOwnRedis(['--replicaof', '127.0.0.1', String(master.port)]);
});
afterEach(() => vi.useRealTimers());
afterAll(async () => {
  for (const { server, store } of opened.splice(0)) {
    server.close();
    await store.close();
  }
  await stopAll();
});

/** The health routes on the Redis at `port`: their address, and how many probe writes and HEADs they made. */
async function readyOn(port: number, service: { down: boolean } = { down: false }) {
  const store = new RedisStore({ url: `redis://127.0.0.1:${port}`, keyPrefix: 'test:readyz:' });
  const claims = vi.spyOn(store, 'claim');
  let heads = 0;
  const app = express();
  addHealthRoutes(app, {
    store,
    serviceUrl: 'http://service.invalid',
    fetch: async () => {
      heads += 1;
      if (service.down) throw new Error('connect ECONNREFUSED');
      return new Response(null, { status: 200 });
    },
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  opened.push({ server, store });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`;
  const ask = async () => {
    const res = await fetch(url);
    return { status: res.status, body: (await res.json()) as { store: { detail: string } } };
  };
  return { ask, writes: () => claims.mock.calls.length, heads: () => heads };
}

const flood = <T>(calls: number, ask: () => Promise<T>) => Promise.all(Array.from({ length: calls }, ask));

describe('/readyz under a flood', () => {
  it('writes one probe for a hundred calls at once and twenty after, and probes again once that is old', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const ready = await readyOn(master.port);
    for (const answer of await flood(100, ready.ask)) expect(answer.status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await ready.ask()).status).toBe(200);
    expect(ready.writes()).toBe(1);
    expect(ready.heads()).toBe(1);
    const redis = new Redis(master.port);
    try {
      expect(await redis.keys('test:readyz:*')).toHaveLength(1);
      vi.setSystemTime(Date.now() + STORE_CHECK_MS - 1);
      await ready.ask();
      expect(ready.writes()).toBe(1);
      vi.setSystemTime(Date.now() + 1);
      for (const answer of await flood(50, ready.ask)) expect(answer.status).toBe(200);
      expect(ready.writes()).toBe(2);
      expect(await redis.keys('test:readyz:*')).toHaveLength(2);
    } finally {
      redis.disconnect();
    }
  });

  it('says not ready on a replica, flood or not, and ready once it is promoted and that answer is old', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const ready = await readyOn(replica.port);
    for (const answer of await flood(100, ready.ask)) {
      expect(answer.status).toBe(503);
      expect(answer.body.store.detail).toMatch(/READONLY/);
    }
    expect(ready.writes()).toBe(1);

    const redis = new Redis(replica.port);
    try {
      await redis.replicaof('NO', 'ONE');
    } finally {
      redis.disconnect();
    }
    expect((await ready.ask()).status).toBe(503);
    vi.setSystemTime(Date.now() + STORE_CHECK_MS);
    expect(await ready.ask()).toEqual({
      status: 200,
      body: { ok: true, store: { ok: true, detail: 'ok' }, service: { ok: true, detail: 'HTTP 200' } },
    });
    expect(ready.writes()).toBe(2);
  });

  it('asks a service that failed again after STORE_CHECK_MS, and one that answered only after cacheMs', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const service = { down: true };
    const ready = await readyOn(master.port, service);
    for (const answer of await flood(50, ready.ask)) expect(answer.status).toBe(503);
    expect(ready.heads()).toBe(1);
    service.down = false;
    vi.setSystemTime(Date.now() + STORE_CHECK_MS - 1);
    expect((await ready.ask()).status).toBe(503);
    vi.setSystemTime(Date.now() + 1);
    for (const answer of await flood(50, ready.ask)) expect(answer.status).toBe(200);
    expect(ready.heads()).toBe(2);
    // Down again: the answer that passed is reused for cacheMs (30 s by default), not asked per call.
    service.down = true;
    vi.setSystemTime(Date.now() + 29_000);
    expect((await ready.ask()).status).toBe(200);
    expect(ready.heads()).toBe(2);
  });
});
