/**
 * List endpoints: exact-match filters, `ordering`, `limit`/`offset` and the envelope
 * `{count, next, previous, results}` with absolute next/previous links.
 * Choices where the spec is silent: the default order is newest first (`-id`); `limit` is capped at
 * MAX_LIST_LIMIT (src/momo/assumptions.ts); a `limit`, `offset` or filter value that cannot be read is a 400 naming the parameter
 * (never silently ignored); `ordering` on a field the records do not have is a 400. Unknown query
 * parameters are ignored, as the spec's additive-change rule asks of clients in turn.
 */
import { Decimal } from 'decimal.js';
import type { Request } from 'express';
import { MAX_LIST_LIMIT } from '../momo/assumptions.js';
import { fieldError } from './errors.js';
import type { Wire } from './render.js';

const DEFAULT_LIMIT = 10;

export type Filter<T> = (record: T, value: string) => boolean;
export type Filters<T> = Record<string, Filter<T>>;

export interface Envelope {
  count: number;
  next: string | null;
  previous: string | null;
  results: Wire[];
}

/** One value of a query parameter (the last when repeated). */
export function queryValue(req: Request, name: string): string | undefined {
  const v = (req.query as Record<string, unknown>)[name];
  const last = Array.isArray(v) ? v[v.length - 1] : v;
  return typeof last === 'string' ? last : undefined;
}

export const exact =
  <T>(get: (r: T) => unknown): Filter<T> =>
  (r, v) => {
    const x = get(r);
    return x !== null && x !== undefined && String(x) === v;
  };

/** Phone filters: a missing leading `+` is added (a `+` sent unencoded arrives as a space). */
const withPlus = (v: string): string => {
  const t = v.trim();
  return t.startsWith('+') ? t : `+${t}`;
};

export const phoneExact =
  <T>(get: (r: T) => string | string[]): Filter<T> =>
  (r, v) => {
    const x = get(r);
    const want = withPlus(v);
    return Array.isArray(x) ? x.includes(want) : x === want;
  };

export const amountExact =
  <T>(get: (r: T) => Decimal | Decimal[]): Filter<T> =>
  (r, v) => {
    let want: Decimal;
    try {
      want = new Decimal(v.trim());
    } catch {
      throw fieldError('amount', 'Enter a number.');
    }
    const x = get(r);
    return (Array.isArray(x) ? x : [x]).some((d) => d.eq(want));
  };

/** `YYYY-MM-DD`, `YYYY-MM-DD HH:MM`, `YYYY-MM-DD HH:MM:SS` or ISO 8601, read as UTC. */
export function parseFilterDate(name: string, v: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?Z?)?$/.exec(v.trim());
  const ms = m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +(m[4] ?? 0), +(m[5] ?? 0), +(m[6] ?? 0)) : NaN;
  if (Number.isNaN(ms)) throw fieldError(name, 'Enter a valid date/time (YYYY-MM-DD HH:MM).');
  return ms;
}

/** `<prefix>_after` (inclusive) and `<prefix>_before` (inclusive) filters over a timestamp. */
export function dateRange<T>(prefix: string, get: (r: T) => number): Filters<T> {
  const after = parsedOnce(`${prefix}_after`);
  const before = parsedOnce(`${prefix}_before`);
  return {
    [`${prefix}_after`]: (r, v) => get(r) >= after(v),
    [`${prefix}_before`]: (r, v) => get(r) <= before(v),
  };
}

/** parseFilterDate of the value last read, kept: a filter reads the same value for every record of a list. */
function parsedOnce(name: string): (v: string) => number {
  let last: { v: string; ms: number } | undefined;
  return (v) => {
    if (last?.v !== v) last = { v, ms: parseFilterDate(name, v) };
    return last.ms;
  };
}

