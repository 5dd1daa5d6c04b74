/**
 * The journal of money: what happened to every payment, collection request, purchase, payout and held
 * approval, as append-only events (`operation_events`) beside one current-state row per operation
 * (`operations`, the only row ever updated in place, for searches).
 *
 * Every write is idempotent by its event key (`INSERT … ON CONFLICT (event_key) DO NOTHING`): the same fact
 * written twice (a retry, a duplicate notification, a buffered write replayed) is one row, and the
 * current-state row moves only when the event is new, in the same statement, so each write is one round trip
 * and either both land or neither does.
 *
 * The current-state row never goes back: a state replaces the row's only when it is as far or further along
 * (intended/held, then submitted, then a final word), and a final word is replaced only by a correction
 * (source `reconciliation` or `operator`). Every report is kept as an event all the same.
 *
 * Never put a PIN, token or key in an event's data: our ref (the Duplicate-Check-Key) is the only secret-like
 * value here, and it is the operation's name in the service's `metadata.ref` too.
 */
import { createHash, randomBytes } from 'node:crypto';
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import { giveBackCall, reserveCall, takeAgainCall } from '../people/spend.js';
import type { GiveBackReason, Reservation } from '../conversation/calls/limits.js';
import { chainHead, type ChainHead } from './chain.js';
import { CHAIN_LOCK } from './migrations/0301_chain.js';
import type { Owed, OwedSchema } from './owed.js';
import { readShortRef } from './short-ref.js';
import {
  FINAL_STATES,
  OPERATION_STATES,
  type EventSource,
  type EventType,
  type Operation,
  type OperationEvent,
  type OperationKind,
  type OperationState,
  type Schema,
} from './schema.js';

/** What is written before the money-moving call. */
export interface Intent {
  ref: string;
  kind: OperationKind;
  /** A decimal string. */
  amount: string;
  currency: string;
  payee: string;
  payeeName?: string;
  channel: string;
  channelUser: string;
  chat: string;
  role: string;
  flow: string;
  /** Default `intended`; `held` for a payment waiting for an approver. */
  state?: 'intended' | 'held';
  /** A payout's ref, for a payment of that payout. */
  parentRef?: string;
  /** Default now. */
  at?: Date;
  /** Anything else worth keeping (never a PIN, token or key). */
  data?: Record<string, unknown>;
  /**
   * The outcome owed to the person who asked, and when it is first checked (./owed.ts): its row is inserted in
   * the same statement, so no intent is written without the check that settles it. Not for a held intent.
   */
  owed?: Owed;
}

/** One fact about an operation, as every write below builds it. */
export interface JournalEvent {
  ref: string;
  type: EventType;
  source: EventSource;
  /** The fact's identity; the same key written twice is one row. */
  key: string;
  at: Date;
  data: Record<string, unknown>;
  /** Moves the current-state row (subject to the no-going-back rule). */
  state?: OperationState;
  serviceState?: string;
  serviceId?: string;
  /** The outcome the user was told (a state word). */
  toldState?: string;
  /**
   * Gives the payment's reservation in its person's daily total back, in the transaction that writes this event
   * (nothing was sent, or it ended without money moving): once, whatever repeats the write.
   */
  giveBack?: GiveBackReason;
  /**
   * Counts the payment's given-back reservation in its person's daily total again, in the transaction that writes
   * this event (a correction found its money moved: recorded failed, completed at the service). Never refused,
   * the limit notwithstanding; the event's data says so (`limitTakenAgain`). Once, whatever repeats the write.
   */
  takeLimitAgain?: boolean;
}

/** The service's answer to the create call. */
export interface Answer {
  /** Absent when the answer named nothing (the service already held our key: "already submitted"). */
  serviceId?: string;
  /** The service's word for the state it answered with. */
  serviceState?: string;
  /** Our word for it; default `submitted`. */
  state?: OperationState;
  source?: EventSource;
  at?: Date;
  data?: Record<string, unknown>;
}

/** The service said no to the create call. */
export interface Refusal {
  /** HTTP status, or undefined for a refusal decided here (e.g. nothing was made). */
  status?: number;
  reason: string;
  /** Default `refused`. */
  state?: OperationState;
  source?: EventSource;
  at?: Date;
  data?: Record<string, unknown>;
  /** The reservation of the refused payment is given back with the refusal (JournalEvent.giveBack). */
  giveBack?: GiveBackReason;
}

