/**
 * The buffered writer keeps what the database could not take and writes it once when it answers again: a
 * real PostgreSQL reached through a proxy that is cut (every connection dropped, nothing listening) and
 * restored, real Redis holding the waiting writes, and two writers (two processes) draining the same list.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { openDatabase, type Database } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { createLogger } from '../../src/log.js';
import { inspector, REDIS_URL, uniquePrefix } from '../conversation/redis-helper.js';
import { serverDatabase, type ServerDatabase } from './databases.js';
import { cuttableProxy, type CuttableProxy } from './proxy.js';
import { until } from '../until.js';

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

  it('queues new writes behind the waiting ones in Redis: a decision never overtakes its held intent', async () => {
    const journal = new Journal(database.db);
    const writer = new JournalWriter({ journal, redis: redisA, logger });
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

  it('keeps nothing in memory: a fact neither the database nor Redis takes is one error line, counted, never silent', async () => {
    const lines: string[] = [];
    const heard = createLogger('info', { write: (line: string) => void lines.push(line) });
    // A Redis nobody answers on (port 9): refused at once, nothing queued offline.
    const deadRedis = new Redis({ port: 9, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    deadRedis.on('error', () => {});
    const withDeadRedis = new JournalWriter({ journal: new Journal(database.db), redis: deadRedis, logger: heard });
    const withoutRedis = new JournalWriter({ journal: new Journal(database.db), logger: heard });
    await proxy.cut();
    try {
      const telling = (n: number) =>
        Journal.tellingEvent('r-lost', {
          channel: 'ussd',
          to: '+256772000009',
          text: `Paid ${n}`,
          outcome: 'completed',
        });
      withDeadRedis.write(telling(1));
      withoutRedis.write(telling(2));
      await Promise.all([withDeadRedis.settled(), withoutRedis.settled()]);
      expect([withDeadRedis.lost, withoutRedis.lost]).toEqual([1, 1]);
      expect(await withoutRedis.waiting()).toBe(0);
      const lost = lines.filter((line) => line.includes('neither the database nor Redis took a fact'));
      expect(lost).toHaveLength(2);
      for (const line of lost) {
        expect(JSON.parse(line)).toMatchObject({
          level: 50,
          lost: { ref: 'r-lost', type: 'telling', toldState: 'completed' },
        });
        // Nothing personal: neither the number told nor the words.
        expect(line).not.toMatch(/772000009|Paid/);
      }
      await withDeadRedis.close();
      await withoutRedis.close();
      expect(lines.filter((line) => /"lost":1,.*could not keep/.test(line))).toHaveLength(2);
    } finally {
      deadRedis.disconnect();
      await proxy.restore();
    }
  });
});

describe('two drains and a lapsed lock', () => {
  it('a drain that lost its lock writes nothing more and trims nothing: no fact behind it is dropped', async () => {
    const ref = 'r-lapse';
    const base = new Journal(direct.db);
    await base.intend({ ...intent, ref });
    const at = new Date();
    const fact = (n: number) =>
      JSON.stringify({
        op: 'append',
        event: Journal.stateEvent(ref, { state: 'submitted', source: 'read', key: `${ref}:fact:${n}`, at }),
      });
    // Five facts wait (the database was away).
    await redisA.rpush(keys.journalPending, ...[1, 2, 3, 4, 5].map(fact));

    // Drain A writes through a journal that stalls on its second write, past its lock's 400 ms.
    const byA: string[] = [];
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let reachedStall!: () => void;
    const atStall = new Promise<void>((resolve) => (reachedStall = resolve));
    const slow: Pick<Journal, 'intend' | 'append'> = {
      intend: (i) => base.intend(i),
      append: async (event) => {
        if (event.key.endsWith(':fact:2')) {
          reachedStall();
          await stalled;
        }
        byA.push(event.key);
        return base.append(event);
      },
    };
    // Their periodic retries are left out of it (a minute): each drains when the test says.
    const quiet = { logger, lockMs: 400, retryEveryMs: 60_000 };
    const a = new JournalWriter({ journal: slow, redis: redisA, ...quiet });
    const b = new JournalWriter({ journal: new Journal(direct.db), redis: redisB, ...quiet });
    a.start();
    await atStall;
    const aDrain = a.drain(); // the drain under way, stalled
    // A's lock lapses while it is stalled.
    const lock = `${keys.journalPending}:lock`;
    await until('the stalled lock lapsed', async () => (await redisB.exists(lock)) === 0, { everyMs: 5 });
    // B takes the lock and writes and trims all five; then a sixth fact comes to wait behind them.
    b.start();
    await expect.poll(() => redisB.llen(keys.journalPending), { timeout: 10_000 }).toBe(0);
    await redisB.rpush(keys.journalPending, fact(6));
    // Let A go on, and wait for its drain to end.
    release();
    expect(await aDrain).toBe(1);
    // A finished the write it was in (one row, as B's), then found it had lost the lock: nothing more.
    expect(byA).toEqual([`${ref}:fact:1`, `${ref}:fact:2`]);
    // It trimmed nothing: the sixth fact, written by nobody yet, still waits (a trim by A's own count of two
    // would have dropped it).
    expect(await redisA.lrange(keys.journalPending, 0, -1)).toEqual([fact(6)]);
    // A's next drain holds the lock: it writes the sixth and trims it.
    await a.close();
    await b.close();
    expect(await redisA.llen(keys.journalPending)).toBe(0);
    const facts = (await base.timeline(ref)).filter((e) => e.type === 'state').map((e) => e.event_key);
    expect(facts.sort()).toEqual([1, 2, 3, 4, 5, 6].map((n) => `${ref}:fact:${n}`));
  });
});
