/**
 * The record of what this product made: every payment, collection request and purchase a flow creates.
 * A notification is believed only for something recorded here (src/notifications): it is routed to the
 * record's chat and told in the record's words (amount, currency, payee), whatever its body says.
 *
 * The record is written BEFORE the create call, keyed by our ref (the flow's Duplicate-Check-Key, also sent
 * as `metadata.ref`), when chat, amount, currency and payee are known; the service's id is linked to it when
 * the answer comes. A lost answer leaves an intent without id: the notifications' follow-up finds it by a
 * list read (or its first notification links it). A definite refusal marks it refused (nothing was made).
 * Listeners of {@link MadeRecords.onIntent} (the follow-up of an outcome that never came) run with the write.
 *
 * Keys (in the store, so in Redis with REDIS_URL and in memory without):
 * - `made:{<ref>}`: the record;
 * - `made:id:<scope>:<kind>:{<id>}`: the ref of the service's id, under the service and organization it belongs to;
 * - `made:open:{<phone>}:<amount>:<CURRENCY>`: the open collection requests of that number, amount and
 *   currency, each accepting ONE collection (collection verification consumes it, {@link MadeRecords.consumeOpenRequest}).
 */
import { Decimal } from 'decimal.js';
import { isAlreadySubmitted, type Asker, type FlowCalls, type ReserveSpend } from '../../../flows/calls.js';
import { VENDING_CURRENCY } from '../../../flows/purchase.js';
import { isServiceFailure, madeNothing, type ServiceFailure } from '../../../flows/types.js';
import { events, type MoneyJournal } from '../../journal/index.js';
import { OverDailyLimit } from '../../journal/journal.js';
import type { Operation, OperationKind, OperationState } from '../../journal/schema.js';
import type { Logger } from '../../log.js';
import { MissingKeyError } from '../../momo/index.js';
import { ourWord } from '../../reconciliation/match.js';
import { changeStored } from '../../store/change-stored.js';
import { keys } from '../../store/keys.js';
import type { Store } from '../../store/types.js';
import { currentBuild } from '../flow/build.js';
import { NotCalled } from '../flow/flow-runtime.js';
import { within } from '../../within.js';
import type { GiveBackReason, Reservation } from '../calls/limits.js';

export type MadeKind = 'payment' | 'request' | 'purchase';

export interface Made {
  kind: MadeKind;
  /** Our ref: the Duplicate-Check-Key of the create, also its `metadata.ref`. */
  ref: string;
  /** `<channel>:<conversationId>` of the conversation that made it. */
  chat: string;
  amount: string;
  /** For purchases, naira ({@link VENDING_CURRENCY}): the vending group prices bundles without a currency. */
  currency: string;
  /**
   * Who is paid (payment), asked to pay (request) or receives the purchase: a number or an account; for a
   * payout request (several recipients), how many it pays ("N recipients"), as its notifications say it.
   */
  payee: string;
  /**
   * A payout request's first recipient's number: the follow-up's list read filters by it, since its payee is
   * no number and the list filters nothing by our ref (src/notifications/reads.ts). Absent otherwise.
   */
  recipient?: string;
  /** When the intent was first written, ms since the epoch (before the first create call). */
  created: number;
  /** The service's id (payment, request) or reference (purchase), once known. */
  id?: string;
  /**
   * Our short ref (`MC-7K2QX`, src/journal/short-ref.ts): the reference people are told, drawn by the journal's
   * intent before the create call. Absent without a journal (then people are told the service's id).
   */
  shortRef?: string;
  /** The service answered that it was made (an "already submitted" answer carries no id). */
  accepted?: true;
  /** The service refused the create: nothing was made. */
  refused?: true;
  /** A later occurrence of our recurring request: the series' ref, which the service copies into its metadata. */
  series?: string;
}

/** The `metadata.ref` the service holds for a record: ours, or its series' for an occurrence. */
export const metadataRef = (made: Made): string => made.series ?? made.ref;

export type Intent = Omit<Made, 'created' | 'id' | 'accepted' | 'refused' | 'shortRef'>;

