/**
 * Collection verification: when the organization has a verification URL, each new collection is POSTed
 * there as JSON `{phonenumber, amount, currency_code, reference, remote_transaction_id}`. A 200 text answer
 * `ACCEPT <remote_transaction_id>` accepts it, `REJECT <remote_transaction_id> [reason]` rejects it. No
 * answer within 60 s, an unreachable URL or any other answer applies the organization's `Accept
 * Collections By Default` option. Without a URL collections are accepted. It carries the organization's
 * webhook Basic auth (VERIFICATION_SENDS_WEBHOOK_AUTH in src/momo/assumptions.ts). The sandbox sends these for
 * every collection (its numbers are all on networks the spec lists: Uganda, Kenya, ...).
 */
import type { SandboxContext } from './context.js';
import { VERIFICATION_SENDS_WEBHOOK_AUTH } from '../momo/assumptions.js';
import { basicAuthHeaders, postJson } from './outbound.js';
import { money } from './render.js';
import type { Collection, Organization } from './state.js';

const VERIFICATION_TIMEOUT_MS = 60_000;

export interface VerificationResult {
  accepted: boolean;
  /** Why: `ACCEPT`, `REJECT <reason>`, or the default and what went wrong. */
  outcome: string;
}

export async function verifyCollection(
  ctx: SandboxContext,
  org: Organization,
  c: Collection,
): Promise<VerificationResult> {
  if (!org.verificationUrl) return { accepted: true, outcome: 'no verification URL: accepted' };
  const byDefault = (why: string): VerificationResult => ({
    accepted: org.acceptCollectionsByDefault,
    outcome: `${why}: ${org.acceptCollectionsByDefault ? 'accepted' : 'rejected'} by default`,
  });
  const body = {
    phonenumber: c.phonenumber,
    amount: money(c.amount),
    currency_code: c.currency,
    reference: c.reference,
    remote_transaction_id: c.remote_transaction_id,
  };
  try {
    const headers = VERIFICATION_SENDS_WEBHOOK_AUTH ? basicAuthHeaders(org.webhookAuth) : undefined;
    const res = await ctx.clock.track(
      postJson(org.verificationUrl, body, { timeoutMs: VERIFICATION_TIMEOUT_MS, headers }),
    );
    if (res.status !== 200) return byDefault(`verification URL answered HTTP ${res.status}`);
    const [verb, id, ...reason] = res.text.trim().split(/\s+/);
    if (id !== c.remote_transaction_id) return byDefault('verification answer names another transaction');
    if (verb === 'ACCEPT') return { accepted: true, outcome: 'ACCEPT' };
    if (verb === 'REJECT') return { accepted: false, outcome: `REJECT ${reason.join(' ')}`.trim() };
    return byDefault('verification answer is neither ACCEPT nor REJECT');
  } catch (err) {
    return byDefault(`verification URL unreachable (${(err as Error).message})`);
  }
}