/** Keeps the records that pass every filter named in the query. */
export function applyFilters<T>(req: Request, records: T[], filters: Filters<T>): T[] {
  const active = Object.entries(filters).flatMap(([name, f]) => {
    const v = queryValue(req, name);
    return v === undefined ? [] : [[f, v] as const];
  });
  return records.filter((r) => active.every(([f, v]) => f(r, v)));
}

/** True when the query names any of these filters. */
export const hasFilters = (req: Request, filters: Filters<unknown>): boolean =>
  Object.keys(filters).some((name) => queryValue(req, name) !== undefined);

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  const na = typeof a === 'number' ? a : typeof a === 'string' && /^-?\d+(\.\d+)?$/.test(a) ? Number(a) : NaN;
  const nb = typeof b === 'number' ? b : typeof b === 'string' && /^-?\d+(\.\d+)?$/.test(b) ? Number(b) : NaN;
  if (!Number.isNaN(na) && !Number.isNaN(nb)) return na - nb;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

/** Sorts by `ordering` (default `-id`); the field must be one the records show. */
export function order(req: Request, rows: Wire[]): Wire[] {
  const ordering = queryValue(req, 'ordering')?.trim() || '-id';
  const desc = ordering.startsWith('-');
  const field = desc ? ordering.slice(1) : ordering;
  if (rows.length > 0 && !Object.hasOwn(rows[0]!, field)) throw fieldError('ordering', `Unknown field "${field}".`);
  return [...rows].sort((a, b) => (desc ? -1 : 1) * compare(a[field], b[field]) || compare(a.id, b.id));
}

function readCount(req: Request, name: string, fallback: number, min: number): number {
  const v = queryValue(req, name);
  if (v === undefined || v === '') return fallback;
  if (!/^\d+$/.test(v.trim()) || Number(v) < min) {
    throw fieldError(name, `A valid integer of at least ${min} is required.`);
  }
  return Number(v);
}

/** The page asked for by limit/offset. */
export function page<R = Wire>(req: Request, rows: R[]): { results: R[]; limit: number; offset: number } {
  const limit = Math.min(readCount(req, 'limit', DEFAULT_LIMIT, 1), MAX_LIST_LIMIT);
  const offset = readCount(req, 'offset', 0, 0);
  return { results: rows.slice(offset, offset + limit), limit, offset };
}

function link(req: Request, limit: number, offset: number): string {
  const url = new URL(`${req.protocol}://${req.get('host') ?? 'localhost'}${req.originalUrl}`);
  url.searchParams.set('limit', String(limit));
  if (offset > 0) url.searchParams.set('offset', String(offset));
  else url.searchParams.delete('offset');
  return url.toString();
}

const idOf = (r: unknown): unknown => (r as { id?: unknown }).id;

/**
 * Filters, orders and pages `records`, rendering each. Ordered by id (the default, and what a client paging a
 * long list asks), the records are sorted and paged first and only the page is rendered.
 */
export function list<T>(req: Request, records: T[], filters: Filters<T>, render: (r: T) => Wire): Envelope {
  const kept = applyFilters(req, records, filters);
  const ordering = queryValue(req, 'ordering')?.trim() || '-id';
  const byId = (ordering === 'id' || ordering === '-id') && kept.every((r) => typeof idOf(r) === 'number');
  let rows: unknown[];
  let shown: { results: Wire[]; limit: number; offset: number };
  if (byId) {
    const sign = ordering === '-id' ? -1 : 1;
    rows = [...kept].sort((a, b) => sign * ((idOf(a) as number) - (idOf(b) as number)));
    const got = page(req, rows as T[]);
    shown = { ...got, results: got.results.map(render) };
  } else {
    rows = order(req, kept.map(render));
    shown = page(req, rows as Wire[]);
  }
  const { results, limit, offset } = shown;
  return {
    count: rows.length,
    next: offset + limit < rows.length ? link(req, limit, offset + limit) : null,
    previous: offset > 0 ? link(req, limit, Math.max(0, offset - limit)) : null,
    results,
  };
}