/** A state the service reported. */
export interface StateReport {
  state: OperationState;
  serviceState?: string;
  source: EventSource;
  at?: Date;
  serviceId?: string;
  /** Default `<ref>:state:<state>:<source>`: one row per state per way of learning it. */
  key?: string;
  data?: Record<string, unknown>;
  /** A state that ends the payment without money moving gives its reservation back (JournalEvent.giveBack). */
  giveBack?: GiveBackReason;
  /** A correction to a state in which money moved takes a given-back reservation again (JournalEvent). */
  takeLimitAgain?: boolean;
}

/** An approver's decision on a held payment. */
export interface ApprovalDecision {
  decision: 'approved' | 'rejected' | 'expired';
  /** Who decided (`<channel>:<user id>`, or an operator's name); absent when the hold expired. */
  by?: string;
  /** The name their channel gives them. */
  name?: string;
  reason?: string;
  at?: Date;
}

/** Something said to someone about an operation. */
export interface Telling {
  channel: string;
  /** The chat or number told. */
  to: string;
  text: string;
  /** The outcome it announces (a state word), if any. */
  outcome?: string;
  source?: EventSource;
  at?: Date;
  /** Default: a digest of channel, recipient and text (the same words to the same place are one telling). */
  key?: string;
}

/** The operator's search. Every filter is optional; all given must match. */
export interface SearchQuery {
  /** A phone number (international form): the payee, or the user on USSD. */
  phone?: string;
  /** As typed: our ref, the service's id, or the short ref (any case, with or without its dash). */
  ref?: string;
  /** The service's id. */
  id?: string;
  channel?: string;
  state?: OperationState;
  kind?: OperationKind;
  /** Created at or after. */
  from?: Date;
  /** Created before. */
  to?: Date;
  /** Default 50, at most 500. */
  limit?: number;
  /** The `next` of the page before. */
  cursor?: string;
}

export interface SearchPage {
  items: Operation[];
  /** Pass as `cursor` for the next page; undefined on the last. */
  next?: string;
}

/** Rank of each state: the current-state row never moves to a lower one. */
const RANK: Record<OperationState, number> = {
  intended: 0,
  held: 0,
  submitted: 1,
  completed: 2,
  failed: 2,
  refused: 2,
  rejected: 2,
  expired: 2,
  cancelled: 2,
};
const CORRECTING: readonly string[] = ['reconciliation', 'operator'];

/**
 * Whether an event reporting `next` (learned from `source`) moves an operation that stands at `current` (the
 * journal's own rule, for readers of its events such as events out): never back, a final word only by a
 * correction, and a state is no change of itself.
 */
export function stateMoves(current: OperationState | undefined, next: OperationState, source: EventSource): boolean {
  return current === undefined || (current !== next && replaceable(next, source).includes(current));
}

/**
 * Which current states a new one may replace. A correction may replace a final word with another, never take
 * one back (the database's trigger refuses that too, migration 0300).
 */
function replaceable(next: OperationState, source: EventSource): OperationState[] {
  const rank = RANK[next];
  if (CORRECTING.includes(source)) return OPERATION_STATES.filter((s) => RANK[s] <= rank);
  return OPERATION_STATES.filter((s) => RANK[s] <= rank && !(FINAL_STATES.includes(s) && s !== next));
}

const digest = (...parts: string[]): string =>
  createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 22);

type Db = Kysely<Schema> | Transaction<Schema>;

/** What our ref can be: 1 to 100 printable characters without spaces (a UUID with its flow, `pay_…`). */
export const REF_SHAPE = /^[\x21-\x7e]{1,100}$/;

/** A query the search cannot read (a cursor it did not give); its message names the parameter. */
export class SearchError extends Error {
  override name = 'SearchError';
}

/** The daily limit refused an intent's reservation (Journal.intend): nothing was written; `total` spent before. */
export class OverDailyLimit extends Error {
  override name = 'OverDailyLimit';
  constructor(readonly total: number) {
    super('over the daily limit: no intent written');
  }
}

export class Journal {
  constructor(readonly db: Kysely<Schema>) {}

