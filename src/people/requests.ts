/**
 * Dual control of operators: a change that OPS_DUAL_CONTROL names (src/config.ts) is asked for by one operator
 * and takes effect only once a second one approves it (`operator_requests`, migration 0370).
 *
 * - {@link OperatorRequests.ask} writes the request, `pending`, for {@link REQUEST_HOURS} hours.
 * - {@link OperatorRequests.decide} is one conditional update from `pending` (`… WHERE state = 'pending' AND
 *   expires_at > now AND asked_by <> decider … RETURNING`): two operators pressing at once, or one pressing
 *   twice, decide it once, and the table's own check refuses an approval by the asker (like held_payments'
 *   maker check). The asker may reject (withdraw) their own.
 * - The caller then makes the change, as the approver, naming the asker; a change that can no longer be made
 *   (the identity was taken meanwhile, the person is gone) marks the request `failed` with the reason
 *   ({@link OperatorRequests.failed}).
 *
 * A new operator's password is kept in the request only as its scrypt hash; link and one-time codes are never
 * in a request (they are made when it is approved).
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { DualControlAction } from '../config.js';
import { PeopleError } from './people.js';
import type { OperatorRequestsTable, PeopleSchema } from './schema.js';

/** How long a request waits for a second operator: 72 hours (a weekend). */
export const REQUEST_HOURS = 72;

export type RequestState = OperatorRequestsTable['state'];

export interface OperatorRequest {
  id: string;
  action: DualControlAction;
  /** A person's id or an operator's name; null for a new person. */
  target: string | null;
  payload: Record<string, unknown>;
  askedBy: string;
  askedAt: string;
  expiresAt: string;
  state: RequestState;
  decidedBy: string | null;
  decidedAt: string | null;
  reason: string | null;
}

const iso = (v: Date | string | null): string | null => (v === null ? null : new Date(v).toISOString());

function requestOf(row: Selectable<OperatorRequestsTable>): OperatorRequest {
  return {
    id: row.id,
    action: row.action as DualControlAction,
    target: row.target,
    payload: typeof row.payload === 'string' ? (JSON.parse(row.payload) as Record<string, unknown>) : row.payload,
    askedBy: row.asked_by,
    askedAt: iso(row.asked_at)!,
    expiresAt: iso(row.expires_at)!,
    state: row.state,
    decidedBy: row.decided_by,
    decidedAt: iso(row.decided_at),
    reason: row.reason,
  };
}

export class OperatorRequests {
  private readonly now: () => number;

  constructor(
    private readonly db: Kysely<PeopleSchema>,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Writes a pending request of `by` (an operator's name). */
  async ask(
    by: string,
    action: DualControlAction,
    target: string | null,
    payload: Record<string, unknown>,
  ): Promise<OperatorRequest> {
    const at = this.now();
    const row = await this.db
      .insertInto('operator_requests')
      .values({
        id: `r-${randomUUID().slice(0, 12)}`,
        action,
        target,
        payload: JSON.stringify(payload),
        asked_by: by,
        asked_at: new Date(at),
        expires_at: new Date(at + REQUEST_HOURS * 3600_000),
        state: 'pending',
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return requestOf(row);
  }

  /** One request, or undefined. */
  async get(id: string): Promise<OperatorRequest | undefined> {
    const row = await this.db.selectFrom('operator_requests').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? requestOf(row) : undefined;
  }

  /**
   * The pending requests (those past their time marked expired first), and the last decided ones, newest first;
   * of the actions `only` names when given (each page decides its own).
   */
  async list(
    decided = 20,
    only?: readonly DualControlAction[],
  ): Promise<{ pending: OperatorRequest[]; decided: OperatorRequest[] }> {
    await this.db
      .updateTable('operator_requests')
      .set({ state: 'expired' })
      .where('state', '=', 'pending')
      .where('expires_at', '<=', new Date(this.now()))
      .execute();
    const pending = await this.db
      .selectFrom('operator_requests')
      .selectAll()
      .where('state', '=', 'pending')
      .$if(only !== undefined, (q) => q.where('action', 'in', [...only!]))
      .orderBy('asked_at', 'desc')
      .execute();
    const done = await this.db
      .selectFrom('operator_requests')
      .selectAll()
      .where('state', '<>', 'pending')
      .$if(only !== undefined, (q) => q.where('action', 'in', [...only!]))
      .orderBy(sql`coalesce(decided_at, expires_at)`, 'desc')
      .limit(decided)
      .execute();
    return { pending: pending.map(requestOf), decided: done.map(requestOf) };
  }

  /**
   * Approves or rejects a pending request, as operator `by`, once. Refused with a PeopleError naming why: no
   * such request (404; also one of another action than `only` names), already decided or expired (409), or an
   * approval by its asker (403: the table refuses it too).
   */
  async decide(
    id: string,
    by: string,
    approve: boolean,
    reason?: string,
    only?: readonly DualControlAction[],
  ): Promise<OperatorRequest> {
    const at = new Date(this.now());
    let query = this.db
      .updateTable('operator_requests')
      .set({
        state: approve ? 'approved' : 'rejected',
        decided_by: by,
        decided_at: at,
        reason: reason?.slice(0, 500) || null,
      })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .where('expires_at', '>', at);
    if (approve) query = query.where('asked_by', '<>', by);
    if (only) query = query.where('action', 'in', [...only]);
    const row = await query.returningAll().executeTakeFirst();
    if (row) return requestOf(row);
    const current = await this.get(id);
    if (!current || (only && !only.includes(current.action))) throw new PeopleError('no such request', 404);
    if (current.state !== 'pending') throw new PeopleError(`this request was already ${current.state}`, 409);
    if (Date.parse(current.expiresAt) <= at.getTime()) throw new PeopleError('this request has expired', 409);
    throw new PeopleError('nobody approves their own request: a second operator must', 403);
  }

  /** An approved request whose change could not be made: `failed`, with the reason. */
  async failed(id: string, reason: string): Promise<void> {
    await this.db
      .updateTable('operator_requests')
      .set({ state: 'failed', reason: reason.slice(0, 500) })
      .where('id', '=', id)
      .where('state', '=', 'approved')
      .execute();
  }
}
