/**
 * Collection verification: the service POSTs each new collection (on some networks) and our answer,
 * `ACCEPT <id>` or `REJECT <id> <reason>`, decides it. A collection that matches an open request made here
 * (same number, amount and currency) is accepted; any other gets the configured default.
 */
import { z } from 'zod';
import { Decimal } from 'decimal.js';
import type { SessionStore } from '../conversation/types.js';
import { keys } from '../conversation/keys.js';

export const verificationBody = z.looseObject({
  phonenumber: z.string().min(1),
  amount: z.union([z.string(), z.number()]).transform(String).refine((a) => {
    try {
      return new Decimal(a).isFinite();
    } catch {
      return false;
    }
  }, 'must be a decimal amount'),
  currency_code: z.string().min(1),
  reference: z.string().nullish(),
  remote_transaction_id: z.union([z.string().min(1), z.number()]).transform(String),
});
export type VerificationBody = z.infer<typeof verificationBody>;

export interface VerifyPolicy {
  /** What to answer when no open request matches. */
  default: 'accept' | 'reject';
  /** Reason passed to the network (and maybe the subscriber) on a default rejection. */
  rejectReason?: string;
}

export async function verifyCollection(store: SessionStore, body: VerificationBody, policy: VerifyPolicy): Promise<string> {
  // A single id with spaces would break the answer's format: the service's ids carry none.
  const id = body.remote_transaction_id.replace(/\s+/g, '');
  const open = await store.get(keys.openRequest(body.phonenumber, body.amount, body.currency_code));
  if (open || policy.default === 'accept') return `ACCEPT ${id}`;
  return `REJECT ${id} ${policy.rejectReason ?? 'No matching payment request'}`;
}