  /**
   * Writes the intent: the operation's row (state `intended`, or `held`) and its `intent` event, in one
   * statement (one round trip). Throws when the database does not take it: the caller must then not move the
   * money. Written again (a repeated attempt) it changes nothing. Returns the operation's short ref (the one
   * its row's insert drew from the sequence, or the row's own when it was there already).
   *
   * With `reservation`, the same statement first reserves the amount in its person's total of the day
   * (`spend_reserve`, migration 0320: the day's row locked, the limit checked): the reservation and the intent
   * commit together or neither does, and a reservation the limit refuses writes no intent and throws
   * {@link OverDailyLimit} (with the total before it). A reservation already made under the ref changes nothing.
   */
  async intend(intent: Intent, reservation?: Reservation): Promise<string> {
    const at = intent.at ?? new Date();
    const state = intent.state ?? 'intended';
    const data = {
      ...intent.data,
      kind: intent.kind,
      amount: intent.amount,
      currency: intent.currency,
      payee: intent.payee,
      ...(intent.payeeName ? { payeeName: intent.payeeName } : {}),
      channel: intent.channel,
      user: intent.channelUser,
      chat: intent.chat,
      role: intent.role,
      flow: intent.flow,
      state,
      ...(intent.parentRef ? { parentRef: intent.parentRef } : {}),
    };
    const owed = intent.owed && state === 'intended' ? intent.owed : undefined;
    if (reservation) return this.intendReserving(intent, reservation, at, state, data, owed);
    // The owed outcome's row rides in the same statement (a CTE of its own: written whether or not the operation's
    // row was there already, as for a held payment approved since).
    const base = owed
      ? (this.db as unknown as Kysely<OwedSchema>).with('owed', (db) =>
          db
            .insertInto('owed_outcomes')
            .values({
              ref: intent.ref,
              chat: intent.chat,
              owed: jsonOf(owed.record),
              next_check: owed.checkAt,
              created: at,
              build: owed.build ?? null,
            })
            .onConflict((oc) => oc.column('ref').doNothing())
            .returning('ref'),
        )
      : this.db;
    const row = await (base as Kysely<Schema>)
      .with('op', (db) =>
        db
          .insertInto('operations')
          .values({
            ref: intent.ref,
            kind: intent.kind,
            service_id: null,
            amount: intent.amount,
            currency: intent.currency,
            payee: intent.payee,
            payee_name: intent.payeeName ?? null,
            channel: intent.channel,
            channel_user: intent.channelUser,
            chat: intent.chat,
            role: intent.role,
            flow: intent.flow,
            state,
            service_state: null,
            told_state: null,
            parent_ref: intent.parentRef ?? null,
            created: at,
            updated: at,
          })
          .onConflict((oc) => oc.column('ref').doNothing())
          .returning('short_ref'),
      )
      .with('ev', (db) =>
        db
          .insertInto('operation_events')
          .values({
            ref: intent.ref,
            type: 'intent',
            source: 'create',
            event_key: `${intent.ref}:intent`,
            at,
            data: jsonOf(data),
          })
          .onConflict((oc) => oc.column('event_key').doNothing()),
      )
      // A repeat inserts nothing: the row's own short ref (the statement sees the journal as it was before it).
      .selectNoFrom((eb) =>
        eb.fn
          .coalesce(
            eb.selectFrom('op').select('short_ref'),
            eb.selectFrom('operations').select('short_ref').where('ref', '=', intent.ref),
          )
          .as('short_ref'),
      )
      .executeTakeFirst();
    if (!row?.short_ref) throw new Error(`the journal gave operation ${intent.ref} no short ref`);
    return row.short_ref;
  }

  /** {@link intend} with its reservation, in one statement (raw SQL: each insert only when it was reserved). */
  private async intendReserving(
    intent: Intent,
    reservation: Reservation,
    at: Date,
    state: 'intended' | 'held',
    data: Record<string, unknown>,
    owed: Owed | undefined,
  ): Promise<string> {
    if (reservation.ref !== intent.ref) throw new Error("a reservation is written under its intent's ref");
    // The reservation first (its function takes the day's row lock before the event's insert takes the chain's),
    // then the owed outcome, the operation and its event, only when it was reserved.
    const owedInsert = owed
      ? sql`, owed as (
          insert into owed_outcomes (ref, chat, owed, next_check, created, build)
          select ${intent.ref}, ${intent.chat}, ${jsonOf(owed.record)}::jsonb, ${owed.checkAt}::timestamptz,
            ${at}::timestamptz, ${owed.build ?? null}::bigint
          from r where r.ok
          on conflict (ref) do nothing
          returning ref
        )`
      : sql``;
    const { rows } = await sql<{ ok: boolean; total: string; short_ref: string | null }>`
      with r as (select * from ${reserveCall(reservation, at)})${owedInsert},
      op as (
        insert into operations (ref, kind, service_id, amount, currency, payee, payee_name, channel, channel_user,
          chat, role, flow, state, service_state, told_state, parent_ref, created, updated)
        select ${intent.ref}, ${intent.kind}, null, ${intent.amount}::numeric, ${intent.currency}, ${intent.payee},
          ${intent.payeeName ?? null}::text, ${intent.channel}, ${intent.channelUser}, ${intent.chat}, ${intent.role},
          ${intent.flow}, ${state}, null, null, ${intent.parentRef ?? null}::text, ${at}::timestamptz,
          ${at}::timestamptz
        from r where r.ok
        on conflict (ref) do nothing
        returning short_ref
      ),
      ev as (
        insert into operation_events (ref, type, source, event_key, at, data)
        select ${intent.ref}, 'intent', 'create', ${`${intent.ref}:intent`}, ${at}::timestamptz, ${jsonOf(data)}::jsonb
        from r where r.ok
        on conflict (event_key) do nothing
        returning id
      )
      select r.ok, r.total,
        coalesce((select short_ref from op), (select short_ref from operations where ref = ${intent.ref})) as short_ref
      from r`.execute(this.db);
    const written = rows[0]!;
    if (!written.ok) throw new OverDailyLimit(Number(written.total));
    if (!written.short_ref) throw new Error(`the journal gave operation ${intent.ref} no short ref`);
    return written.short_ref;
  }

