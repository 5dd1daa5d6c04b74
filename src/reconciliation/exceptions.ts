/**
 * The differences a reconciliation finds, as exceptions a person closes (`reconciliation_exceptions`, migration
 * 0410). Each difference (an operation of ours unknown to the service, or whose state or amount, currency or
 * recipient is not the service's) is one row, whichever runs find it again, with a state:
 *
 * - `open`: nobody has closed it; `npm run reconcile` exits 1 while one of its period is open.
 * - `resolved`: closed without changing the journal, with a reason: by an operator (an event of source
 *   `operator` on the operation), or by a later run that found the operation as the service holds it (or
 *   differing otherwise: that is a new difference).
 * - `corrected`: the journal took the service's state: by the run itself (a state that was not final, told as
 *   before), or by an operator (an event of source `operator`; a person told another outcome is owed a
 *   correction, told by the product: ./corrections.ts). An operator's correction that tells a person or changes
 *   a final state waits for a second operator (operator_requests, src/people/requests.ts) when OPS_DUAL_CONTROL
 *   names `correct`; the table refuses an approver who is the asker.
 *
 * A row changes once, from `open`, in one conditional update (the table's trigger refuses any other change):
 * two operators pressing at once close it once.
 */
import type { Kysely, Selectable, Transaction } from 'kysely';
import { ENDED_WITHOUT_MONEY, Journal } from '../journal/journal.js';
import type { Operation, OperationState, Schema } from '../journal/schema.js';
import { isFinal, type Item } from './match.js';
import type { ExceptionState, ReconciliationExceptionsTable, ReconciliationSchema } from './schema.js';

export { EXCEPTION_STATES, type ExceptionState } from './schema.js';

/** Who closes what the run closes itself. */
export const BY_RECONCILIATION = 'reconciliation';

type Db = Kysely<ReconciliationSchema>;

export type ExceptionRow = Selectable<ReconciliationExceptionsTable>;

