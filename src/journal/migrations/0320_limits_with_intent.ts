/**
 * 0320: a payment's reservation written with its intent, link codes that die of wrong guesses, and what lets
 * retention expire the limits' old rows (src/people/limits.ts, src/journal/journal.ts).
 * - `spend_reserve(ref, person, currency, day, amount, minor, limit, at)`: the reservation of migration 0200 in
 *   one call (one round trip): the person's row of the day made if missing and taken `FOR UPDATE`, the ref
 *   looked up (reserved already: ok, nothing changes), the limit checked, the reservation inserted and the day's
 *   total raised. Returns `ok` and the total (after it when reserved, before it when refused). The journal calls
 *   it in the statement that writes the intent (Journal.intend), so both commit together or neither does.
 * - `spend_give_back(ref, reason, at)`: gives a held reservation back once (the reservation row first, then the
 *   day's row, as nothing else takes them in the other order); false for one given back already or never made.
 *   The journal calls it in the transaction that journals a refusal carrying a give-back.
 * - `person_codes.locator` (the first {@link LINK_LOCATOR_LENGTH} characters of a link code, in clear: they
 *   say which code a guess aims at, not the code) and `wrong_tries` (wrong guesses at that code, whichever
 *   accounts made them; the code is used up when they reach the limit).
 * - Indexes for retention: `spend_days` and `spend_reservations` by day, `secret_tries` by the end of its window.
 */
import { sql, type Kysely } from 'kysely';

/** How many leading characters of a link code name it (src/people/people.ts). */
export const LINK_LOCATOR_LENGTH = 3;

const STATEMENTS = [
  `create function spend_reserve(p_ref text, p_person text, p_currency text, p_day text, p_amount numeric,
     p_minor bigint, p_limit bigint, p_at timestamptz)
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
     insert into spend_reservations (ref, person_id, currency, day, amount, minor, reserved_at)
       values (p_ref, p_person, p_currency, p_day, p_amount, p_minor, p_at)
       on conflict (ref) do nothing;
     if not found then
       return query select true, t;
       return;
     end if;
     update spend_days d set total = d.total + p_minor
       where d.person_id = p_person and d.currency = p_currency and d.day = p_day;
     return query select true, t + p_minor;
   end $$`,
  `create function spend_give_back(p_ref text, p_reason text, p_at timestamptz)
   returns boolean language plpgsql volatile as $$
   declare r record;
   begin
     update spend_reservations s set given_back_at = p_at, given_back_reason = p_reason
       where s.ref = p_ref and s.given_back_at is null
       returning s.person_id, s.currency, s.day, s.minor into r;
     if not found then
       return false;
     end if;
     update spend_days d set total = greatest(0, d.total - r.minor)
       where d.person_id = r.person_id and d.currency = r.currency and d.day = r.day;
     return true;
   end $$`,
  `alter table person_codes add column locator text, add column wrong_tries integer not null default 0
     check (wrong_tries >= 0)`,
  `create index person_codes_locator on person_codes (locator) where used_at is null`,
  `create index spend_days_day on spend_days (day)`,
  `create index spend_reservations_of_day on spend_reservations (day)`,
  `create index secret_tries_until on secret_tries (until)`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'drop index secret_tries_until',
    'drop index spend_reservations_of_day',
    'drop index spend_days_day',
    'drop index person_codes_locator',
    'alter table person_codes drop column wrong_tries, drop column locator',
    'drop function spend_give_back(text, text, timestamptz)',
    'drop function spend_reserve(text, text, text, text, numeric, bigint, bigint, timestamptz)',
  ])
    await sql.raw(statement).execute(db);
}