  /** The service took the create call and named it (`serviceId`). */
  answered(ref: string, answer: Answer): Promise<boolean> {
    return this.append(Journal.answerEvent(ref, answer));
  }

  /** The service refused the create call (or we know nothing was made). */
  refused(ref: string, refusal: Refusal): Promise<boolean> {
    return this.append(Journal.refusalEvent(ref, refusal));
  }

  /** A state the service reported, with how we learned it. */
  stateReported(ref: string, report: StateReport): Promise<boolean> {
    return this.append(Journal.stateEvent(ref, report));
  }

  /** An approver's decision on a held payment. */
  approvalDecided(ref: string, decision: ApprovalDecision): Promise<boolean> {
    return this.append(Journal.approvalEvent(ref, decision));
  }

  /** Something said to someone about the operation. */
  told(ref: string, telling: Telling): Promise<boolean> {
    return this.append(Journal.tellingEvent(ref, telling));
  }

  /** The event an answer makes (for the buffered writer, which writes it later). */
  static answerEvent(ref: string, answer: Answer): JournalEvent {
    return {
      ref,
      type: 'answer',
      source: answer.source ?? 'create',
      key: `${ref}:answer`,
      at: answer.at ?? new Date(),
      data: {
        ...answer.data,
        ...(answer.serviceId ? { id: answer.serviceId } : {}),
        ...(answer.serviceState ? { serviceState: answer.serviceState } : {}),
        // Our word too, so a reader of the events alone (events out) knows the state it reached.
        state: answer.state ?? 'submitted',
      },
      state: answer.state ?? 'submitted',
      serviceId: answer.serviceId,
      serviceState: answer.serviceState,
    };
  }

  static refusalEvent(ref: string, refusal: Refusal): JournalEvent {
    return {
      ref,
      type: 'refusal',
      source: refusal.source ?? 'create',
      key: `${ref}:refusal`,
      at: refusal.at ?? new Date(),
      data: {
        ...refusal.data,
        ...(refusal.status !== undefined ? { status: refusal.status } : {}),
        reason: refusal.reason,
        state: refusal.state ?? 'refused',
      },
      state: refusal.state ?? 'refused',
      ...(refusal.giveBack ? { giveBack: refusal.giveBack } : {}),
    };
  }

  static stateEvent(ref: string, report: StateReport): JournalEvent {
    return {
      ref,
      type: 'state',
      source: report.source,
      key: report.key ?? `${ref}:state:${report.state}:${report.source}`,
      at: report.at ?? new Date(),
      data: {
        ...report.data,
        state: report.state,
        ...(report.serviceState ? { serviceState: report.serviceState } : {}),
        ...(report.serviceId ? { id: report.serviceId } : {}),
      },
      state: report.state,
      serviceState: report.serviceState,
      serviceId: report.serviceId,
      ...(report.giveBack ? { giveBack: report.giveBack } : {}),
      ...(report.takeLimitAgain ? { takeLimitAgain: true } : {}),
    };
  }

