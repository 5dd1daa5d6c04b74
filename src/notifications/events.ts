/**
 * The service's notification body and what each event means for a chat. A body is parsed into a
 * {@link Notice} (its parsed, bounded fields: the only part of it that is queued) saying which state a payment,
 * collection request or collection reached; {@link deliveryFor} turns a notice about something WE made into
 * the message it owes: routed to our record's chat, in our record's words (amount, currency, payee), with
 * order and dedup keys of our record (DESIGN, "The trust boundary").
 */
import { z } from 'zod';
import { parseChat } from '../store/chat-address.js';
import { contactName } from '../momo/contact-name.js';
import type { Made, MadeKind } from '../conversation/calls/made-records.js';
import type { Address } from '../conversation/types.js';
import type { Params } from '../../flows/types.js';

export const EVENT_TYPES = [
  'payment.status.changed',
  'collection.received',
  'contact.created',
  'collectionrequest.status.changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Longest id kept: the service's are integers. */
const MAX_ID = 64;
/** Longest text kept (a reason, a name): what a chat message or a 182-character screen can show. */
const MAX_TEXT = 200;

const id = z.union([z.number(), z.string().min(1).max(MAX_ID)]).transform(String);
const metadata = z
  .union([z.record(z.string(), z.unknown()), z.string(), z.null()])
  .optional()
  .transform((m): Record<string, unknown> => {
    if (typeof m === 'string') {
      try {
        const parsed: unknown = JSON.parse(m);
        return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
      } catch {
        return {};
      }
    }
    return m ?? {};
  });
const text = z
  .union([z.string(), z.number()])
  .nullish()
  .transform((v) => (v == null ? '' : String(v).slice(0, MAX_TEXT)));
const refOf = (m: Record<string, unknown>): string => (typeof m.ref === 'string' ? m.ref.slice(0, MAX_TEXT) : '');

/** `{hook, data}`: hook is the webhook object (its `event` names the type), data the triggering object. */
export const notificationBody = z.object({
  hook: z.looseObject({ event: z.string().min(1).max(MAX_TEXT) }),
  data: z.looseObject({}),
});
export type NotificationBody = z.infer<typeof notificationBody>;

export type NoticeKind = 'payment' | 'request' | 'collection';

/** What one notification says, parsed and bounded. */
export interface Notice {
  kind: NoticeKind;
  /** The service's id of the payment, the collection request or the collection. */
  id: string;
  /** The state it reached (`completed` reads as `processed`); a collection's is `received`. */
  state: string;
  /** As the body gives them: compared with our record and logged when they differ, never shown. */
  amount: string;
  currency: string;
  phone: string;
  /** Why a payment failed, was rejected or cancelled, or a request failed (text from the service). */
  reason: string;
  /** `metadata.ref` as the body gives it: names our record when the create's answer (with the id) was lost. */
  ref: string;
  /** A payment's recipients (v5 `phone_nos`) with their states, when it names them: a payout's message shows them. */
  recipients?: Array<{ phone: string; state: string; error: string }>;
  /** A collection: the id of the request it was matched to (an object from version 3, a bare id before). */
  requestId?: string;
  /** A collection: the sender's name, the reference sent with it, and its status (`successful`, `failed`, ...). */
  name?: string;
  reference?: string;
  status?: string;
}

/**
 * Recipient states (v5 `phone_nos[].state`) told while the payment itself waits `approved` or `scheduled`:
 * the network holds the transfer. A notice names such a state `recipient.<state>`.
 */
const RECIPIENT_STATES = ['queued', 'paused', 'parked', 'paused_for_admin_action'] as const;
const PAYMENT_WAITING = new Set(['approved', 'scheduled']);

const paymentData = z
  .looseObject({
    id,
    state: z.string().min(1).max(MAX_ID),
    paused_reason: text,
    amount: text,
    currency: text,
    metadata,
    last_error: text,
    rejected_reason: text,
    cancelled_reason: text,
    phone_nos: z
      .array(z.union([z.string(), z.looseObject({ phonenumber: text, state: text, last_error: text })]))
      .max(1000)
      .nullish()
      .transform((list) =>
        (list ?? []).map((e) => (typeof e === 'string' ? { phonenumber: e, state: '', last_error: '' } : e)),
      ),
  })
  .transform((p): Notice => {
    const held = PAYMENT_WAITING.has(p.state)
      ? p.phone_nos.find((r) => (RECIPIENT_STATES as readonly string[]).includes(r.state))
      : undefined;
    return {
      kind: 'payment',
      id: p.id,
      state: held ? `recipient.${held.state}` : p.state === 'completed' ? 'processed' : p.state,
      amount: p.amount,
      currency: p.currency,
      phone: held?.phonenumber ?? p.phone_nos[0]?.phonenumber ?? '',
      reason: held ? p.paused_reason || held.last_error : p.rejected_reason || p.cancelled_reason || p.last_error,
      ref: refOf(p.metadata),
      ...(p.phone_nos.some((r) => r.state !== '')
        ? { recipients: p.phone_nos.map((r) => ({ phone: r.phonenumber, state: r.state, error: r.last_error })) }
        : {}),
    };
  });

const requestFields = {
  id,
  status: z.string().min(1).max(MAX_ID),
  amount: text,
  currency: text,
  phonenumber: text,
  metadata,
  error_message: text,
};
const requestData = z.looseObject(requestFields).transform((r): Notice => ({
  kind: 'request',
  id: r.id,
  state: r.status,
  amount: r.amount,
  currency: r.currency,
  phone: r.phonenumber,
  reason: r.error_message,
  ref: refOf(r.metadata),
}));

const collectionData = z
  .looseObject({
    id,
    status: text,
    amount: text,
    currency: text,
    phonenumber: text,
    reference: text,
    contact: z.looseObject({ first_name: text, last_name: text }).nullish(),
    collection_request: z.union([z.looseObject({ id }), id, z.null()]).optional(),
  })
  .transform((c): Notice => {
    const request = c.collection_request;
    return {
      kind: 'collection',
      id: c.id,
      state: 'received',
      amount: c.amount,
      currency: c.currency,
      phone: c.phonenumber,
      reason: '',
      ref: '',
      ...(request == null ? {} : { requestId: typeof request === 'object' ? request.id : request }),
      name: contactName(c.contact?.first_name, c.contact?.last_name),
      reference: c.reference,
      status: c.status,
    };
  });

/**
 * The data of each event we act on, by the event's name: a Map, not an object, as the name comes from outside
 * and `valueOf` or `constructor` is no event of ours.
 */
const DATA = new Map<string, z.ZodType<Notice>>([
  ['payment.status.changed', paymentData],
  ['collectionrequest.status.changed', requestData],
  ['collection.received', collectionData],
]);

export type NoticeParse = { ok: true; notice: Notice | null } | { ok: false; issues: z.core.$ZodIssue[] };

/**
 * A body -> its notice; null for an event that owes no chat anything (`contact.created`, a type we do not
 * know); not ok when an event we act on carries data we cannot read.
 */
export function parseNotice(body: NotificationBody): NoticeParse {
  const schema = DATA.get(body.hook.event);
  if (!schema) return { ok: true, notice: null };
  const parsed = schema.safeParse(body.data);
  return parsed.success
    ? { ok: true, notice: parsed.data }
    : { ok: false, issues: parsed.error.issues.map((i) => ({ ...i, path: ['data', ...i.path] })) };
}

/** The notice in an object the service answered a read with (the same object a notification carries). */
export function noticeOfRead(kind: NoticeKind, data: unknown): Notice | null {
  const parsed = (kind === 'payment' ? paymentData : kind === 'request' ? requestData : collectionData).safeParse(data);
  return parsed.success ? parsed.data : null;
}

/** What one notice asks of the dispatcher. */
export interface Delivery {
  address: Address;
  /** Unique per state change of our record: a repeat of it is dropped. */
  dedupKey: string;
  /** Our record whose states are ordered, and this state's place: an older one never follows a newer. */
  orderKey: string;
  rank: number;
  /** An outcome (a final state): confirmed by a read without credentials. */
  final: boolean;
  /**
   * Told to USSD users too (at their next dial): outcomes, and states that ask someone to act. Steps on
   * the way are not kept for a 182-character screen.
   */
  forUssd: boolean;
  messageKey: string;
  params: Params;
}

/** Ranks from this one up are outcomes. */
export const FINAL_RANK = 9;
/** A state the contract does not list sits between the open states and the final ones. */
const UNKNOWN_RANK = 6;

/** Each kind's states in order (a Map: the state comes from outside, and `constructor` is no state of ours). */
const RANKS: Record<NoticeKind, ReadonlyMap<string, number>> = {
  payment: new Map(
    Object.entries({
      new: 0,
      validated: 1,
      approval_needed: 2,
      approval_requested: 3,
      approved: 4,
      scheduled: 5,
      'recipient.queued': 6,
      'recipient.paused': 6.1,
      'recipient.parked': 6.2,
      'recipient.paused_for_admin_action': 6.3,
      processed: 9,
      processed_with_errors: 9,
      rejected: 9,
      cancelled: 9,
      // Ours, not the service's: an "already submitted" the service holds nothing of (follow-up.ts). Final, and
      // a state the service reports later all the same is still told (it is not outranked).
      not_made: 9,
    }),
  ),
  request: new Map(
    Object.entries({
      new: 0,
      pending: 1,
      instructions_sent: 2,
      processing_started: 3,
      successful: 9,
      failed: 9,
      expired: 9,
      reversed: 10,
      not_made: 9,
    }),
  ),
  collection: new Map([['received', 9]]),
};

/** States with words of their own; the others use `notify.<kind>.other`. */
const WORDED: Record<NoticeKind, ReadonlySet<string>> = {
  payment: new Set([
    'validated',
    'approval_needed',
    'approval_requested',
    'approved',
    'scheduled',
    ...RECIPIENT_STATES.map((state) => `recipient.${state}`),
    'processed',
    'processed_with_errors',
    'rejected',
    'cancelled',
    'not_made',
  ]),
  request: new Set(['successful', 'failed', 'expired', 'reversed', 'not_made']),
  collection: new Set(['received']),
};

/**
 * Open states told in every channel, USSD included: those that ask someone to act, and the steps of the
 * service's own approvers (a payment waiting for them says why it has not arrived yet).
 */
const ACT_STATES = new Set(['approval_needed', 'approval_requested', 'recipient.paused_for_admin_action']);

const rankOf = (kind: NoticeKind, state: string): number => RANKS[kind].get(state) ?? UNKNOWN_RANK;

/** True for an outcome: payment processed, processed_with_errors, rejected, cancelled; a request's successful, failed, expired, reversed; a collection received. */
export const isFinal = (notice: Pick<Notice, 'kind' | 'state'>): boolean =>
  rankOf(notice.kind, notice.state) >= FINAL_RANK;

/** The kind of our record a notice is about: a collection is told to the request it was matched to. */
export const recordKindOf = (kind: NoticeKind): MadeKind => (kind === 'payment' ? 'payment' : 'request');

/** The service's id of our record a notice names (a collection names its request). */
export const recordIdOf = (notice: Notice): string | undefined =>
  notice.kind === 'collection' ? notice.requestId : notice.id;

/** Final payment states in which no money moved: the spend reserved for the payment is given back. */
export const PAYMENT_FAILED: ReadonlySet<string> = new Set([
  'processed_with_errors',
  'rejected',
  'cancelled',
  'not_made',
]);

/**
 * Our own final state (never the service's) of a create answered "already submitted" (409 on our own key) of
 * which the service holds nothing: nothing was made (follow-up.ts, src/momo/assumptions.ts).
 */
export const NOT_MADE = 'not_made';

export { parseChat };

/** The order key of our record: its kind and our ref. */
export const recordOrderKey = (made: Made): string => `${made.kind}:${made.ref}`;

/**
 * The order and dedup keys of a (record, state) a notice names: our kind and ref, never the body's ids alone
 * (a collection is one of our request's, ordered on its own).
 */
export function marksOf(made: Made, notice: Notice): Pick<Delivery, 'dedupKey' | 'orderKey' | 'rank'> {
  const orderKey =
    notice.kind === 'collection' ? `${recordOrderKey(made)}:collection:${notice.id}` : recordOrderKey(made);
  return { orderKey, dedupKey: `${orderKey}:${notice.state}`, rank: rankOf(notice.kind, notice.state) };
}

/**
 * The message a notice about our record `made` owes its chat; null when its chat is not one we can reach, it
 * is the creation itself (`new`, told by the conversation that made it), a collection request's open state
 * (shown in the conversation that made it: only its outcomes are pushed), or a collection that did not
 * arrive (failed, reversed, cashed out: told by its request's own change).
 */
export function deliveryFor(made: Made, notice: Notice): Delivery | null {
  const address = parseChat(made.chat);
  if (!address || notice.state === 'new') return null;
  if (notice.kind === 'request' && RANKS.request.has(notice.state) && !isFinal(notice)) return null;
  if (
    notice.kind === 'collection' &&
    notice.status !== undefined &&
    notice.status !== '' &&
    notice.status !== 'successful'
  )
    return null;
  const words = {
    amount: made.amount,
    currency: made.currency,
    phone: made.payee,
    state: notice.state,
    reason: notice.reason,
  };
  // Our short ref (a collection: its request's), else the service's id; `id` the service's, shown beside ours.
  const serviceId = made.id ?? recordIdOf(notice);
  const refs: Params = {
    ref: made.shortRef ?? serviceId ?? '',
    ...(made.shortRef && serviceId ? { id: serviceId } : {}),
  };
  const params: Params =
    notice.kind === 'collection'
      ? { ...words, ...refs, name: notice.name ? ` (${notice.name})` : '', reference: notice.reference || '-' }
      : { ...words, ...refs };
  const final = isFinal(notice);
  return {
    address,
    ...marksOf(made, notice),
    final,
    forUssd: final || ACT_STATES.has(notice.state),
    messageKey: `notify.${notice.kind}.${WORDED[notice.kind].has(notice.state) ? notice.state : 'other'}`,
    params,
  };
}
