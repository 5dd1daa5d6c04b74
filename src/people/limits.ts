/**
 * Limits and lock-outs kept by the database (migration 0200_limits), on PostgreSQL and on the demo's PGlite:
 * what the access policy asks once a start opened its database (src/people/start.ts hands it to the policy).
 *
 * - A reservation is a row of `spend_reservations` (our ref = the payment's Duplicate-Check-Key, unique), written
 *   in one transaction with the person's row of the day in `spend_days`, taken `FOR UPDATE` first: however many
 *   channels of one person pay at once, and in however many processes, their reservations are counted one after
 *   the other against one total (`spend_reserve`, migration 0320, one round trip). In the product a payment's
 *   reservation is written in the statement that writes its intent (src/journal/journal.ts intend) and given
 *   back in the transaction that journals its refusal; {@link DatabaseLimits.reserve} and
 *   {@link DatabaseLimits.giveBack} are the same calls on their own. Reserving again under the same ref changes
 *   nothing; a give-back marks the row (when, why) and lowers the day's total, once.
 * - Wrong tries are rows of `secret_tries`, counted in one statement before the secret is compared (no more than
 *   the limit are ever compared, whatever arrives at once). The try that reaches the limit locks the PIN: the
 *   person's `pin_locked_until` and `pin_locked_why` are written and journalled (src/people/people.ts lockPin),
 *   and the directory of every process learns it at its next look; the tries row locks it meanwhile, and locks
 *   a person matched only by a `*` rule, who has no row of their own.
 *
 * Redis holds none of this: emptying it changes no total and opens no lock.
 */
import { sql, type Kysely } from 'kysely';
import type { GiveBackReason, Limits, LockReason, Reservation, TryScope } from '../conversation/calls/limits.js';
import { OPEN_STATES } from '../journal/journal.js';
import { People } from './people.js';
import { giveBackCall, reserveCall } from './spend.js';
import type { PeopleSchema } from './schema.js';

export interface DatabaseLimitsOptions {
  /** Clock in ms (the windows of tries, the times written). Default Date.now. */
  now?: () => number;
}

export class DatabaseLimits implements Limits {
  readonly where = 'database' as const;
  private readonly now: () => number;
  private readonly people: People;

  constructor(
    private readonly db: Kysely<PeopleSchema>,
    options: DatabaseLimitsOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.people = new People(db, { now: this.now });
  }

  async spent(person: string, currency: string, day: string): Promise<number> {
    const row = await this.db
      .selectFrom('spend_days')
      .select('total')
      .where('person_id', '=', person)
      .where('currency', '=', currency)
      .where('day', '=', day)
      .executeTakeFirst();
    return Number(row?.total ?? 0);
  }

  async reserve(r: Reservation): Promise<{ ok: boolean; total: number }> {
    if (r.ref === '') throw new Error('a reservation needs its Duplicate-Check-Key');
    const { rows } = await sql<{
      ok: boolean;
      total: string;
    }>`select * from ${reserveCall(r, new Date(this.now()))}`.execute(this.db);
    return { ok: rows[0]!.ok, total: Number(rows[0]!.total) };
  }

  async giveBack(ref: string, reason: GiveBackReason): Promise<boolean> {
    const { rows } = await sql<{
      given: boolean;
    }>`select ${giveBackCall(ref, reason, new Date(this.now()))} as given`.execute(this.db);
    return rows[0]!.given;
  }

  async countTry(
    scope: TryScope,
    subject: string,
    max: number,
    windowSeconds: number,
  ): Promise<{ ok: boolean; total: number }> {
    const now = new Date(this.now());
    const until = new Date(this.now() + windowSeconds * 1000);
    // One statement: the row is locked while it is counted, so tries arriving at once are counted one by one.
    const counted = await sql<{ tries: number }>`
      insert into secret_tries (scope, subject, tries, until) values (${scope}, ${subject}, 1, ${until})
      on conflict (scope, subject) do update set
        tries = case when secret_tries.until <= ${now} then 1 else secret_tries.tries + 1 end,
        until = excluded.until
      where secret_tries.until <= ${now} or secret_tries.tries < ${max}
      returning tries`.execute(this.db);
    const row = counted.rows[0];
    if (row) return { ok: true, total: Number(row.tries) };
    return { ok: false, total: await this.tries(scope, subject) };
  }

  async tries(scope: TryScope, subject: string): Promise<number> {
    const row = await this.db
      .selectFrom('secret_tries')
      .select('tries')
      .where('scope', '=', scope)
      .where('subject', '=', subject)
      .where('until', '>', new Date(this.now()))
      .executeTakeFirst();
    return Number(row?.tries ?? 0);
  }

  async clearTries(scope: TryScope, subject: string): Promise<void> {
    await this.db.deleteFrom('secret_tries').where('scope', '=', scope).where('subject', '=', subject).execute();
  }

  async lockPin(person: string, until: number, why: LockReason): Promise<void> {
    await this.people.lockPin(person, until, why);
  }
}

/** How many rows of the limits one clean-up deleted. */
export interface LimitsDeleted {
  reservations: number;
  days: number;
  tries: number;
}

/**
 * Retention of the limits' rows (src/journal/retention.ts), older than `days` before `now`: the reservations of
 * days before the cutoff, but never one of a payment still open (intended, held, submitted: it may yet be given
 * back); the daily totals of those days once none of their reservations is left; the tries whose window ended
 * before the cutoff (a live lock's window has not ended). Several processes may run it at once. Plain SQL only:
 * `db` may see any schema (the journal's, or with the people's tables).
 */
export async function deleteLimitsOlderThan<DB>(
  db: Kysely<DB>,
  days: number,
  now: Date = new Date(),
): Promise<LimitsDeleted> {
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  const day = cutoff.toISOString().slice(0, 10);
  const reservations = await sql`
    delete from spend_reservations r where r.day < ${day}
      and not exists (select 1 from operations o where o.ref = r.ref and o.state in (${sql.join(
        OPEN_STATES.map((state) => sql.lit(state)),
      )}))`.execute(db);
  const totals = await sql`
    delete from spend_days d where d.day < ${day}
      and not exists (select 1 from spend_reservations r
        where r.person_id = d.person_id and r.currency = d.currency and r.day = d.day)`.execute(db);
  const tries = await sql`delete from secret_tries where until < ${cutoff}`.execute(db);
  return {
    reservations: Number(reservations.numAffectedRows ?? 0),
    days: Number(totals.numAffectedRows ?? 0),
    tries: Number(tries.numAffectedRows ?? 0),
  };
}