  static approvalEvent(ref: string, decision: ApprovalDecision): JournalEvent {
    const state: OperationState | undefined =
      decision.decision === 'approved' ? 'intended' : decision.decision === 'rejected' ? 'rejected' : 'expired';
    return {
      ref,
      type: 'approval',
      source: 'approval',
      key: `${ref}:approval`,
      at: decision.at ?? new Date(),
      data: {
        decision: decision.decision,
        ...(decision.by ? { by: decision.by } : {}),
        ...(decision.name ? { name: decision.name } : {}),
        ...(decision.reason ? { reason: decision.reason } : {}),
      },
      state,
    };
  }

  static tellingEvent(ref: string, telling: Telling): JournalEvent {
    return {
      ref,
      type: 'telling',
      source: telling.source ?? 'notification',
      key: telling.key ?? `${ref}:telling:${digest(telling.channel, telling.to, telling.text)}`,
      at: telling.at ?? new Date(),
      data: {
        channel: telling.channel,
        to: telling.to,
        text: telling.text,
        ...(telling.outcome ? { outcome: telling.outcome } : {}),
      },
      toldState: telling.outcome,
    };
  }

  /**
   * Appends one event and, when it is new, moves the operation's row, in one statement. Returns whether the
   * event was new. Throws when the database does not answer (the buffered writer keeps it and retries).
   */
  async append(event: JournalEvent, db: Db = this.db): Promise<boolean> {
    const at = event.at instanceof Date ? event.at : new Date(event.at);
    if (event.giveBack) {
      const { giveBack, ...rest } = event;
      // The reservation first: its rows are locked before the event's insert takes the chain's lock, in the
      // order an intent's statement takes them.
      const write = async (trx: Db) => {
        await sql`select ${giveBackCall(event.ref, giveBack, at)}`.execute(trx);
        return this.append(rest, trx);
      };
      return db.isTransaction ? write(db) : db.transaction().execute(write);
    }
    if (event.takeLimitAgain) {
      const { takeLimitAgain: _, ...rest } = event;
      // The same order of locks as a give-back: the reservation's rows, then the chain's.
      const write = async (trx: Db) => {
        const { rows } = await sql<{
          taken: boolean;
          total: string | null;
          over_limit: boolean | null;
        }>`select * from ${takeAgainCall(event.ref, at)}`.execute(trx);
        const taken = rows[0];
        const data = taken?.taken
          ? { ...rest.data, limitTakenAgain: { total: Number(taken.total), overLimit: taken.over_limit } }
          : rest.data;
        return this.append({ ...rest, data }, trx);
      };
      return db.isTransaction ? write(db) : db.transaction().execute(write);
    }
    const moves = event.state !== undefined || event.toldState !== undefined || event.serviceId !== undefined;
    const insert = (d: Db) =>
      d
        .insertInto('operation_events')
        .values({
          ref: event.ref,
          type: event.type,
          source: event.source,
          event_key: event.key,
          at,
          data: jsonOf(event.data),
        })
        .onConflict((oc) => oc.column('event_key').doNothing())
        .returning('id');
    if (!moves) {
      const rows = await insert(db).execute();
      return rows.length > 0;
    }
    const states = event.state ? replaceable(event.state, event.source) : [];
    const stateMoves = event.state
      ? sql<boolean>`operations.state in (${sql.join(states.map((s) => sql.lit(s)))})`
      : sql<boolean>`false`;
    const result = await sql<{ id: string; moved: boolean }>`
      with ev as (${insert(db)}),
      op as (
        update operations set
          state = case when ${stateMoves} then ${event.state ?? null}::text else operations.state end,
          service_state = case when ${stateMoves} and ${event.serviceState ?? null}::text is not null
            then ${event.serviceState ?? null}::text else operations.service_state end,
          service_id = coalesce(operations.service_id, ${event.serviceId ?? null}::text),
          told_state = coalesce(${event.toldState ?? null}::text, operations.told_state),
          updated = greatest(operations.updated, ${at}::timestamptz)
        where operations.ref = ${event.ref} and exists (select 1 from ev)
        returning operations.ref
      )
      select ev.id, exists (select 1 from op) as moved from ev`.execute(db);
    return result.rows.length > 0;
  }

  /**
   * Whether the database takes a write, at the cost of one statement that keeps nothing: a transaction id is
   * assigned, which a read-only server (a standby) refuses. Throws when it does not (/readyz).
   */
  async takesWrites(): Promise<void> {
    await sql`select txid_current()`.execute(this.db);
  }

  /** The operation's current-state row. */
  async byRef(ref: string): Promise<Operation | undefined> {
    return this.db.selectFrom('operations').selectAll().where('ref', '=', ref).executeTakeFirst();
  }