/** A record with the store's version of it: what a compare-and-set of it expects. */
export interface StoredMade {
  made: Made;
  version: number;
}

/** Records live 30 days: as long as the service keeps its events; a payment may wait days for approval. */
const MADE_TTL_SECONDS = 30 * 24 * 3600;
/** An open request accepts its collection for 24 hours: the service's default expiry of a request. */
const OPEN_REQUEST_TTL_SECONDS = 24 * 3600;

/** Most open requests kept for one number, amount and currency (a user asking the same again and again). */
const MAX_OPEN_PER_KEY = 20;

/** Longest ref or id looked up: ours are a UUID and a suffix, the service's are integers. */
const MAX_KEY_PART = 200;

const madeKey = keys.made;
const idKey = keys.madeId;
const openKey = keys.openRequests;

/** One open request in `made:open:…`: its ref, until when it accepts a collection, and the one it took. */
interface OpenEntry {
  ref: string;
  until: number;
  /** remote_transaction_id of the collection that consumed it. */
  taken?: string;
}

export interface MadeRecordsOptions {
  store: Store;
  logger: Logger;
  /** Clock in ms. Default Date.now. */
  now?: () => number;
  /**
   * The service and organization the service's ids belong to (keys.ts serviceScope of its address and API
   * key), in the keys that link an id to our ref. Default `local`: one product alone on its Redis (tests).
   */
  scope?: string;
  /**
   * The journal's current-state row of a ref (src/journal, Journal.byRef): the durable copy of every intent.
   * A record the store lost (a Sentinel failover drops the old master's last writes) is rebuilt from it when
   * asked for by ref, so the outcome of a payment made just before the failover is still told. Default none.
   */
  journal?: { byRef(ref: string): Promise<Operation | undefined> };
}

const MADE_KINDS: readonly string[] = ['payment', 'request', 'purchase'] satisfies MadeKind[];

/** Our record as the journal's row of it says it (the service's id when answered, refused when refused). */
export function madeOfOperation(op: Operation): Made | null {
  if (!MADE_KINDS.includes(op.kind)) return null;
  return {
    kind: op.kind as MadeKind,
    ref: op.ref,
    chat: op.chat,
    amount: op.amount,
    currency: op.currency,
    payee: op.payee,
    created: new Date(op.created).getTime(),
    ...(op.short_ref ? { shortRef: op.short_ref } : {}),
    ...(op.service_id ? { id: op.service_id, accepted: true as const } : {}),
    ...(op.state === 'refused' ? { refused: true as const } : {}),
  };
}

export class MadeRecords {
  private readonly store: Store;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly scope: string;
  private readonly journal: MadeRecordsOptions['journal'];
  private readonly listeners: Array<(made: Made) => Promise<void>> = [];

  constructor(options: MadeRecordsOptions) {
    this.store = options.store;
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
    this.scope = options.scope ?? 'local';
    this.journal = options.journal;
  }

  /** Runs `listener` with every intent written (again on a repeated create); its failure fails the intent. */
  onIntent(listener: (made: Made) => Promise<void>): void {
    this.listeners.push(listener);
  }

  /**
   * Writes the intent before the create call, and runs the listeners alongside (one round trip in all). A
   * repeat (a create retried under the same key) keeps the first.
   */
  async intend(intent: Intent): Promise<Made> {
    return (await this.intendOnce(intent)).made;
  }

  /**
   * {@link intend}, saying whether this write was the first (`first`): false when a record of the ref was
   * there already, so an earlier attempt under the key may have reached the service. `stored` is the record as
   * it was written or read, with its version: {@link accepted} starts from it instead of reading it again.
   */
  async intendOnce(intent: Intent): Promise<{ made: Made; first: boolean; stored?: StoredMade }> {
    const key = madeKey(intent.ref);
    const fresh: Made = { ...intent, created: this.now() };
    const [version] = await Promise.all([
      this.store.set(key, fresh, null, MADE_TTL_SECONDS),
      ...this.listeners.map((listener) => listener(fresh)),
    ]);
    if (version !== null) return { made: fresh, first: true, stored: { made: fresh, version } };
    const stored = await this.store.get(key);
    if (!stored) return { made: fresh, first: false };
    const made = stored.snapshot as Made;
    return { made, first: false, stored: { made, version: stored.version } };
  }

