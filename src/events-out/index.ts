/**
 * Signed events out (docs/webhooks-out.md): every state change of every payment, request, purchase and payout
 * the journal records is posted as JSON to each endpoint of WEBHOOK_ENDPOINTS, signed with WEBHOOK_SECRET
 * (./sign.ts), and retried with exponential backoff for WEBHOOK_RETRY_HOURS (three days) until a 2xx.
 *
 * Nothing here runs on a hop: the journal is written as it always was, and this worker reads it afterwards
 * (./derive.ts: a cursor over the journal's events, in PostgreSQL). One process at a time leads (a PostgreSQL
 * advisory lock held on one reserved connection for as long as it leads; the server lets it go when the process
 * dies; PGlite is one process); the leader sends at most WEBHOOK_CONCURRENCY requests at once, each cut at
 * WEBHOOK_TIMEOUT_MS, and never waits for one to pick the next: a hanging endpoint holds a slot, not the loop.
 * A delivery whose answer was lost (the process died while it was out) is sent again: at least once, the same
 * `id` each time.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../journal/database.js';
import type { Schema } from '../journal/schema.js';
import type { Logger } from '../log.js';
import { deriveOnce, initCursor } from './derive.js';
import type { EventsOutSchema } from './schema.js';
import { SIGNATURE_HEADER, signatureHeader } from './sign.js';

/** The advisory lock's key: one number for "the events out leader", the same in every process. */
export const EVENTS_OUT_LOCK = 0x65766f75; // 'evou'

export interface EventsOutOptions {
  database: Pick<Database, 'kind'> & { db: Kysely<Schema> };
  endpoints: readonly string[];
  secret: string;
  /** Per request, ms. */
  timeoutMs: number;
  /** Requests out at once. */
  concurrency: number;
  /** The first retry's wait, ms; doubled at each failure up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** How long a delivery is retried after its event (or a replay), ms. */
  retryForMs: number;
  /** Between looks at the journal and the due deliveries, ms. */
  pollMs: number;
  /** Days an event out is kept once none of its deliveries is pending (WEBHOOK_LOG_DAYS). Default 90. */
  logDays?: number;
  logger: Logger;
  /** Default the global fetch (tests may pass their own). */
  fetch?: typeof fetch;
  now?: () => Date;
}

export interface EventsOut {
  /** Sets the cursor (awaited at start, before any payment can be made), then leads when it can. */
  start(): Promise<void>;
  /** Stops the loop and waits for the requests out (each bounded by its timeout). */
  stop(): Promise<void>;
  /** Looks now instead of at the next poll. */
  wake(): void;
}

/** The wait before the next try after `attempts` failures: base, doubled each time, capped. */
export function backoffMs(attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 40));
}