  /** The operation the service knows by this id. */
  async byServiceId(id: string): Promise<Operation | undefined> {
    return this.db.selectFrom('operations').selectAll().where('service_id', '=', id).executeTakeFirst();
  }

  /** Every event of an operation, oldest first. */
  async timeline(ref: string): Promise<OperationEvent[]> {
    return this.db
      .selectFrom('operation_events')
      .selectAll()
      .where('ref', '=', ref)
      .orderBy('at')
      .orderBy('id')
      .execute();
  }

  /**
   * Operations matching the query, newest first, one page. A keyset page: the cursor is the last row's
   * `(created, ref)` and the next page is the rows below it as a row value, `(created, ref) < ($1, $2)`, which
   * the index on `(created, ref)` reads from that point on: the last page costs what the first does.
   */
  async search(query: SearchQuery = {}): Promise<SearchPage> {
    const limit = Math.min(Math.max(Math.trunc(query.limit ?? 50), 1), 500);
    const rows = await this.matching(query)
      .limit(limit + 1)
      .execute();
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items, next: rows.length > limit && last ? writeCursor(last) : undefined };
  }

  /** The search's query without its limit: every filter, the cursor's row value, newest first. */
  private matching(query: Omit<SearchQuery, 'limit'>) {
    let q = this.db.selectFrom('operations').selectAll();
    if (query.phone) {
      const phone = query.phone;
      q = q.where((eb) => eb.or([eb('payee', '=', phone), eb('channel_user', '=', phone)]));
    }
    if (query.ref) {
      // As typed: our ref, the service's id, or the short ref in any case, with or without its dash.
      const typed = query.ref;
      const short = readShortRef(typed);
      q = q.where((eb) =>
        eb.or([eb('ref', '=', typed), eb('service_id', '=', typed), ...(short ? [eb('short_ref', '=', short)] : [])]),
      );
    }
    if (query.id) q = q.where('service_id', '=', query.id);
    if (query.channel) q = q.where('channel', '=', query.channel);
    if (query.state) q = q.where('state', '=', query.state);
    if (query.kind) q = q.where('kind', '=', query.kind);
    if (query.from) q = q.where('created', '>=', query.from);
    if (query.to) q = q.where('created', '<', query.to);
    const after = query.cursor === undefined ? undefined : readCursor(query.cursor);
    if (query.cursor !== undefined && !after) throw new SearchError('cursor is not one this search gave');
    if (after) q = q.where((eb) => eb(eb.refTuple('created', 'ref'), '<', eb.tuple(after.created, after.ref)));
    return q.orderBy('created', 'desc').orderBy('ref', 'desc');
  }

  /**
   * Every operation matching the query (from its cursor's row, when given), newest first, read from ONE
   * database cursor `batch` rows at a time (for exports that stream): one snapshot of the journal, one query
   * planned once, and memory bounded by the batch whatever the rows.
   *
   * On a PostgreSQL server the cursor lives in a read-only repeatable-read transaction on one pooled
   * connection, held while the export runs. PGlite is one connection for the whole process, so holding it
   * would stop every payment while a slow reader downloads: there the cursor is declared `WITH HOLD` (kept
   * past its statement, in the one session) and each fetch takes the connection only for itself. The cursor is
   * closed when the rows end, on an error, and when the reader stops early (the generator's `return`).
   */
  async *stream(query: Omit<SearchQuery, 'limit'> = {}, batch = 1000): AsyncGenerator<Operation> {
    const select = this.matching(query).compile();
    const name = `export_${randomBytes(8).toString('hex')}`;
    if ((await this.engine()) === 'pglite') {
      await this.db.executeQuery(
        CompiledQuery.raw(`declare "${name}" no scroll cursor with hold for ${select.sql}`, [...select.parameters]),
      );
      try {
        for (;;) {
          const { rows } = await sql<Operation>`fetch forward ${sql.lit(batch)} from ${sql.id(name)}`.execute(this.db);
          yield* rows;
          if (rows.length < batch) return;
        }
      } finally {
        await sql`close ${sql.id(name)}`.execute(this.db).catch(() => {});
      }
    }
    const held = pinned(this.db);
    try {
      const trx = await held.trx;
      await trx.executeQuery(
        CompiledQuery.raw(`declare "${name}" no scroll cursor for ${select.sql}`, [...select.parameters]),
      );
      for (;;) {
        const { rows } = await sql<Operation>`fetch forward ${sql.lit(batch)} from ${sql.id(name)}`.execute(trx);
        yield* rows;
        if (rows.length < batch) return;
      }
    } finally {
      await held.release();
    }
  }

  /** Which engine this is: PGlite says it runs on wasm32. Asked once. */
  private engine(): Promise<'postgres' | 'pglite'> {
    this.engineAsked ??= sql<{ version: string }>`select version() as version`
      .execute(this.db)
      .then((r) => (/wasm/i.test(r.rows[0]?.version ?? '') ? 'pglite' : 'postgres'));
    return this.engineAsked;
  }

  private engineAsked?: Promise<'postgres' | 'pglite'>;

  /**
   * Deletes what is older than `days`, in one transaction of retention's (the only one the journal's triggers let
   * delete): each operation whose row last changed before the cutoff and is no longer open (not intended, held
   * or submitted), with all its events; the events of people and operators who no longer exist, older than the
   * cutoff; the reconciliation runs started before it (with their items) and the corrections told before it.
   * Nothing younger, nothing open and nothing of a person who still exists is touched. Run it as the owner
   * (DATABASE_OWNER_URL) when there are two roles: the product's may not delete. Each deletion writes a receipt
   * (`journal_receipts`, and an event of the chain) with the range, the rows and the chain's head before and after.
   */
  async deleteOlderThan(days: number, now: Date = new Date()): Promise<Deleted> {
    const cutoff = new Date(now.getTime() - days * 86_400_000);
    return this.db.transaction().execute(async (trx) => {
      // The chain's lock first: no event is chained while retention deletes and writes its receipt.
      await sql`select set_config('momo.retention', 'on', true), pg_advisory_xact_lock(${CHAIN_LOCK})`.execute(trx);
      const head = (await chainHead(trx)) ?? { seq: '0', hash: '' };
      // The head event stays (the next event's place in the chain is after it), and so its operation.
      const gone = await trx
        .selectFrom('operations')
        .select('ref')
        .where('updated', '<', cutoff)
        .where('created', '<', cutoff)
        .where('state', 'not in', OPEN_STATES)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('operation_events as e')
                .select('e.id')
                .whereRef('e.operation_ref', '=', 'operations.ref')
                .where('e.seq', '>=', head.seq as never),
            ),
          ),
        )
        .execute();
      const refs = gone.map((r) => r.ref);
      const seen: Array<{ seq: string; at: Date }> = [];
      for (let i = 0; i < refs.length; i += 1000) {
        const chunk = refs.slice(i, i + 1000);
        seen.push(
          ...(await trx.deleteFrom('operation_events').where('ref', 'in', chunk).returning(['seq', 'at']).execute()),
        );
        await trx.deleteFrom('operations').where('ref', 'in', chunk).execute();
      }
      // A person's or an operator's history goes only with them; the journal's own events (receipts) never.
      const { rows: orphans } = await sql<{ seq: string; at: Date }>`
        delete from operation_events e
        where e.at < ${cutoff} and e.operation_ref is null and e.seq < ${head.seq} and (
          (e.ref like 'person:%' and not exists (select 1 from persons p where 'person:' || p.id = e.ref))
          or (e.ref like 'operator:%' and not exists (select 1 from operators o where 'operator:' || o.name = e.ref)))
        returning e.seq::text as seq, e.at`.execute(trx);
      seen.push(...orphans);
      const runs = await sql`delete from reconciliation_runs where started < ${cutoff}`.execute(trx);
      const corrections = await sql`
        delete from reconciliation_corrections where told is not null and told < ${cutoff}`.execute(trx);
      const deleted: Deleted = {
        operations: refs.length,
        events: seen.length,
        reconciliation: Number(runs.numAffectedRows ?? 0) + Number(corrections.numAffectedRows ?? 0),
      };
      if (deleted.operations + deleted.events + deleted.reconciliation > 0) {
        await this.receipt(trx, { deleted, seen, cutoff, head, now });
      }
      return deleted;
    });
  }

  /**
   * Writes a deletion's receipt: an event of the chain (ref `journal:retention`), then its row in
   * `journal_receipts` with the chain's head before (the last event before the deletion) and after (that event).
   */
  private async receipt(
    trx: Transaction<Schema>,
    o: { deleted: Deleted; seen: Array<{ seq: string; at: Date }>; cutoff: Date; head: ChainHead; now: Date },
  ): Promise<void> {
    const seqs = o.seen.map((s) => BigInt(s.seq));
    const firstSeq = seqs.length ? seqs.reduce((a, b) => (b < a ? b : a)).toString() : null;
    const lastSeq = seqs.length ? seqs.reduce((a, b) => (b > a ? b : a)).toString() : null;
    const oldest = o.seen.length ? new Date(Math.min(...o.seen.map((s) => new Date(s.at).getTime()))) : null;
    const key = `journal:retention:${o.head.seq}:${o.cutoff.toISOString()}`;
    await this.append(
      {
        ref: 'journal:retention',
        type: 'retention',
        source: 'retention',
        key,
        at: o.now,
        data: {
          ...o.deleted,
          from: oldest?.toISOString() ?? null,
          to: o.cutoff.toISOString(),
          firstSeq,
          lastSeq,
          headBefore: o.head.hash,
          headBeforeSeq: o.head.seq,
        },
      },
      trx,
    );
    const after = await trx
      .selectFrom('operation_events')
      .select(['seq', 'hash'])
      .where('event_key', '=', key)
      .executeTakeFirstOrThrow();
    await sql`
      insert into journal_receipts (at, range_from, range_to, first_seq, last_seq, operations, events, reconciliation,
                                    head_before, head_before_seq, head_after, head_after_seq)
      values (${o.now}, ${oldest}, ${o.cutoff}, ${firstSeq}, ${lastSeq}, ${o.deleted.operations}, ${o.deleted.events},
              ${o.deleted.reconciliation}, ${o.head.hash}, ${o.head.seq}, ${after.hash}, ${after.seq})`.execute(trx);
  }
}

