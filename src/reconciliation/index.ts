/**
 * The reconciliation inside the product: the nightly run of the last RECONCILE_WINDOW_DAYS days (./daily.ts) over the product's
 * client (so its reads take from the shared read budget) and journal, telling the corrections it owes through
 * the product's notifiers, in the person's language.
 */
import type { Kysely } from 'kysely';
import type { Address, Channel, Notifier } from '../conversation/types.js';
import type { Lang } from '../../flows/types.js';
import type { Database } from '../journal/database.js';
import type { Journal } from '../journal/journal.js';
import type { Logger } from '../log.js';
import type { MomoClient } from '../momo/index.js';
import { notifyText } from '../notifications/messages.js';
import { dailyReconciliation, type DailyReconciliation } from './daily.js';
import type { ReconciliationSchema } from './schema.js';
import { serviceSide } from './service.js';

export interface ReconciliationOptions {
  database: Database;
  journal: Journal;
  client: MomoClient;
  /** The product's notifiers, filled as channels start (read when a correction is told). */
  notifiers: Partial<Record<Channel, Notifier>>;
  languageOf?: (address: Address) => Promise<Lang | undefined>;
  logger: Logger;
  /** Between ticks of the daily run, ms. Default 10 minutes. */
  intervalMs?: number;
  /** Days each nightly run re-checks (RECONCILE_WINDOW_DAYS). Default 7. */
  windowDays?: number;
}

/** The product's nightly reconciliation, not started yet. */
export function productReconciliation(options: ReconciliationOptions): DailyReconciliation {
  const { notifiers, logger } = options;
  return dailyReconciliation({
    database: { kind: options.database.kind, db: options.database.db as unknown as Kysely<ReconciliationSchema> },
    journal: options.journal,
    service: serviceSide(options.client),
    async tell(address, key, params) {
      const notifier = notifiers[address.channel];
      if (!notifier) throw new Error(`no notifier for ${address.channel}`);
      const lang = (await options.languageOf?.(address).catch(() => undefined)) ?? 'en';
      const text = notifyText(lang, key, params);
      // The USSD inbox shows it above the menu at the next dial: its short words when the full ones do not fit.
      await notifier.send(
        address,
        address.channel === 'ussd' ? notifyText(lang, key, params, { forDial: true }) : text,
      );
      return text;
    },
    logger,
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
    ...(options.windowDays !== undefined ? { windowDays: options.windowDays } : {}),
  });
}

export { runReconciliation } from './run.js';
export type { Outcome } from './match.js';
export type { ReconciliationRun, ReconciliationItem, RunStatus } from './schema.js';