  /**
   * The service made it: links its id (when the answer carried one) and, for a request, opens it to one
   * collection. Idempotent. `known`: the record as its intent left it (MadeRecords.intendOnce), tried first in
   * the compare-and-set, which writes only if nothing changed it since (else it is read again): one round trip
   * less on the money hop. `shortRef`: our short ref the journal drew with the intent, kept in the same write.
   */
  async accepted(ref: string, id?: string, known?: StoredMade, shortRef?: string): Promise<Made | null> {
    const key = madeKey(ref);
    let last: StoredMade | undefined = known;
    for (let attempt = 0; attempt < 10; attempt++) {
      if (!last) {
        const read = await this.store.get(key);
        if (!read) return null;
        last = { made: read.snapshot as Made, version: read.version };
      }
      const before = last.made;
      const made: Made = {
        ...before,
        accepted: true,
        ...(id && !before.id ? { id } : {}),
        ...(shortRef && !before.shortRef ? { shortRef } : {}),
      };
      const [version] = await Promise.all([
        this.store.set(key, made, last.version, MADE_TTL_SECONDS),
        id ? this.link(before.kind, id, ref) : undefined,
      ]);
      last = undefined;
      if (version === null) continue;
      if (made.kind === 'request' && !before.accepted) await this.open(made);
      return made;
    }
    throw new Error('the record kept changing');
  }

  /**
   * A later occurrence `id` of the recurring request `series` (the service made it, with the series'
   * metadata): a record of its own (our ref with the id, so its states are ordered and told on their own),
   * accepted and linked. Idempotent.
   */
  async occurrence(series: Made, id: string): Promise<Made | null> {
    const ref = `${series.ref}#${id}`;
    await this.intend({
      kind: series.kind,
      ref,
      series: series.ref,
      chat: series.chat,
      amount: series.amount,
      currency: series.currency,
      payee: series.payee,
    });
    return this.accepted(ref, id);
  }

  /**
   * Keeps our short ref with the record when the create's answer was lost (no {@link accepted} to carry it): the
   * follow-up that finds what was made tells it by this ref, not by the service's id.
   */
  async named(ref: string, shortRef: string): Promise<void> {
    await this.update(ref, (m) => (m.shortRef ? m : { ...m, shortRef }));
  }

  /** The service refused the create: nothing was made, nothing will be told or followed up. */
  async refused(ref: string): Promise<void> {
    await this.update(ref, (m) => (m.accepted ? m : { ...m, refused: true }));
  }

  /**
   * Puts `record` back in the store when the store has none of its ref (the owed outcomes' checks after a Redis
   * loss: the database's copy, with what it knows of the answer), and links its id; the stored one otherwise.
   */
  async restore(record: Made): Promise<Made> {
    const key = madeKey(record.ref);
    if ((await this.store.set(key, record, null, MADE_TTL_SECONDS)) === null)
      return ((await this.store.get(key))?.snapshot as Made | undefined) ?? record;
    if (record.id) await this.link(record.kind, record.id, record.ref);
    return record;
  }

  /**
   * Our record of `ref`: from the store, else rebuilt from the journal (and written back) when it has the ref. A
   * stored record without our short ref (the write that keeps it with the answer not landed yet, or lost with
   * a failed-over master's last writes) gets it from the journal, so a notification names the ref the person
   * was given, not the service's id.
   */
  async byRef(ref: string): Promise<Made | null> {
    if (ref === '' || ref.length > MAX_KEY_PART) return null;
    const kept = (await this.store.get(madeKey(ref)))?.snapshot as Made | undefined;
    if (kept && !kept.shortRef && this.journal) return this.withShortRef(kept, this.journal);
    if (kept || !this.journal) return kept ?? null;
    const row = await this.journal.byRef(ref);
    const rebuilt = row ? madeOfOperation(row) : null;
    if (!rebuilt) return null;
    this.logger.warn({ kind: rebuilt.kind }, 'our record was not in the store; rebuilt from the journal');
    // Written back only where nothing came meanwhile (a write since is newer than the journal's row).
    if ((await this.store.set(madeKey(ref), rebuilt, null, MADE_TTL_SECONDS)) === null)
      return ((await this.store.get(madeKey(ref)))?.snapshot as Made | undefined) ?? rebuilt;
    if (rebuilt.id) await this.link(rebuilt.kind, rebuilt.id, ref);
    return rebuilt;
  }

