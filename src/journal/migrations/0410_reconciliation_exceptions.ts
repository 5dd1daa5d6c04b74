/**
 * 0410: `reconciliation_exceptions` (src/reconciliation/exceptions.ts): each difference a reconciliation found
 * (an operation of ours unknown to the service, or whose state or detail is not the service's), once, however
 * many runs find it again, with its state: `open` until it is closed, then `resolved` (a person, or a later
 * run that found the operation as the service holds it, said why nothing changes) or `corrected` (the journal
 * took the service's state: by the run itself, or by an operator, with a second operator's approval when it
 * tells a person or changes a final state).
 *
 * Closed once and for good, by the table itself: a trigger lets a row change only from `open` to `resolved` or
 * `corrected`, every other column but the closing ones fixed, and refuses a DELETE (but retention's) and a
 * TRUNCATE. A correction's approver is never its asker (a CHECK, like operator_requests').
 */
import { sql, type Kysely } from 'kysely';

const STATEMENTS = [
  `create table reconciliation_exceptions (
     id bigserial primary key,
     difference text not null unique,
     ref text not null,
     outcome text not null check (outcome in ('unknown_to_service', 'state_differs', 'detail_differs')),
     day text not null check (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
     service_id text,
     ours jsonb,
     theirs jsonb,
     differs jsonb,
     correction text,
     found_run bigint not null,
     found_at timestamptz not null,
     state text not null default 'open' check (state in ('open', 'resolved', 'corrected')),
     closed_by text,
     approved_by text,
     request text,
     closed_at timestamptz,
     reason text,
     constraint reconciliation_exceptions_closed
       check ((state = 'open') = (closed_by is null and closed_at is null and reason is null)),
     constraint reconciliation_exceptions_reason check (state = 'open' or length(btrim(reason)) > 0),
     constraint reconciliation_exceptions_not_own check (approved_by is null or approved_by <> closed_by)
   )`,
  `create index reconciliation_exceptions_state on reconciliation_exceptions (state, day)`,
  `create index reconciliation_exceptions_ref on reconciliation_exceptions (ref)`,
  `create function reconciliation_exception_close() returns trigger language plpgsql as $$
   begin
     if tg_op = 'DELETE' then
       if current_setting('momo.retention', true) = 'on' then
         return old;
       end if;
       raise exception 'a reconciliation exception is never deleted' using errcode = 'insufficient_privilege';
     end if;
     if tg_op = 'TRUNCATE' then
       raise exception 'a reconciliation exception is never deleted' using errcode = 'insufficient_privilege';
     end if;
     if old.state <> 'open' then
       raise exception 'reconciliation exception %: already %', old.id, old.state using errcode = 'check_violation';
     end if;
     if new.id <> old.id or new.difference <> old.difference or new.ref <> old.ref or new.outcome <> old.outcome
        or new.day <> old.day or new.service_id is distinct from old.service_id
        or new.ours is distinct from old.ours or new.theirs is distinct from old.theirs
        or new.differs is distinct from old.differs or new.correction is distinct from old.correction
        or new.found_run <> old.found_run or new.found_at <> old.found_at then
       raise exception 'reconciliation exception %: only its closing changes', old.id using errcode = 'check_violation';
     end if;
     return new;
   end $$`,
  `create trigger reconciliation_exception_close before update or delete on reconciliation_exceptions
     for each row execute function reconciliation_exception_close()`,
  `create trigger reconciliation_exception_no_truncate before truncate on reconciliation_exceptions
     for each statement execute function reconciliation_exception_close()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop table reconciliation_exceptions').execute(db);
  await sql.raw('drop function reconciliation_exception_close()').execute(db);
}
