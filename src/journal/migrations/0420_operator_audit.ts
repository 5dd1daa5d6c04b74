/**
 * 0420: `operator_audit`, every operator action (src/ops/audit.ts): sign-ins and their failures, refusals of /ops
 * routes, searches and exports, requests and their decisions, resolutions, replays. One row an action, appended
 * and never changed: the journal's rules (migration 0300's `journal_refuse_change`) refuse an UPDATE and a
 * TRUNCATE whatever role asks, and a DELETE but retention's; the product's role may only read and insert it
 * (APPEND_ONLY_TABLES, src/journal/roles.ts).
 */
import { sql, type Kysely } from 'kysely';

const STATEMENTS = [
  `create table operator_audit (
     id bigserial primary key,
     at timestamptz not null default now(),
     actor text not null check (length(actor) between 1 and 200),
     action text not null check (action ~ '^[a-z][a-z0-9.-]{0,63}$'),
     detail jsonb not null default '{}'::jsonb check (jsonb_typeof(detail) = 'object')
   )`,
  // Newest first, a keyset page at a time (/ops/audit), whole or for one actor or one action.
  `create index operator_audit_at on operator_audit (at desc, id desc)`,
  `create index operator_audit_actor on operator_audit (actor, at desc, id desc)`,
  `create index operator_audit_action on operator_audit (action, at desc, id desc)`,
  `create trigger operator_audit_append_only before update or delete on operator_audit
     for each row execute function journal_refuse_change()`,
  `create trigger operator_audit_no_truncate before truncate on operator_audit
     for each statement execute function journal_refuse_change()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop table operator_audit').execute(db);
}