  /** `kept` with the short ref the journal drew with its intent (kept with it, best effort); as it was without. */
  private async withShortRef(kept: Made, journal: NonNullable<MadeRecordsOptions['journal']>): Promise<Made> {
    const shortRef = await journal.byRef(kept.ref).then(
      (row) => row?.short_ref ?? undefined,
      () => undefined,
    );
    if (!shortRef) return kept;
    await this.named(kept.ref, shortRef).catch(() => undefined);
    return { ...kept, shortRef };
  }

  /** The record of the service's id of that kind; null when this product did not make it. */
  async byId(kind: MadeKind, id: string): Promise<Made | null> {
    if (id === '' || id.length > MAX_KEY_PART) return null;
    const link = (await this.store.get(idKey(this.scope, kind, id)))?.snapshot as { ref: string } | undefined;
    if (!link) return null;
    const made = await this.byRef(link.ref);
    if (!made || made.kind !== kind) return null;
    // The link and the record's id are written together: a record read before its own write lands gets it.
    return made.id ? made : { ...made, id };
  }

  /**
   * Collection verification: the open request of this number, amount and currency that accepts the
   * collection `transactionId`, consumed by it (one request, one collection). The same collection asked
   * again gets the same request. Null when none is open.
   */
  async consumeOpenRequest(
    phone: string,
    amount: string,
    currency: string,
    transactionId: string,
  ): Promise<string | null> {
    const key = openKey(phone, amount, currency);
    for (let attempt = 0; attempt < 10; attempt++) {
      const stored = await this.store.get(key);
      const now = this.now();
      const entries = ((stored?.snapshot as OpenEntry[] | undefined) ?? []).filter((e) => e.until > now);
      const again = entries.find((e) => e.taken === transactionId);
      if (again) return again.ref;
      const free = entries.find((e) => e.taken === undefined);
      if (!free) return null;
      free.taken = transactionId;
      if ((await this.store.set(key, entries, stored?.version ?? null, OPEN_REQUEST_TTL_SECONDS)) !== null)
        return free.ref;
    }
    throw new Error('open requests kept changing');
  }

  private async open(made: Made): Promise<void> {
    const key = openKey(made.payee, made.amount, made.currency);
    const until = made.created + OPEN_REQUEST_TTL_SECONDS * 1000;
    for (let attempt = 0; attempt < 10; attempt++) {
      const stored = await this.store.get(key);
      const entries = ((stored?.snapshot as OpenEntry[] | undefined) ?? []).filter((e) => e.until > this.now());
      if (entries.some((e) => e.ref === made.ref)) return;
      entries.push({ ref: made.ref, until });
      // Bounded: the oldest open requests of one number, amount and currency give way.
      entries.splice(0, Math.max(0, entries.length - MAX_OPEN_PER_KEY));
      if ((await this.store.set(key, entries, stored?.version ?? null, OPEN_REQUEST_TTL_SECONDS)) !== null) return;
    }
    throw new Error('open requests kept changing');
  }

  private async link(kind: MadeKind, id: string, ref: string): Promise<void> {
    const key = idKey(this.scope, kind, id);
    if ((await this.store.set(key, { ref }, null, MADE_TTL_SECONDS)) !== null) return;
    const held = (await this.store.get(key))?.snapshot as { ref: string } | undefined;
    if (held?.ref !== ref)
      this.logger.error({ kind, id }, 'the service gave one id to two of our records; the first is kept');
  }

