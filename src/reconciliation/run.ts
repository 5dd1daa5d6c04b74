/**
 * One reconciliation run of a period of whole UTC days: reads the service's records of the period (./service.ts,
 * through the read budget), our operations of the period from the journal, matches them (./match.ts), journals
 * each state the service corrects (source `reconciliation`), records what a person told another outcome is
 * owed (told by the product: ./corrections.ts), keeps each difference as an exception until someone closes it
 * (./exceptions.ts), and keeps the result (`reconciliation_runs`, one row per run, and `reconciliation_items`,
 * one per record compared).
 *
 * Around the edges of the period: a record the service created just past midnight may be our operation of
 * the day before (or the other way round), so every record of the service is looked up in the whole journal
 * (by id, then ref), and an operation of ours the lists did not show but whose id we hold is read by id (one
 * budgeted read each) before it is called unknown to the service.
 *
 * The nightly run (./daily.ts) re-checks a window of days but compares only what changed since its last look
 * (`changedSince`): the lists ask `modified_after` (a record the service changed since, created in the period),
 * and ours are those the journal changed since. What neither side changed was compared at that look.
 *
 * Vending purchases are not compared: the contract shows no list (nor read) of them. A run says how many of its
 * period it left so (`not_compared`).
 */
import type { Kysely } from 'kysely';
import { ENDED_WITHOUT_MONEY, type Journal } from '../journal/journal.js';
import type { Operation } from '../journal/schema.js';
import type { Logger } from '../log.js';
import { recordExceptions } from './exceptions.js';
import {
  compare,
  countOutcomes,
  expectedAtService,
  hasDifferences,
  isFinal,
  match,
  theirKindOf,
  type Item,
  type Ours,
  type Outcome,
  type OurState,
  type Theirs,
  type TheirKind,
} from './match.js';
import type { NotCompared, ReconciliationSchema, RunStatus } from './schema.js';
import type { ServiceSide } from './service.js';

/** A period of whole UTC days, both included. */
export interface Period {
  /** `YYYY-MM-DD` */
  from: string;
  /** `YYYY-MM-DD`, not before `from`. */
  to: string;
}

export interface RunOptions {
  db: Kysely<ReconciliationSchema>;
  journal: Journal;
  service: ServiceSide;
  period: Period;
  /** `command` or `daily`: kept with the run. */
  trigger: string;
  logger: Logger;
  /** Clock. Default: the system's. */
  now?: () => Date;
  /**
   * Per kind of the service's records, compare only what changed since this time (the nightly run's last look,
   * less LOOK_OVERLAP_MS): the service's records it changed since, and ours the journal changed since. A kind
   * not given: every record of the period.
   */
  changedSince?: Partial<Record<TheirKind, Date>>;
}

export interface RunResult {
  id: string;
  status: RunStatus;
  counts: Record<Outcome, number>;
  items: Item[];
  /** Per kind of the service's records, when this run began to list it: the next nightly run's `changedSince`. */
  looked: Record<TheirKind, Date>;
  /** Per kind of ours, the operations of the period not compared, and why. */
  notCompared: Record<string, NotCompared>;
  /** How many of its differences are open (./exceptions.ts): not closed by this run, an operator or before. */
  open: number;
}

const DAY_MS = 86_400_000;
/** Refs or ids asked of the journal in one query. */
const CHUNK = 500;
/** The kinds of ours the service lists. */
const LISTED_KINDS = ['payment', 'payout', 'request'] as const;
/** The service's kinds, in the order they are read. */
export const THEIR_KINDS: readonly TheirKind[] = ['payment', 'request', 'collection'];
/** The service's list each listed kind of ours is found in. */
const LIST_OF: Record<(typeof LISTED_KINDS)[number], TheirKind> = {
  payment: 'payment',
  payout: 'payment',
  request: 'request',
};
/**
 * How far before a last look a run asks what changed: the service's clock and ours may differ, and the filters
 * are to the minute. A record seen again is compared again, which changes nothing.
 */
export const LOOK_OVERLAP_MS = 10 * 60_000;
/** Why vending purchases are not compared: said in the run's result. */
export const PURCHASES_NOT_LISTED =
  'the vending group offers no list (nor read) of purchases: the contract shows no purchase endpoints';

