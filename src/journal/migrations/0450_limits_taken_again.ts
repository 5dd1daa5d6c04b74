/**
 * 0450: a payment's reservation taken again when a correction finds its money moved after all (a payment
 * recorded failed, its reservation given back, that the service holds completed), and the limit each
 * reservation was checked against, so that a total taken again past it is recorded as such.
 * - `spend_reservations.daily_limit`: the limit in minor units `spend_reserve` checked the reservation against
 *   (null for rows reserved before this migration); `taken_again_at`: when a given-back reservation was counted
 *   again; `over_limit`: whether the day's total passed `daily_limit` when it was (null: limit not known).
 * - `spend_reserve`: as in migration 0320, and it writes `daily_limit`.
 * - `spend_take_again(ref, at)`: counts a given-back reservation in its day's total again, once (the reservation
 *   row first, then the day's row, the order of `spend_give_back`). It never refuses: the money moved, so the
 *   total may pass the limit; it returns `taken` (false for a reservation held or never made), the day's total
 *   after it and `over_limit`. The journal calls it in the transaction that journals the correction.
 */
import { sql, type Kysely } from 'kysely';

const RESERVE = (writesLimit: boolean) => `create or replace function spend_reserve(p_ref text, p_person text,
     p_currency text, p_day text, p_amount numeric, p_minor bigint, p_limit bigint, p_at timestamptz)
   returns table (ok boolean, total bigint) language plpgsql volatile as $$
   declare t bigint;
   begin
     insert into spend_days (person_id, currency, day, total) values (p_person, p_currency, p_day, 0)
       on conflict (person_id, currency, day) do nothing;
     -- The day's row, locked: another reservation or give-back of this person, currency and day waits here.
     select d.total into t from spend_days d
       where d.person_id = p_person and d.currency = p_currency and d.day = p_day for update;
     if exists (select 1 from spend_reservations r where r.ref = p_ref) then
       return query select true, t;
       return;
     end if;
     if t + p_minor > p_limit then
       return query select false, t;
       return;
     end if;
     insert into spend_reservations (ref, person_id, currency, day, amount, minor, reserved_at${writesLimit ? ', daily_limit' : ''})
       values (p_ref, p_person, p_currency, p_day, p_amount, p_minor, p_at${writesLimit ? ', p_limit' : ''})
       on conflict (ref) do nothing;
     if not found then
       return query select true, t;
       return;
     end if;
     update spend_days d set total = d.total + p_minor
       where d.person_id = p_person and d.currency = p_currency and d.day = p_day;
     return query select true, t + p_minor;
   end $$`;

const STATEMENTS = [
  `alter table spend_reservations add column daily_limit bigint check (daily_limit >= 0),
     add column taken_again_at timestamptz, add column over_limit boolean`,
  RESERVE(true),
  `create function spend_take_again(p_ref text, p_at timestamptz)
   returns table (taken boolean, total bigint, over_limit boolean) language plpgsql volatile as $$
   declare r record; t bigint; o boolean;
   begin
     update spend_reservations s set given_back_at = null, given_back_reason = null, taken_again_at = p_at
       where s.ref = p_ref and s.given_back_at is not null
       returning s.person_id, s.currency, s.day, s.minor, s.daily_limit into r;
     if not found then
       return query select false, null::bigint, null::boolean;
       return;
     end if;
     insert into spend_days (person_id, currency, day, total) values (r.person_id, r.currency, r.day, 0)
       on conflict (person_id, currency, day) do nothing;
     update spend_days d set total = d.total + r.minor
       where d.person_id = r.person_id and d.currency = r.currency and d.day = r.day
       returning d.total into t;
     o := case when r.daily_limit is null then null else t > r.daily_limit end;
     update spend_reservations s set over_limit = o where s.ref = p_ref;
     return query select true, t, o;
   end $$`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'drop function spend_take_again(text, timestamptz)',
    RESERVE(false),
    'alter table spend_reservations drop column over_limit, drop column taken_again_at, drop column daily_limit',
  ])
    await sql.raw(statement).execute(db);
}