/** A refusal of a close, with the HTTP status it means. */
export class ExceptionError extends Error {
  override name = 'ExceptionError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * The difference an item is (its identity: the same difference found by another run is the same row), or null
 * when it is none (matched, not ours). A state difference is one pair of states (the journal's, the service's);
 * a detail difference, which details; an operation unknown to the service, the operation.
 */
export function differenceOf(item: Item): string | null {
  if (!item.ref) return null;
  switch (item.outcome) {
    case 'unknown_to_service':
      return `unknown_to_service:${item.ref}`;
    case 'state_differs':
      return `state_differs:${item.ref}:${item.ours?.state ?? ''}:${item.theirs?.state ?? ''}`;
    case 'detail_differs':
      return `detail_differs:${item.ref}:${(item.differs ?? []).join('+')}`;
    default:
      return null;
  }
}

/**
 * The final state an operator's correction would journal: the service's (in our words) when a read confirmed
 * it, `refused` (nothing was made) for an operation the service does not hold; none for an amount, currency or
 * recipient (never changed), nor for a state that would take a final one back.
 */
export function correctionOf(item: Item): OperationState | null {
  if (item.outcome === 'unknown_to_service') return 'refused';
  if (item.outcome !== 'state_differs') return null;
  const word = item.exception ?? item.correction;
  return word !== undefined && isFinal(word) ? word : null;
}

/** Whether the run itself corrected it: a state that was not final, journalled (run.ts journalItem). */
const correctedByRun = (item: Item): boolean =>
  item.outcome === 'state_differs' && item.correction !== undefined && item.exception === undefined;

const CHUNK = 500;
const chunks = <T>(list: readonly T[]): T[][] =>
  Array.from({ length: Math.ceil(list.length / CHUNK) }, (_, i) => list.slice(i * CHUNK, (i + 1) * CHUNK));

/**
 * Keeps a run's differences as exceptions (a difference found before keeps its row and state), closes the open
 * ones of the operations this run compared that it no longer finds, and returns how many of its differences
 * are open.
 */
export async function recordExceptions(
  db: Kysely<ReconciliationSchema>,
  runId: string,
  items: readonly Item[],
  ops: ReadonlyMap<string, Operation>,
  at: Date,
): Promise<number> {
  const found = new Map<string, Item>();
  for (const item of items) {
    const difference = differenceOf(item);
    if (difference) found.set(difference, item);
  }
  for (const part of chunks([...found])) {
    await db
      .insertInto('reconciliation_exceptions')
      .values(
        part.map(([difference, item]) => {
          const op = ops.get(item.ref!);
          const closed = correctedByRun(item);
          return {
            difference,
            ref: item.ref!,
            outcome: item.outcome as ReconciliationExceptionsTable['outcome'],
            day: new Date(op?.created ?? at).toISOString().slice(0, 10),
            service_id: item.serviceId,
            ours: JSON.stringify(item.ours),
            theirs: JSON.stringify(item.theirs),
            differs: JSON.stringify(item.differs ?? null),
            correction: correctionOf(item),
            found_run: runId,
            found_at: at,
            state: closed ? 'corrected' : 'open',
            closed_by: closed ? BY_RECONCILIATION : null,
            closed_at: closed ? at : null,
            reason: closed ? `run ${runId} journalled the service's state, ${item.correction}` : null,
          };
        }),
      )
      .onConflict((oc) => oc.column('difference').doNothing())
      .execute();
  }
  // What this run compared and found otherwise is no longer that difference.
  const compared = new Map(items.filter((i) => i.ref).map((i) => [i.ref!, i]));
  for (const part of chunks([...compared.keys()])) {
    const stale = await db
      .selectFrom('reconciliation_exceptions')
      .select(['id', 'ref', 'difference'])
      .where('state', '=', 'open')
      .where('ref', 'in', part)
      .execute();
    for (const row of stale) {
      if (found.has(row.difference)) continue;
      const now = compared.get(row.ref)!;
      await db
        .updateTable('reconciliation_exceptions')
        .set({
          state: 'resolved',
          closed_by: BY_RECONCILIATION,
          closed_at: at,
          reason:
            now.outcome === 'matched'
              ? `run ${runId} found it as the service holds it`
              : `run ${runId} found another difference (${now.outcome})`,
        })
        .where('id', '=', row.id)
        .where('state', '=', 'open')
        .execute();
    }
  }
  let open = 0;
  for (const part of chunks([...found.keys()])) {
    const row = await db
      .selectFrom('reconciliation_exceptions')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('state', '=', 'open')
      .where('difference', 'in', part)
      .executeTakeFirstOrThrow();
    open += Number(row.n);
  }
  return open;
}

/** Whether an operator's correction needs a second operator: it tells a person, or changes a final state. */
export function correctionNeedsSecond(op: Pick<Operation, 'state' | 'told_state'>, correction: string): boolean {
  const tells = op.told_state !== null && op.told_state !== correction;
  return tells || isFinal(op.state) || isFinal(correction);
}

export interface ExceptionFilter {
  state?: ExceptionState;
  limit?: number;
}

/** Reads and closes exceptions. */
export class Exceptions {
  private readonly db: Db;

  constructor(
    db: Kysely<Schema>,
    private readonly journal: Journal = new Journal(db),
  ) {
    this.db = db as unknown as Db;
  }

  /** Exceptions, open ones first then the latest closed, newest found first, at most `limit` (default 200). */
  async list(filter: ExceptionFilter = {}): Promise<ExceptionRow[]> {
    let q = this.db.selectFrom('reconciliation_exceptions').selectAll();
    if (filter.state) q = q.where('state', '=', filter.state);
    return q
      .orderBy((eb) => eb.case().when('state', '=', 'open').then(0).else(1).end())
      .orderBy('id', 'desc')
      .limit(filter.limit ?? 200)
      .execute();
  }

