/**
 * The service's notification body, and what each event means for a chat: where it goes (metadata.chat,
 * DESIGN decision 3), its dedup key, its place in the resource's order of states, and its words.
 */
import { z } from 'zod';
import type { Address, Channel } from '../conversation/types.js';
import type { Params } from '../../flows/types.js';

export const EVENT_TYPES = [
  'payment.status.changed',
  'collection.received',
  'contact.created',
  'collectionrequest.status.changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const id = z.union([z.number(), z.string().min(1)]).transform(String);
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
const text = z.union([z.string(), z.number()]).nullish().transform((v) => (v == null ? '' : String(v)));

/** `{hook, data}`: hook is the webhook object (its `event` names the type), data the triggering object. */
export const notificationBody = z.object({
  hook: z.looseObject({ event: z.string().min(1) }),
  data: z.looseObject({}),
});
export type NotificationBody = z.infer<typeof notificationBody>;

const paymentData = z.looseObject({
  id,
  state: z.string().min(1),
  paused_reason: text,
  amount: text,
  currency: text,
  metadata,
  last_error: text,
  rejected_reason: text,
  cancelled_reason: text,
  phone_nos: z
    .array(z.union([z.string(), z.looseObject({ phonenumber: text, state: text, last_error: text })]))
    .nullish()
    .transform((list) => (list ?? []).map((e) => (typeof e === 'string' ? { phonenumber: e, state: '', last_error: '' } : e))),
});

const requestData = z.looseObject({
  id,
  status: z.string().min(1),
  amount: text,
  currency: text,
  phonenumber: text,
  metadata,
  error_message: text,
});

const collectionData = z.looseObject({
  id,
  status: text,
  amount: text,
  currency: text,
  phonenumber: text,
  reference: text,
  contact: z.looseObject({ first_name: text, last_name: text }).nullish(),
  collection_request: z.union([requestData, id, z.null()]).optional(),
});

/** What one event asks of the dispatcher. */
export interface Delivery {
  address: Address;
  /** Unique per state change: a repeat of it is dropped. */
  dedupKey: string;
  /** The resource whose states are ordered, and this state's place: an older one never follows a newer. */
  orderKey: string;
  rank: number;
  /**
   * Told to USSD users too (at their next dial): outcomes, and states that ask someone to act. Steps on
   * the way are not kept for a 182-character screen.
   */
  forUssd: boolean;
  messageKey: string;
  params: Params;
}

const PAYMENT_RANK: Record<string, number> = {
  new: 0,
  validated: 1,
  approval_needed: 2,
  approval_requested: 3,
  approved: 4,
  scheduled: 5,
  processed: 9,
  completed: 9,
  processed_with_errors: 9,
  rejected: 9,
  cancelled: 9,
};
const PAYMENT_KEYS = new Set(Object.keys(PAYMENT_RANK).filter((s) => s !== 'new' && s !== 'completed'));

/**
 * Recipient states (v5 `phone_nos[].state`) told while the payment itself waits `approved` or `scheduled`:
 * the network holds the transfer. Between the payment's open states and its outcome.
 */
const RECIPIENT_RANK: Record<string, number> = { queued: 6, paused: 6.1, parked: 6.2, paused_for_admin_action: 6.3 };
const PAYMENT_WAITING = new Set(['approved', 'scheduled']);

/** Ranks from this one up are outcomes (processed, failed, rejected, expired...). */
const OUTCOME_RANK = 9;
/** Open states that ask someone to act: told in every channel, USSD included. */
const ACT_STATES = new Set(['approval_needed', 'paused_for_admin_action']);

const REQUEST_RANK: Record<string, number> = {
  new: 0,
  pending: 1,
  instructions_sent: 2,
  processing_started: 3,
  successful: 9,
  failed: 9,
  expired: 9,
  reversed: 10,
};
const REQUEST_KEYS = new Set(['successful', 'failed', 'expired', 'reversed']);

const CHANNELS: readonly Channel[] = ['ussd', 'telegram', 'slack', 'whatsapp'];

/** `telegram:123`, `slack:T1:U2`, `ussd:+256...`, `whatsapp:256...` -> Address; anything else -> null. */
export function parseChat(chat: unknown): Address | null {
  if (typeof chat !== 'string') return null;
  const at = chat.indexOf(':');
  if (at <= 0 || at === chat.length - 1) return null;
  const channel = chat.slice(0, at) as Channel;
  if (!CHANNELS.includes(channel)) return null;
  return { channel, conversationId: chat.slice(at + 1) };
}

function unknownRankFallback(table: Record<string, number>, state: string): number {
  // A state the spec does not list sits between the open states and the final ones.
  return table[state] ?? 6;
}

/**
 * The request a received collection paid, when the body names it only by id (organizations whose saved
 * version is below v3 get `collection_request` as an id, not the expanded request with its metadata): the
 * chat is then found in our record of that request (`requestChat` of deliveryFor).
 */
export function requestOfCollection(body: NotificationBody): { id: string; phonenumber: string; amount: string; currency: string } | null {
  if (body.hook.event !== 'collection.received') return null;
  const c = collectionData.safeParse(body.data);
  if (!c.success || c.data.collection_request === null || c.data.collection_request === undefined) return null;
  if (typeof c.data.collection_request === 'object') return null;
  return { id: c.data.collection_request, phonenumber: c.data.phonenumber, amount: c.data.amount, currency: c.data.currency };
}

/**
 * Maps an event to the message it owes a chat; null when nothing is owed (no chat in the metadata, an
 * event type with no chat message, a state the conversation already told the user). `requestChat`: the
 * chat of the request a collection paid, from our record, when the body gives only its id.
 */
export function deliveryFor(body: NotificationBody, requestChat?: string): Delivery | null {
  const event = body.hook.event;
  if (event === 'payment.status.changed') {
    const p = paymentData.safeParse(body.data);
    if (!p.success) return null;
    const pay = p.data;
    const address = parseChat(pay.metadata.chat);
    if (!address || pay.state === 'new') return null;
    const recipient = pay.phone_nos[0];
    const params = { ref: pay.id, amount: pay.amount, currency: pay.currency, phone: recipient?.phonenumber ?? '' };
    const held = PAYMENT_WAITING.has(pay.state) ? pay.phone_nos.find((r) => r.state in RECIPIENT_RANK) : undefined;
    if (held) {
      return {
        address,
        dedupKey: `payment:${pay.id}:recipient:${held.state}`,
        orderKey: `payment:${pay.id}`,
        rank: RECIPIENT_RANK[held.state]!,
        forUssd: ACT_STATES.has(held.state),
        messageKey: `notify.payment.recipient.${held.state}`,
        params: { ...params, phone: held.phonenumber, state: held.state, reason: pay.paused_reason || held.last_error },
      };
    }
    const state = pay.state === 'completed' ? 'processed' : pay.state;
    const reason = pay.rejected_reason || pay.cancelled_reason || pay.last_error;
    const rank = unknownRankFallback(PAYMENT_RANK, state);
    return {
      address,
      dedupKey: `payment:${pay.id}:${state}`,
      orderKey: `payment:${pay.id}`,
      rank,
      forUssd: rank >= OUTCOME_RANK || ACT_STATES.has(state),
      messageKey: PAYMENT_KEYS.has(state) ? `notify.payment.${state}` : 'notify.payment.other',
      params: { ...params, state, reason },
    };
  }
  if (event === 'collectionrequest.status.changed') {
    const r = requestData.safeParse(body.data);
    if (!r.success) return null;
    const req = r.data;
    const address = parseChat(req.metadata.chat);
    // Open states were shown in the conversation that made the request; only outcomes are pushed.
    const known = REQUEST_RANK[req.status];
    if (!address || (known !== undefined && known < 9)) return null;
    return {
      address,
      dedupKey: `collectionrequest:${req.id}:${req.status}`,
      orderKey: `collectionrequest:${req.id}`,
      rank: unknownRankFallback(REQUEST_RANK, req.status),
      forUssd: true,
      messageKey: REQUEST_KEYS.has(req.status) ? `notify.request.${req.status}` : 'notify.request.other',
      params: { ref: req.id, amount: req.amount, currency: req.currency, phone: req.phonenumber, state: req.status, reason: req.error_message },
    };
  }
  if (event === 'collection.received') {
    const c = collectionData.safeParse(body.data);
    if (!c.success) return null;
    const col = c.data;
    // A failed, reversed or cashed-out collection that paid a request is told by the request's own change.
    if (col.status !== '' && col.status !== 'successful') return null;
    const request = typeof col.collection_request === 'object' && col.collection_request !== null ? col.collection_request : null;
    const address = parseChat(request?.metadata.chat ?? requestChat);
    if (!address) return null;
    const name = [col.contact?.first_name, col.contact?.last_name].filter(Boolean).join(' ');
    return {
      address,
      dedupKey: `collection:${col.id}:received`,
      orderKey: `collection:${col.id}`,
      rank: 0,
      forUssd: true,
      messageKey: 'notify.collection.received',
      params: {
        amount: col.amount,
        currency: col.currency,
        phone: col.phonenumber,
        name: name ? ` (${name})` : '',
        reference: col.reference || '-',
      },
    };
  }
  return null;
}
