/**
 * The journal's hash chain, read back (docs/journal.md "Tamper evidence"). The database writes it (migration
 * 0301: each event's `hash` is sha256 of the hash before it and of its canonical content, computed in a BEFORE
 * INSERT trigger under an advisory lock); this file recomputes it here, with node:crypto, from what the
 * database holds, so a changed event, a removed one or one put out of order is found whatever the database's
 * own functions say.
 *
 * A hole in the chain is whole only where a retention receipt (`journal_receipts`) says it deleted those
 * events; each receipt is itself an event of the chain (ref `journal:retention`), whose hash is the receipt's
 * head after and whose previous hash its head before.
 */
import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.js';

/** The chain's last event: what every export carries. */
export interface ChainHead {
  seq: string;
  hash: string;
}

/** A retention deletion's receipt, as `/ops/journal` shows it. */
export interface Receipt {
  id: string;
  at: Date;
  rangeFrom: Date | null;
  rangeTo: Date;
  firstSeq: string | null;
  lastSeq: string | null;
  operations: number;
  events: number;
  reconciliation: number;
  headBefore: string;
  headBeforeSeq: string;
  headAfter: string;
  headAfterSeq: string;
}

/** The event where the chain breaks, and why. */
export interface Break {
  id: string;
  seq: string;
  ref: string;
  at: string;
  reason: string;
}

export interface Verification {
  /** Events recomputed. */
  checked: number;
  /** The first and last seq walked (none when the range holds no event). */
  firstSeq?: string;
  lastSeq?: string;
  /** Holes crossed, each covered by a receipt. */
  holes: number;
  /** Undefined when whole. */
  broken?: Break;
  /** The chain's head at the time of the check. */
  head?: ChainHead;
}

/** sha256 (hex) of the previous hash and an event's canonical fields: the same bytes as migration 0301's SQL. */
export function eventHash(prev: string, fields: readonly string[]): string {
  const canonical = fields.map((f) => `${Buffer.byteLength(f, 'utf8')}:${f}`).join('');
  return createHash('sha256').update(`${prev}\n${canonical}`, 'utf8').digest('hex');
}

/** The chain's head: its last event's seq and hash; undefined while the journal is empty. */
export async function chainHead(db: Kysely<Schema>): Promise<ChainHead | undefined> {
  const { rows } = await sql<{ seq: string; hash: string }>`
    select seq::text as seq, hash from operation_events order by operation_events.seq desc limit 1`.execute(db);
  return rows[0];
}

/** A head as every export shows it: `<seq> <sha256 hex>` (the `Journal-Head` header, the CSV's column). */
export function parseHead(text: string): ChainHead | undefined {
  const m = /^\s*(\d{1,19})[ :]([0-9a-f]{64})\s*$/.exec(text);
  return m && BigInt(m[1]!) > 0n ? { seq: String(BigInt(m[1]!)), hash: m[2]! } : undefined;
}

/**
 * Whether the chain holds `head` (one an export carried): its event at that seq has that hash. Undefined when it
 * does; else why not (another hash there: the chain was rewritten since; deleted by retention: no longer
 * comparable, the receipt named; later than the chain's head: not from this journal).
 */
export async function headNotFound(db: Kysely<Schema>, head: ChainHead): Promise<string | undefined> {
  const { rows } = await sql<{ hash: string }>`
    select hash from operation_events where seq = ${head.seq}`.execute(db);
  const said = `the head seq ${head.seq} ${head.hash}`;
  if (rows[0]) return rows[0].hash === head.hash ? undefined : `${said} differs: the chain has ${rows[0].hash} there`;
  const covering = (await receipts(db, 100_000)).find(
    (r) => r.firstSeq !== null && BigInt(r.firstSeq) <= BigInt(head.seq) && BigInt(head.seq) <= BigInt(r.lastSeq!),
  );
  if (covering) return `${said} was deleted by retention (receipt ${covering.id}): it can no longer be compared`;
  return `${said} is not in the chain (no event has that seq)`;
}

/** The receipts of retention's deletions, newest first. */
export async function receipts(db: Kysely<Schema>, limit = 1000): Promise<Receipt[]> {
  const { rows } = await sql<Record<string, unknown>>`
    select id::text, at, range_from, range_to, first_seq::text, last_seq::text, operations, events, reconciliation,
           head_before, head_before_seq::text, head_after, head_after_seq::text
    from journal_receipts order by id desc limit ${limit}`.execute(db);
  return rows.map((r) => ({
    id: String(r.id),
    at: new Date(r.at as string),
    rangeFrom: r.range_from === null ? null : new Date(r.range_from as string),
    rangeTo: new Date(r.range_to as string),
    firstSeq: (r.first_seq as string | null) ?? null,
    lastSeq: (r.last_seq as string | null) ?? null,
    operations: Number(r.operations),
    events: Number(r.events),
    reconciliation: Number(r.reconciliation),
    headBefore: String(r.head_before),
    headBeforeSeq: String(r.head_before_seq),
    headAfter: String(r.head_after),
    headAfterSeq: String(r.head_after_seq),
  }));
}

interface Row {
  id: string;
  seq: string;
  ref: string;
  type: string;
  source: string;
  event_key: string;
  at_text: string;
  data_text: string;
  prev_hash: string;
  hash: string;
}

/**
 * Recomputes the chain over the events written in [from, to) (by their `at`): from the first such event in the
 * chain to the last, every event between them too. Stops at the first event that does not match.
 */
