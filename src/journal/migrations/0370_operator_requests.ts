/**
 * 0370: `operator_requests`, dual control of operators (src/people/requests.ts): a change of people or operators
 * that OPS_DUAL_CONTROL names is one row here, `pending`, instead of taking effect; a second operator approves
 * it (then it takes effect: `approved`, or `failed` with the reason when it no longer could) or rejects it, or it
 * `expired` undecided. The decision is one conditional update from `pending`, refused by the table itself when
 * the decider is the asker (like held_payments' maker check, migration 0210). A row is never deleted by the
 * product.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('operator_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // What: add-person, role, reactivate, reset-pin, link-code, add-operator, suspend-operator, remove-operator...
    .addColumn('action', 'text', (c) => c.notNull())
    // On whom: a person's id or an operator's name (a new person: none yet).
    .addColumn('target', 'text')
    // The change's values (never a password in clear: a new operator's is kept as its hash).
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('asked_by', 'text', (c) => c.notNull())
    .addColumn('asked_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('state', 'text', (c) =>
      c.notNull().check(sql`state in ('pending', 'approved', 'rejected', 'expired', 'failed')`),
    )
    .addColumn('decided_by', 'text')
    .addColumn('decided_at', 'timestamptz')
    .addColumn('reason', 'text')
    .addCheckConstraint(
      'operator_requests_decision',
      sql`(state in ('approved', 'rejected', 'failed')) = (decided_by is not null and decided_at is not null)`,
    )
    // Nobody approves their own request (a rejection by the asker is their withdrawing it).
    .addCheckConstraint('operator_requests_not_own', sql`state not in ('approved', 'failed') or decided_by <> asked_by`)
    .execute();
  await db.schema
    .createIndex('operator_requests_pending')
    .on('operator_requests')
    .columns(['state', 'asked_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('operator_requests').execute();
}
