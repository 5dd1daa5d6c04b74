/**
 * The outcomes still owed to people are kept in PostgreSQL and survive a Redis loss (src/journal/owed.ts,
 * src/notifications/owed-poller.ts), against a real sandbox over HTTP, a PostgreSQL database of this file's own
 * and a redis-server of its own, emptied with FLUSHALL mid-test (our records, the dedup marks, the follow-up
 * queue and the journal's buffered writes all go):
 * - a 409 on our own key of a payment the service never made: its row says `conflict` before the create's
 *   caller is answered; after the FLUSHALL two reads find nothing, the person is told once that nothing was
 *   sent, and the journal leaves `submitted` for `refused`;
 * - a create whose answer was lost (the service made it): after the FLUSHALL the list read finds it and the
 *   person is told it was done; the journal says `completed`;
 * - a database outage, then a Redis loss: the database is cut (a TCP proxy; PostgreSQL keeps running) as the
 *   create goes out, so its answer waits in Redis for the database; Redis is emptied, the database comes back:
 *   the outcome of the payment is still told, from the row written with the intent.
 * No route is added: the poller works from the database, nothing calls it from outside.
 */
import { sql } from 'kysely';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ALREADY_SUBMITTED } from '../../flows/calls.js';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { migrate } from '../../src/journal/migrate.js';
import { OwedOutcomes } from '../../src/journal/owed.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { addressOf, cuttableProxy, type CuttableProxy } from '../journal/proxy.js';
import { startOwnRedis, stopAll, type Server as RedisServer } from '../redis/servers.js';
import { cutOff, payment, startProcess, startService, type Process, type Service } from './stack.js';
import { reading, until } from '../until.js';

const done: Array<() => Promise<unknown>> = [];
let redisServer: RedisServer;
let redisUrl: string;
let server: ServerDatabase;
let proxy: CuttableProxy;
/** The database through the proxy (the product's), and directly (the test's own reads). */
let database: Database;
let direct: Database;

beforeAll(async () => {
  redisServer = await startOwnRedis();
  redisUrl = `redis://127.0.0.1:${redisServer.port}`;
  server = await serverDatabase('owed_outcomes');
  proxy = await cuttableProxy(addressOf(server.url));
  const url = new URL(server.url);
  url.host = `127.0.0.1:${proxy.port}`;
  direct = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
  await migrate(direct.db);
  database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://' });
}, 60_000);
/** Each test's service and product closed after it: one process works the owed rows at a time (an advisory
 * lock), and a product left running from an earlier test would take this test's rows to its own notifiers. */
async function closeStarted(): Promise<void> {
  for (const step of done.splice(0).reverse()) await step().catch(() => {});
}
afterEach(closeStarted);
afterAll(async () => {
  await closeStarted();
  await database?.close();
  await direct?.close();
  await proxy?.close();
  await server?.drop();
  await stopAll();
});

async function flushAll(): Promise<void> {
  const redis = new Redis(redisServer.port);
  try {
    await redis.flushall();
    expect(await redis.dbsize()).toBe(0);
  } finally {
    redis.disconnect();
  }
}

let n = 0;
async function setup(fetchOf?: (real: typeof fetch) => typeof fetch): Promise<{ service: Service; product: Process }> {
  const service = await startService();
  done.push(() => service.close());
  const product = await startProcess(service, {
    redisUrl,
    keyPrefix: `owed-${++n}:`,
    queueName: `owed-${process.pid}-${n}`,
    database,
    // The first check half a second after the intent; the second read of a 409 a second after it.
    followUpDelaysSeconds: [0.5, 3600],
    notMadeCheckSeconds: 1,
    owedPollMs: 100,
    ...(fetchOf ? { fetch: fetchOf(fetch) } : {}),
  });
  done.push(() => product.close());
  return { service, product };
}

const owedRow = (ref: string) => new OwedOutcomes(direct).byRef(ref);
const stateOf = async (ref: string) =>
  (await sql<{ state: string }>`select state from operations where ref = ${ref}`.execute(direct.db)).rows[0]?.state;

