/**
 * Collection verification: the service POSTs each new collection (on some networks) and our answer,
 * `ACCEPT <id>` or `REJECT <id> <reason>`, decides it. A collection that matches an open request made here
 * (same number, amount and currency; src/conversation/calls/made-records.ts) is accepted, and takes that request: one
 * request accepts one collection. Any other gets the configured default.
 */
import { z } from 'zod';
import { Decimal } from 'decimal.js';
import { parsePhone } from '../../flows/input.js';
import type { MadeRecords } from '../conversation/calls/made-records.js';

export const verificationBody = z.looseObject({
  phonenumber: z.string().min(1).max(40),
  amount: z
    .union([z.string().max(40), z.number()])
    .transform(String)
    .refine((a) => {
      try {
        return new Decimal(a).isFinite();
      } catch {
        return false;
      }
    }, 'must be a decimal amount'),
  currency_code: z.string().min(1).max(8),
  reference: z.string().nullish(),
  remote_transaction_id: z.union([z.string().min(1).max(100), z.number()]).transform(String),
});
export type VerificationBody = z.infer<typeof verificationBody>;

export interface VerifyPolicy {
  /** What to answer when no open request matches. */
  default: 'accept' | 'reject';
  /** Reason passed to the network (and maybe the subscriber) on a default rejection. */
  rejectReason?: string;
  /** Country read into a number sent without its `+` (the product's DEFAULT_COUNTRY). Default UG. */
  defaultCountry?: string;
}

/**
 * The answer to one verification. The sender's number is normalised as the flows read numbers (so
 * `256772…` and `+256 772 …` both match a request made to `+256772…`); the first open request of that number,
 * amount and currency is consumed by this collection, so a second collection for the same request gets the
 * default, while the same collection asked about again gets the same answer.
 */
export async function verifyCollection(
  made: MadeRecords,
  body: VerificationBody,
  policy: VerifyPolicy,
): Promise<string> {
  // A single id with spaces would break the answer's format: the service's ids carry none.
  const id = body.remote_transaction_id.replace(/\s+/g, '');
  // The contract sends international numbers; one without its `+` (the service adds it in its own filters)
  // is read as international too, a local one (`0772…`) with the default country.
  const raw = body.phonenumber.trim();
  const phone = parsePhone(/^[1-9]/.test(raw) ? `+${raw}` : raw, policy.defaultCountry ?? 'UG');
  const open = phone.ok ? await made.consumeOpenRequest(phone.e164, body.amount, body.currency_code, id) : null;
  if (open || policy.default === 'accept') return `ACCEPT ${id}`;
  return `REJECT ${id} ${policy.rejectReason ?? 'No matching payment request'}`;
}
