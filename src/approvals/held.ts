/**
 * Payments held for an approver (maker/checker), kept in the database (`held_payments`, migration 0210): the
 * hold, the decision on it (who and when), what sending it came to and whether the maker was told of it yet.
 * Redis holds none of it: a Redis loss loses no hold, no decision and no telling owed.
 *
 * - A hold is one row, inserted in the same transaction as its journal intent (state `held`), before it is
 *   posted anywhere. The same key held again (a repeated create) finds the row already there.
 * - A decision is one conditional update from `held` (`… WHERE state = 'held' … RETURNING`), in the same
 *   transaction as its journal event, committed before anything is sent or told: two checkers pressing at
 *   once, one pressing twice, or two processes, change it once. The update itself refuses the maker: the same
 *   identity, the same person, or an identity of the maker's person in the directory (`person_identities`).
 * - One process sends an approved payment at a time (`sending_until`, taken by a conditional update); a
 *   sending whose process died is taken again when that time has passed, under the same Duplicate-Check-Key.
 * - `tell_after` is set while a telling of the decision or outcome is owed to the maker; cleared once told.
 */
import { sql, type ColumnType, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { FlowCalls } from '../../flows/calls.js';
import type { Channel } from '../conversation/types.js';
import type { Schema } from '../journal/schema.js';

/** The create input the maker's flow gave createPayment (its key, metadata and names). */
export type PaymentInput = Parameters<FlowCalls['createPayment']>[0];

/**
 * `held`: waiting for an approver; `approved` (then sent) or `rejected` by one; `expired` undecided past
 * APPROVAL_TTL_HOURS; `cancelled`: never shown to an approver (the approvals channel could not be reached).
 */
export type HeldState = 'held' | 'approved' | 'rejected' | 'expired' | 'cancelled';

/** What sending an approved payment came to. */
export type SendOutcome =
  | {
      kind: 'sent';
      id: string;
      state: string;
      /** Our short ref (src/journal/short-ref.ts), when the journal gave one. */ shortRef?: string;
    }
  | { kind: 'sentBefore' }
  | { kind: 'unconfirmed' }
  | { kind: 'refused'; reason: string };

export interface Decision {
  /** The checker's channel and user id. */
  channel: Channel;
  userId: string;
  /** The checker's person in the directory (src/people), when the identity belongs to one. */
  person?: string;
  /** The checker's name as their channel gave it (shown to the maker), else the id. */
  name: string;
  /** When, ms since the epoch. */
  at: number;
  /** Why it was rejected. */
  reason?: string;
}

export interface HeldPayment {
  id: string;
  /** The Duplicate-Check-Key made when the maker confirmed: the approved payment is created under it. */
  key: string;
  /** Who made it: the identity that confirmed, and the person it belonged to then (src/people). */
  maker: { channel: Channel; userId: string; person?: string };
  payment: PaymentInput;
  heldAt: number;
  expiresAt: number;
  state: HeldState;
  decision?: Decision;
  outcome?: SendOutcome;
  /** Where the approval message is (Slack channel and ts), once posted. */
  board?: { channel: string; ts: string };
}

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T> = ColumnType<T, string, string>;

/** The row, as migration 0210 makes it. */
export interface HeldPaymentsTable {
  id: string;
  ref: string;
  maker_channel: string;
  maker_user: string;
  maker_person: string | null;
  amount: ColumnType<string, string, string>;
  currency: string;
  payment: Json<PaymentInput>;
  state: HeldState;
  held_at: Timestamp;
  expires_at: Timestamp;
  checker_channel: string | null;
  checker_user: string | null;
  checker_person: string | null;
  checker_name: string | null;
  decided_at: Timestamp | null;
  reason: string | null;
  board: Json<{ channel: string; ts: string }> | null;
  sending_until: Timestamp | null;
  outcome: Json<SendOutcome> | null;
  outcome_at: Timestamp | null;
  tell_after: Timestamp | null;
}

export interface ApprovalsTables {
  held_payments: HeldPaymentsTable;
}

export type ApprovalsSchema = Schema & ApprovalsTables;

type Row = Selectable<HeldPaymentsTable>;
type Db = Kysely<ApprovalsSchema>;
/**
 * What runs in a hold's or a decision's transaction beside its row (the journal's event), given the row as
 * written. It must query through `trx` only (PGlite is one connection: a query beside it would wait for ever).
 */
type Also = (trx: Transaction<ApprovalsSchema>, held: HeldPayment) => Promise<unknown>;

const ms = (at: Date | string | null): number | undefined =>
  at === null ? undefined : (at instanceof Date ? at : new Date(at)).getTime();

const json = (value: unknown): string => JSON.stringify(value);

/** PGlite and pg give jsonb back parsed; a string (a driver that did not) is parsed here. */
const parsed = <T>(value: T | string | null): T | undefined =>
  value === null ? undefined : typeof value === 'string' ? (JSON.parse(value) as T) : value;

function heldOf(row: Row): HeldPayment {
  const decision: Decision | undefined =
    row.checker_channel !== null && row.checker_user !== null && row.decided_at !== null
      ? {
          channel: row.checker_channel as Channel,
          userId: row.checker_user,
          ...(row.checker_person !== null ? { person: row.checker_person } : {}),
          name: row.checker_name ?? row.checker_user,
          at: ms(row.decided_at)!,
          ...(row.reason !== null ? { reason: row.reason } : {}),
        }
      : undefined;
  const board = parsed(row.board);
  const outcome = parsed(row.outcome);
  return {
    id: row.id,
    key: row.ref,
    maker: {
      channel: row.maker_channel as Channel,
      userId: row.maker_user,
      ...(row.maker_person !== null ? { person: row.maker_person } : {}),
    },
    payment: parsed(row.payment)!,
    heldAt: ms(row.held_at)!,
    expiresAt: ms(row.expires_at)!,
    state: row.state,
    ...(decision ? { decision } : {}),
    ...(outcome ? { outcome } : {}),
    ...(board ? { board } : {}),
  };
}

/** An id as the desk makes them (hex); anything else names no hold. */
const ID_SHAPE = /^[0-9a-f]{1,64}$/;

export class HeldPayments {
  private readonly db: Db;

  constructor(db: Kysely<Schema>) {
    this.db = db as unknown as Db;
  }

  async get(id: string): Promise<HeldPayment | null> {
    if (!ID_SHAPE.test(id)) return null;
    const row = await this.db.selectFrom('held_payments').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? heldOf(row) : null;
  }

  /** Holds waiting for an approver now, oldest first (at most `limit`). */
  async waiting(limit = 100): Promise<HeldPayment[]> {
    const rows = await this.db
      .selectFrom('held_payments')
      .selectAll()
      .where('state', '=', 'held')
      .orderBy('held_at')
      .limit(limit)
      .execute();
    return rows.map(heldOf);
  }

  /** How many wait for an approver. */
  async countWaiting(): Promise<number> {
    const row = await this.db
      .selectFrom('held_payments')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('state', '=', 'held')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Inserts the hold (state `held`) and runs `also` in the same transaction; the one already held under its id
   * when there is one (a repeated create: `also` runs again, so make it idempotent).
   */
  async create(held: HeldPayment, also?: Also): Promise<{ created: boolean; held: HeldPayment }> {
    return this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('held_payments')
        .values({
          id: held.id,
          ref: held.key,
          maker_channel: held.maker.channel,
          maker_user: held.maker.userId,
          maker_person: held.maker.person ?? null,
          amount: held.payment.amount,
          currency: held.payment.currency,
          payment: json(held.payment),
          state: 'held',
          held_at: new Date(held.heldAt),
          expires_at: new Date(held.expiresAt),
          checker_channel: null,
          checker_user: null,
          checker_person: null,
          checker_name: null,
          decided_at: null,
          reason: null,
          board: null,
          sending_until: null,
          outcome: null,
          outcome_at: null,
          tell_after: null,
        })
        .onConflict((oc) => oc.doNothing())
        .returningAll()
        .executeTakeFirst();
      const there = inserted
        ? undefined
        : await trx.selectFrom('held_payments').selectAll().where('id', '=', held.id).executeTakeFirst();
      const now = inserted ? heldOf(inserted) : there ? heldOf(there) : held;
      await also?.(trx, now);
      return { created: inserted !== undefined, held: now };
    });
  }

  /** Where the approval message is, once posted (kept only if none was kept yet). */
  async setBoard(id: string, board: { channel: string; ts: string }): Promise<void> {
    await this.db
      .updateTable('held_payments')
      .set({ board: json(board) })
      .where('id', '=', id)
      .where('board', 'is', null)
      .execute();
  }

  /**
   * Takes the decision, once: approves or rejects a hold still `held`, not past its time, and not the
   * checker's own (by identity or person, as the hold says and as the directory says now), committing `also`
   * (the journal's event) with it. An approval takes the sending for `sendingMs` in the same update. Returns
   * the decided hold, or null when the update changed nothing (read the row to say why).
   */
  async decide(
    id: string,
    decision: Decision & { state: 'approved' | 'rejected' },
    times: { now: number; sendingMs: number; tellAfterMs: number },
    also?: Also,
  ): Promise<HeldPayment | null> {
    if (!ID_SHAPE.test(id)) return null;
    const now = new Date(times.now);
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('held_payments')
        .set({
          state: decision.state,
          checker_channel: decision.channel,
          checker_user: decision.userId,
          checker_person: decision.person ?? null,
          checker_name: decision.name,
          decided_at: new Date(decision.at),
          reason: decision.reason ?? null,
          ...(decision.state === 'approved'
            ? { sending_until: new Date(times.now + times.sendingMs) }
            : { tell_after: new Date(times.now + times.tellAfterMs) }),
        })
        .where('id', '=', id)
        .where('state', '=', 'held')
        .where('expires_at', '>', now)
        .where((eb) =>
          eb.not(eb.and([eb('maker_channel', '=', decision.channel), eb('maker_user', '=', decision.userId)])),
        )
        .where(
          decision.person === undefined
            ? sql<boolean>`true`
            : sql<boolean>`maker_person is distinct from ${decision.person}::text`,
        )
        // The directory now: no identity of the maker's person is the checker's.
        .where(
          sql<boolean>`not exists (
            select 1 from person_identities m
            join person_identities k on k.person_id = m.person_id
            where m.channel = held_payments.maker_channel and m.user_id = held_payments.maker_user
              and k.channel = ${decision.channel} and k.user_id = ${decision.userId})`,
        )
        .where(
          sql<boolean>`not exists (
            select 1 from person_identities k
            where k.channel = ${decision.channel} and k.user_id = ${decision.userId}
              and k.person_id = held_payments.maker_person)`,
        )
        .returningAll()
        .executeTakeFirst();
      if (!row) return null;
      const after = heldOf(row);
      await also?.(trx, after);
      return after;
    });
  }

  /** Expires a hold still `held` whose time has passed, with `also`, once; the maker is owed a telling. */
  async expire(id: string, times: { now: number; tellAfterMs: number }, also?: Also): Promise<HeldPayment | null> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('held_payments')
        .set({ state: 'expired', tell_after: new Date(times.now + times.tellAfterMs) })
        .where('id', '=', id)
        .where('state', '=', 'held')
        .where('expires_at', '<=', new Date(times.now))
        .returningAll()
        .executeTakeFirst();
      if (!row) return null;
      const after = heldOf(row);
      await also?.(trx, after);
      return after;
    });
  }

  /** A hold nobody saw (its message could not be posted): cancelled, with `also`, unless it was posted meanwhile. */
  async cancel(id: string, also?: Also): Promise<HeldPayment | null> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('held_payments')
        .set({ state: 'cancelled' })
        .where('id', '=', id)
        .where('state', '=', 'held')
        .where('board', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!row) return null;
      const after = heldOf(row);
      await also?.(trx, after);
      return after;
    });
  }

  /** Takes the sending of an approved payment without an outcome whose last sending's time has passed. */
  async claimSending(id: string, now: number, sendingMs: number): Promise<HeldPayment | null> {
    const row = await this.db
      .updateTable('held_payments')
      .set({ sending_until: new Date(now + sendingMs) })
      .where('id', '=', id)
      .where('state', '=', 'approved')
      .where('outcome', 'is', null)
      .where((eb) => eb.or([eb('sending_until', 'is', null), eb('sending_until', '<=', new Date(now))]))
      .returningAll()
      .executeTakeFirst();
    return row ? heldOf(row) : null;
  }

  /** Keeps what sending came to (the first outcome only); the maker is owed a telling of it. */
  async recordOutcome(
    id: string,
    outcome: SendOutcome,
    times: { now: number; tellAfterMs: number },
  ): Promise<HeldPayment | null> {
    const row = await this.db
      .updateTable('held_payments')
      .set({
        outcome: json(outcome),
        outcome_at: new Date(times.now),
        sending_until: null,
        tell_after: new Date(times.now + times.tellAfterMs),
      })
      .where('id', '=', id)
      .where('state', '=', 'approved')
      .where('outcome', 'is', null)
      .returningAll()
      .executeTakeFirst();
    return row ? heldOf(row) : null;
  }

  /** The maker was told: nothing more is owed. */
  async told(id: string): Promise<void> {
    await this.db.updateTable('held_payments').set({ tell_after: null }).where('id', '=', id).execute();
  }

  /** Takes a telling owed since before `now` (for `retryMs` more), when it is not older than `since`. */
  async claimTelling(id: string, now: number, retryMs: number): Promise<HeldPayment | null> {
    const row = await this.db
      .updateTable('held_payments')
      .set({ tell_after: new Date(now + retryMs) })
      .where('id', '=', id)
      .where('tell_after', '<=', new Date(now))
      .returningAll()
      .executeTakeFirst();
    return row ? heldOf(row) : null;
  }

  /**
   * What the sweep must look at now: holds past their time, approved ones whose sending's time has passed
   * without an outcome, and tellings owed (no older than `tellSince`). At most `limit` of each.
   */
  async due(
    now: number,
    tellSince: number,
    limit = 100,
  ): Promise<{ expired: string[]; unsent: string[]; untold: string[] }> {
    const at = new Date(now);
    const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id);
    const [expired, unsent, untold] = await Promise.all([
      this.db
        .selectFrom('held_payments')
        .select('id')
        .where('state', '=', 'held')
        .where('expires_at', '<=', at)
        .limit(limit)
        .execute(),
      this.db
        .selectFrom('held_payments')
        .select('id')
        .where('state', '=', 'approved')
        .where('outcome', 'is', null)
        .where((eb) => eb.or([eb('sending_until', 'is', null), eb('sending_until', '<=', at)]))
        .limit(limit)
        .execute(),
      this.db
        .selectFrom('held_payments')
        .select('id')
        .where('tell_after', '<=', at)
        .where(sql<boolean>`coalesce(outcome_at, decided_at, expires_at) > ${new Date(tellSince)}`)
        .limit(limit)
        .execute(),
    ]);
    return { expired: ids(expired), unsent: ids(unsent), untold: ids(untold) };
  }

  /** The holds of these refs (the operator's pages), by ref. */
  async byRefs(refs: string[]): Promise<Map<string, HeldPayment>> {
    if (refs.length === 0) return new Map();
    const rows = await this.db.selectFrom('held_payments').selectAll().where('ref', 'in', refs).execute();
    return new Map(rows.map((row) => [row.ref, heldOf(row)]));
  }
}