  async get(id: string): Promise<ExceptionRow | undefined> {
    return this.db.selectFrom('reconciliation_exceptions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** How many are open among a period's days (both included). */
  async openIn(from: string, to: string): Promise<number> {
    const row = await this.db
      .selectFrom('reconciliation_exceptions')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('state', '=', 'open')
      .where('day', '>=', from)
      .where('day', '<=', to)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The exception, open, with its operation; refused with an ExceptionError otherwise. */
  async openOne(id: string): Promise<{ exception: ExceptionRow; op: Operation }> {
    const exception = await this.get(id);
    if (!exception) throw new ExceptionError('no such difference', 404);
    if (exception.state !== 'open') throw new ExceptionError(`this difference was already ${exception.state}`, 409);
    const op = await this.journal.byRef(exception.ref);
    if (!op) throw new ExceptionError('its operation is no longer in the journal', 409);
    return { exception, op };
  }

  /** Closes it as `resolved` by operator `by`, with the reason, journalled (source `operator`) in one transaction. */
  async resolve(id: string, by: string, reason: string): Promise<ExceptionRow> {
    const why = reason.trim().slice(0, 500);
    if (!why) throw new ExceptionError('give a reason', 400);
    return this.db.transaction().execute(async (trx) => {
      const row = await this.close(trx, id, { state: 'resolved', closed_by: by, reason: why });
      await this.journal.append(
        {
          ref: row.ref,
          type: 'resolution',
          source: 'operator',
          key: `${row.ref}:resolution:${row.id}`,
          at: row.closed_at!,
          data: { exception: row.id, outcome: row.outcome, reason: why, by },
        },
        trx as never,
      );
      return row;
    });
  }

  /**
   * Closes it as `corrected`: the journal takes its correction (source `operator`) and, when the person was
   * told another outcome, a correction is owed them (told by the product), in one transaction. `by` asked it,
   * `approvedBy` (another operator) approved it by `request`.
   */
  async correct(
    id: string,
    by: string,
    reason: string,
    approval?: { approvedBy: string; request: string },
  ): Promise<ExceptionRow> {
    const why = reason.trim().slice(0, 500);
    if (!why) throw new ExceptionError('give a reason', 400);
    const { exception, op } = await this.openOne(id);
    const state = exception.correction;
    if (!state) throw new ExceptionError('this difference has no correction to make: resolve it with a reason', 409);
    return this.db.transaction().execute(async (trx) => {
      const row = await this.close(trx, id, {
        state: 'corrected',
        closed_by: by,
        reason: why,
        approved_by: approval?.approvedBy ?? null,
        request: approval?.request ?? null,
      });
      const theirs = exception.theirs as { state?: unknown } | null;
      const serviceState = typeof theirs?.state === 'string' ? theirs.state : undefined;
      await this.journal.append(
        Journal.stateEvent(row.ref, {
          state,
          ...(serviceState ? { serviceState } : {}),
          source: 'operator',
          key: `${row.ref}:state:${state}:operator:${row.id}`,
          at: row.closed_at!,
          data: { exception: row.id, reason: why, by, ...(approval ? { approvedBy: approval.approvedBy } : {}) },
          ...(ENDED_WITHOUT_MONEY.includes(state) ? { giveBack: 'ended without money moving' as const } : {}),
          // The money moved: a reservation given back when it was recorded failed counts again.
          ...(state === 'completed' ? { takeLimitAgain: true } : {}),
        }),
        trx as never,
      );
      if (op.told_state !== null && op.told_state !== state)
        await trx
          .insertInto('reconciliation_corrections')
          .values({
            run_id: row.found_run,
            ref: row.ref,
            chat: op.chat,
            state,
            told_state: op.told_state,
            service_state: serviceState ?? 'none',
            created: row.closed_at!,
            claimed: null,
            told: null,
          })
          .onConflict((oc) => oc.columns(['ref', 'state']).doNothing())
          .execute();
      return row;
    });
  }

  private async close(
    trx: Transaction<ReconciliationSchema>,
    id: string,
    values: {
      state: 'resolved' | 'corrected';
      closed_by: string;
      reason: string;
      approved_by?: string | null;
      request?: string | null;
    },
  ): Promise<ExceptionRow> {
    const row = await trx
      .updateTable('reconciliation_exceptions')
      .set({ ...values, closed_at: new Date() })
      .where('id', '=', id)
      .where('state', '=', 'open')
      .returningAll()
      .executeTakeFirst();
    if (row) return row;
    const current = await trx
      .selectFrom('reconciliation_exceptions')
      .select('state')
      .where('id', '=', id)
      .executeTakeFirst();
    if (!current) throw new ExceptionError('no such difference', 404);
    throw new ExceptionError(`this difference was already ${current.state}`, 409);
  }
}
