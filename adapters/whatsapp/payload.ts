/**
 * The body of a `POST /whatsapp/webhook` (Meta's `messages` webhook), parsed with bounds on every value:
 * `{ object, entry[]: { changes[]: { field, value: { metadata, contacts[], messages[], statuses[] } } } }`.
 *
 * The envelope must parse or the delivery is refused (400). Inside it each message and status is read on its
 * own: one that does not parse is skipped with a log line, so one odd item never makes Meta redeliver the
 * rest forever. Changes of other fields (template status, account updates) and messages to another of the
 * app's phone numbers are not ours and are left alone.
 */
import { z } from 'zod';

const id = z.string().min(1).max(256);
/** A WhatsApp user id: the number in digits, as Meta sends it. */
export const WA_ID = /^\d{6,20}$/;

const incomingMessage = z.object({
  id,
  from: z.string().regex(WA_ID, 'a wa_id: 6 to 20 digits'),
  /** Unix seconds, as a string. */
  timestamp: z
    .string()
    .regex(/^\d{1,12}$/)
    .optional(),
  type: z.string().min(1).max(40),
  /** WhatsApp lets a user type up to 65536 characters. */
  text: z.object({ body: z.string().max(65_536) }).optional(),
  interactive: z
    .object({
      type: z.string().max(40),
      button_reply: z.object({ id: z.string().max(256), title: z.string().max(256).optional() }).optional(),
      list_reply: z.object({ id: z.string().max(256), title: z.string().max(256).optional() }).optional(),
    })
    .optional(),
  /** A tap on a template's quick-reply button. */
  button: z.object({ text: z.string().max(1024) }).optional(),
  /** The message replied to (the interactive message whose button was tapped). */
  context: z.object({ id: id.optional() }).optional(),
});
export type IncomingMessage = z.infer<typeof incomingMessage>;

const status = z.object({
  id,
  status: z.string().min(1).max(40),
  recipient_id: z.string().max(64).optional(),
  errors: z
    .array(z.object({ code: z.number().int().optional(), title: z.string().max(512).optional() }))
    .max(10)
    .optional(),
});
export type MessageStatus = z.infer<typeof status>;

const value = z.object({
  metadata: z.object({ phone_number_id: z.string().max(64).optional() }).optional(),
  messages: z.array(z.unknown()).max(1000).optional(),
  statuses: z.array(z.unknown()).max(1000).optional(),
});

/** Meta always sends `object` and each change's `field`; a body without them is read as the messages webhook too. */
const envelope = z.object({
  object: z.literal('whatsapp_business_account').optional(),
  entry: z
    .array(
      z.object({ changes: z.array(z.object({ field: z.string().max(64).optional(), value: z.unknown() })).max(100) }),
    )
    .max(100),
});

/** What a delivery holds for this phone number, and what in it could not be read. */
export interface Delivery {
  messages: IncomingMessage[];
  statuses: MessageStatus[];
  /** Items skipped: not parsable, or for another of the app's phone numbers. */
  skipped: number;
}

export type ReadResult = { ok: true; delivery: Delivery } | { ok: false; reason: string };

/** Reads a webhook body for the phone number `phoneNumberId`. */
export function readDelivery(body: unknown, phoneNumberId: string): ReadResult {
  const parsed = envelope.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      reason: `not a WhatsApp messages webhook: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'unreadable'}`,
    };
  }
  const delivery: Delivery = { messages: [], statuses: [], skipped: 0 };
  for (const change of parsed.data.entry.flatMap((entry) => entry.changes)) {
    if (change.field !== undefined && change.field !== 'messages') continue;
    const read = value.safeParse(change.value);
    if (!read.success) {
      delivery.skipped++;
      continue;
    }
    const { metadata, messages = [], statuses = [] } = read.data;
    // Every number of the app shares its webhook: another number's messages are not ours to answer.
    if (metadata?.phone_number_id !== undefined && metadata.phone_number_id !== phoneNumberId) {
      delivery.skipped += messages.length + statuses.length;
      continue;
    }
    for (const item of messages) {
      const message = incomingMessage.safeParse(item);
      if (message.success) delivery.messages.push(message.data);
      else delivery.skipped++;
    }
    for (const item of statuses) {
      const parsedStatus = status.safeParse(item);
      if (parsedStatus.success) delivery.statuses.push(parsedStatus.data);
      else delivery.skipped++;
    }
  }
  return { ok: true, delivery };
}
