/**
 * The sandbox mounted at the root of another express app (as `npm start` does), limits at the spec's
 * values, and the real-time clock.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { SandboxClock } from '../../src/sandbox/clock.js';
import { createSandbox, TEST_NUMBERS } from '../../src/sandbox/index.js';
import { silent, startSandbox } from './harness.js';
import { until } from '../until.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('mounted at the root of the product', () => {
  it('leaves other paths and their bodies untouched', async () => {
    const sandbox = createSandbox({ apiKey: 'k', autoAdvance: false, logger: silent });
    const product = express();
    product.use(sandbox.app);
    product.post('/slack/events', express.text({ type: '*/*' }), (req, res) => {
      res.json({ raw: req.body });
    });
    product.use((_req, res) => {
      res.status(404).send('product 404');
    });
    const server = product.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(async () => {
      server.closeAllConnections();
      server.close();
      await sandbox.close();
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const raw = 'payload=%7B%22type%22%3A%22block_actions%22%7D';
    const slack = await fetch(`${base}/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: raw,
    });
    expect(await slack.json()).toEqual({ raw });
    const json = await fetch(`${base}/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(await json.json()).toEqual({ raw: '{"a":1}' });
    const other = await fetch(`${base}/ussd`);
    expect([other.status, await other.text()]).toEqual([404, 'product 404']);
    const api = await fetch(`${base}/api/contacts`, { headers: { authorization: 'Token k' } });
    expect(api.status).toBe(200);
  });
});

describe('limits', () => {
  it('answers 429 with Retry-After past 30 reads a minute, writes counted apart', async () => {
    const sb = await startSandbox({ limits: undefined });
    cleanups.push(() => sb.close());
    for (let i = 0; i < 30; i++) expect((await sb.api('GET', '/contacts')).status).toBe(200);
    const throttled = await sb.api('GET', '/contacts');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(throttled.body.detail).toMatch(/throttled/);
    const write = await sb.api('POST', '/contacts', {
      json: { phone_number: TEST_NUMBERS[0]!.phonenumber, first_name: 'A', last_name: 'B' },
    });
    expect(write.status).toBe(201);
  });

  it('raises the limits when asked', async () => {
    const sb = await startSandbox({ limits: { readsPerMinute: 100 } });
    cleanups.push(() => sb.close());
    for (let i = 0; i < 60; i++) expect((await sb.api('GET', '/banks')).status).toBe(200);
  });
});

describe('clock', () => {
  it('runs scheduled work by itself in real time, and only on advance when virtual', async () => {
    const real = new SandboxClock(true, silent);
    cleanups.push(() => real.close());
    await new Promise<void>((resolve) => real.schedule(0.01, resolve));

    const virtual = new SandboxClock(false, silent);
    cleanups.push(() => virtual.close());
    const ran: number[] = [];
    virtual.schedule(5, () => ran.push(5));
    virtual.schedule(1, () => {
      ran.push(1);
      virtual.schedule(1, () => ran.push(2));
    });
    const start = virtual.now();
    await virtual.advance(1.5);
    expect(ran).toEqual([1]);
    await virtual.advance(10);
    expect(ran).toEqual([1, 2, 5]);
    expect(virtual.now() - start).toBe(11_500);
  });

  it('moves a payment to processed without advancing when autoAdvance is on', async () => {
    const sb = await startSandbox({ autoAdvance: true });
    cleanups.push(() => sb.close());
    const created = await sb.api('POST', '/payments', {
      json: { phonenumber: TEST_NUMBERS[0]!.phonenumber, amount: '10', currency: 'UGX', description: 'x' },
    });
    const states = [created.body.state];
    await until(
      'the payment processed',
      async () => {
        states.push((await sb.api('GET', `/payments/${created.body.id}`)).body.state);
        return states.at(-1) === 'processed';
      },
      { everyMs: 100 },
    );
    for (const state of states) expect(['new', 'validated', 'approved', 'processed']).toContain(state);
  });
});
