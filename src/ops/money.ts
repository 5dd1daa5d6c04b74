/**
 * Money as the journal says it came out, for the /ops page: per UTC day (of creation), currency and kind,
 * how many operations and how much money `completed` (the service reported it done), `failed` (ended
 * unpaid: the service's failure, a refusal, an approver's rejection, expired, cancelled) and are `open`
 * (intended, held for approval, or submitted and not final yet). This replaces the funnel's "paid", which only
 * says the service accepted a request.
 */
import { Decimal } from 'decimal.js';
import { sql, type Kysely } from 'kysely';
import type { OperationState, Schema } from '../journal/schema.js';

/** Where an operation's state puts its money. */
export type MoneyBucket = 'completed' | 'failed' | 'open';

export const BUCKET_OF: Record<OperationState, MoneyBucket> = {
  completed: 'completed',
  failed: 'failed',
  refused: 'failed',
  rejected: 'failed',
  expired: 'failed',
  cancelled: 'failed',
  intended: 'open',
  held: 'open',
  submitted: 'open',
};

/** How many and how much: the total a decimal string, summed by the database (never a binary float). */
export interface CountAndTotal {
  count: number;
  total: string;
}

export interface MoneyRow {
  day: string;
  currency: string;
  kind: string;
  completed: CountAndTotal;
  failed: CountAndTotal;
  open: CountAndTotal;
}

export interface MoneyReport {
  /** The UTC days covered, oldest first. */
  days: string[];
  /** Newest day first, then currency and kind. */
  rows: MoneyRow[];
  /** Per currency and kind over all the days. */
  totals: Array<Omit<MoneyRow, 'day'>>;
}

export interface MoneyQuery {
  /** UTC days, today included. */
  days: number;
  channel?: string;
  /** Default now. */
  now?: Date;
}

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const zero = (): CountAndTotal => ({ count: 0, total: '0' });

/** Adds two decimal strings exactly (no binary float on the way). */
const addDecimal = (a: string, b: string): string => new Decimal(a).plus(b).toFixed();

/** One read: counts and sums grouped by day, currency, kind and state in the database. */
export async function moneyReport(db: Kysely<Schema>, query: MoneyQuery): Promise<MoneyReport> {
  const now = (query.now ?? new Date()).getTime();
  const today = Date.parse(`${dayOf(now)}T00:00:00Z`);
  const from = new Date(today - (query.days - 1) * 86_400_000);
  const days = Array.from({ length: query.days }, (_, i) => dayOf(from.getTime() + i * 86_400_000));
  const result = await sql<{
    day: string;
    currency: string;
    kind: string;
    state: OperationState;
    count: number | string;
    total: string;
  }>`
    select to_char(created at time zone 'UTC', 'YYYY-MM-DD') as day, currency, kind, state,
      count(*)::int as count, sum(amount)::text as total
    from operations
    where created >= ${from}${query.channel ? sql` and channel = ${query.channel}` : sql``}
    group by 1, 2, 3, 4`.execute(db);
  const rows = new Map<string, MoneyRow>();
  const totals = new Map<string, Omit<MoneyRow, 'day'>>();
  for (const r of result.rows) {
    const bucket = BUCKET_OF[r.state] ?? 'open';
    const row = rows.get(`${r.day}|${r.currency}|${r.kind}`) ?? {
      day: r.day,
      currency: r.currency,
      kind: r.kind,
      completed: zero(),
      failed: zero(),
      open: zero(),
    };
    rows.set(`${r.day}|${r.currency}|${r.kind}`, row);
    const total = totals.get(`${r.currency}|${r.kind}`) ?? {
      currency: r.currency,
      kind: r.kind,
      completed: zero(),
      failed: zero(),
      open: zero(),
    };
    totals.set(`${r.currency}|${r.kind}`, total);
    for (const target of [row[bucket], total[bucket]]) {
      target.count += Number(r.count);
      target.total = addDecimal(target.total, r.total);
    }
  }
  const order = (a: { currency: string; kind: string }, b: { currency: string; kind: string }) =>
    a.currency.localeCompare(b.currency) || a.kind.localeCompare(b.kind);
  return {
    days,
    rows: [...rows.values()].sort((a, b) => b.day.localeCompare(a.day) || order(a, b)),
    totals: [...totals.values()].sort(order),
  };
}
