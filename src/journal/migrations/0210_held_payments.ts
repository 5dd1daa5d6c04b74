/**
 * 0210: `held_payments`, maker/checker (src/approvals): one row per payment held for an approver, made in the
 * same transaction as its journal intent (state `held`) before it is posted anywhere, and the decision on it
 * (who: the checker's identity and person; when; why) written in place by one conditional update from `held`,
 * in the same transaction as its journal event, before anything is sent or told. What sending it came to
 * (`outcome`) and whether the maker was told of it yet (`tell_after`: set while a telling is owed) are here too,
 * so a Redis loss loses no hold, no decision and no telling. A row is never deleted by the product.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('held_payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // Our ref: the Duplicate-Check-Key made when the maker confirmed; the approved payment is created under it.
    .addColumn('ref', 'text', (c) => c.notNull().unique())
    .addColumn('maker_channel', 'text', (c) => c.notNull())
    .addColumn('maker_user', 'text', (c) => c.notNull())
    .addColumn('maker_person', 'text')
    .addColumn('amount', 'numeric', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    // The create input the maker's flow gave (payee, names, metadata with the chat to tell).
    .addColumn('payment', 'jsonb', (c) => c.notNull())
    .addColumn('state', 'text', (c) =>
      c.notNull().check(sql`state in ('held', 'approved', 'rejected', 'expired', 'cancelled')`),
    )
    .addColumn('held_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('checker_channel', 'text')
    .addColumn('checker_user', 'text')
    .addColumn('checker_person', 'text')
    .addColumn('checker_name', 'text')
    .addColumn('decided_at', 'timestamptz')
    .addColumn('reason', 'text')
    // Where the approval message is (Slack channel and ts), once posted.
    .addColumn('board', 'jsonb')
    // One process sends an approved payment at a time, until this time.
    .addColumn('sending_until', 'timestamptz')
    .addColumn('outcome', 'jsonb')
    .addColumn('outcome_at', 'timestamptz')
    // A telling of the decision or outcome is owed to the maker from this time (null: none owed).
    .addColumn('tell_after', 'timestamptz')
    // A decision names its checker and time; an approval or rejection is never the maker's own identity.
    .addCheckConstraint(
      'held_payments_decision',
      sql`(state in ('approved', 'rejected')) = (checker_channel is not null and checker_user is not null and decided_at is not null)`,
    )
    .addCheckConstraint(
      'held_payments_not_own',
      sql`not (checker_channel = maker_channel and checker_user = maker_user)`,
    )
    .addCheckConstraint(
      'held_payments_not_own_person',
      sql`checker_person is null or maker_person is null or checker_person <> maker_person`,
    )
    .addCheckConstraint('held_payments_outcome', sql`outcome is null or state = 'approved'`)
    .execute();
  await db.schema.createIndex('held_payments_state').on('held_payments').columns(['state', 'expires_at']).execute();
  await db.schema
    .createIndex('held_payments_tell')
    .on('held_payments')
    .column('tell_after')
    .where(sql.ref('tell_after'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('held_payments').execute();
}
