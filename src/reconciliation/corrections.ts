/**
 * Tells the corrections a reconciliation found owed (`reconciliation_corrections`): a person told an outcome
 * that the service now contradicts (or told "submitted" of something the service has since decided) hears
 * what the service holds, on the operation's chat, through the product's notifiers (the same the
 * notifications use; USSD users by SMS too, and at their next dial). Run by the product, which holds the
 * channels; a run of the command only records what is owed.
 *
 * At least once: a correction is claimed for a while (another process takes it over once the claim is old),
 * told, journalled as a telling (source `reconciliation`), then marked told.
 */
import { sql, type Kysely } from 'kysely';
import { parseChat } from '../store/chat-address.js';
import type { Address } from '../conversation/types.js';
import type { Journal } from '../journal/journal.js';
import type { Logger } from '../log.js';
import type { ReconciliationSchema } from './schema.js';

export interface CorrectionsOptions {
  db: Kysely<ReconciliationSchema>;
  journal: Journal;
  /**
   * Says `key`'s words (a notification message key, src/notifications/messages.ts) to `address`; resolves to
   * the text said. Throws when it could not (the correction is tried again later).
   */
  tell(address: Address, messageKey: string, params: Record<string, string>): Promise<string>;
  logger: Logger;
  /** How long a claim holds before another process may take the correction over, ms. Default 5 minutes. */
  claimMs?: number;
  /** Corrections told per call. Default 50. */
  batch?: number;
  now?: () => Date;
}

/** Tells the corrections owed and not yet told; returns how many were told. */
export async function tellCorrections(options: CorrectionsOptions): Promise<number> {
  const { db, journal, logger } = options;
  const now = options.now ?? (() => new Date());
  const claimMs = options.claimMs ?? 5 * 60_000;
  const due = await db
    .selectFrom('reconciliation_corrections')
    .selectAll()
    .where('told', 'is', null)
    .where((eb) => eb.or([eb('claimed', 'is', null), eb('claimed', '<', new Date(now().getTime() - claimMs))]))
    .orderBy('created')
    .limit(options.batch ?? 50)
    .execute();
  let told = 0;
  for (const row of due) {
    const stale = new Date(now().getTime() - claimMs);
    // Claimed by this process only if nobody claimed it since it was read (or that claim is old).
    const claim = await db
      .updateTable('reconciliation_corrections')
      .set({ claimed: now() })
      .where('id', '=', row.id)
      .where('told', 'is', null)
      .where((eb) => eb.or([eb('claimed', 'is', null), eb('claimed', '<', stale)]))
      .returning('id')
      .executeTakeFirst();
    if (!claim) continue;
    const address = parseChat(row.chat);
    const op = await journal.byRef(row.ref);
    if (!address || !op) {
      logger.warn({ ref: row.ref }, 'a correction owed to a chat we cannot reach; kept for the operator');
      await db.updateTable('reconciliation_corrections').set({ told: now() }).where('id', '=', row.id).execute();
      continue;
    }
    try {
      const kind = op.kind === 'request' ? 'request' : 'payment';
      const text = await options.tell(address, `notify.correction.${kind}`, {
        ref: op.short_ref ?? op.service_id ?? op.ref,
        ...(op.short_ref && op.service_id ? { id: op.service_id } : {}),
        amount: String(op.amount),
        currency: op.currency,
        phone: op.payee,
        state: row.state,
        told: row.told_state,
      });
      await journal.told(row.ref, {
        channel: address.channel,
        to: row.chat,
        text,
        outcome: row.state,
        source: 'reconciliation',
        key: `${row.ref}:telling:correction:${row.state}`,
      });
      await db.updateTable('reconciliation_corrections').set({ told: now() }).where('id', '=', row.id).execute();
      told += 1;
    } catch (error) {
      // Let go of the claim: the next call (of any process) tries again.
      await db
        .updateTable('reconciliation_corrections')
        .set({ claimed: sql`null` })
        .where('id', '=', row.id)
        .execute()
        .catch(() => undefined);
      logger.warn({ ref: row.ref, err: String(error) }, 'a correction could not be told; tried again later');
    }
  }
  return told;
}
