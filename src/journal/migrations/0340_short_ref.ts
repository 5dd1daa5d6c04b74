/**
 * 0340: every operation's short ref, the one reference people read and say (src/journal/short-ref.ts): the
 * screen, the SMS, the chat message, /ops and the exports show it, a teller reads it out over the phone.
 *
 * A sequence (`operations_short_ref_seq`) numbers operations; `journal_short_ref(n)` renders a number as
 * `MC-` and at least five characters of an alphabet without 0, O, 1 and I (32 characters), the number first
 * mixed by a bijection of the width's range (odd multiplier, offset), so refs made one after the other do not
 * differ in their last character only. The column's default draws the number, so the intent's own insert
 * allocates it (before the money-moving call) and a sequence never hands a number out twice, whatever restarts.
 * Rows already in the journal get one each now. The ref never changes once given (a trigger refuses it).
 */
import { sql, type Kysely } from 'kysely';

/** The characters of a short ref: digits and capital letters but 0, O, 1 and I. */
export const SHORT_REF_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';
/** What every short ref starts with. */
export const SHORT_REF_PREFIX = 'MC-';
/** The fewest characters after the prefix. */
export const SHORT_REF_WIDTH = 5;
/** The mixing bijection's multiplier (odd) and offset: n -> (n * MULTIPLIER + OFFSET) mod 32^width. */
export const SHORT_REF_MULTIPLIER = 18_733_073;
export const SHORT_REF_OFFSET = 11_010_917;

const STATEMENTS = [
  `create sequence operations_short_ref_seq as bigint minvalue 1 start 1`,
  `create function journal_short_ref(n bigint) returns text language plpgsql immutable strict as $$
   declare
     width integer := ${SHORT_REF_WIDTH};
     space numeric := power(32::numeric, ${SHORT_REF_WIDTH});
     v numeric;
     s text := '';
   begin
     while n >= space loop
       width := width + 1;
       space := space * 32;
     end loop;
     v := mod(n::numeric * ${SHORT_REF_MULTIPLIER} + ${SHORT_REF_OFFSET}, space);
     for i in 1..width loop
       s := substr('${SHORT_REF_ALPHABET}', (mod(v, 32))::integer + 1, 1) || s;
       v := div(v, 32);
     end loop;
     return '${SHORT_REF_PREFIX}' || s;
   end $$`,
  `alter table operations add column short_ref text not null
     default journal_short_ref(nextval('operations_short_ref_seq'))`,
  `alter sequence operations_short_ref_seq owned by operations.short_ref`,
  `alter table operations add constraint operations_short_ref unique (short_ref)`,
  `create function journal_short_ref_kept() returns trigger language plpgsql as $$
   begin
     if new.short_ref is distinct from old.short_ref then
       raise exception 'operation %: its short ref % never changes', old.ref, old.short_ref
         using errcode = 'check_violation';
     end if;
     return new;
   end $$`,
  `create trigger journal_short_ref_kept before update on operations
     for each row execute function journal_short_ref_kept()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'drop trigger journal_short_ref_kept on operations',
    'drop function journal_short_ref_kept()',
    'alter table operations drop column short_ref',
    'drop function journal_short_ref(bigint)',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
