/**
 * 0301: the journal's hash chain (src/journal/chain.ts, docs/journal.md "Tamper evidence").
 *
 * Each event gets `seq` (its place in the chain: 1, 2, 3, … in the order events were committed), `prev_hash`
 * (the hash of the event before it when it was written; '' for the first) and `hash` = sha256 of `prev_hash`
 * and the event's canonical content ({@link CANONICAL_SQL}). A BEFORE INSERT trigger computes them under a
 * transaction-level advisory lock, so writers in several processes chain one after another (each waits for the
 * one before to commit, then reads its hash); whatever the writer sends for these columns is overwritten.
 * Events already written are chained in id order.
 *
 * `journal_receipts`: one row per retention deletion (src/journal/journal.ts `deleteOlderThan`): the range and
 * rows deleted, the chain's head before and after (the receipt is also an event of the chain, ref
 * `journal:retention`, so its row is tamper-evident too). Never updated or deleted.
 */
import { sql, type Kysely } from 'kysely';

/** The advisory lock every chained insert takes (and retention, while it deletes and writes its receipt). */
export const CHAIN_LOCK = 7_301_300;

/**
 * The canonical content of an event, as text, in SQL over a row `e` (the same bytes src/journal/chain.ts hashes):
 * each field as `<its length in bytes>:<field>`, in this order: id, seq, ref, type, source, event_key, at (UTC,
 * microseconds), data (jsonb's own text: keys sorted, one spelling).
 */
export const CANONICAL_SQL = (e: string) =>
  [
    'id::text',
    'seq::text',
    'ref',
    'type',
    'source',
    'event_key',
    `to_char(${e}.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    'data::text',
  ]
    .map((f) => (f.startsWith('to_char') ? f : `${e}.${f}`))
    .map((f) => `octet_length(${f})::text || ':' || ${f}`)
    .join(' || ');

const STATEMENTS = [
  `alter table operation_events add column seq bigint, add column prev_hash text, add column hash text`,
  `create function journal_event_hash(e operation_events, prev text) returns text language sql stable as $$
     select encode(sha256(convert_to(prev || E'\\n' || ${CANONICAL_SQL('e')}, 'UTF8')), 'hex')
   $$`,
  // The events already written, in id order (the refusing trigger is off for this one statement's table).
  `alter table operation_events disable trigger journal_append_only`,
  `do $$
   declare r operation_events; p text; h text := ''; n bigint := 0;
   begin
     for r in select * from operation_events order by id loop
       n := n + 1;
       r.seq := n;
       p := h;
       h := journal_event_hash(r, p);
       update operation_events set seq = n, prev_hash = p, hash = h where id = r.id;
     end loop;
   end $$`,
  `alter table operation_events enable trigger journal_append_only`,
  `alter table operation_events alter column seq set not null, alter column prev_hash set not null,
     alter column hash set not null`,
  `create unique index operation_events_seq on operation_events (seq)`,
  `create function journal_chain() returns trigger language plpgsql as $$
   declare last_seq bigint; last_hash text;
   begin
     perform pg_advisory_xact_lock(${CHAIN_LOCK});
     select seq, hash into last_seq, last_hash from operation_events order by seq desc limit 1;
     new.seq := coalesce(last_seq, 0) + 1;
     new.prev_hash := coalesce(last_hash, '');
     new.hash := journal_event_hash(new, new.prev_hash);
     return new;
   end $$`,
  // Named to run after every other BEFORE INSERT trigger (PostgreSQL fires them by name): it hashes the row as
  // it will be stored.
  `create trigger zz_journal_chain before insert on operation_events
     for each row execute function journal_chain()`,

  `create table journal_receipts (
     id bigserial primary key,
     at timestamptz not null,
     range_from timestamptz,
     range_to timestamptz not null,
     first_seq bigint,
     last_seq bigint,
     operations integer not null check (operations >= 0),
     events integer not null check (events >= 0),
     reconciliation integer not null check (reconciliation >= 0),
     head_before text not null,
     head_before_seq bigint not null,
     head_after text not null,
     head_after_seq bigint not null
   )`,
  `create trigger journal_receipts_append_only before update or delete on journal_receipts
     for each row execute function journal_refuse_change()`,
  `create trigger journal_receipts_no_truncate before truncate on journal_receipts
     for each statement execute function journal_refuse_change()`,
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of STATEMENTS) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const statement of [
    'drop table journal_receipts',
    'drop trigger zz_journal_chain on operation_events',
    'drop function journal_chain()',
    'drop function journal_event_hash(operation_events, text)',
    'alter table operation_events drop column seq, drop column prev_hash, drop column hash',
  ]) {
    await sql.raw(statement).execute(db);
  }
}
