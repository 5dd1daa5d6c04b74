/**
 * The product's nightly reconciliation: every few minutes each process asks whether the day before (UTC) has a
 * finished nightly run (clean or with differences); when it has not, one process at a time runs it over the
 * window of the last `windowDays` days (RECONCILE_WINDOW_DAYS, yesterday included), comparing only what changed
 * since the last nightly look (per kind of the service's records, kept in `reconciliation_looks`: the lists ask
 * `modified_after`), and tells the corrections owed (./corrections.ts). The first run, with no look, compares
 * the whole window. One at a time across processes by a PostgreSQL advisory lock, held on
 * one reserved connection for the whole run (the server lets it go if the process dies); PGlite is one
 * process, where a flag does. A failed run is tried again at the next tick.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../journal/database.js';
import type { Journal } from '../journal/journal.js';
import type { Logger } from '../log.js';
import { tellCorrections, type CorrectionsOptions } from './corrections.js';
import type { TheirKind } from './match.js';
import { dayOf, runReconciliation, THEIR_KINDS, type RunResult } from './run.js';
import type { ReconciliationSchema } from './schema.js';
import type { ServiceSide } from './service.js';

/** The advisory lock's key: one number for "the reconciliation", the same in every process. */
export const RECONCILIATION_LOCK = 0x7265636f; // 'reco'

const DAY_MS = 86_400_000;

export interface DailyOptions {
  database: Pick<Database, 'kind'> & { db: Kysely<ReconciliationSchema> };
  journal: Journal;
  service: ServiceSide;
  tell: CorrectionsOptions['tell'];
  logger: Logger;
  /** Between ticks, ms. Default 10 minutes. */
  intervalMs?: number;
  /** Days each nightly run re-checks, yesterday included (RECONCILE_WINDOW_DAYS). Default 7. */
  windowDays?: number;
  now?: () => Date;
}

export interface DailyReconciliation {
  /** One tick: the nightly run when it is due (and this process got the lock), then the corrections owed. */
  tick(): Promise<RunResult | null>;
  start(): void;
  /** Stops ticking and waits for a tick under way. */
  stop(): Promise<void>;
}

/** Runs `work` holding the reconciliation lock; null without running it when another process holds it. */
export async function withReconciliationLock<T>(
  database: DailyOptions['database'],
  work: () => Promise<T>,
): Promise<T | null> {
  if (database.kind === 'pglite') return work();
  return database.db.connection().execute(async (conn) => {
    const got = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${RECONCILIATION_LOCK}) as locked`.execute(
      conn,
    );
    if (!got.rows[0]?.locked) return null;
    try {
      return await work();
    } finally {
      await sql`select pg_advisory_unlock(${RECONCILIATION_LOCK})`.execute(conn);
    }
  });
}

export function dailyReconciliation(options: DailyOptions): DailyReconciliation {
  const { database, logger } = options;
  const db = database.db;
  const now = options.now ?? (() => new Date());
  let timer: NodeJS.Timeout | undefined;
  let first: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let busy = false;

  const windowDays = options.windowDays ?? 7;

  async function due(day: string): Promise<boolean> {
    const done = await db
      .selectFrom('reconciliation_runs')
      .select('id')
      .where('trigger', '=', 'daily')
      .where('to_day', '=', day)
      .where('status', 'in', ['clean', 'differences'])
      .executeTakeFirst();
    return !done;
  }

  /** The window's run: what changed since the last looks, which it then moves on. */
  async function nightly(from: string, to: string): Promise<RunResult> {
    const looks = await db.selectFrom('reconciliation_looks').selectAll().execute();
    const changedSince: Partial<Record<TheirKind, Date>> = {};
    for (const look of looks)
      if ((THEIR_KINDS as readonly string[]).includes(look.kind)) changedSince[look.kind] = new Date(look.looked);
    const result = await runReconciliation({
      db,
      journal: options.journal,
      service: options.service,
      period: { from, to },
      trigger: 'daily',
      logger,
      now,
      changedSince,
    });
    for (const kind of THEIR_KINDS) {
      await db
        .insertInto('reconciliation_looks')
        .values({ kind, looked: result.looked[kind] })
        .onConflict((oc) => oc.column('kind').doUpdateSet({ looked: result.looked[kind] }))
        .execute();
    }
    return result;
  }

  async function tick(): Promise<RunResult | null> {
    // Within a process one tick at a time (PGlite's flag is this one too).
    if (busy) return null;
    busy = true;
    try {
      const day = dayOf(now().getTime() - DAY_MS);
      const from = dayOf(now().getTime() - windowDays * DAY_MS);
      const result = await withReconciliationLock(database, async () => {
        // Asked again under the lock: another process may have finished it while this one waited.
        const ran = (await due(day)) ? await nightly(from, day) : null;
        await tellCorrections({ db, journal: options.journal, tell: options.tell, logger, now });
        return ran;
      });
      return result ?? null;
    } finally {
      busy = false;
    }
  }

  return {
    tick,
    start() {
      const every = options.intervalMs ?? 10 * 60_000;
      const go = () => {
        running = tick().catch((err: unknown) =>
          logger.error({ err: String(err) }, 'daily reconciliation failed; tried again at the next tick'),
        );
      };
      timer = setInterval(go, every);
      timer.unref();
      // The first a minute after start, not during it (processes starting together, a short-lived test).
      first = setTimeout(go, Math.min(every, 60_000));
      first.unref();
    },
    async stop() {
      clearInterval(timer);
      clearTimeout(first);
      timer = first = undefined;
      await running;
    },
  };
}
