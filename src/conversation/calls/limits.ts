/**
 * Where a person's daily totals and the wrong tries of their secrets are kept, and what decides a limit or a
 * lock: one small interface, two places.
 * - The database (src/people/limits.ts, PostgreSQL or the demo's PGlite): what every product start uses, since
 *   every start opens one (src/app.ts). A reservation is a row written and committed with the payment's intent,
 *   before the money call;
 *   the day's total is the database's, taken under a row lock; tries and the locks they cause are rows too.
 *   Emptying Redis changes nothing.
 * - The store ({@link storeLimits}): counters in Redis or in memory, for a setup with no database at
 *   all (unit tests of the policy and the flows' services). Not a production path: a Redis loss forgets them.
 */
import { keys } from '../../store/keys.js';
import type { Store } from '../../store/types.js';

/** One payment's reservation in its person's total of the day. */
export interface Reservation {
  /** Our ref: the payment's Duplicate-Check-Key. Reserving again under it changes nothing. */
  ref: string;
  person: string;
  /** Upper case. */
  currency: string;
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  /** The amount as a decimal string. */
  amount: string;
  /** The amount in minor units (hundredths, rounded up). */
  minor: number;
  /** The daily limit in minor units: the total after this reservation may not pass it. */
  limit: number;
}

/**
 * What tries are counted for: `pin` a person's wrong PINs and wrong one-time codes (one counter, so neither
 * gives more tries than the other), `link-tries` the link codes tried from one chat account (the only thing
 * known of whoever types a wrong one), `link-made` the link codes made for a person.
 */
export type TryScope = 'pin' | 'link-tries' | 'link-made';

/** Why a person's PIN was locked, as the People page and the journal say it. */
export type LockReason = 'wrong PIN' | 'wrong one-time code';

/** Why a reservation was given back. */
export type GiveBackReason =
  'refused by the service' | 'ended without money moving' | 'intent not recorded' | 'run lost before the call';

export interface Limits {
  /** `database` or `store`: which one decides (the start's log and the tests read it). */
  readonly where: 'database' | 'store';
  /** The person's total in `currency` on `day`, in minor units (reservations not given back). */
  spent(person: string, currency: string, day: string): Promise<number>;
  /**
   * Reserves `r.minor` in the person's total of the day unless it would pass `r.limit`, once per `r.ref` (a
   * reservation already made, held or given back, answers ok and changes nothing). Returns whether it is
   * reserved and the total (after it, when reserved; before, when refused).
   */
  reserve(r: Reservation): Promise<{ ok: boolean; total: number }>;
  /** Gives a held reservation back, once; false for one given back already or never made. */
  giveBack(ref: string, reason: GiveBackReason): Promise<boolean>;
  /**
   * Counts one try of `subject` in `scope` before its secret is compared, unless `max` were already counted
   * within the window; the window ends `windowSeconds` after the last counted try. Returns whether it was
   * counted and the count.
   */
  countTry(
    scope: TryScope,
    subject: string,
    max: number,
    windowSeconds: number,
  ): Promise<{ ok: boolean; total: number }>;
  /** The tries counted within the window (0 once it ended). */
  tries(scope: TryScope, subject: string): Promise<number>;
  /** Forgets the tries (the right secret was typed). */
  clearTries(scope: TryScope, subject: string): Promise<void>;
  /**
   * The wrong tries reached the limit: the person's PIN is locked until `until` (ms), and why. The database
   * writes `persons.pin_locked_until` for a person of the directory (journalled); the tries themselves lock
   * everyone else until their window ends.
   */
  lockPin(person: string, until: number, why: LockReason): Promise<void>;
}

/** Daily totals outlive their UTC day by a day in the store, so a late payment near midnight still counts. */
const DAILY_TOTAL_TTL_SECONDS = 2 * 24 * 3600;

const tryKey = (scope: TryScope, subject: string): string =>
  scope === 'pin'
    ? keys.pinFailures(subject)
    : scope === 'link-tries'
      ? keys.linkTries(subject)
      : keys.linkCodesMade(subject);

/**
 * The counters of the store (Redis or memory), for a setup without any database. Their windows are the
 * keys' expiries; the lock is the tries counter itself.
 */
export function storeLimits(store: Store): Limits {
  return {
    where: 'store',
    async spent(person, currency, day) {
      // Adding nothing reads the total (both stores answer it without a write).
      const read = await store.addWithinLimit(
        keys.dailySpend(person, currency, day),
        0,
        Number.MAX_SAFE_INTEGER,
        DAILY_TOTAL_TTL_SECONDS,
      );
      return read.total;
    },
    reserve: (r) =>
      store.reserve(
        keys.spendReservation(r.ref),
        keys.dailySpend(r.person, r.currency, r.day),
        r.minor,
        r.limit,
        DAILY_TOTAL_TTL_SECONDS,
      ),
    giveBack: (ref) => store.giveBack(keys.spendReservation(ref)),
    countTry: (scope, subject, max, windowSeconds) =>
      store.addWithinLimit(tryKey(scope, subject), 1, max, windowSeconds),
    async tries(scope, subject) {
      return (await store.addWithinLimit(tryKey(scope, subject), 0, Number.MAX_SAFE_INTEGER, 1)).total;
    },
    clearTries: (scope, subject) => store.delete(tryKey(scope, subject)),
    lockPin: async () => {},
  };
}
