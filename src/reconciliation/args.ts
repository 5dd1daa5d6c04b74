/**
 * The reconcile command's arguments: `--from YYYY-MM-DD --to YYYY-MM-DD` (whole UTC days, both included),
 * also written `--from=YYYY-MM-DD`. Anything else is refused with one line saying why.
 */
import { dayStart, type Period } from './run.js';

/** The longest period one run may cover: a year and a day (a leap year, and the day before it). */
export const MAX_PERIOD_DAYS = 367;

export const USAGE = 'usage: npm run reconcile -- --from YYYY-MM-DD --to YYYY-MM-DD';

export type Parsed = { ok: true; period: Period } | { ok: false; error: string };

/** Reads `argv` (the arguments after the script's name). `today` (UTC, `YYYY-MM-DD`) bounds the period's end. */
export function parseArgs(argv: readonly string[], today: string): Parsed {
  const given: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--(from|to)(?:=(.*))?$/.exec(arg);
    if (!m) return { ok: false, error: `unknown argument ${JSON.stringify(arg.slice(0, 40))}; ${USAGE}` };
    const name = m[1]!;
    if (name in given) return { ok: false, error: `--${name} given twice; ${USAGE}` };
    const value = m[2] ?? argv[++i];
    if (value === undefined || value.startsWith('--')) return { ok: false, error: `--${name} needs a day; ${USAGE}` };
    given[name] = value;
  }
  for (const name of ['from', 'to']) {
    if (!(name in given)) return { ok: false, error: `--${name} is required; ${USAGE}` };
    if (Number.isNaN(dayStart(given[name]!)))
      return { ok: false, error: `--${name} ${JSON.stringify(given[name]!.slice(0, 40))} is not a day (YYYY-MM-DD)` };
  }
  const from = given.from!;
  const to = given.to!;
  if (to < from) return { ok: false, error: `--to ${to} is before --from ${from}` };
  if (to > today) return { ok: false, error: `--to ${to} is after today (${today}, UTC)` };
  const days = (dayStart(to) - dayStart(from)) / 86_400_000 + 1;
  if (days > MAX_PERIOD_DAYS)
    return { ok: false, error: `the period is ${days} days; at most ${MAX_PERIOD_DAYS} in one run` };
  return { ok: true, period: { from, to } };
}

/** The command's output: one line per outcome, `<outcome> <count>`, in the order of OUTCOMES. */
export function countLines(counts: Record<string, number>, outcomes: readonly string[]): string[] {
  return outcomes.map((o) => `${o} ${counts[o] ?? 0}`);
}
