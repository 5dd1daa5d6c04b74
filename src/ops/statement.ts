/**
 * The daily statement (`npm run statement`, `/ops/statements`): every money movement of one day from the
 * journal, with our ref and the service's id, then per currency the count and the totals by kind and state,
 * carrying the journal chain's head of that day. What accounting loads; docs/operations.md "Daily statement".
 *
 * - **The day** is a calendar day of the `TZ` setting's zone (UTC by default), as the pages show times: its
 *   period is given as the two instants it begins and ends (UTC). A movement belongs to the day it was created
 *   (as `/ops/payments.csv?from=&to=` chooses rows, in UTC days), whatever became of it later.
 * - **A movement** is one operation (payment, request, purchase, payout, approval) in its state as the journal
 *   holds it when the statement is made (`made`), in every state (the totals say which completed).
 * - **Totals** are summed here from the very rows the statement lists (decimal, never a binary float), so a
 *   statement always adds up to itself; an amount is never summed with another currency's.
 * - **The head of the day**: the chain's last event written in the day or before it (`at` before its end):
 *   `npm run journal:verify -- --head '<seq> <sha256>'` checks it later.
 *
 * The rows are read from one cursor of the journal (src/journal/journal.ts `stream`) and written as they come:
 * a statement of any size holds one batch in memory.
 */
import { Decimal } from 'decimal.js';
import { sql, type Kysely } from 'kysely';
import type { ChainHead } from '../journal/chain.js';
import type { Journal } from '../journal/journal.js';
import { OPERATION_KINDS, OPERATION_STATES, type Operation, type Schema } from '../journal/schema.js';
import { dayBounds } from '../local-time.js';

/** Rows fetched from the journal's cursor at a time. */
const BATCH = 500;

/** The day a statement covers. */
export interface StatementPeriod {
  /** The calendar day, `YYYY-MM-DD`, in `zone`. */
  date: string;
  /** The IANA zone whose day it is (the `TZ` setting). */
  zone: string;
  /** When the day begins and ends, `[from, to)`. */
  from: Date;
  to: Date;
}

/** One money movement as the statement gives it. */
export interface Movement {
  /** Our short reference, the one people read out (`MC-7K2QX`). */
  ref: string;
  /** The service's id, once it answered. */
  id: string | null;
  /** Our Duplicate-Check-Key (the service's `metadata.ref`). */
  key: string;
  kind: string;
  state: string;
  amount: string;
  currency: string;
  payee: string;
  payeeName: string | null;
  channel: string;
  /** Who asked: the channel's user id (a phone number on USSD). */
  user: string;
  created: string;
  updated: string;
}

/** A kind and state's count and sum, in one currency. */
export interface StatementTotal {
  currency: string;
  kind: string;
  state: string;
  count: number;
  /** The sum, a decimal string in `currency`. */
  amount: string;
}

/** One currency's movements: how many, and the totals by kind and state. */
export interface CurrencyTotals {
  currency: string;
  count: number;
  totals: StatementTotal[];
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** Whether `value` is a calendar day `YYYY-MM-DD`. */
export function isDay(value: string): boolean {
  const day = new Date(`${value}T00:00:00Z`);
  return DAY.test(value) && !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === value;
}

/** The period of `date` (a calendar day) in `zone`. */
export function statementPeriod(date: string, zone: string): StatementPeriod {
  return { date, zone, ...dayBounds(date, zone) };
}

const iso = (at: Date | string): string => (at instanceof Date ? at : new Date(at)).toISOString();

export function movementOf(op: Operation): Movement {
  return {
    ref: op.short_ref,
    id: op.service_id,
    key: op.ref,
    kind: op.kind,
    state: op.state,
    amount: op.amount,
    currency: op.currency,
    payee: op.payee,
    payeeName: op.payee_name,
    channel: op.channel,
    user: op.channel_user,
    created: iso(op.created),
    updated: iso(op.updated),
  };
}

/** The totals of the movements added to it, per currency, kind and state. */
export class StatementTotals {
  private readonly sums = new Map<string, { count: number; amount: Decimal }>();

  add(m: Pick<Movement, 'currency' | 'kind' | 'state' | 'amount'>): void {
    const key = `${m.currency}\u0000${m.kind}\u0000${m.state}`;
    const sum = this.sums.get(key) ?? { count: 0, amount: new Decimal(0) };
    sum.count += 1;
    sum.amount = sum.amount.plus(m.amount);
    this.sums.set(key, sum);
  }

