/**
 * 0300: the journal append-only in the database itself, whatever role writes to it (docs/journal.md).
 *
 * - `operation_events`: an UPDATE or a TRUNCATE is refused by a trigger; a DELETE too, except inside
 *   retention's transaction (`momo.retention` set locally, src/journal/journal.ts `deleteOlderThan`).
 * - `operations`: one trigger moves the current state only forward (intended/held, then submitted, then a final
 *   word; a final word may be corrected to another final word, never taken back) and refuses a change of ref,
 *   kind, amount, currency, payee, created, or of a service id once known. A DELETE or TRUNCATE only as
 *   retention's.
 * - CHECKs: an amount above zero, a currency of three capital letters, a known state and kind, and an
 *   operation's ref outside the spaces of people (`person:`), operators (`operator:`) and the journal's own
 *   events (`journal:`).
 * - A foreign key from an event to its operation (`operation_ref`: the event's ref, or null for the events of a
 *   person, an operator or the journal itself, which have no operation).
 * - An approval event that approves must name who decided, someone other than the maker, while the operation
 *   is held; an operator is added by an existing operator (or by OPS_USER at start).
 *
 * Rows already in the journal that break a new CHECK or the foreign key keep the migration from failing: the
 * constraint holds for every new row and is validated when the old ones allow it (a warning otherwise).
 */
import { sql, type Kysely } from 'kysely';
import { OPERATION_KINDS, OPERATION_STATES } from '../schema.js';

const list = (words: readonly string[]) => words.map((w) => `'${w}'`).join(', ');

/** The ref spaces that are not operations: a person's, an operator's and the journal's own events. */
export const NON_OPERATION_REFS = '^(person|operator|journal):';