  /** Changes the record of `ref`; null when there is none. */
  private async update(ref: string, change: (made: Made) => Made): Promise<Made | null> {
    return (
      await changeStored<Made>(
        this.store,
        madeKey(ref),
        MADE_TTL_SECONDS,
        (made) => (made ? change(made) : null),
        'the record',
      )
    ).after;
  }
}

/** What recordMade journals besides our record (src/journal): absent, only the record is kept. */
export interface RecordMadeOptions {
  journal?: MoneyJournal;
  /**
   * Gives back the spend reserved under a key when nothing was sent (access-policy.ts giveBackSpend), for a
   * reservation made apart from the intent (without {@link reservation}).
   */
  giveBack?: (duplicateCheckKey: string) => Promise<unknown>;
  /**
   * With the journal: each intent carries the outcome owed to its person (src/journal/owed.ts), first checked
   * this many seconds after it (the follow-up's first delay), and a 409 on our own key or a create without an
   * answer marks it in doubt (MoneyJournal.inDoubt) before the person is told it is being checked. Unset: none.
   */
  owedFirstCheckSeconds?: number;
  /**
   * The build its owed outcomes are written by (flow/build.ts): a poller of an earlier build leaves them to
   * this build's (src/journal/owed.ts). Default: this build; tests pass their own.
   */
  build?: number;
  /**
   * With the journal: a payment's or purchase's reservation in its person's daily total is written in the
   * statement that writes its intent (access-policy.ts reservationOf), and given back in the transaction that
   * journals its refusal; the flows' reservation step only checks (the services this returns). `refused` is the
   * failure of a reservation the daily limit refused (`total` spent before it): no intent is written, nothing
   * is sent.
   */
  reservation?: {
    of(input: ReserveSpend): Reservation;
    check(input: ReserveSpend): void;
    refused(reservation: Reservation, total: number): ServiceFailure;
  };
}

/** How long a create's way waits for its in-doubt mark: the row is there from the intent, only its reason is late. */
const IN_DOUBT_WAIT_MS = 3000;

/** Who asked, and in which flow, as the journal's intent keeps it. */
interface Asked {
  kind: OperationKind;
  flow: string;
  asker: Partial<Asker>;
  /** A payout's id, for each of its requests. */
  parentRef?: string;
  /** The payee's name as the flow named it (payeeNameOf): the journal's only. */
  payeeName?: string;
  /** A payout's largest payment (its per-payment limit), for its reservation. */
  largest?: string;
}

/** A payment's payee name for the journal: a bank account's name, else the name the flow gave (not a bare number). */
function payeeNameOf(input: { phonenumber: string; payeeName?: string; bank?: { accountName: string } }) {
  if (input.bank) return input.bank.accountName;
  return input.payeeName && input.payeeName !== input.phonenumber ? input.payeeName : undefined;
}

/**
 * Nothing was sent because the journal did not take the intent; but a write that failed may have been committed
 * all the same (the answer lost, a timeout after the server took it). It is read back: there (or the read failed
 * too), the refusal is journalled (through the buffered writer, kept in Redis until the database takes it), so
 * the operation says `refused` and is not left `intended` for ever; not there, there is nothing to correct.
 */
async function journalNotSent(
  journal: MoneyJournal,
  ref: string,
  reason: unknown,
  giveBack?: GiveBackReason,
): Promise<void> {
  let there: boolean | undefined;
  try {
    there = journal.holds ? await journal.holds(ref) : undefined;
  } catch {
    there = undefined;
  }
  if (there === false) return;
  journal.write(
    events.refusal(ref, {
      reason: 'the journal could not take the intent in time; nothing was sent',
      data: { code: 'not_recorded', error: String(reason).slice(0, 200) },
      ...(giveBack ? { giveBack } : {}),
    }),
  );
}

/** What the create's answer says, in the journal's words. */
interface Answered {
  id?: string;
  serviceState?: string;
  state: OperationState;
}

