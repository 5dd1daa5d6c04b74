import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { DirectRoutes } from '../../src/http/direct-routes.js';
import { addReceiverRoutes } from '../../src/notifications/receiver.js';
import type { Notice } from '../../src/notifications/events.js';
import { QueueFullError } from '../../src/notifications/queue.js';
import { createLogger } from '../../src/log.js';

const queued: Notice[] = [];
let server: Server;
let base: string;
let failEnqueue: Error | undefined;
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

beforeAll(async () => {
  const direct = new DirectRoutes();
  addReceiverRoutes(direct, {
    enqueue: async (b) => {
      if (failEnqueue) throw failEnqueue;
      queued.push(b);
    },
    verify: async (b) => `ACCEPT ${b.remote_transaction_id}`,
    basicAuth: { user: 'momo', password: 's3cret' },
    logger: createLogger('silent'),
  });
  server = createServer(direct.serve(express())).listen(0);
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const post = (path: string, body: string, auth = basic('momo', 's3cret'), type = 'application/json') =>
  fetch(base + path, { method: 'POST', headers: { 'content-type': type, authorization: auth }, body });

const valid = JSON.stringify({
  hook: { id: 1, event: 'payment.status.changed' },
  data: {
    id: 3,
    state: 'processed',
    amount: '500.00',
    currency: 'UGX',
    metadata: { chat: 'telegram:1', ref: 'r1' },
    description: 'x'.repeat(5000),
    extra: { big: 'y'.repeat(5000) },
  },
});

describe('notification receiver', () => {
  it('answers 200 and queues the parsed fields of a well-formed notification, never its body', async () => {
    const before = queued.length;
    const res = await post('/notifications/momo', valid);
    expect(res.status).toBe(200);
    expect(queued.length).toBe(before + 1);
    expect(queued.at(-1)).toEqual({
      kind: 'payment',
      id: '3',
      state: 'processed',
      amount: '500.00',
      currency: 'UGX',
      phone: '',
      reason: '',
      ref: 'r1',
    });
    expect(JSON.stringify(queued.at(-1)).length).toBeLessThan(200);
  });

  it('answers 200 and queues nothing for an event that owes no chat anything', async () => {
    const before = queued.length;
    const res = await post(
      '/notifications/momo',
      JSON.stringify({ hook: { event: 'contact.created' }, data: { id: 1 } }),
    );
    expect(res.status).toBe(200);
    expect(queued.length).toBe(before);
  });

  it('answers 200 and queues nothing for an event named like a property every object has (found by the fuzz test: it was a 500)', async () => {
    const before = queued.length;
    for (const event of ['valueOf', 'constructor', 'toString', 'hasOwnProperty', '__proto__', 'isPrototypeOf']) {
      const res = await post(
        '/notifications/momo',
        JSON.stringify({ hook: { event, id: 3 }, data: { id: 1, state: 'processing', phonenumber: '0772000001' } }),
      );
      expect(res.status, event).toBe(200);
    }
    expect(queued.length).toBe(before);
  });

  it('refuses wrong or missing Basic auth with 401 and queues nothing', async () => {
    const before = queued.length;
    expect((await post('/notifications/momo', valid, basic('momo', 'wrong'))).status).toBe(401);
    expect((await post('/notifications/momo', valid, '')).status).toBe(401);
    expect((await post('/notifications/momo', valid, basic('momo', 's3cret '))).status).toBe(401);
    expect(queued.length).toBe(before);
  });

  it('gives 400 with a reason for malformed bodies', async () => {
    const unreadable = JSON.stringify({ hook: { event: 'payment.status.changed' }, data: { id: 3 } });
    for (const body of [
      '{not json',
      '[]',
      '"x"',
      JSON.stringify({ hook: {}, data: {} }),
      JSON.stringify({ data: {} }),
      unreadable,
    ]) {
      const res = await post('/notifications/momo', body);
      expect(res.status, body).toBe(400);
      expect((await res.json()).detail).toEqual(expect.any(String));
    }
  });

  it('reads a notification whatever its Content-Type says, and a gzipped one; refuses one that does not inflate', async () => {
    const before = queued.length;
    expect((await post('/notifications/momo', valid, basic('momo', 's3cret'), 'text/plain')).status).toBe(200);
    const gzipped = await fetch(base + '/notifications/momo', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        authorization: basic('momo', 's3cret'),
      },
      body: gzipSync(valid),
    });
    expect(gzipped.status).toBe(200);
    expect(queued.length).toBe(before + 2);
    const broken = await fetch(base + '/notifications/momo', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        authorization: basic('momo', 's3cret'),
      },
      body: 'not gzip at all',
    });
    expect(broken.status).toBe(400);
    expect((await broken.json()).detail).toMatch(/^Malformed body/);
    expect(
      (await post('/notifications/momo', valid, basic('momo', 's3cret'), 'application/json; charset=latin1')).status,
    ).toBe(415);
    expect(queued.length).toBe(before + 2);
  });

  it('answers 503 when the queue cannot take the job, so the service retries; with Retry-After when it is full', async () => {
    failEnqueue = new Error('redis down');
    try {
      expect((await post('/notifications/momo', valid)).status).toBe(503);
      failEnqueue = new QueueFullError(10_000);
      const full = await post('/notifications/momo', valid);
      expect(full.status).toBe(503);
      expect(full.headers.get('retry-after')).toBe('10');
      expect((await full.json()).detail).toMatch(/retry later/);
    } finally {
      failEnqueue = undefined;
    }
  });

  it('answers verification requests as text', async () => {
    const res = await post(
      '/notifications/momo/verify',
      JSON.stringify({
        phonenumber: '+256772000001',
        amount: '500',
        currency_code: 'UGX',
        reference: 'x',
        remote_transaction_id: 'ABC123',
      }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('ACCEPT ABC123');
    const bad = await post(
      '/notifications/momo/verify',
      JSON.stringify({ phonenumber: '+256772000001', amount: 'lots' }),
    );
    expect(bad.status).toBe(400);
  });
});
