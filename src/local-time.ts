/**
 * Times as a person reads them: in the organization's time zone (the `TZ` setting, default UTC) and always
 * with the zone's name, "2026-12-02 14:05 EAT" or "2026-12-02 11:05 UTC", never a bare UTC clock that reads
 * as local. /ops (src/ops/html.ts `when`) and the words of the flows (a payment received's date) use it;
 * exports and the journal keep ISO 8601 UTC. The zone's short name is the one East and West African
 * English uses (EAT, CAT, WAT, SAST); a zone without one reads "GMT+3".
 */

/** The zone every time is shown in; set once at start from the `TZ` setting (src/app.ts). */
let shownZone = 'UTC';

/** True when `zone` is an IANA time zone this runtime knows ("Africa/Nairobi", "UTC"). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Shows every later time in `zone` (an IANA zone: "Africa/Kampala", "UTC"). */
export function setShownTimeZone(zone: string): void {
  if (!isTimeZone(zone)) throw new RangeError(`unknown time zone ${zone}`);
  shownZone = zone;
  formats.clear();
}

/** The zone times are shown in. */
export function shownTimeZone(): string {
  return shownZone;
}

/** Formatters by zone and shape, made once: making one costs far more than using it. */
const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(zone: string, seconds: boolean): Intl.DateTimeFormat {
  const key = `${zone}|${seconds ? 1 : 0}`;
  let format = formats.get(key);
  if (!format) {
    // en-KE: its zone names are Africa's (EAT, WAT); the parts are put in our own order below.
    format = new Intl.DateTimeFormat('en-KE', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      ...(seconds ? { second: '2-digit' } : {}),
      hourCycle: 'h23',
      timeZoneName: 'short',
    });
    formats.set(key, format);
  }
  return format;
}

/** A date and time written without an offset ("2026-12-02 11:05:00"): the service's and ours are UTC. */
const NO_OFFSET = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

/**
 * `at` in the shown zone (or `options.zone`), "YYYY-MM-DD HH:MM ZONE" (with `:SS` when `seconds`); a text
 * without an offset is read as UTC; a value that is not a time is given back as it came.
 */
export function localTime(at: Date | string | number, options: { seconds?: boolean; zone?: string } = {}): string {
  const date =
    at instanceof Date
      ? at
      : new Date(typeof at === 'string' && NO_OFFSET.test(at.trim()) ? `${at.trim().replace(' ', 'T')}Z` : at);
  if (Number.isNaN(date.getTime())) return String(at);
  const parts = Object.fromEntries(
    formatOf(options.zone ?? shownZone, options.seconds === true)
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const clock = `${parts.hour}:${parts.minute}${options.seconds ? `:${parts.second}` : ''}`;
  return `${parts.year}-${parts.month}-${parts.day} ${clock} ${parts.timeZoneName}`;
}

/** `at`'s calendar date in `zone` (default the shown zone), `YYYY-MM-DD`. */
export function dayIn(at: Date, zone: string = shownZone): string {
  const parts = partsIn(at.getTime(), zone);
  return `${parts.year}-${parts.month}-${parts.day}`;
}

/**
 * The instants a calendar day of `zone` begins and ends, `[from, to)`: "2026-12-02" in Africa/Nairobi is
 * 2026-12-01T21:00Z to 2026-12-02T21:00Z. A day cut short or lengthened by a change of offset is as long as the
 * zone's clocks made it.
 */
export function dayBounds(day: string, zone: string = shownZone): { from: Date; to: Date } {
  const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return { from: new Date(midnight(day, zone)), to: new Date(midnight(next, zone)) };
}

/** The instant `day` begins in `zone`: its UTC midnight less the zone's offset then (asked twice, for a change). */
function midnight(day: string, zone: string): number {
  const utc = Date.parse(`${day}T00:00:00Z`);
  const first = utc - offsetAt(utc, zone);
  return utc - offsetAt(first, zone);
}

/** How far `zone`'s clocks are ahead of UTC at `at` (ms; negative west of Greenwich). */
function offsetAt(at: number, zone: string): number {
  const p = partsIn(at, zone);
  const n = (name: string) => Number(p[name] ?? 0);
  const asUtc = Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second'));
  return asUtc - (at - (((at % 1000) + 1000) % 1000));
}

function partsIn(at: number, zone: string): Record<string, string> {
  const key = `${zone}|parts`;
  let format = formats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formats.set(key, format);
  }
  return Object.fromEntries(format.formatToParts(new Date(at)).map((p) => [p.type, p.value]));
}
