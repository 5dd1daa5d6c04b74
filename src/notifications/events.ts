/**
 * The service's notification body, and what each event means for a chat: where it goes (metadata.chat,
 * DESIGN decision 3), its dedup key, its place in the resource's order of states, and its words.
 */
import { z } from 'zod';
import { parseChat } from '../conversation/address.js';
import type { Address } from '../conversation/types.js';
import type { Params } from '../../flows/types.js';

export { parseChat };

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
  amount: text,
  currency: text,
  metadata,
  last_error: text,
  rejected_reason: text,
  cancelled_reason: text,
  phone_nos: z
    .array(z.union([z.string(), z.looseObject({ phonenumber: text })]))
    .nullish()
    .transform((list) => (list ?? []).map((e) => (typeof e === 'string' ? e : e.phonenumber))),
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

/** Final payment states in which no money moved: the spend reserved for the payment is given back. */
const PAYMENT_FAILED = new Set(['processed_with_errors', 'rejected', 'cancelled']);

/** The Duplicate-Check-Key (`metadata.ref`) of a payment this event says ended without money moving. */
export function failedPaymentRef(body: NotificationBody): string | undefined {
  if (body.hook.event !== 'payment.status.changed') return undefined;
  const p = paymentData.safeParse(body.data);
  const ref = p.success ? p.data.metadata.ref : undefined;
  return p.success && PAYMENT_FAILED.has(p.data.state) && typeof ref === 'string' && ref !== '' ? ref : undefined;
}

function unknownRankFallback(table: Record<string, number>, state: string): number {
  // A state the spec does not list sits between the open states and the final ones.
  return table[state] ?? 6;
}

/**
 * Maps an event to the message it owes a chat; null when nothing is owed (no chat in the metadata, an
 * event type with no chat message, a state the conversation already told the user).
 */
export function deliveryFor(body: NotificationBody): Delivery | null {
  const event = body.hook.event;
  if (event === 'payment.status.changed') {
    const p = paymentData.safeParse(body.data);
    if (!p.success) return null;
    const pay = p.data;
    const address = parseChat(pay.metadata.chat);
    if (!address || pay.state === 'new') return null;
    const state = pay.state === 'completed' ? 'processed' : pay.state;
    const reason = pay.rejected_reason || pay.cancelled_reason || pay.last_error;
    return {
      address,
      dedupKey: `payment:${pay.id}:${state}`,
      orderKey: `payment:${pay.id}`,
      rank: unknownRankFallback(PAYMENT_RANK, state),
      messageKey: PAYMENT_KEYS.has(state) ? `notify.payment.${state}` : 'notify.payment.other',
      params: { ref: pay.id, amount: pay.amount, currency: pay.currency, phone: pay.phone_nos[0] ?? '', state, reason },
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
      messageKey: REQUEST_KEYS.has(req.status) ? `notify.request.${req.status}` : 'notify.request.other',
      params: { amount: req.amount, currency: req.currency, phone: req.phonenumber, state: req.status, reason: req.error_message },
    };
  }
  if (event === 'collection.received') {
    const c = collectionData.safeParse(body.data);
    if (!c.success) return null;
    const col = c.data;
    const request = typeof col.collection_request === 'object' && col.collection_request !== null ? col.collection_request : null;
    const address = parseChat(request?.metadata.chat);
    if (!address) return null;
    const name = [col.contact?.first_name, col.contact?.last_name].filter(Boolean).join(' ');
    return {
      address,
      dedupKey: `collection:${col.id}:received`,
      orderKey: `collection:${col.id}`,
      rank: 0,
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