  /** Currencies in order, each with its count and totals (kinds and states in the journal's order). */
  result(): CurrencyTotals[] {
    const byCurrency = new Map<string, CurrencyTotals>();
    const rank = (list: readonly string[], v: string) => (list.includes(v) ? list.indexOf(v) : list.length);
    const keys = [...this.sums.keys()]
      .map((k) => k.split('\u0000') as [string, string, string])
      .sort(
        ([c1, k1, s1], [c2, k2, s2]) =>
          c1.localeCompare(c2) ||
          rank(OPERATION_KINDS, k1) - rank(OPERATION_KINDS, k2) ||
          rank(OPERATION_STATES, s1) - rank(OPERATION_STATES, s2),
      );
    for (const [currency, kind, state] of keys) {
      const sum = this.sums.get(`${currency}\u0000${kind}\u0000${state}`)!;
      const entry = byCurrency.get(currency) ?? { currency, count: 0, totals: [] };
      entry.count += sum.count;
      entry.totals.push({ currency, kind, state, count: sum.count, amount: sum.amount.toFixed() });
      byCurrency.set(currency, entry);
    }
    return [...byCurrency.values()];
  }
}

/**
 * The chain's head of the day: its last event written before the day ended (undefined when none was). For
 * today, the head now.
 */
export async function headOfDay(db: Kysely<Schema>, end: Date): Promise<ChainHead | undefined> {
  // From the head back to the day's end: a few rows for a recent day.
  const { rows } = await sql<ChainHead>`
    select seq::text as seq, hash from operation_events where at < ${end}
    order by operation_events.seq desc limit 1`.execute(db);
  return rows[0];
}

/** The movements of the period, newest first, from one cursor; each also added to `totals`. */
export async function* movements(
  journal: Journal,
  period: StatementPeriod,
  totals: StatementTotals,
): AsyncGenerator<Movement> {
  for await (const op of journal.stream({ from: period.from, to: period.to }, BATCH)) {
    const m = movementOf(op);
    totals.add(m);
    yield m;
  }
}

/** The head as exports write it: `<seq> <sha256 hex>`, or `none` (no event yet that day). */
export const headText = (head: ChainHead | undefined): string => (head ? `${head.seq} ${head.hash}` : 'none');

/**
 * The CSV's columns. One table: each row says what it is in `record`: `movement` (one operation; `count` 1),
 * `total` (a currency's kind and state: `count` and the summed `amount`), `currency` (a currency's `count` of
 * movements; no amount: kinds are not summed together); `date` and `journalHead` on every row, so a row copied
 * out of the file still says which day and which chain it belongs to.
 */
export const STATEMENT_COLUMNS = [
  'record',
  'date',
  'ref',
  'id',
  'key',
  'kind',
  'state',
  'amount',
  'currency',
  'count',
  'payee',
  'payeeName',
  'channel',
  'user',
  'created',
  'updated',
  'journalHead',
] as const;

type Column = (typeof STATEMENT_COLUMNS)[number];

const rowOf = (values: Partial<Record<Column, string | number | null>>): string[] =>
  STATEMENT_COLUMNS.map((c) => {
    const v = values[c];
    return v === null || v === undefined ? '' : String(v);
  });

/** The statement as CSV rows (for src/csv.ts's writer): the header, every movement, then the totals. */
export async function* statementCsvRows(
  journal: Journal,
  period: StatementPeriod,
  head: ChainHead | undefined,
): AsyncGenerator<string[]> {
  const totals = new StatementTotals();
  const common = { date: period.date, journalHead: headText(head) };
  yield [...STATEMENT_COLUMNS];
  for await (const m of movements(journal, period, totals)) {
    yield rowOf({ record: 'movement', ...m, count: 1, ...common });
  }
  for (const currency of totals.result()) {
    for (const t of currency.totals) yield rowOf({ record: 'total', ...t, ...common });
    yield rowOf({ record: 'currency', currency: currency.currency, count: currency.count, ...common });
  }
}

/**
 * The statement as JSON text, in chunks as the rows come: `{"date", "zone", "from", "to", "made",
 * "journalHead": {"seq", "hash"} | null, "movements": [...], "currencies": [{"currency", "count", "totals":
 * [{"currency", "kind", "state", "count", "amount"}]}]}`.
 */
export async function* statementJsonChunks(
  journal: Journal,
  period: StatementPeriod,
  head: ChainHead | undefined,
  made: Date = new Date(),
): AsyncGenerator<string> {
  const totals = new StatementTotals();
  const opening = JSON.stringify({
    date: period.date,
    zone: period.zone,
    from: period.from.toISOString(),
    to: period.to.toISOString(),
    made: made.toISOString(),
    journalHead: head ?? null,
  });
  yield `${opening.slice(0, -1)},"movements":[`;
  let first = true;
  for await (const m of movements(journal, period, totals)) {
    yield `${first ? '' : ','}\n${JSON.stringify(m)}`;
    first = false;
  }
  yield `\n],"currencies":${JSON.stringify(totals.result())}}\n`;
}

/** The totals and head of a day without writing its movements (the page's summary). */
export async function statementSummary(
  journal: Journal,
  period: StatementPeriod,
): Promise<{ head: ChainHead | undefined; currencies: CurrencyTotals[] }> {
  const head = await headOfDay(journal.db, period.to);
  const totals = new StatementTotals();
  for await (const _m of movements(journal, period, totals));
  return { head, currencies: totals.result() };
}
