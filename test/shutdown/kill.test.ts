/**
 * A product process killed (SIGKILL, no shutdown of any kind) while its payment call is out: another process
 * on the same Redis takes the run over by its sweep, with no message from the user, repeats the call under
 * the same Duplicate-Check-Key and keeps the outcome for the user's next dial. The service holds one
 * payment. Both are real processes (`node src/main.ts`); the killed one's call never reaches the service.
 */
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { AtSession } from '../e2e/helpers.js';
import { forward, readAll } from '../chaos/proxies.js';
import { startProductProcess, type ProductProcess } from './product.js';

/** Database 13 of the test Redis: the product's own `momo:` keys, which this test alone writes there. */
const REDIS_URL = (() => {
  const url = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
  url.pathname = '/13';
  return url.toString();
})();
const API_KEY = 'kill-key';
const USER = '+256701999001';

let sandbox: Sandbox;
let sandboxServer: Server;
let proxy: Server;
let redis: Redis;
const products: ProductProcess[] = [];
/** Duplicate-Check-Keys of the payment creations that reached the proxy; the first is never forwarded. */
const paymentKeys: string[] = [];

const listen = (server: Server): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

async function cleanRedis(): Promise<void> {
  for (const pattern of ['momo:*', 'bull:momo-notifications:*']) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  await cleanRedis();
  sandbox = createSandbox({ apiKey: API_KEY, allowHttpWebhooks: true, limits: { readsPerMinute: 10_000 }, logger: createLogger('silent') });
  sandboxServer = http.createServer(sandbox.app);
  const sandboxPort = await listen(sandboxServer);
  proxy = http.createServer((req, res) => {
    void (async () => {
      const body = await readAll(req);
      if (req.method === 'POST' && req.url?.startsWith('/api/payments')) {
        paymentKeys.push(String(req.headers['duplicate-check-key']));
        if (paymentKeys.length === 1) return; // held: its process dies with it out
      }
      try {
        const answer = await forward(sandboxPort, req, body);
        const headers = { ...answer.headers };
        delete headers['transfer-encoding'];
        delete headers.connection;
        res.writeHead(answer.status, headers).end(answer.body);
      } catch {
        res.socket?.destroy();
      }
    })();
  });
  await listen(proxy);
});

afterAll(async () => {
  for (const product of products) if (product.child.exitCode === null) product.child.kill('SIGKILL');
  proxy?.closeAllConnections();
  await new Promise<void>((resolve) => proxy?.close(() => resolve()));
  sandboxServer?.closeAllConnections();
  await new Promise<void>((resolve) => sandboxServer?.close(() => resolve()));
  await sandbox?.close();
  await cleanRedis();
  await redis?.quit();
});

async function start(): Promise<ProductProcess> {
  const product = await startProductProcess({
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    MOMO_API_KEY: API_KEY,
    REDIS_URL,
  });
  products.push(product);
  return product;
}

describe('SIGKILL while a payment call is out', () => {
  it('another process takes the run over on its own: one payment, the outcome kept for the next dial', async () => {
    const doomed = await start();
    const ussd = new AtSession(doomed.url, USER);
    await ussd.dial();
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '2500', '1', 'rent', '1']) await ussd.answer(answer);
    expect(ussd.screens.at(-1)).toMatch(/PIN/);
    const confirmed = ussd.answer('1234').catch(() => 'killed');
    for (let i = 0; i < 500 && paymentKeys.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(paymentKeys).toHaveLength(1);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exit).toBeNull();
    await confirmed;

    // Nobody writes to the conversation again. The other process finds the dead one's lease expired.
    const survivor = await start();
    const pendingKey = `momo:pending:ussd:${USER}`;
    let pending = '';
    for (let i = 0; i < 400 && !/Payment \d+ submitted/.test(pending); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      pending = ((await redis.get(pendingKey)) ?? '').replace(/^\d+:[\w-]+:/, '');
    }
    expect(pending).toMatch(/Payment \d+ submitted/);
    expect(paymentKeys).toHaveLength(2);
    expect(paymentKeys[1]).toBe(paymentKeys[0]);
    const chats = sandbox.controls.payments().map((p) => (p as { metadata: Record<string, string> }).metadata.chat);
    expect(chats.filter((c) => c === `ussd:${USER}`)).toHaveLength(1);
    // The user's next dial shows it.
    expect(await new AtSession(survivor.url, USER).dial()).toMatch(/Payment \d+ submitted/);
    survivor.child.kill('SIGTERM');
    expect(await survivor.exit).toBe(0);
  }, 90_000);
});
