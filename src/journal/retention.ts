/**
 * Retention: once a day (and once shortly after start) the journal deletes what is older than RETENTION_DAYS
 * (an operation no longer open whose row has not changed since the cutoff, with all its events; the history
 * of people and operators who no longer exist; reconciliation results): `Journal.deleteOlderThan`. Nothing
 * younger, nothing open and nothing of a person who still exists is ever deleted, and nothing else may delete
 * from the journal (its triggers refuse any other DELETE). The limits' old rows go after it (reservations,
 * daily totals and tries: src/people/limits.ts deleteLimitsOlderThan). It runs as the owner (DATABASE_OWNER_URL) when
 * there are two roles. Several processes may run it: deleting what is already gone deletes nothing.
 */
import type { Logger } from '../log.js';
import type { LimitsDeleted } from '../people/limits.js';
import type { Journal } from './journal.js';

export interface RetentionOptions {
  journal: Pick<Journal, 'deleteOlderThan'>;
  /**
   * The limits' old rows (src/people/limits.ts deleteLimitsOlderThan: reservations, daily totals and tries
   * older than the same days, never one of an open payment or a live lock), after the journal's. Default none.
   */
  limits?: (days: number) => Promise<LimitsDeleted>;
  /** RETENTION_DAYS. */
  days: number;
  logger: Logger;
  /** Default one day. */
  everyMs?: number;
  /** The first cleanup this long after start. Default one minute. */
  firstAfterMs?: number;
}

/** Starts the daily cleanup; returns its stop. */
export function startRetention(o: RetentionOptions): () => void {
  const run = () =>
    void o.journal
      .deleteOlderThan(o.days)
      .then(async (deleted) => {
        if (deleted.operations + deleted.events + deleted.reconciliation > 0)
          o.logger.info({ ...deleted, days: o.days }, 'journal: retention deleted what was older');
        const limits = await o.limits?.(o.days);
        if (limits && limits.reservations + limits.days + limits.tries > 0)
          o.logger.info({ ...limits, days: o.days }, 'limits: retention deleted what was older');
      })
      .catch((err: unknown) =>
        o.logger.warn({ err: String(err) }, 'journal: retention cleanup failed; tried again tomorrow'),
      );
  const first = setTimeout(run, o.firstAfterMs ?? 60_000);
  const daily = setInterval(run, o.everyMs ?? 86_400_000);
  first.unref();
  daily.unref();
  return () => {
    clearTimeout(first);
    clearInterval(daily);
  };
}
