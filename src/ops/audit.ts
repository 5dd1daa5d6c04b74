/**
 * The operators' audit: one append-only row for every operator action (`operator_audit`, migration 0420), shown
 * at /ops/audit (audit-page.ts). Anything that does something for an operator, or refuses them, says so with
 * {@link OperatorAudit.record}: `record(actor, action, detail)`.
 *
 * - `actor`: the operator's name; {@link TOKEN_ACTOR} for a script with `Bearer OPS_TOKEN`; for a failed sign-in,
 *   the name that was tried, or {@link NOBODY}. {@link actorOf} reads it from a request that passed the /ops check.
 * - `action`: a word of {@link AUDIT_ACTIONS} (lower case, dots and dashes; the table refuses anything else).
 * - `detail`: what it was about, as an object (a filter, a row count, a ref, a reason, the caller's address).
 *   A value under a secret's name (a PIN, a password, a code, a token, a voucher: {@link SECRET_KEY}) is never
 *   kept: it is replaced by {@link MASK} and the row says how many were (`masked`).
 *
 * The rows follow the journal's rules: the database refuses an UPDATE, a DELETE and a TRUNCATE whatever role asks
 * (retention's transaction aside), and the product's role may only read and insert (src/journal/roles.ts).
 * `record` throws when the row was not written: an export or a change is then refused (nothing done unaudited);
 * a refusal or a failed sign-in whose row could not be written is logged and still refused ({@link recordQuietly}).
 */
import type { Response } from 'express';
import { sql, type ColumnType, type Generated, type Kysely } from 'kysely';
import { jsonOf } from '../journal/journal.js';
import type { Schema } from '../journal/schema.js';
import type { Logger } from '../log.js';

/** The table as Kysely sees it. */
export interface OperatorAuditTable {
  id: Generated<string>;
  at: ColumnType<Date, Date | string | undefined, never>;
  actor: string;
  action: string;
  detail: ColumnType<Record<string, unknown>, string, never>;
}

export interface AuditSchema {
  operator_audit: OperatorAuditTable;
}

/**
 * The actions recorded, each with what its detail holds. Another part adds its word here (one meaning a word).
 */
export const AUDIT_ACTIONS = {
  /** An operator signed in (detail: `via` form or basic, `address`). */
  'sign-in': 'signed in',
  /** A sign-in was refused (detail: `via`, `address`, `reason`: wrong password, too many tries, no CSRF token). */
  'sign-in-failed': 'sign-in refused',
  /** An operator signed out. */
  'sign-out': 'signed out',
  /** A request to /ops was refused (detail: `status` 401, 403 or 429, `method`, `path`, `address`). */
  refused: 'refused',
  /** A search of payments (detail: `filter`, `rows` on the page). */
  search: 'searched payments',
  /** One operation's timeline opened (detail: `ref`). */
  view: 'opened a timeline',
  /** An export (detail: `export` payments.json, payments.csv, statements…, audit…; `filter`; `rows`). */
  export: 'exported',
  /** An operator request made, approved, rejected (detail: `request`, `change`, `target`, `reason`). */
  'request.made': 'asked for a change',
  'request.approved': 'approved a change',
  'request.rejected': 'rejected a change',
  /**
   * The audit page read (detail: `filter`, `rows` on the page, `cursor` when a later page, `via`); its exports
   * (audit.json, audit.csv) are `export` rows.
   */
  'audit.read': 'read the audit',
  /** A reconciliation difference resolved (detail: the difference, `state`, `reason`). */
  resolve: 'resolved a difference',
  /** A delivery of an event out replayed (detail: `event`, `endpoint`). */
  replay: 'replayed a delivery',
  /** A change made on the People page that needs no second operator (detail: what changed). */
  change: 'changed',
} as const;
export type AuditAction = keyof typeof AUDIT_ACTIONS | (string & {});

/** The actor of a script that read with `Authorization: Bearer <OPS_TOKEN>`. */
export const TOKEN_ACTOR = 'token';
/** The actor of a refused request that named nobody. */
export const NOBODY = 'anonymous';
/** What a secret's value is replaced by. */
export const MASK = '••••';

/**
 * The names under which a value is a secret: a PIN (an exam pin, a person's PIN), a password, a one-time or link
 * code, a token, a voucher, a secret, a CSRF token. Matched against the end of each key of the detail, at any
 * depth, whatever its case (`pin`, `examPins`, `linkCode`, `new_password`); masking too much is the safe side.
 */
export const SECRET_KEY = /(pins?|password|passcode|secret|token|otp|codes?|vouchers?|csrf)$/i;