/** `YYYY-MM-DD` -> ms at 00:00 UTC of that day; NaN when it is no real day. */
export function dayStart(day: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return NaN;
  const ms = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!);
  return new Date(ms).toISOString().slice(0, 10) === day ? ms : NaN;
}

/** The day (UTC) `ms` falls in, `YYYY-MM-DD`. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** `YYYY-MM-DD HH:MM` (UTC): the list filters' format. */
export const filterDate = (ms: number): string => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

/** The journal's row as matching compares it. */
export function oursOf(op: Operation): Ours {
  return {
    ref: op.ref,
    kind: op.kind,
    serviceId: op.service_id,
    amount: String(op.amount),
    currency: op.currency,
    payee: op.payee,
    state: op.state as OurState,
    toldState: op.told_state,
  };
}

/**
 * Whether a person must be told the service's state: they were told an outcome (`toldState`) and the service
 * now holds another, one of the two final (a final outcome contradicted, or the outcome of something they
 * were told is on its way).
 */
export function owesTelling(item: Item): boolean {
  const told = item.ours?.toldState;
  const now = item.correction;
  if (!told || !now || told === now) return false;
  return isFinal(told) || isFinal(now);
}

/**
 * Whether the state a list gave must be confirmed by a read of that one operation before anything changes:
 * the journal's state is final (a list entry may be older than it: a stale `pending` must never turn
 * `completed` back into `submitted`), or a person would be told of it.
 */
export function needsConfirming(item: Item): boolean {
  if (item.correction === undefined || !item.ours || !item.theirs || item.confirmed) return false;
  return isFinal(item.ours.state) || owesTelling(item);
}

/**
 * The item as a read of that one operation (one budgeted read) shows it. The read agrees with the journal:
 * the list entry was stale, matched, nothing changes. It confirms a difference on a final state of ours: an
 * exception (kept, nothing journalled, nobody told), never an overwrite. It confirms another correction: the
 * correction stands, now confirmed. No record by that id: nothing changes this run (the difference is kept).
 */
export async function confirmItem(service: ServiceSide, item: Item, logger: Logger): Promise<Item> {
  const ours = item.ours!;
  const listed = item.theirs!;
  const read = listed.kind === 'request' ? 'request' : 'payment';
  const fresh = await service.get(read, listed.id);
  if (!fresh) {
    logger.warn({ ref: ours.ref, id: listed.id }, 'a listed record could not be read by id; nothing changed');
    const { correction, ...rest } = item;
    return isFinal(ours.state) && correction !== undefined ? { ...rest, exception: correction } : rest;
  }
  const again: Item = { ...compare(ours, fresh), confirmed: true };
  if (again.correction === undefined) {
    if (listed.state !== fresh.state)
      logger.info({ ref: ours.ref, listed: listed.state, read: fresh.state }, 'a stale list entry; nothing changed');
    return again;
  }
  if (!isFinal(ours.state)) return again;
  const { correction, ...rest } = again;
  logger.warn(
    { ref: ours.ref, journal: ours.state, service: fresh.state },
    'the service contradicts a final state of the journal: kept as an exception, not overwritten',
  );
  return { ...rest, exception: correction };
}

const chunks = <T>(list: readonly T[]): T[][] =>
  Array.from({ length: Math.ceil(list.length / CHUNK) }, (_, i) => list.slice(i * CHUNK, (i + 1) * CHUNK));