describe('outcomes owed, kept in PostgreSQL through a Redis loss', { timeout: 60_000 }, () => {
  it('a 409 on our own key of a payment never made: told once that nothing was sent, the journal leaves submitted', async () => {
    const { service, product } = await setup();
    const key = `owed-409-${Date.now()}:pay`;
    await cutOff(service, key, 'telegram:61');

    // Named by our short ref all the same (drawn with the intent).
    expect(await product.calls.createPayment(payment(key, 'telegram:61'))).toEqual({
      ...ALREADY_SUBMITTED,
      shortRef: expect.stringMatching(/^MC-/),
    });
    // Kept before the caller was answered (and so before the person is told "we are checking").
    expect(await owedRow(key)).toMatchObject({ reason: 'conflict', settled_at: null, step: 0 });
    expect(
      await until(
        'the payment state',
        reading(
          () => stateOf(key),
          (s) => s === 'submitted',
        ),
      ),
    ).toBe('submitted');

    await flushAll();
    const told = await until(
      'the outcome told',
      reading(
        async () => product.telegram.told,
        (t) => t.length > 0,
      ),
    );
    expect(told).toEqual([
      {
        address: { channel: 'telegram', conversationId: '61' },
        text: expect.stringMatching(
          /^Your payment (MC-[A-Z0-9]+) of 5,000 UGX to \+256772000001 was NOT made: .*Nothing was sent/,
        ),
      },
    ]);
    const row = await until(
      'the owed row settled',
      reading(
        () => owedRow(key),
        (r) => r?.settled_at !== null,
      ),
    );
    expect(row).toMatchObject({ outcome: 'refused', step: 1 });
    expect(await stateOf(key)).toBe('refused');
    expect(service.sandbox.controls.payments()).toHaveLength(0);
    // Settled: further ticks tell nothing more.
    await product.notifications.poller!.tick();
    expect(product.telegram.told).toHaveLength(1);
  });

  it('a create whose answer was lost, made by the service: told it was done after the Redis loss', async () => {
    const losing =
      (real: typeof fetch): typeof fetch =>
      async (input, init) => {
        const answer = await real(input, init);
        if (answer.ok && init?.method === 'POST' && String(input).endsWith('/api/payments')) {
          await answer.text();
          throw new TypeError('fetch failed: socket hang up');
        }
        return answer;
      };
    const { service, product } = await setup(losing);
    const key = `owed-lost-${Date.now()}:pay`;
    // The screen names our short ref (pay.unconfirmed), the one the outcome is told by below.
    await expect(product.calls.createPayment(payment(key, 'telegram:62'))).rejects.toMatchObject({
      shortRef: expect.stringMatching(/^MC-/),
    });
    expect(await owedRow(key)).toMatchObject({ reason: 'unanswered', settled_at: null });
    await service.sandbox.controls.advanceClock(30);
    await service.sandbox.controls.idle();

    await flushAll();
    const told = await until(
      'the outcome told',
      reading(
        async () => product.telegram.told,
        (t) => t.length > 0,
      ),
    );
    expect(told).toEqual([
      {
        address: { channel: 'telegram', conversationId: '62' },
        text: expect.stringMatching(/^Done: 5,000 UGX reached/),
      },
    ]);
    // Our record restored from the database's row keeps our short ref: told by it, not by the service's id.
    const shortRef = (
      await sql<{ short_ref: string }>`select short_ref from operations where ref = ${key}`.execute(direct.db)
    ).rows[0]?.short_ref;
    expect(shortRef).toMatch(/^MC-/);
    expect(told[0]!.text).toContain(`Ref ${shortRef} (service `);
    expect(
      await until(
        'the owed row settled',
        reading(
          () => owedRow(key),
          (r) => r?.settled_at !== null,
        ),
      ),
    ).toMatchObject({ outcome: 'completed', reason: 'unanswered' });
    expect(
      await until(
        'the payment state',
        reading(
          () => stateOf(key),
          (s) => s === 'completed',
        ),
      ),
    ).toBe('completed');
  });

  it('a database outage, then a Redis loss: the outcome of the payment is still told', async () => {
    // The database goes away as the create goes out: the intent and its owed row are in, the answer is not.
    const cutting =
      (real: typeof fetch): typeof fetch =>
      async (input, init) => {
        if (init?.method === 'POST' && String(input).endsWith('/api/payments')) await proxy.cut();
        return real(input, init);
      };
    const { service, product } = await setup(cutting);
    const key = `owed-outage-${Date.now()}:pay`;
    try {
      const created = await product.calls.createPayment(payment(key, 'telegram:63'));
      expect(created).toMatchObject({ id: expect.any(String) });
      expect(await owedRow(key)).toMatchObject({ reason: 'intent', settled_at: null });
      // The answer waits for the database in Redis; the row knows no id.
      expect(await stateOf(key)).toBe('intended');
      await service.sandbox.controls.advanceClock(30);
      await service.sandbox.controls.idle();
      await flushAll();
    } finally {
      await proxy.restore();
    }
    const told = await until(
      'the outcome told',
      reading(
        async () => product.telegram.told,
        (t) => t.length > 0,
      ),
    );
    expect(told).toEqual([
      {
        address: { channel: 'telegram', conversationId: '63' },
        text: expect.stringMatching(/^Done: 5,000 UGX reached/),
      },
    ]);
    expect(
      await until(
        'the owed row settled',
        reading(
          () => owedRow(key),
          (r) => r?.settled_at !== null,
        ),
      ),
    ).toMatchObject({ outcome: 'completed' });
    expect(await stateOf(key)).toBe('completed');
  });
});