/** What a retention run deleted. */
export interface Deleted {
  operations: number;
  events: number;
  /** Reconciliation runs (their items go with them) and corrections already told. */
  reconciliation: number;
}

/** The states of an operation still under way: retention never deletes one. */
export const OPEN_STATES: readonly OperationState[] = ['intended', 'held', 'submitted'];

/** The final states in which no money moved: a payment ending in one gives its reservation back. */
export const ENDED_WITHOUT_MONEY: readonly OperationState[] = FINAL_STATES.filter((s) => s !== 'completed');

/**
 * The data as jsonb takes it: PostgreSQL refuses the NUL character in jsonb (and text), and words from outside
 * (a reason the service gives) could carry one; it is dropped rather than the fact.
 */
export function jsonOf(data: Record<string, unknown>): string {
  return JSON.stringify(data, (_key, value: unknown) =>
    typeof value === 'string' ? value.replaceAll('\u0000', '') : value,
  );
}

/**
 * True when the database refused this write for what it holds (a data exception or a constraint: SQLSTATE
 * classes 22 and 23): writing it again would fail again. Anything else (no answer, a connection lost, a
 * server shutting down, a timeout) may pass later.
 */
export function isRefusedForGood(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^(22|23)[0-9A-Z]{3}$/.test(code);
}