/** A detail with every secret's value masked, and how many were. */
export function maskSecrets(detail: Record<string, unknown>): { detail: Record<string, unknown>; masked: number } {
  let masked = 0;
  const walk = (value: unknown, depth: number): unknown => {
    if (depth > 8 || value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((v) => walk(v, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      if (SECRET_KEY.test(key) && v !== null && v !== undefined && v !== '') {
        masked += Array.isArray(v) ? v.length : 1;
        out[key] = Array.isArray(v) ? v.map(() => MASK) : MASK;
      } else out[key] = walk(v, depth + 1);
    }
    return out;
  };
  return { detail: walk(detail, 0) as Record<string, unknown>, masked };
}

/** Longest actor kept (a name tried at sign-in is cut to it). */
const ACTOR_MAX = 200;

/** One audit row as the pages and exports give it. */
export interface AuditItem {
  id: string;
  /** ISO 8601, UTC. */
  at: string;
  actor: string;
  action: string;
  detail: Record<string, unknown>;
}

export class OperatorAudit {
  constructor(
    readonly db: Kysely<Schema>,
    private readonly logger?: Logger,
  ) {}

  /**
   * Appends one row: `actor` did `action`, `detail` says on what. Secrets in the detail are masked (and counted
   * as `masked`). Throws when the row was not written (the database away): the caller refuses what it audits.
   */
  async record(actor: string, action: AuditAction, detail: Record<string, unknown> = {}): Promise<void> {
    const { detail: kept, masked } = maskSecrets(detail);
    const who = actor.trim().slice(0, ACTOR_MAX) || NOBODY;
    await sql`insert into operator_audit (actor, action, detail)
              values (${who}, ${action}, ${jsonOf(masked > 0 ? { ...kept, masked } : kept)}::jsonb)`.execute(this.db);
  }

  /**
   * One page of rows matching `query`, newest first (by id: the order they were written), and the cursor of the
   * next page when there is one. A keyset page: the cursor is the last row's id.
   */
  async search(query: AuditQuery): Promise<{ items: AuditItem[]; next?: string }> {
    const limit = query.limit;
    const conditions = [sql`true`];
    if (query.actor !== undefined) conditions.push(sql`actor = ${query.actor}`);
    if (query.action !== undefined) conditions.push(sql`action = ${query.action}`);
    if (query.text !== undefined) {
      const like = `%${query.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      conditions.push(sql`(actor ilike ${like} or action ilike ${like} or detail::text ilike ${like})`);
    }
    if (query.from !== undefined) conditions.push(sql`at >= ${query.from}`);
    if (query.to !== undefined) conditions.push(sql`at < ${query.to}`);
    if (query.before !== undefined) conditions.push(sql`id < ${query.before}`);
    const { rows } = await sql<{ id: string; at: Date | string; actor: string; action: string; detail: unknown }>`
      select id::text as id, at, actor, action, detail from operator_audit
      where ${sql.join(conditions, sql` and `)}
      order by id desc limit ${limit + 1}`.execute(this.db);
    const items = rows.slice(0, limit).map(itemOfRow);
    return rows.length > limit ? { items, next: items[items.length - 1]!.id } : { items };
  }

  /** Every row matching `query` (from its `before`), newest first, read `batch` rows at a time. */
  async *stream(query: Omit<AuditQuery, 'limit'>, batch = 500): AsyncGenerator<AuditItem> {
    let before = query.before;
    for (;;) {
      const found = await this.search({ ...query, ...(before !== undefined ? { before } : {}), limit: batch });
      yield* found.items;
      if (!found.next) return;
      before = found.next;
    }
  }

  /** {@link record} for what is refused anyway (a refusal, a failed sign-in): a row not written is logged. */
  async recordQuietly(actor: string, action: AuditAction, detail: Record<string, unknown> = {}): Promise<void> {
    await this.record(actor, action, detail).catch((err: unknown) =>
      this.logger?.warn({ err, action }, 'ops: an audit row could not be written'),
    );
  }
}

/** A search of the audit; every filter optional, all given must match. */
export interface AuditQuery {
  /** This actor exactly. */
  actor?: string;
  /** This action exactly. */
  action?: string;
  /** Found in the actor, the action or the detail, whatever the case. */
  text?: string;
  /** From this instant (included). */
  from?: Date;
  /** Up to this instant (excluded). */
  to?: Date;
  /** Rows written before this id (a page's cursor). */
  before?: string;
  limit: number;
}

function itemOfRow(row: { id: string; at: Date | string; actor: string; action: string; detail: unknown }): AuditItem {
  const detail = typeof row.detail === 'string' ? (JSON.parse(row.detail) as unknown) : row.detail;
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    actor: row.actor,
    action: row.action,
    detail: (detail ?? {}) as Record<string, unknown>,
  };
}

/**
 * Who a request that passed the /ops check (access.ts) is, for the audit: the operator's name, or
 * {@link TOKEN_ACTOR} for a script with the OPS_TOKEN.
 */
export function actorOf(res: Response): string {
  if (res.locals.opsCaller === 'script') return TOKEN_ACTOR;
  return typeof res.locals.operator === 'string' ? res.locals.operator : NOBODY;
}

/** How the caller of a request that passed the /ops check proved who they are: `session`, `basic` or `token`. */
export function viaOf(res: Response): string {
  return typeof res.locals.opsVia === 'string' ? res.locals.opsVia : 'session';
}
