/**
 * The short ref: the one reference of an operation people read and say (`MC-7K2QX`), given by the journal's
 * own sequence in the intent's insert (migration 0340, which renders it in SQL). Ours, unique, never reused,
 * whatever restarts; read out over a phone without doubt (no 0, O, 1 or I). Our ref (the Duplicate-Check-Key, a
 * UUID) stays the operation's name for the service and the code; the service's id is shown beside the short ref
 * where there is one.
 */
import {
  SHORT_REF_ALPHABET,
  SHORT_REF_MULTIPLIER,
  SHORT_REF_OFFSET,
  SHORT_REF_PREFIX,
  SHORT_REF_WIDTH,
} from './migrations/0340_short_ref.js';

export { SHORT_REF_ALPHABET, SHORT_REF_PREFIX } from './migrations/0340_short_ref.js';

/** The shape of a short ref as the journal writes it. */
export const SHORT_REF_SHAPE = new RegExp(`^${SHORT_REF_PREFIX}[${SHORT_REF_ALPHABET}]{${SHORT_REF_WIDTH},}$`);

/** The short ref of the sequence's number `n`, as migration 0340's `journal_short_ref` renders it. */
export function shortRefOf(n: bigint): string {
  let width = SHORT_REF_WIDTH;
  let space = 32n ** BigInt(SHORT_REF_WIDTH);
  while (n >= space) {
    width += 1;
    space *= 32n;
  }
  let v = (n * BigInt(SHORT_REF_MULTIPLIER) + BigInt(SHORT_REF_OFFSET)) % space;
  let s = '';
  for (let i = 0; i < width; i++) {
    s = SHORT_REF_ALPHABET[Number(v % 32n)]! + s;
    v /= 32n;
  }
  return SHORT_REF_PREFIX + s;
}

const BODY = new RegExp(`^[${SHORT_REF_ALPHABET}]{${SHORT_REF_WIDTH},}$`);

/**
 * A short ref as someone typed it (any case, with or without the dash or the `MC`, spaces and dots between):
 * the journal's spelling of it, or undefined when it cannot be one.
 */
export function readShortRef(typed: string): string | undefined {
  const plain = typed.toUpperCase().replace(/[\s.\-_]/g, '');
  const prefix = SHORT_REF_PREFIX.replace('-', '');
  const rest = plain.startsWith(prefix) ? plain.slice(prefix.length) : undefined;
  if (rest !== undefined && BODY.test(rest)) return SHORT_REF_PREFIX + rest;
  return BODY.test(plain) ? SHORT_REF_PREFIX + plain : undefined;
}

/**
 * The reference people read: the short ref, with the service's id beside it where there is one
 * (`MC-7K2QX (service 12)`; `service` is the word for the service in the reader's language, `huduma` in
 * Kiswahili); the service's id alone for an operation written before short refs. The one way /ops, Slack's
 * payouts and approvals, the chat messages and the SMS write it.
 */
export function referenceOf(
  op: { short_ref?: string | null; service_id?: string | null },
  service = 'service',
): string {
  if (!op.short_ref) return op.service_id ?? '–';
  return op.service_id ? `${op.short_ref} (${service} ${op.service_id})` : op.short_ref;
}