/**
 * One transaction (read only, repeatable read: one snapshot) on one connection, held open until `release`:
 * Kysely's transaction runs a callback, and a generator that yields between fetches needs it for longer.
 */
function pinned(db: Kysely<Schema>): { trx: Promise<Transaction<Schema>>; release(): Promise<void> } {
  let done!: () => void;
  const released = new Promise<void>((resolve) => (done = resolve));
  let give!: (trx: Transaction<Schema>) => void;
  let fail!: (error: unknown) => void;
  const trx = new Promise<Transaction<Schema>>((resolve, reject) => {
    give = resolve;
    fail = reject;
  });
  const ended = db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (t) => {
      give(t);
      await released;
    });
  ended.catch(fail);
  return {
    trx,
    release: async () => {
      done();
      await ended.catch(() => {});
    },
  };
}

/** The cursor of the page after `row` (what `search` gives as `next`). */
export function writeCursor(row: Pick<Operation, 'created' | 'ref'>): string {
  const created = row.created instanceof Date ? row.created.toISOString() : String(row.created);
  return Buffer.from(JSON.stringify([created, row.ref])).toString('base64url');
}

function readCursor(cursor: string): { created: Date; ref: string } | undefined {
  try {
    const [created, ref] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const date = typeof created === 'string' ? new Date(created) : undefined;
    // A forged cursor's ref reaches the database only if it is one a ref could be (a NUL, say, is refused by
    // PostgreSQL itself: a 503 for what is the caller's mistake).
    if (!date || Number.isNaN(date.getTime()) || typeof ref !== 'string' || !REF_SHAPE.test(ref)) return undefined;
    return { created: date, ref };
  } catch {
    return undefined;
  }
}
