/**
 * The product's daily reconciliation: every few minutes each process asks whether the day before (UTC) has a
 * finished run (clean or with differences); when it has not, one process at a time runs it, and tells the
 * corrections owed (./corrections.ts). One at a time across processes by a PostgreSQL advisory lock, held on
 * one reserved connection for the whole run (the server lets it go if the process dies); PGlite is one
 * process, where a flag does. A failed run is tried again at the next tick.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../journal/database.js';
import type { Journal } from '../journal/journal.js';
import type { Logger } from '../log.js';
import { tellCorrections, type CorrectionsOptions } from './corrections.js';
import { dayOf, runReconciliation, type RunResult } from './run.js';
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
  now?: () => Date;
}

export interface DailyReconciliation {
  /** One tick: the day before's run when it is due (and this process got the lock), then the corrections owed. */
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

  async function due(day: string): Promise<boolean> {
    const done = await db
      .selectFrom('reconciliation_runs')
      .select('id')
      .where('from_day', '=', day)
      .where('to_day', '=', day)
      .where('status', 'in', ['clean', 'differences'])
      .executeTakeFirst();
    return !done;
  }

  async function tick(): Promise<RunResult | null> {
    // Within a process one tick at a time (PGlite's flag is this one too).
    if (busy) return null;
    busy = true;
    try {
      const day = dayOf(now().getTime() - DAY_MS);
      const result = await withReconciliationLock(database, async () => {
        // Asked again under the lock: another process may have finished it while this one waited.
        const ran = (await due(day))
          ? await runReconciliation({
              db,
              journal: options.journal,
              service: options.service,
              period: { from: day, to: day },
              trigger: 'daily',
              logger,
              now,
            })
          : null;
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