const STATEMENTS = [
  // CHECKs, enforced for new rows at once, validated below when the old rows allow it.
  `alter table operations add constraint operations_amount_positive check (amount > 0) not valid`,
  `alter table operations add constraint operations_currency_code check (currency ~ '^[A-Z]{3}$') not valid`,
  `alter table operations add constraint operations_state_known check (state in (${list(OPERATION_STATES)})) not valid`,
  `alter table operations add constraint operations_kind_known check (kind in (${list(OPERATION_KINDS)})) not valid`,
  `alter table operations add constraint operations_ref_space check (ref !~ '${NON_OPERATION_REFS}') not valid`,
  // The foreign key: every event of an operation names one that exists.
  `alter table operation_events add column operation_ref text
     generated always as (case when ref ~ '${NON_OPERATION_REFS}' then null else ref end) stored`,
  `alter table operation_events add constraint operation_events_operation
     foreign key (operation_ref) references operations (ref) not valid`,
  `create index operation_events_operation_ref on operation_events (operation_ref)`,
  `do $$
   declare c record;
   begin
     for c in select conrelid::regclass::text as tab, conname from pg_constraint
              where conname in ('operations_amount_positive', 'operations_currency_code', 'operations_state_known',
                                'operations_kind_known', 'operations_ref_space', 'operation_events_operation')
     loop
       begin
         execute format('alter table %I validate constraint %I', c.tab, c.conname);
       exception when check_violation or foreign_key_violation then
         raise warning 'journal: rows written before % break it; it holds for new rows', c.conname;
       end;
     end loop;
   end $$`,

  // Events: no UPDATE, no TRUNCATE, no DELETE but retention's.
  `create function journal_refuse_change() returns trigger language plpgsql as $$
   begin
     if tg_op = 'DELETE' and current_setting('momo.retention', true) = 'on' then
       return old;
     end if;
     raise exception 'the journal is append-only: % of % refused', tg_op, tg_table_name
       using errcode = 'insufficient_privilege',
             hint = 'events are never changed; only retention deletes, and writes a receipt';
   end $$`,
  `create trigger journal_append_only before update or delete on operation_events
     for each row execute function journal_refuse_change()`,
  `create trigger journal_no_truncate before truncate on operation_events
     for each statement execute function journal_refuse_change()`,
  `create trigger journal_no_delete before delete on operations
     for each row execute function journal_refuse_change()`,
  `create trigger journal_no_truncate before truncate on operations
     for each statement execute function journal_refuse_change()`,

  // The current state: forward only, and what was asked never changes.
  `create function journal_state_rank(state text) returns integer language sql immutable as $$
     select case state when 'intended' then 0 when 'held' then 0 when 'submitted' then 1 else 2 end
   $$`,
  `create function journal_move_forward() returns trigger language plpgsql as $$
   begin
     if new.ref is distinct from old.ref or new.kind is distinct from old.kind
        or new.amount is distinct from old.amount or new.currency is distinct from old.currency
        or new.payee is distinct from old.payee or new.created is distinct from old.created then
       raise exception 'operation %: its ref, kind, amount, currency, payee and creation never change', old.ref
         using errcode = 'check_violation';
     end if;
     if old.service_id is not null and new.service_id is distinct from old.service_id then
       raise exception 'operation %: its service id % never changes', old.ref, old.service_id
         using errcode = 'check_violation';
     end if;
     if journal_state_rank(new.state) < journal_state_rank(old.state) then
       raise exception 'operation %: its state may not go back from % to %', old.ref, old.state, new.state
         using errcode = 'check_violation';
     end if;
     return new;
   end $$`,
  `create trigger journal_move_forward before update on operations
     for each row execute function journal_move_forward()`,

  // An approval is someone else's, on a held operation; a replay of one already written passes (and does nothing).
  `create function journal_approval_check() returns trigger language plpgsql as $$
   declare op record;
   begin
     if new.type <> 'approval' or new.data->>'decision' is distinct from 'approved' then
       return new;
     end if;
     if exists (select 1 from operation_events where event_key = new.event_key) then
       return new;
     end if;
     select state, channel || ':' || channel_user as maker into op from operations where ref = new.ref;
     if coalesce(new.data->>'by', '') = '' then
       raise exception 'operation %: an approval names who approved', new.ref using errcode = 'check_violation';
     end if;
     if op.maker is not distinct from new.data->>'by' then
       raise exception 'operation %: its maker may not approve it', new.ref using errcode = 'check_violation';
     end if;
     if op.state is distinct from 'held' then
       raise exception 'operation %: only a held operation is approved (it is %)', new.ref, op.state
         using errcode = 'check_violation';
     end if;
     return new;
   end $$`,
  `create trigger journal_approval_check before insert on operation_events
     for each row execute function journal_approval_check()`,
  `create function journal_operator_check() returns trigger language plpgsql as $$
   begin
     if new.created_by = 'OPS_USER' or exists (
       select 1 from operators where name = new.created_by and status = 'active' and name <> new.name) then
       return new;
     end if;
     raise exception 'operator %: added by %, who is no active operator', new.name, new.created_by
       using errcode = 'check_violation';
   end $$`,
  `create trigger journal_operator_check before insert on operators
     for each row execute function journal_operator_check()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'drop trigger journal_operator_check on operators',
    'drop function journal_operator_check()',
    'drop trigger journal_approval_check on operation_events',
    'drop function journal_approval_check()',
    'drop trigger journal_move_forward on operations',
    'drop function journal_move_forward()',
    'drop function journal_state_rank(text)',
    'drop trigger journal_no_truncate on operations',
    'drop trigger journal_no_delete on operations',
    'drop trigger journal_no_truncate on operation_events',
    'drop trigger journal_append_only on operation_events',
    'drop function journal_refuse_change()',
    'alter table operation_events drop column operation_ref',
    'alter table operations drop constraint operations_ref_space',
    'alter table operations drop constraint operations_kind_known',
    'alter table operations drop constraint operations_state_known',
    'alter table operations drop constraint operations_currency_code',
    'alter table operations drop constraint operations_amount_positive',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
