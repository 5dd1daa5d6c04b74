/**
 * The signature of an event sent out, Stripe's scheme: the header `Momo-Signature: t=<unix seconds>,v1=<hex>`,
 * where the hex is HMAC-SHA256 of `<t>.<raw body>` keyed by WEBHOOK_SECRET. A receiver recomputes it over the
 * raw bytes it got (never a re-serialised JSON), compares in constant time, and refuses a `t` outside its
 * tolerance (docs/webhooks-out.md: five minutes), so a captured request cannot be replayed later. The
 * receiver's check is the snippet of docs/webhooks-out.md (the tests run that very snippet).
 */
import { createHmac } from 'node:crypto';

/** The header's name. */
export const SIGNATURE_HEADER = 'Momo-Signature';

/** The header's value for `body` sent at `t` (unix seconds). */
export function signatureHeader(secret: string, body: string, t: number): string {
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest('hex');
  return `t=${t},v1=${v1}`;
}