/** A purchase's answer status in our words: the vending group answers once, done or not. */
const purchaseState = (status: string): OperationState =>
  ['success', 'successful', 'completed', 'processed'].includes(status.toLowerCase()) ? 'completed' : 'submitted';

/**
 * FlowCalls that record each payment, collection request and purchase they create: the intent before
 * the call (our record in the store and, with a journal, its row in the database, together), then the id or
 * the refusal. An intent that cannot be written before the call stops it:
 * - our record could not be written, or the journal could not take a repeated attempt's intent (an earlier
 *   attempt under the same key, a run taken over, may have reached the service): NotCalled, the runner
 *   repeats the step later under the same key, and the user is told it is being confirmed;
 * - the journal could not take a first attempt's intent (no record of the ref was there, so nothing can have
 *   been sent): the failure `not_recorded`, which proves nothing was made: the user is told nothing was sent
 *   and to try again shortly, and the spend reserved for it is given back.
 * One that cannot be completed after the call is logged (the journal's later rows wait in the buffered
 * writer), never turned into a failure of a call the service accepted.
 */
export function recordMade(
  calls: FlowCalls,
  made: MadeRecords,
  logger: Logger,
  options: RecordMadeOptions = {},
): FlowCalls {
  const { journal } = options;
  /** Marks the owed outcome of `ref` in doubt, before the person is told it is being checked; never fails the way. */
  async function inDoubt(ref: string, reason: 'conflict' | 'unanswered'): Promise<void> {
    if (!journal?.inDoubt || options.owedFirstCheckSeconds === undefined) return;
    try {
      if ((await within(journal.inDoubt(ref, reason), IN_DOUBT_WAIT_MS)) === undefined)
        logger.warn(
          { reason },
          'the journal did not mark the outcome in doubt in time; its row checks it all the same',
        );
    } catch (err) {
      logger.warn({ err: String(err), reason }, 'could not mark the outcome in doubt; its row checks it all the same');
    }
  }
  async function track<R>(
    intent: Intent,
    asked: Asked,
    create: () => Promise<R>,
    answerOf: (result: R) => Answered,
  ): Promise<R> {
    // No ref, no call: the intent could not be journalled under it, nor the call repeated or looked up by it.
    if (typeof intent.ref !== 'string' || intent.ref === '')
      throw new MissingKeyError('a money-moving create without its ref (Duplicate-Check-Key): nothing sent');
    const channel = asked.asker.channel ?? intent.chat.split(':')[0] ?? '';
    const user = asked.asker.userId ?? '';
    const who = journal && user ? journal.who(channel, user) : { role: '' };
    const now = Date.now();
    const reservation =
      journal && options.reservation && asked.kind !== 'request'
        ? options.reservation.of({
            channel,
            userId: user,
            flow: asked.kind === 'purchase' ? asked.flow : 'pay',
            amount: intent.amount,
            currency: intent.currency,
            duplicateCheckKey: intent.ref,
            ...(asked.largest ? { largest: asked.largest } : {}),
          })
        : undefined;
    const [kept, journalled] = await Promise.allSettled([
      made.intendOnce(intent),
      journal?.intend(
        {
          ref: intent.ref,
          kind: asked.kind,
          amount: intent.amount,
          currency: intent.currency,
          payee: intent.payee,
          channel,
          channelUser: user,
          chat: intent.chat,
          role: who.role,
          flow: asked.flow,
          ...(asked.parentRef ? { parentRef: asked.parentRef } : {}),
          ...(asked.payeeName ? { payeeName: asked.payeeName } : {}),
          data: {
            ...(who.person ? { person: who.person } : {}),
            ...(intent.recipient ? { recipient: intent.recipient } : {}),
          },
          ...(options.owedFirstCheckSeconds !== undefined
            ? {
                owed: {
                  record: { ...intent, created: now },
                  checkAt: new Date(now + options.owedFirstCheckSeconds * 1000),
                  build: options.build ?? currentBuild(),
                },
              }
            : {}),
        },
        reservation,
      ),
    ]);
    if (reservation && journalled.status === 'rejected' && journalled.reason instanceof OverDailyLimit) {
      // The daily limit refused it under the day's lock: no intent, no reservation, nothing sent.
      await made
        .refused(intent.ref)
        .catch((err: unknown) =>
          logger.warn({ err: String(err), kind: intent.kind }, 'could not mark the record refused'),
        );
      throw options.reservation!.refused(reservation, journalled.reason.total);
    }
    if (kept.status === 'rejected') {
      // Nothing was sent this time, but an earlier attempt under the same key (a run taken over) may have
      // reached the service: the step is repeated later (see NotCalled), never ended as a failure.
      logger.error(
        { err: String(kept.reason), kind: intent.kind },
        'could not record the intent; the call waits to be repeated',
      );
      throw new NotCalled(`the intent could not be recorded: ${String(kept.reason)}`);
    }
    if (journalled.status === 'rejected') {
      if (!kept.value.first) {
        logger.error(
          { err: String(journalled.reason), kind: intent.kind },
          'the journal did not take a repeated intent; the call waits to be repeated',
        );
        throw new NotCalled(`the intent could not be journalled: ${String(journalled.reason)}`);
      }
      logger.error(
        { err: String(journalled.reason), kind: intent.kind },
        'the journal did not take the intent; nothing was sent',
      );
      // The reservation was written in the intent's statement: nothing to give back unless it committed all the
      // same, and then the refusal journalled gives it back.
      await journalNotSent(journal!, intent.ref, journalled.reason, reservation ? 'intent not recorded' : undefined);
      await made
        .refused(intent.ref)
        .catch((err: unknown) =>
          logger.warn({ err: String(err), kind: intent.kind }, 'could not mark the record refused'),
        );
      if (!reservation)
        await options
          .giveBack?.(intent.ref)
          .catch((err: unknown) => logger.warn({ err: String(err) }, 'could not give the spend back'));
      const failure: ServiceFailure = {
        code: 'not_recorded',
        message: 'the journal could not take the intent; nothing was sent',
      };
      throw failure;
    }
    // Our short ref, drawn by the journal's intent: kept with our record when the answer is linked (the
    // notifications' words name it), and given with the result (the screens name it).
    const shortRef = typeof journalled.value === 'string' ? journalled.value : undefined;
    let result: R;
    try {
      result = await create();
    } catch (error) {
      // Only a failure that proves nothing was made marks it refused; any other (a 429, a 5xx, a lost answer)
      // leaves the intent open for the follow-up.
      if (madeNothing(error)) {
        await made
          .refused(intent.ref)
          .catch((err: unknown) =>
            logger.warn({ err: String(err), kind: intent.kind }, 'could not mark the record refused'),
          );
        const refusal = events.refusal(intent.ref, {
          reason: error.message ?? error.code,
          data: { code: error.code },
          ...(reservation ? { giveBack: 'refused by the service' as const } : {}),
        });
        // With a reservation, awaited: it is given back with the refusal before the person is told.
        if (reservation && journal) await journal.writeNow(refusal);
        else journal?.write(refusal);
      } else if (journal) {
        const code = isServiceFailure(error) ? error.code : 'unknown';
        journal.write({
          ref: intent.ref,
          type: 'unanswered',
          source: 'create',
          key: `${intent.ref}:unanswered:${code}`,
          at: new Date(),
          data: { code },
        });
        await inDoubt(intent.ref, 'unanswered');
      }
      if (!shortRef || madeNothing(error)) throw error;
      // It may have been made: the follow-up tells it, and the person asks about it, by our short ref.
      await made
        .named(intent.ref, shortRef)
        .catch((err: unknown) =>
          logger.warn({ err: String(err), kind: intent.kind }, 'could not keep the short ref with the record'),
        );
      throw isServiceFailure(error) && !(error instanceof Error) ? { ...error, shortRef } : error;
    }
    const answer = answerOf(result);
    // A 409 on our own key: the service holds the key, not necessarily a payment; the check is kept first.
    if (isAlreadySubmitted(result)) await inDoubt(intent.ref, 'conflict');
    await made.accepted(intent.ref, answer.id || undefined, kept.value.stored, shortRef).catch((err: unknown) => {
      logger.warn(
        { err: String(err), kind: intent.kind },
        'could not link the id to its record; the follow-up will find it',
      );
    });
    journal?.write(
      events.answer(intent.ref, {
        serviceId: answer.id,
        serviceState: answer.serviceState,
        state: answer.state,
        ...(answer.id ? {} : { data: { alreadySubmitted: true } }),
      }),
    );
    // The reference people are told: ours, with whatever the service answered (an id, held, already submitted).
    return shortRef && typeof result === 'object' && result !== null ? { ...result, shortRef } : result;
  }
  const submittedBefore: Answered = { state: 'submitted' };
  /** Reads the service's answer: its id and state from the fields of that kind of record, and our word for it. */
  const answerReader =
    (idField: string, stateField: string, word: (serviceState: string) => OperationState) =>
    (result: object): Answered => {
      if (isAlreadySubmitted(result as never)) return submittedBefore;
      const fields = result as Record<string, unknown>;
      const [id, state] = [fields[idField], fields[stateField]];
      const serviceState = typeof state === 'string' ? state : undefined;
      return {
        id: typeof id === 'string' ? id : undefined,
        serviceState,
        state: serviceState ? word(serviceState) : 'submitted',
      };
    };
  const paymentAnswer = answerReader('id', 'state', (state) => ourWord('payment', state));
  const requestAnswer = answerReader('id', 'status', (status) => ourWord('request', status));
  const purchaseAnswer = answerReader('reference', 'status', purchaseState);

  const { reservation: reserving } = options;
  return {
    ...calls,
    // The reservation is written with the intent: the flows' step before it only checks.
    ...(journal && reserving ? { reserveSpend: async (input: ReserveSpend) => reserving.check(input) } : {}),
    createPayment: (input) =>
      track(
        {
          ...intentOf('payment', input, input.phonenumber, input.currency),
          ...(input.recipients?.[0] ? { recipient: input.recipients[0].phonenumber } : {}),
        },
        {
          kind: input.recipients ? 'payout' : 'payment',
          flow: input.recipients ? 'payout' : 'pay',
          asker: input,
          parentRef: input.parentRef,
          payeeName: payeeNameOf(input),
          ...(input.recipients?.length
            ? { largest: Decimal.max(...input.recipients.map((r) => r.amount)).toFixed() }
            : {}),
        },
        () => calls.createPayment(input),
        paymentAnswer,
      ),
    createCollectionRequest: (input) =>
      track(
        intentOf('request', input, input.phonenumber, input.currency),
        { kind: 'request', flow: 'request', asker: input },
        () => calls.createCollectionRequest(input),
        requestAnswer,
      ),
    // Purchases are priced in naira (the vending group names no currency; the flows reserve the spend in it).
    purchaseData: (input) =>
      track(
        intentOf('purchase', input, input.phonenumber, VENDING_CURRENCY),
        { kind: 'purchase', flow: 'data', asker: input },
        () => calls.purchaseData(input),
        purchaseAnswer,
      ),
    purchasePin: (input) =>
      track(
        // The whole price: the vending group is sent one pin's price and the quantity.
        {
          ...intentOf('purchase', input, input.accountNumber, VENDING_CURRENCY),
          amount: new Decimal(input.amount || 0).times(input.quantity).toFixed(),
        },
        { kind: 'purchase', flow: 'pin', asker: input },
        () => calls.purchasePin(input),
        purchaseAnswer,
      ),
  };
}

/** The intent of a create: our ref (its Duplicate-Check-Key), the chat it names, its amount, currency and payee. */
function intentOf(
  kind: Intent['kind'],
  input: { duplicateCheckKey: string; metadata: Record<string, string>; amount: string },
  payee: string,
  currency: string,
): Intent {
  return { kind, ref: input.duplicateCheckKey, chat: input.metadata.chat ?? '', amount: input.amount, currency, payee };
}
