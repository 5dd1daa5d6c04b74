/**
 * Date text of collection requests (expiry_date, start_date, subscription_settings dates), read as UTC:
 * - relative: `tomorrow` (24 hours from now), `<n> <unit>` or `in <n> <unit>` with unit second, minute,
 *   hour, day or week (singular or plural): `24 hours`, `2 minutes`;
 * - `%d/%m/%Y` (midnight at the start of that day) and `%d/%m/%Y %H:%M:%S`;
 * - ISO 8601 (`2026-11-22T10:00:00Z`), for clients that send what they read.
 */
const UNIT_SECONDS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400, week: 604800 };

/** Epoch milliseconds of the text, relative to `now`; undefined when the text is none of the formats. */
export function parseWhen(text: string, now: number): number | undefined {
  const t = text.trim().toLowerCase();
  if (t === 'tomorrow') return now + 86_400_000;
  const relative = /^(?:in\s+)?(\d+)\s*(second|minute|hour|day|week)s?$/.exec(t);
  if (relative) return now + Number(relative[1]) * UNIT_SECONDS[relative[2]!]! * 1000;
  const dmy = /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?:\s+(\d{1,2}):(\d{2}):(\d{2}))?$/.exec(t);
  if (dmy) {
    const [, d, m, y, hh, mm, ss] = dmy;
    const ms = Date.UTC(+y!, +m! - 1, +d!, +(hh ?? 0), +(mm ?? 0), +(ss ?? 0));
    const back = new Date(ms);
    // Date.UTC rolls 31/02 over into March: a date that does not exist is not a date.
    return back.getUTCDate() === +d! && back.getUTCMonth() === +m! - 1 && +(hh ?? 0) < 24 ? ms : undefined;
  }
  if (/^\d{4}-\d{2}-\d{2}t\d{2}:\d{2}(:\d{2}(\.\d+)?)?(z|[+-]\d{2}:\d{2})$/.test(t)) {
    const ms = Date.parse(text.trim());
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/** The formats, for error messages. */
export const WHEN_FORMATS = '"tomorrow", "<n> minutes|hours|days", "DD/MM/YYYY" or "DD/MM/YYYY HH:MM:SS"';