export async function verifyChain(
  db: Kysely<Schema>,
  range: { from?: Date; to?: Date } = {},
  pageSize = 2000,
): Promise<Verification> {
  const from = range.from ?? new Date(0);
  const to = range.to ?? new Date('9999-12-31T00:00:00Z');
  const { rows: bounds } = await sql<{ first: string | null; last: string | null }>`
    select (select min(seq) from operation_events where at >= ${from} and at < ${to})::text as first,
           (select max(seq) from operation_events where at >= ${from} and at < ${to})::text as last`.execute(db);
  const head = await chainHead(db);
  const firstSeq = bounds[0]?.first ?? undefined;
  const lastSeq = bounds[0]?.last ?? undefined;
  const result: Verification = { checked: 0, holes: 0, ...(head ? { head } : {}) };
  if (firstSeq === undefined || lastSeq === undefined) return result;
  Object.assign(result, { firstSeq, lastSeq });

  const covered = coverage(await receipts(db, 100_000));
  const receiptBreak = await checkReceipts(db);
  const { rows: before } = await sql<{ seq: string; hash: string }>`
    select seq::text as seq, hash from operation_events where seq < ${firstSeq} order by operation_events.seq desc limit 1`.execute(
    db,
  );
  let prev: { seq: bigint; hash: string } | undefined = before[0]
    ? { seq: BigInt(before[0].seq), hash: before[0].hash }
    : undefined;
  let after = BigInt(firstSeq) - 1n;
  for (;;) {
    const { rows } = await sql<Row>`
      select id::text as id, seq::text as seq, ref, type, source, event_key,
             to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at_text, data::text as data_text,
             prev_hash, hash
      from operation_events where seq > ${after.toString()} and seq <= ${lastSeq}
      order by operation_events.seq limit ${pageSize}`.execute(db);
    if (rows.length === 0) break;
    for (const row of rows) {
      const seq = BigInt(row.seq);
      const fields = [row.id, row.seq, row.ref, row.type, row.source, row.event_key, row.at_text, row.data_text];
      const broken = (reason: string): Verification => ({
        ...result,
        broken: { id: row.id, seq: row.seq, ref: row.ref, at: row.at_text, reason },
      });
      if (eventHash(row.prev_hash, fields) !== row.hash) {
        return broken('its content does not match its hash (changed after it was written)');
      }
      const expectedBefore = prev ? prev.seq + 1n : 1n;
      if (seq === expectedBefore) {
        if (row.prev_hash !== (prev?.hash ?? '')) {
          return broken(
            prev
              ? `it does not follow event seq ${prev.seq} (its previous hash differs)`
              : 'the first event names one before it',
          );
        }
      } else {
        const missing = uncovered(covered, expectedBefore, seq - 1n);
        if (missing !== undefined) {
          return broken(
            `events seq ${missing.from}..${missing.to} before it are missing, and no retention receipt deleted them`,
          );
        }
        result.holes += 1;
      }
      prev = { seq, hash: row.hash };
      result.checked += 1;
    }
    after = BigInt(rows[rows.length - 1]!.seq);
  }
  if (receiptBreak) return { ...result, broken: receiptBreak };
  return result;
}

/** Each receipt's event must be in the chain as the receipt says: its hash the head after, its previous the head before. */
async function checkReceipts(db: Kysely<Schema>): Promise<Break | undefined> {
  const { rows } = await sql<{
    id: string;
    head_before: string;
    head_after: string;
    head_after_seq: string;
    event_id: string | null;
    prev_hash: string | null;
    hash: string | null;
    at_text: string | null;
  }>`
    select r.id::text, r.head_before, r.head_after, r.head_after_seq::text, e.id::text as event_id, e.prev_hash,
           e.hash, to_char(e.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at_text
    from journal_receipts r left join operation_events e on e.seq = r.head_after_seq
    order by r.id`.execute(db);
  for (const r of rows) {
    if (r.hash !== r.head_after || r.prev_hash !== r.head_before) {
      return {
        id: r.event_id ?? '-',
        seq: r.head_after_seq,
        ref: 'journal:retention',
        at: r.at_text ?? '-',
        reason: `retention receipt ${r.id} does not match the chain (its event is missing or differs)`,
      };
    }
  }
  return undefined;
}

type Interval = [bigint, bigint];

/** The receipts' deleted seq ranges, merged. */
function coverage(list: readonly Receipt[]): Interval[] {
  const ranges = list
    .filter((r) => r.firstSeq !== null && r.lastSeq !== null)
    .map((r) => [BigInt(r.firstSeq!), BigInt(r.lastSeq!)] as Interval)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const merged: Interval[] = [];
  for (const [a, b] of ranges) {
    const last = merged[merged.length - 1];
    if (last && a <= last[1] + 1n) last[1] = b > last[1] ? b : last[1];
    else merged.push([a, b]);
  }
  return merged;
}

/** The first part of [from, to] no receipt covers, or undefined. */
function uncovered(covered: readonly Interval[], from: bigint, to: bigint): { from: bigint; to: bigint } | undefined {
  let at = from;
  for (const [a, b] of covered) {
    if (b < at) continue;
    if (a > at) return { from: at, to: a - 1n < to ? a - 1n : to };
    at = b + 1n;
    if (at > to) return undefined;
  }
  return at <= to ? { from: at, to } : undefined;
}