export function eventsOut(o: EventsOutOptions): EventsOut {
  const db = o.database.db as unknown as Kysely<EventsOutSchema>;
  const now = o.now ?? (() => new Date());
  const send = o.fetch ?? fetch;
  const inFlight = new Map<string, Promise<void>>();
  let stopped = false;
  /** Aborts the requests out when the process stops: each is retried by whoever leads next. */
  const stopping = new AbortController();
  let wakeUp: (() => void) | undefined;
  let loop: Promise<void> = Promise.resolve();

  /** Waits `ms` or until woken or stopped. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      }
      wakeUp = done;
    });

  async function deliver(row: { event_id: string; endpoint: string; body: string; attempts: number }) {
    const t = Math.floor(now().getTime() / 1000);
    let status: number | null = null;
    let error: string | null = null;
    try {
      const res = await send(row.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'momo-chat-events/1',
          [SIGNATURE_HEADER]: signatureHeader(o.secret, row.body, t),
        },
        body: row.body,
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(o.timeoutMs), stopping.signal]),
      });
      status = res.status;
      await res.body?.cancel().catch(() => {});
    } catch (err) {
      error = err instanceof Error && err.name === 'TimeoutError' ? `no answer in ${o.timeoutMs} ms` : String(err);
      error = error.slice(0, 200);
    }
    const at = now();
    const attempts = row.attempts + 1;
    if (status !== null && status >= 200 && status < 300) {
      await db
        .updateTable('event_deliveries')
        .set({ state: 'delivered', attempts, last_status: status, last_error: null, next_try: null, delivered_at: at })
        .where('event_id', '=', row.event_id)
        .where('endpoint', '=', row.endpoint)
        .execute();
      return;
    }
    const next = new Date(at.getTime() + backoffMs(attempts, o.retryBaseMs, o.retryMaxMs));
    await db
      .updateTable('event_deliveries')
      .set((eb) => ({
        attempts,
        last_status: status,
        last_error: error,
        state: sql<'pending' | 'failed'>`case when ${next} > ${eb.ref('retry_until')} then 'failed' else 'pending' end`,
        next_try: sql<Date | null>`case when ${next} > ${eb.ref('retry_until')} then null else ${next}::timestamptz end`,
      }))
      .where('event_id', '=', row.event_id)
      .where('endpoint', '=', row.endpoint)
      .where('state', '=', 'pending')
      .execute();
    o.logger.warn({ event: row.event_id, status, error, attempts }, 'events out: an endpoint did not take an event');
  }

  let prunedAt = 0;
  /**
   * Once an hour: deletes the events out older than `logDays` none of whose deliveries is pending (their
   * deliveries go with them). The journal keeps the facts; this is only the log of sending them.
   */
  async function prune(): Promise<void> {
    if (now().getTime() - prunedAt < 3_600_000) return;
    prunedAt = now().getTime();
    const cutoff = new Date(now().getTime() - (o.logDays ?? 90) * 86_400_000);
    await db
      .deleteFrom('events_out')
      // Through the deliveries' index on their time (each event has one per endpoint, made with it).
      .where('id', 'in', (eb) => eb.selectFrom('event_deliveries').select('event_id').where('created', '<', cutoff))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('event_deliveries as d')
              .select('d.event_id')
              .whereRef('d.event_id', '=', 'events_out.id')
              .where('d.state', '=', 'pending'),
          ),
        ),
      )
      .execute();
  }

  /** One look: the journal's new events, then as many due deliveries as there are free slots. */
  async function tick(): Promise<void> {
    await prune();
    for (let i = 0; i < 10; i++) {
      const { read, noCursor } = await deriveOnce(db, o.endpoints, o.retryForMs, now);
      if (noCursor) {
        // A process started without endpoints forgot it: sending goes on from the journal's head.
        await initCursor(db, true);
        o.logger.warn('events out: the cursor was gone (a start without WEBHOOK_ENDPOINTS); sending from now on');
      }
      if (read < 500) break;
    }
    const free = o.concurrency - inFlight.size;
    if (free <= 0 || o.endpoints.length === 0) return;
    const due = await db
      .selectFrom('event_deliveries as d')
      .innerJoin('events_out as e', 'e.id', 'd.event_id')
      .select(['d.event_id', 'd.endpoint', 'd.attempts', 'e.body'])
      .where('d.state', '=', 'pending')
      .where('d.next_try', '<=', now())
      .where('d.endpoint', 'in', [...o.endpoints])
      .orderBy('d.next_try')
      .orderBy('e.seq')
      .limit(free + inFlight.size)
      .execute();
    for (const row of due) {
      const key = `${row.event_id} ${row.endpoint}`;
      if (inFlight.has(key) || inFlight.size >= o.concurrency) continue;
      const out = deliver(row)
        .catch((err: unknown) =>
          o.logger.error({ err: String(err), event: row.event_id }, 'events out: a delivery could not be recorded'),
        )
        .finally(() => {
          inFlight.delete(key);
          wakeUp?.();
        });
      inFlight.set(key, out);
    }
  }

  /** Leads until stopped or until `alive` throws (the lock's connection lost). */
  async function lead(alive: () => Promise<void>): Promise<void> {
    while (!stopped) {
      await alive();
      await tick().catch((err: unknown) =>
        o.logger.warn({ err: String(err) }, 'events out: a look at the journal failed; tried again'),
      );
      if (!stopped) await pause(o.pollMs);
    }
  }

  async function run(): Promise<void> {
    while (!stopped) {
      try {
        if (o.database.kind === 'pglite') await lead(async () => {});
        else {
          await db.connection().execute(async (conn) => {
            const got = await sql<{
              locked: boolean;
            }>`select pg_try_advisory_lock(${EVENTS_OUT_LOCK}) as locked`.execute(conn);
            if (!got.rows[0]?.locked) return;
            try {
              await lead(async () => void (await sql`select 1`.execute(conn)));
            } finally {
              await sql`select pg_advisory_unlock(${EVENTS_OUT_LOCK})`.execute(conn).catch(() => {});
            }
          });
        }
      } catch (err) {
        o.logger.warn({ err: String(err) }, 'events out: leadership lost; trying again');
      }
      // Another process leads (or the lock's connection was lost): ask again a little later.
      if (!stopped) await pause(Math.max(o.pollMs * 5, 1000));
    }
  }

  return {
    async start() {
      await initCursor(db, o.endpoints.length > 0);
      if (o.endpoints.length === 0) return;
      // run() catches its own failures and logs them.
      loop = run();
    },
    async stop() {
      stopped = true;
      stopping.abort();
      wakeUp?.();
      await loop;
      await Promise.all(inFlight.values());
    },
    wake() {
      wakeUp?.();
    },
  };
}
