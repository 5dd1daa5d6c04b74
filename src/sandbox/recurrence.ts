/**
 * Recurring collection requests (`subscription_settings`): the settings' rules, and the times of a series.
 * All times are UTC, as the spec says. The sandbox's reading, where the spec is silent:
 * - the series starts at `start_date` (required, in the future) and has an occurrence at every `frequency`
 *   step (default `daily`) up to and including `end_date`; a monthly or yearly step keeps the start's day
 *   of the month, or the month's last day when it has fewer days;
 * - `weekdays` and `months`, when given, keep only the steps that fall on those days and in those months;
 * - a series holds at most MAX_OCCURRENCES occurrences.
 */
import type { FieldErrors } from './errors.js';
import { parseWhen } from './when.js';

export const FREQUENCIES = ['yearly', 'monthly', 'weekly', 'daily', 'hourly', 'minutely'] as const;
export type Frequency = (typeof FREQUENCIES)[number];
const DEFAULT_FREQUENCY: Frequency = 'daily';
/** Most occurrences of one series: a minutely series over a year would otherwise make half a million requests. */
export const MAX_OCCURRENCES = 500;

const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const FIXED_STEP_MS: Partial<Record<Frequency, number>> = {
  minutely: 60_000,
  hourly: 3_600_000,
  daily: 86_400_000,
  weekly: 604_800_000,
};

export interface Recurrence {
  start: number;
  end: number;
  frequency: Frequency;
  /** UTC days of the week kept (0 = Sunday); null keeps every day. */
  weekdays: Set<number> | null;
  /** UTC months kept (0 = January); null keeps every month. */
  months: Set<number> | null;
}

/** Comma-separated names -> their indexes; undefined when one is not a name. */
function names(value: unknown, list: string[]): Set<number> | undefined {
  if (typeof value !== 'string') return undefined;
  const found = value.split(',').map((n) => list.indexOf(n.trim().toLowerCase()));
  return found.includes(-1) ? undefined : new Set(found);
}

/** Reads and checks subscription_settings; errors name `subscription_settings.<key>`. */
export function readRecurrence(
  settings: Record<string, unknown>,
  now: number,
  errors: FieldErrors,
): Recurrence | undefined {
  const field = (key: string) => `subscription_settings.${key}`;
  const date = (key: string): number | undefined => {
    const v = settings[key];
    if (typeof v !== 'string' || v.trim() === '') {
      errors.add(field(key), 'This field is required.');
      return undefined;
    }
    const at = /^\d{1,2}\/\d{1,2}\/\d{4} \d{1,2}:\d{2}:\d{2}$/.test(v.trim()) ? parseWhen(v, now) : undefined;
    if (at === undefined) errors.add(field(key), 'Enter a date as DD/MM/YYYY HH:MM:SS (UTC).');
    return at;
  };
  const start = date('start_date');
  const end = date('end_date');
  if (start !== undefined && start <= now) errors.add(field('start_date'), 'Must be in the future.');
  if (start !== undefined && end !== undefined && end <= start)
    errors.add(field('end_date'), 'Must be later than start_date.');
  const frequency = settings.frequency ?? DEFAULT_FREQUENCY;
  if (!FREQUENCIES.includes(frequency as Frequency))
    errors.add(field('frequency'), `Choose one of ${FREQUENCIES.join(', ')}.`);
  const weekdays = settings.weekdays === undefined ? null : names(settings.weekdays, WEEKDAYS);
  if (weekdays === undefined) errors.add(field('weekdays'), 'Give comma-separated day names.');
  const months = settings.months === undefined ? null : names(settings.months, MONTHS);
  if (months === undefined) errors.add(field('months'), 'Give comma-separated month names.');
  if (start === undefined || end === undefined || weekdays === undefined || months === undefined) return undefined;
  return { start, end, frequency: frequency as Frequency, weekdays, months };
}

/** The start plus `count` calendar months, on the start's day or the month's last day. */
function addMonths(start: number, count: number): number {
  const d = new Date(start);
  const month = d.getUTCMonth() + count;
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), month + 1, 0)).getUTCDate();
  return Date.UTC(
    d.getUTCFullYear(),
    month,
    Math.min(d.getUTCDate(), lastDay),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
  );
}

/** The `index`-th step of the series from its start (0 is the start), before the weekday and month filters. */
function step(r: Recurrence, index: number): number {
  const fixed = FIXED_STEP_MS[r.frequency];
  if (fixed !== undefined) return r.start + index * fixed;
  return addMonths(r.start, index * (r.frequency === 'yearly' ? 12 : 1));
}

const kept = (r: Recurrence, at: number): boolean =>
  (r.weekdays === null || r.weekdays.has(new Date(at).getUTCDay())) &&
  (r.months === null || r.months.has(new Date(at).getUTCMonth()));

/** The times of the series' occurrences, in order, at most MAX_OCCURRENCES. */
export function* occurrences(r: Recurrence): Generator<number, void, undefined> {
  let yielded = 0;
  for (let index = 0; yielded < MAX_OCCURRENCES; index++) {
    const at = step(r, index);
    if (at > r.end) return;
    if (kept(r, at)) {
      yielded++;
      yield at;
    }
  }
}