export async function runReconciliation(options: RunOptions): Promise<RunResult> {
  const { db, journal, service, period, logger } = options;
  const now = options.now ?? (() => new Date());
  const start = dayStart(period.from);
  const end = dayStart(period.to) + DAY_MS;
  if (Number.isNaN(start) || Number.isNaN(end) || end <= start)
    throw new RangeError(`not a period of days: ${period.from} to ${period.to}`);

  const changedSince = options.changedSince ?? {};
  const since = (kind: TheirKind): number | null => {
    const at = changedSince[kind];
    return at ? at.getTime() - LOOK_OVERLAP_MS : null;
  };
  const askedSince = Object.fromEntries(
    THEIR_KINDS.flatMap((kind) => (since(kind) === null ? [] : [[kind, filterDate(since(kind)!)]])),
  );
  const run = await db
    .insertInto('reconciliation_runs')
    .values({
      from_day: period.from,
      to_day: period.to,
      started: now(),
      finished: null,
      counts: '{}',
      status: 'running',
      error: null,
      trigger: options.trigger,
      changed_since: Object.keys(askedSince).length > 0 ? JSON.stringify(askedSince) : null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const id = String(run.id);
  logger.info({ run: id, from: period.from, to: period.to }, 'reconciliation started');

  try {
    // The service's records of the period (the lists' `created_before` includes its minute: a record of
    // 00:00 the next day is listed in both days' runs, and matched in both), or those it changed since.
    const theirs: Theirs[] = [];
    const looked = {} as Record<TheirKind, Date>;
    for (const kind of THEIR_KINDS) {
      looked[kind] = now();
      const after = since(kind);
      const listed = {
        createdAfter: filterDate(start),
        createdBefore: filterDate(end),
        ...(after === null ? {} : { modifiedAfter: filterDate(after) }),
      };
      for await (const record of service.list(kind, listed)) theirs.push(record);
    }

    // Ours of the period (or those the journal changed since), and any other the service's records name.
    const ops = new Map<string, Operation>();
    const ofPeriod = await db
      .selectFrom('operations')
      .selectAll()
      .where('kind', 'in', [...LISTED_KINDS])
      .where('created', '>=', new Date(start))
      .where('created', '<', new Date(end))
      .where((eb) =>
        eb.or(
          LISTED_KINDS.map((kind) => {
            const after = since(LIST_OF[kind]);
            return after === null
              ? eb('kind', '=', kind)
              : eb.and([eb('kind', '=', kind), eb('updated', '>=', new Date(after))]);
          }),
        ),
      )
      .execute();
    const purchases = await db
      .selectFrom('operations')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('kind', '=', 'purchase')
      .where('created', '>=', new Date(start))
      .where('created', '<', new Date(end))
      .executeTakeFirst();
    const notCompared: Record<string, NotCompared> = {
      purchase: { count: Number(purchases?.n ?? 0), why: PURCHASES_NOT_LISTED },
    };
    for (const op of ofPeriod) ops.set(op.ref, op);
    const known = new Set([...ops.values()].flatMap((op) => (op.service_id ? [op.service_id] : [])));
    const ids = [
      ...new Set(theirs.flatMap((t) => [t.id, ...(t.requestId ? [t.requestId] : [])]).filter((i) => !known.has(i))),
    ];
    const refs = [...new Set(theirs.map((t) => t.ref).filter((r) => r !== '' && !ops.has(r)))];
    for (const part of chunks(ids)) {
      for (const op of await db
        .selectFrom('operations')
        .selectAll()
        .where('service_id', 'in', part)
        .where('kind', 'in', [...LISTED_KINDS])
        .execute())
        ops.set(op.ref, op);
    }
    for (const part of chunks(refs)) {
      for (const op of await db
        .selectFrom('operations')
        .selectAll()
        .where('ref', 'in', part)
        .where('kind', 'in', [...LISTED_KINDS])
        .execute())
        ops.set(op.ref, op);
    }
    const ours = [...ops.values()].map(oursOf);

    // Ours with an id that the lists did not show (created at the service on another day): read by id. When
    // only what changed was listed, one made before the last look that the service has not changed since was
    // compared at that look: left out (the journal changed it alone: a telling, a correction of a run).
    const shown = new Set(theirs.map((t) => `${t.kind}:${t.id}`));
    const readById = new Set<string>();
    const unchanged = new Set<string>();
    for (const op of ours) {
      const kind = theirKindOf(op);
      if (kind === null || op.serviceId === null || !expectedAtService(op) || shown.has(`${kind}:${op.serviceId}`))
        continue;
      const after = since(kind);
      if (after !== null && new Date(ops.get(op.ref)!.created).getTime() < after) {
        unchanged.add(op.ref);
        continue;
      }
      const record = await service.get(kind, op.serviceId);
      if (record) {
        theirs.push(record);
        readById.add(`${record.kind}:${record.id}`);
      }
    }

    // A difference taken from a list is confirmed by a read of that one operation before it changes a final
    // state or tells anyone (a record already read by id is that read).
    const items: Item[] = [];
    for (const item of match(
      ours.filter((op) => !unchanged.has(op.ref)),
      theirs,
    )) {
      const read = item.theirs !== null && readById.has(`${item.theirs.kind}:${item.theirs.id}`);
      const checked = read ? { ...item, confirmed: true } : item;
      items.push(needsConfirming(checked) ? await confirmItem(service, checked, logger) : checked);
    }
    const at = now();
    for (const item of items) await journalItem(journal, item, at);
    await owe(db, id, items, ops, at);
    const open = await recordExceptions(db, id, items, ops, at);

    const counts = countOutcomes(items);
    const status: RunStatus = hasDifferences(counts) ? 'differences' : 'clean';
    await db.transaction().execute(async (trx) => {
      for (const part of chunks(items)) {
        await trx
          .insertInto('reconciliation_items')
          .values(
            part.map((item) => ({
              run_id: id,
              outcome: item.outcome,
              ref: item.ref,
              service_id: item.serviceId,
              ours: JSON.stringify(item.ours),
              theirs: JSON.stringify(item.theirs),
              differs: JSON.stringify(item.differs ?? null),
            })),
          )
          .execute();
      }
      await trx
        .updateTable('reconciliation_runs')
        .set({ finished: now(), counts: JSON.stringify(counts), status, not_compared: JSON.stringify(notCompared) })
        .where('id', '=', id)
        .execute();
    });
    logger.info({ run: id, ...counts }, 'reconciliation finished');
    return { id, status, counts, items, looked, notCompared, open };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await db
      .updateTable('reconciliation_runs')
      .set({ finished: now(), status: 'failed', error: message.slice(0, 500) })
      .where('id', '=', id)
      .execute()
      .catch((err: unknown) => logger.error({ run: id, err: String(err) }, 'could not mark the run failed'));
    logger.error({ run: id, err: message }, 'reconciliation failed');
    throw error;
  }
}

/**
 * What the journal learns from an item: the state the service holds when it differs (a correction, source
 * `reconciliation`), and the service's id of an operation whose create's answer was lost (found by our ref).
 */
async function journalItem(journal: Journal, item: Item, at: Date): Promise<void> {
  // An exception changes nothing: a person decides.
  if (!item.ours || !item.theirs || item.theirs.kind === 'collection' || item.exception !== undefined) return;
  const linking = item.ours.serviceId === null;
  if (item.correction === undefined && !linking) return;
  const state = item.correction ?? item.ours.state;
  await journal.stateReported(item.ours.ref, {
    state,
    serviceState: item.theirs.state,
    serviceId: item.theirs.id,
    source: 'reconciliation',
    at,
    // Ended without money moving: its reservation in the person's daily total goes back with the state.
    ...(ENDED_WITHOUT_MONEY.includes(state) ? { giveBack: 'ended without money moving' as const } : {}),
    // Money moved: a reservation given back before (a run lost before the call that went out) counts again.
    ...(state === 'completed' ? { takeLimitAgain: true } : {}),
  });
}

/** Records the tellings owed (once per operation and state, whichever run finds it first). */
async function owe(
  db: Kysely<ReconciliationSchema>,
  runId: string,
  items: readonly Item[],
  ops: ReadonlyMap<string, Operation>,
  at: Date,
): Promise<void> {
  for (const item of items) {
    if (!owesTelling(item) || !item.ours || !item.theirs) continue;
    const op = ops.get(item.ours.ref);
    if (!op) continue;
    await db
      .insertInto('reconciliation_corrections')
      .values({
        run_id: runId,
        ref: op.ref,
        chat: op.chat,
        state: item.correction!,
        told_state: item.ours.toldState!,
        service_state: item.theirs.state,
        created: at,
        claimed: null,
        told: null,
      })
      .onConflict((oc) => oc.columns(['ref', 'state']).doNothing())
      .execute();
  }
}
