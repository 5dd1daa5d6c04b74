/**
 * Webhooks and events: https-only targets (and the loopback-http option), `{hook, data}` delivery with
 * Basic auth, retries on the sandbox clock, 410 deletion, the delivery log, events of all four types, and
 * `?skip-cert-verify` against a real https server with a self-signed certificate.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { RETRY_WAITS_SECONDS } from '../../src/sandbox/notifications.js';
import { startReceiver, startSandbox, type RunningSandbox } from './harness.js';

const SARAH = TEST_NUMBERS.find((t) => t.nameOnNetwork === 'Sarah Nakato')!.phonenumber;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(options: { allowHttpWebhooks?: boolean } = { allowHttpWebhooks: true }) {
  const sb = await startSandbox(options);
  cleanups.push(() => sb.close());
  return sb;
}

async function receiver(options: Parameters<typeof startReceiver>[0] = {}) {
  const r = await startReceiver(options);
  cleanups.push(() => r.close());
  return r;
}

const hook = (sb: RunningSandbox, event: string, target: string) =>
  sb.api('POST', '/webhooks', { json: { event, target } });
const pay = (sb: RunningSandbox) =>
  sb.api('POST', '/payments', {
    json: {
      phonenumber: SARAH,
      amount: '1000',
      currency: 'UGX',
      description: 'x',
      metadata: { chat: 'telegram:42', ref: 'p-1' },
    },
  });

describe('webhook management', () => {
  it('accepts https targets only, unless loopback http is allowed', async () => {
    const strict = await setup({ allowHttpWebhooks: false });
    const http = await hook(strict, 'payment.status.changed', 'http://127.0.0.1:9/x');
    expect(http.status).toBe(400);
    expect(http.body.target[0]).toMatch(/https/);
    expect((await hook(strict, 'payment.status.changed', 'https://example.com/hook?skip-cert-verify')).status).toBe(
      201,
    );
    expect((await hook(strict, 'payment.made', 'https://example.com')).body.event[0]).toMatch(/valid choice/);
    expect((await hook(strict, 'contact.created', 'not a url')).body.target).toEqual(['Enter a valid URL.']);

    const dev = await setup();
    expect((await hook(dev, 'contact.created', 'http://localhost:3000/notifications')).status).toBe(201);
    expect((await hook(dev, 'contact.created', 'http://example.com/notifications')).status).toBe(400);
  });

  it('gets and lists webhooks with the user and event filters', async () => {
    const sb = await setup();
    const a = await hook(sb, 'contact.created', 'https://example.com/a');
    await hook(sb, 'collection.received', 'https://example.com/b');
    expect(a.body).toMatchObject({ id: 1, user: 1, event: 'contact.created', target: 'https://example.com/a' });
    expect((await sb.api('GET', '/webhooks/1')).body).toEqual(a.body);
    expect((await sb.api('GET', '/webhooks?event=collection.received')).body.results.map((w: any) => w.target)).toEqual(
      ['https://example.com/b'],
    );
    expect((await sb.api('GET', '/webhooks?user=1')).body.count).toBe(2);
    expect((await sb.api('GET', '/webhooks?user=2')).body.count).toBe(0);
    expect((await sb.api('DELETE', '/webhooks/1')).status).toBe(405);
  });

  it('needs the permission "Manage Users and Organization Settings"', async () => {
    const sb = await setup();
    sb.controls.setOrganization({ manageSettings: false });
    const create = await hook(sb, 'contact.created', 'https://example.com/a');
    expect(create.status).toBe(403);
    expect(create.body.detail).toMatch(/Manage Users and Organization Settings/);
    expect((await sb.api('GET', '/webhooks')).status).toBe(403);
    expect((await sb.api('GET', '/contacts')).status).toBe(200);
  });
});

describe('delivery', () => {
  it('posts {hook, data} for each state change, payment metadata included, with Basic auth when set', async () => {
    const sb = await setup();
    const r = await receiver();
    sb.controls.setOrganization({ webhookAuth: { username: 'momo', password: 's3cret' } });
    const created = await hook(sb, 'payment.status.changed', `${r.url}/notifications`);
    await pay(sb);
    await sb.controls.advanceClock(2);
    expect(r.received.map((x) => x.body.data.state)).toEqual(['validated', 'approved', 'processed']);
    for (const x of r.received) {
      expect(x.path).toBe('/notifications');
      expect(x.body.hook).toEqual(created.body);
      expect(x.body.data.metadata).toEqual({ chat: 'telegram:42', ref: 'p-1' });
      expect(x.headers.authorization).toBe(`Basic ${Buffer.from('momo:s3cret').toString('base64')}`);
    }
    expect(sb.controls.deliveries().map((d) => d.outcome)).toEqual(['delivered', 'delivered', 'delivered']);

    sb.controls.setOrganization({ webhookAuth: null });
    await pay(sb);
    await sb.controls.advanceClock(2);
    expect(r.received.at(-1)!.headers.authorization).toBeUndefined();
  });

  it('retries with growing waits on the sandbox clock, 10 attempts in all', async () => {
    const sb = await setup();
    const r = await receiver({ fallback: 503 });
    await hook(sb, 'contact.created', r.url);
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    expect(sb.controls.deliveries()).toHaveLength(1);
    await sb.controls.advanceClock(RETRY_WAITS_SECONDS[0]! - 1);
    expect(sb.controls.deliveries()).toHaveLength(1);
    await sb.controls.advanceClock(24 * 3600);
    const log = sb.controls.deliveries();
    expect(log.map((d) => d.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(log.map((d) => d.outcome)).toEqual([...Array(9).fill('retry_scheduled'), 'failed']);
    expect(log[0]).toMatchObject({ status: 503, error: 'HTTP 503', event_type: 'contact.created' });
    const waits = log.slice(1).map((d, i) => (Date.parse(d.at) - Date.parse(log[i]!.at)) / 1000);
    expect(waits).toEqual(RETRY_WAITS_SECONDS);
    expect(waits.every((w, i) => i === 0 || w >= waits[i - 1]!)).toBe(true);
    expect(r.received).toHaveLength(10);
  });

  it('stops retrying once a retry succeeds', async () => {
    const sb = await setup();
    const r = await receiver({ statuses: [500, 502] });
    await hook(sb, 'contact.created', r.url);
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.advanceClock(3600);
    expect(sb.controls.deliveries().map((d) => [d.attempt, d.status, d.outcome])).toEqual([
      [1, 500, 'retry_scheduled'],
      [2, 502, 'retry_scheduled'],
      [3, 200, 'delivered'],
    ]);
  });

  it('deletes a webhook answered with 410', async () => {
    const sb = await setup();
    const gone = await receiver({ fallback: 410 });
    const kept = await receiver();
    const h = await hook(sb, 'contact.created', gone.url);
    await hook(sb, 'contact.created', kept.url);
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    expect((await sb.api('GET', `/webhooks/${h.body.id}`)).status).toBe(404);
    await sb.api('POST', '/contacts', { json: { phone_number: '+256772999888', first_name: 'T', last_name: 'U' } });
    await sb.controls.advanceClock(3600);
    expect(gone.received).toHaveLength(1);
    expect(kept.received).toHaveLength(2);
    expect(sb.controls.deliveries().filter((d) => d.outcome === 'webhook_deleted')).toHaveLength(1);
  });

  it('gives up on an attempt that gets no answer within 5 seconds', async () => {
    const sb = await setup();
    const silentServer = createHttpServer(() => undefined);
    silentServer.listen(0, '127.0.0.1');
    await once(silentServer, 'listening');
    cleanups.push(async () => {
      silentServer.closeAllConnections();
      silentServer.close();
    });
    await hook(sb, 'contact.created', `http://127.0.0.1:${(silentServer.address() as AddressInfo).port}/slow`);
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    expect(sb.controls.deliveries()[0]).toMatchObject({
      status: null,
      outcome: 'retry_scheduled',
      error: 'no answer within 5000 ms',
    });
  });

  it('records a failed connection and retries it', async () => {
    const sb = await setup();
    const r = await receiver();
    const deadUrl = r.url;
    await r.close();
    await hook(sb, 'contact.created', deadUrl);
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    expect(sb.controls.deliveries()[0]).toMatchObject({
      status: null,
      outcome: 'retry_scheduled',
      error: expect.stringMatching(/ECONNREFUSED/),
    });
  });
});

describe('events', () => {
  it('records all four types, notifies each type, and lists them with the type filter', async () => {
    const sb = await setup();
    const r = await receiver();
    for (const event of [
      'payment.status.changed',
      'collection.received',
      'contact.created',
      'collectionrequest.status.changed',
    ]) {
      await hook(sb, event, `${r.url}/${event}`);
    }
    await pay(sb);
    await sb.api('POST', '/collectionrequests', { json: { phonenumber: SARAH, amount: '300', currency: 'UGX' } });
    await sb.controls.sendCollection({ phonenumber: SARAH, amount: '300', currency: 'UGX', reference: 'r' });
    await sb.controls.advanceClock(2);
    const paths = new Set(r.received.map((x) => x.path.slice(1)));
    expect([...paths].sort()).toEqual([
      'collection.received',
      'collectionrequest.status.changed',
      'contact.created',
      'payment.status.changed',
    ]);

    const all = await sb.api('GET', '/events?limit=100');
    expect(all.body.count).toBe(r.received.length);
    const received = await sb.api('GET', '/events?type=collection.received');
    expect(received.body.results).toHaveLength(1);
    expect(received.body.results[0].data).toMatchObject({ amount: '300.00', phonenumber: SARAH, status: 'successful' });
    const one = await sb.api('GET', `/events/${received.body.results[0].id}`);
    expect(one.body).toMatchObject({ type: 'collection.received', organization: 1 });
    const contact = (await sb.api('GET', '/events?type=contact.created')).body.results[0];
    expect(contact.data.phone_number).toBe(SARAH);
  });
});

describe('https targets', () => {
  it('honours ?skip-cert-verify for a self-signed certificate, and otherwise does not send, nor retry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sbx-cert-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
      ],
      {
        stdio: 'ignore',
      },
    );
    const bodies: unknown[] = [];
    const server = createServer(
      { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
      (req, res) => {
        let text = '';
        req.on('data', (c: Buffer) => (text += c.toString()));
        req.on('end', () => {
          bodies.push(JSON.parse(text));
          res.end('ok');
        });
      },
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(async () => {
      server.closeAllConnections();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const sb = await setup({ allowHttpWebhooks: false });
    await hook(sb, 'contact.created', `${url}?skip-cert-verify`);
    await hook(sb, 'contact.created', url);
    await sb.api('POST', '/contacts', { json: { phone_number: SARAH, first_name: 'S', last_name: 'N' } });
    await sb.controls.idle();
    const [skipping, verifying] = sb.controls.deliveries().sort((a, b) => a.webhook - b.webhook);
    expect(skipping).toMatchObject({ outcome: 'delivered', status: 200 });
    // The spec: "when validation fails the notification is not sent" -- nor tried again.
    expect(verifying).toMatchObject({ outcome: 'certificate_rejected', status: null });
    expect(verifying!.error).toMatch(/certificate/i);
    await sb.controls.advanceClock(6 * 3600);
    expect(sb.controls.deliveries()).toHaveLength(2);
    expect(bodies).toHaveLength(1);
  });
});
