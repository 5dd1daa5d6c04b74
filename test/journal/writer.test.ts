/**
 * The buffered writer keeps what the database could not take and writes it once when it answers again: a
 * real PostgreSQL reached through a proxy that is cut (every connection dropped, nothing listening) and
 * restored, real Redis holding the waiting writes, and two writers (two processes) draining the same list.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../src/conversation/store/keys.js';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { createLogger } from '../../src/log.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';
import { serverDatabase, type ServerDatabase } from './databases.js';
import { cuttableProxy, type CuttableProxy } from './proxy.js';

const logger = createLogger('silent');
const intent = {
  ref: 'r-outage',
  kind: 'payment',
  amount: '2500',
  currency: 'UGX',
  payee: '+256772000002',
  channel: 'telegram',
  channelUser: '42',
  chat: 'telegram:42',
  role: 'teller',
  flow: 'pay',
} as const;

let server: ServerDatabase;
let proxy: CuttableProxy;
let database: Database;
let direct: Database;
const prefix = uniquePrefix('journal-writer');
const redisA = new Redis(REDIS_URL, { keyPrefix: prefix, maxRetriesPerRequest: 1 });
const redisB = new Redis(REDIS_URL, { keyPrefix: prefix, maxRetriesPerRequest: 1 });
const inspect = inspector(prefix);

beforeAll(async () => {
  server = await serverDatabase('writer');
  const url = new URL(server.url);
  proxy = await cuttableProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.host = `127.0.0.1:${proxy.port}`;
  database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'memory://' });
  direct = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
  await migrate(database.db);
});

afterAll(async () => {
  await database?.close();
  await direct?.close();
  await proxy?.close();
  await server?.drop();
  redisA.disconnect();
  redisB.disconnect();
  await inspect.cleanup();
});

describe('the buffered writer', () => {
  it('keeps the facts in Redis while the database is unreachable, and writes each once when it is back', async () => {
    const journal = new Journal(database.db);
    const a = new JournalWriter({ journal, redis: redisA, logger });
    const b = new JournalWriter({ journal: new Journal(database.db), redis: redisB, logger });
    await journal.intend(intent);

    await proxy.cut();
    const start = Date.now();
    const at = (s: number) => new Date(start + s * 1000);
    a.write(Journal.answerEvent('r-outage', { serviceId: 'svc-9', serviceState: 'pending', at: at(1) }));
    a.write(
      Journal.stateEvent('r-outage', {
        state: 'completed',
        serviceState: 'successful',
        source: 'notification',
        at: at(2),
      }),
    );
    b.write(
      Journal.tellingEvent('r-outage', {
        channel: 'telegram',
        to: 'telegram:42',
        text: 'Paid 2500 UGX',
        outcome: 'completed',
        at: at(3),
      }),
    );
    // The same fact twice (a duplicate notification) while away.
    b.write(
      Journal.stateEvent('r-outage', {
        state: 'completed',
        serviceState: 'successful',
        source: 'notification',
        at: at(4),
      }),
    );
    await Promise.all([a.settled(), b.settled()]);
    expect(await inspect.redis.llen(`${prefix}${keys.journalPending}`)).toBe(4);
    // Still away: a drain leaves everything waiting.
    expect(await a.drain()).toBe(4);

    await proxy.restore();
    // Both "processes" drain at once: one holds the lock; whatever each writes lands once.
    await Promise.all([a.drain(), b.drain()]);
    expect(await a.drain()).toBe(0);
    expect(await b.drain()).toBe(0);

    const check = new Journal(direct.db);
    const types = (await check.timeline('r-outage')).map((e) => `${e.type}/${e.source}`);
    expect(types).toEqual(['intent/create', 'answer/create', 'state/notification', 'telling/notification']);
    expect(await check.byRef('r-outage')).toMatchObject({
      state: 'completed',
      service_id: 'svc-9',
      told_state: 'completed',
    });

    // A write replayed from the list (a drainer died before trimming) is still one row.
    await redisA.rpush(
      keys.journalPending,
      JSON.stringify({ op: 'append', event: Journal.answerEvent('r-outage', { serviceId: 'svc-9' }) }),
    );
    expect(await a.drain()).toBe(0);
    expect((await check.timeline('r-outage')).filter((e) => e.type === 'answer')).toHaveLength(1);
    await a.close();
    await b.close();
  });

  it('sets aside a write the database refuses for good, so the writes behind it are not held; drops NUL from words', async () => {
    const journal = new Journal(database.db);
    const writer = new JournalWriter({ journal, redis: redisA, logger });
    await journal.intend({ ...intent, ref: 'r-poison' });
    await proxy.cut();
    // An amount that is no number: the database will refuse it whenever it is written (SQLSTATE 22P02).
    writer.writeIntent({ ...intent, ref: 'r-bad', amount: 'lots' });
    writer.write(
      Journal.stateEvent('r-poison', {
        state: 'failed',
        serviceState: 'processed_with_errors',
        source: 'notification',
        data: { reason: 'network\u0000 said no' },
      }),
    );
    await writer.settled();
    await proxy.restore();
    expect(await writer.drain()).toBe(0);
    const check = new Journal(direct.db);
    expect(await check.byRef('r-bad')).toBeUndefined();
    expect((await check.byRef('r-poison'))?.state).toBe('failed');
    const state = (await check.timeline('r-poison')).find((e) => e.type === 'state');
    expect(state?.data.reason).toBe('network said no');
    const refused = await inspect.redis.lrange(`${prefix}${keys.journalPending}:refused`, 0, -1);
    expect(refused.map((text) => (JSON.parse(text) as { intent: { ref: string } }).intent.ref)).toEqual(['r-bad']);
    await writer.close();
  });

  it('without Redis keeps them in memory, and queues new writes behind the waiting ones', async () => {
    const journal = new Journal(database.db);
    const writer = new JournalWriter({ journal, logger });
    await proxy.cut();
    writer.writeIntent({ ...intent, ref: 'r-held', state: 'held' });
    await writer.settled();
    await proxy.restore();
    // The database is back, but the intent still waits: the decision queues behind it instead of overtaking it.
    writer.write(Journal.approvalEvent('r-held', { decision: 'rejected', by: 'U_CHECKER', reason: 'no' }));
    await writer.settled();
    expect(await writer.waiting()).toBe(2);
    expect(await writer.drain()).toBe(0);
    const check = new Journal(direct.db);
    expect((await check.timeline('r-held')).map((e) => e.type)).toEqual(['intent', 'approval']);
    expect((await check.byRef('r-held'))?.state).toBe('rejected');
    await writer.close();
  });
});
