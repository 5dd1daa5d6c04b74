/**
 * Events out from the journal to a real HTTP endpoint, on PostgreSQL and PGlite: one event per state change
 * (none for a repeated or stale report; one for a correction), an endpoint that answers 500 for a while then
 * 200 receives every event once it is up, each signature verified with the snippet of docs/webhooks-out.md;
 * what the journal takes while no worker runs is sent by the next (the cursor is in the database); a replay
 * sends the same event again; on PostgreSQL one of two workers leads.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventsOut, backoffMs, type EventsOut } from '../../src/events-out/index.js';
import { replayDelivery } from '../../src/events-out/delivery-log.js';
import type { EventsOutSchema } from '../../src/events-out/schema.js';
import type { EventBody } from '../../src/events-out/derive.js';
import { Journal } from '../../src/journal/journal.js';
import type { Database } from '../../src/journal/database.js';
import { createLogger } from '../../src/log.js';
import type { Kysely } from 'kysely';
import { forEachDatabase } from '../journal/databases.js';
import { anIntent } from '../journal/intents.js';
import { until } from '../until.js';
import { startEndpoint, type Endpoint } from './endpoint.js';
import { documentedVerify } from './snippet.js';

const SECRET = 'whsec-test-0123456789abcdef';
const verify = documentedVerify();
const logger = createLogger('silent');

const worker = (database: Database, endpoint: Endpoint): EventsOut =>
  eventsOut({
    database,
    endpoints: [endpoint.url],
    secret: SECRET,
    timeoutMs: 5000,
    concurrency: 3,
    retryBaseMs: 10,
    retryMaxMs: 80,
    retryForMs: 72 * 3_600_000,
    pollMs: 15,
    logger,
  });

it('backs off exponentially, capped', () => {
  expect([1, 2, 3, 4, 5, 20].map((n) => backoffMs(n, 30_000, 3_600_000))).toEqual([
    30_000, 60_000, 120_000, 240_000, 480_000, 3_600_000,
  ]);
});

forEachDatabase('events_out', (open, engine) => {
  let endpoint: Endpoint;
  const workers: EventsOut[] = [];
  beforeAll(async () => {
    endpoint = await startEndpoint();
  });
  afterAll(async () => {
    for (const w of workers) await w.stop();
    await endpoint.close();
  });

  /** The events the endpoint took (answered 200), each signature checked with the documented snippet. */
  const taken = () =>
    endpoint.received
      .filter((r) => r.answered === 200)
      .map((r) => {
        expect(verify(SECRET, r.raw, r.signature)).toBe(true);
        return JSON.parse(r.raw) as EventBody;
      });
  const typesOf = (ref: string) =>
    taken()
      .filter((e) => e.key === ref)
      .map((e) => e.type);

  it('sends every state change once the endpoint is up after 500s, signed, none for a stale report', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    const w = worker(database, endpoint);
    workers.push(w);
    endpoint.down = true;
    await w.start();

    await journal.intend(anIntent('pay-1'));
    await journal.answered('pay-1', { serviceId: '41', serviceState: 'pending' });
    await journal.stateReported('pay-1', { state: 'completed', serviceState: 'processed', source: 'notification' });
    // Repeated, then stale: the operation does not move, so nothing is sent.
    await journal.stateReported('pay-1', { state: 'completed', serviceState: 'processed', source: 'read' });
    await journal.stateReported('pay-1', { state: 'submitted', serviceState: 'pending', source: 'reconciliation' });
    await journal.told('pay-1', { channel: 'ussd', to: '+256772999001', text: 'Paid', outcome: 'completed' });
    await journal.intend(anIntent('req-1', { kind: 'request', flow: 'request', amount: '20000' }));
    await journal.refused('req-1', { status: 400, reason: 'invalid number' });
    await journal.intend(anIntent('pay-2', { amount: '700', currency: 'KES' }));
    await journal.answered('pay-2', { serviceId: '42' });
    await journal.stateReported('pay-2', { state: 'completed', source: 'notification' });
    // A correction of a final state: the service holds another.
    await journal.stateReported('pay-2', { state: 'failed', source: 'reconciliation' });

    // The endpoint refuses for a while: several tries of each event fail.
    await until('twenty refused tries', () => endpoint.received.filter((r) => r.answered === 500).length >= 20, {
      timeoutMs: 40_000,
    });
    expect(taken()).toEqual([]);
    endpoint.down = false;

    const expected = {
      'pay-1': ['payment.intended', 'payment.submitted', 'payment.completed'],
      'req-1': ['request.intended', 'request.refused'],
      'pay-2': ['payment.intended', 'payment.submitted', 'payment.completed', 'payment.failed'],
    };
    await until('every event taken', () => taken().length >= 9, { timeoutMs: 40_000 });
    for (const [ref, types] of Object.entries(expected)) expect(typesOf(ref).sort()).toEqual([...types].sort());
    // Each event once it was taken (the ids of the refused tries are the same ids).
    const ids = taken().map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const refusedIds = new Set(endpoint.received.filter((r) => r.answered === 500).map((r) => JSON.parse(r.raw).id));
    for (const id of refusedIds) expect(ids).toContain(id);

    const completed = taken().find((e) => e.key === 'pay-2' && e.state === 'completed')!;
    expect(completed).toEqual({
      id: expect.stringMatching(/^evt_[0-9a-f]{24}$/),
      type: 'payment.completed',
      ref: expect.stringMatching(/^MC-[0-9A-Z]+$/),
      key: 'pay-2',
      state: 'completed',
      amount: expect.stringMatching(/^700(\.0+)?$/),
      currency: 'KES',
      created: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    // The log: every delivery delivered (once its answer is recorded), after at least one refused try.
    const db = database.db as unknown as Kysely<EventsOutSchema>;
    await until(
      'every delivery recorded',
      async () =>
        (await db.selectFrom('event_deliveries').select('state').where('state', '<>', 'delivered').execute()).length ===
        0,
      { timeoutMs: 40_000 },
    );
    const log = await db.selectFrom('event_deliveries').selectAll().execute();
    expect(log).toHaveLength(9);
    for (const d of log) {
      expect(d.state).toBe('delivered');
      expect(d.last_status).toBe(200);
      expect(d.attempts).toBeGreaterThanOrEqual(2);
      expect(d.delivered_at).not.toBeNull();
      expect(d.next_try).toBeNull();
    }
  });

  it('sends what the journal took while no worker ran (the cursor is in the database)', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    for (const w of workers.splice(0)) await w.stop();
    await journal.intend(anIntent('pay-3', { kind: 'purchase', flow: 'data' }));
    await journal.answered('pay-3', { serviceId: 'v-9', state: 'completed', serviceState: 'success' });
    const before = taken().length;
    const w = worker(database, endpoint);
    workers.push(w);
    await w.start();
    await until('the purchase events', () => typesOf('pay-3').length === 2, { timeoutMs: 40_000 });
    expect(typesOf('pay-3').sort()).toEqual(['purchase.completed', 'purchase.intended']);
    expect(taken().length).toBe(before + 2);
  });

  it('replays a delivery: the same event, the same id, sent again', async () => {
    const database = await open();
    const db = database.db as unknown as Kysely<EventsOutSchema>;
    const one = await db
      .selectFrom('event_deliveries as d')
      .innerJoin('events_out as e', 'e.id', 'd.event_id')
      .select(['d.event_id', 'd.endpoint', 'e.body'])
      .where('e.ref', '=', 'pay-1')
      .where('e.state', '=', 'completed')
      .executeTakeFirstOrThrow();
    const before = taken().filter((e) => e.id === one.event_id).length;
    expect(
      await replayDelivery(db, { eventId: one.event_id, endpoint: one.endpoint, by: 'ops-lead', retryMs: 1000 }),
    ).toBe(true);
    await until('the replayed event', () => taken().filter((e) => e.id === one.event_id).length === before + 1, {
      timeoutMs: 40_000,
    });
    const again = endpoint.received.filter((r) => r.answered === 200 && JSON.parse(r.raw).id === one.event_id).at(-1)!;
    expect(again.raw).toBe(one.body);
    await until(
      'the replay recorded',
      async () =>
        (
          await db
            .selectFrom('event_deliveries')
            .select('state')
            .where('event_id', '=', one.event_id)
            .executeTakeFirst()
        )?.state === 'delivered',
      { timeoutMs: 40_000 },
    );
    const row = await db
      .selectFrom('event_deliveries')
      .selectAll()
      .where('event_id', '=', one.event_id)
      .executeTakeFirstOrThrow();
    expect(row.replayed_by).toBe('ops-lead');
    expect(
      await replayDelivery(db, {
        eventId: 'evt_000000000000000000000000',
        endpoint: one.endpoint,
        by: 'x',
        retryMs: 1,
      }),
    ).toBe(false);
  });

  it('gives a delivery up once its retry window is over: failed, nothing more due', async () => {
    const database = await open();
    const journal = new Journal(database.db);
    for (const w of workers.splice(0)) await w.stop();
    const dead = await startEndpoint('/dead');
    dead.down = true;
    try {
      const w = eventsOut({
        database,
        endpoints: [dead.url],
        secret: SECRET,
        timeoutMs: 5000,
        concurrency: 3,
        retryBaseMs: 10,
        retryMaxMs: 20,
        retryForMs: 150,
        pollMs: 15,
        logger,
      });
      workers.push(w);
      await w.start();
      await journal.intend(anIntent('pay-dead'));
      const db = database.db as unknown as Kysely<EventsOutSchema>;
      const row = () =>
        db.selectFrom('event_deliveries').selectAll().where('endpoint', '=', dead.url).executeTakeFirst();
      await until('the delivery given up', async () => (await row())?.state === 'failed', { timeoutMs: 40_000 });
      const given = (await row())!;
      expect(given.next_try).toBeNull();
      expect(given.last_status).toBe(500);
      expect(given.attempts).toBeGreaterThanOrEqual(2);
      expect(dead.received.length).toBe(given.attempts);
      for (const r of dead.received) expect(verify(SECRET, r.raw, r.signature)).toBe(true);
      await w.stop();
      workers.splice(workers.indexOf(w), 1);
    } finally {
      await dead.close();
    }
    // The next worker (the usual endpoint) goes on from where the cursor stood.
    const w = worker(database, endpoint);
    workers.push(w);
    await w.start();
  });

  it('keeps the log WEBHOOK_LOG_DAYS: older ended events go, pending ones stay', async () => {
    const database = await open();
    const db = database.db as unknown as Kysely<EventsOutSchema>;
    const ended = await db.selectFrom('event_deliveries').select('event_id').where('state', '<>', 'pending').execute();
    expect(ended.length).toBeGreaterThan(0);
    // One made pending again (due after the test's clock): it stays whatever its age.
    const kept = ended[0]!.event_id;
    await db
      .updateTable('event_deliveries')
      .set({ state: 'pending', next_try: new Date(Date.now() + 365 * 86_400_000) })
      .where('event_id', '=', kept)
      .execute();
    for (const w of workers.splice(0)) await w.stop();
    const later = new Date(Date.now() + 91 * 86_400_000);
    const w = eventsOut({
      database,
      endpoints: [endpoint.url],
      secret: SECRET,
      timeoutMs: 5000,
      concurrency: 3,
      retryBaseMs: 10,
      retryMaxMs: 80,
      retryForMs: 72 * 3_600_000,
      pollMs: 15,
      logger,
      logDays: 90,
      now: () => later,
    });
    workers.push(w);
    await w.start();
    await until(
      'the log pruned but for the pending one',
      async () => (await db.selectFrom('events_out').select('id').execute()).length === 1,
      { timeoutMs: 40_000 },
    );
    expect((await db.selectFrom('events_out').select('id').execute()).map((e) => e.id)).toEqual([kept]);
    expect((await db.selectFrom('event_deliveries').select('event_id').execute()).map((e) => e.event_id)).toEqual([
      kept,
    ]);
    await w.stop();
    workers.splice(workers.indexOf(w), 1);
    await db
      .updateTable('event_deliveries')
      .set({ state: 'delivered', next_try: null })
      .where('event_id', '=', kept)
      .execute();
    const again = worker(database, endpoint);
    workers.push(again);
    await again.start();
  });

  if (engine === 'postgres') {
    it('one of two workers leads: each event is sent once', async () => {
      const database = await open();
      const other = await open({ fresh: true });
      const journal = new Journal(database.db);
      const second = worker(other, endpoint);
      workers.push(second);
      await second.start();
      const before = endpoint.received.length;
      for (let i = 0; i < 5; i++) {
        await journal.intend(anIntent(`pay-lead-${i}`));
        await journal.stateReported(`pay-lead-${i}`, { state: 'completed', source: 'notification' });
      }
      await until('ten events', () => taken().filter((e) => e.key.startsWith('pay-lead-')).length >= 10, {
        timeoutMs: 40_000,
      });
      // Every delivery recorded: nothing more is out or due.
      const db = database.db as unknown as Kysely<EventsOutSchema>;
      await until(
        'every delivery recorded',
        async () =>
          (await db.selectFrom('event_deliveries').select('state').where('state', '=', 'pending').execute()).length ===
          0,
        { timeoutMs: 40_000 },
      );
      expect(endpoint.received.length - before).toBe(10);
    });
  }
});
