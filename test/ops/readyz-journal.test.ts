/**
 * /readyz is not ready while the journal's database takes no write: PostgreSQL reached through a TCP proxy this
 * test cuts (the server itself keeps running for every other test), then restores. Ready, cut: not ready, with
 * the reason for a caller with OPS_TOKEN and only `{ ok: false }` for one without; restored: ready again.
 * No route is added: /readyz is anyone's (load balancers), its details OPS_TOKEN's; a caller without the token
 * is shown no reason.
 */
import type { AddressInfo, Server } from 'node:net';
import express from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { addHealthRoutes } from '../../src/ops/health.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { addressOf, cuttableProxy, type CuttableProxy } from '../journal/proxy.js';
import { reading, until } from '../until.js';

const TOKEN = 'readyz-journal-token-0123456789';
const done: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const step of done.reverse()) await step().catch(() => {});
});

/** Within the test's minute, asked every 100 ms. */
const WAIT = { timeoutMs: 50_000, everyMs: 100 };

describe('/readyz and the journal (PostgreSQL through a proxy)', { timeout: 60_000 }, () => {
  it('is not ready while the journal cannot be written, and ready again once it can', async () => {
    const server: ServerDatabase = await serverDatabase('readyz_journal');
    done.push(server.drop);
    const proxy: CuttableProxy = await cuttableProxy(addressOf(server.url));
    done.push(proxy.close);
    const url = new URL(server.url);
    url.host = `127.0.0.1:${proxy.port}`;
    const database: Database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://' });
    done.push(database.close);
    const app = express();
    addHealthRoutes(app, {
      store: new MemoryStore(),
      serviceUrl: 'http://service.invalid',
      fetch: async () => new Response(null, { status: 200 }),
      opsToken: TOKEN,
      timeoutMs: 500,
      journal: new Journal(database.db),
    });
    const http: Server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => http.once('listening', resolve));
    done.push(() => new Promise((resolve) => http.close(resolve)));
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}/readyz`;
    const ask = async (token = true) => {
      const res = await fetch(base, token ? { headers: { authorization: `Bearer ${TOKEN}` } } : {});
      return {
        status: res.status,
        body: (await res.json()) as { ok: boolean; journal?: { ok: boolean; detail: string } },
      };
    };

    expect(await ask()).toMatchObject({ status: 200, body: { ok: true, journal: { ok: true, detail: 'ok' } } });

    await proxy.cut();
    const down = await until(
      'not ready',
      reading(ask, (a) => a.status === 503),
      WAIT,
    );
    expect(down.body.ok).toBe(false);
    expect(down.body.journal?.ok).toBe(false);
    expect(down.body.journal?.detail).not.toBe('ok');
    // Without the token: the status, no reason.
    expect(await ask(false)).toEqual({ status: 503, body: { ok: false } });

    await proxy.restore();
    const up = await until(
      'ready again',
      reading(ask, (a) => a.status === 200),
      WAIT,
    );
    expect(up.body).toMatchObject({ ok: true, journal: { ok: true } });
  });
});
