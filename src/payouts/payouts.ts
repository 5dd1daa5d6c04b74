/**
 * Bulk payouts: pasted rows -> a checked draft (with its Duplicate-Check-Keys made now, before any call) ->
 * confirmed once -> one service request with `recipient_data` per {@link PAYOUT_REQUEST_MAX} recipients, each
 * under its own key, through the flows' services: the access policy (role, per-payment limit for each
 * recipient, daily total for the request's total) and maker/checker (a request above `approvalAbove` is held
 * for an approver, src/approvals) apply as to any payment, and our record routes its notifications to the maker.
 */
import { randomUUID } from 'node:crypto';
import { Decimal } from 'decimal.js';
import { isAlreadySubmitted, isHeld, type FlowServices, type PayoutRecipient } from '../../flows/services.js';
import { isServiceFailure } from '../../flows/types.js';
import { DueList } from '../conversation/due-list.js';
import { keys } from '../conversation/keys.js';
import type { AccessPolicy } from '../conversation/policy.js';
import type { Channel, SessionStore } from '../conversation/types.js';
import { maskUserId, type Logger } from '../log.js';
import { chunksOf, largestOf, parsePayoutRows, totalOf, type RowError } from './rows.js';

/** A draft waits this long for its confirmation. */
const DRAFT_TTL_SECONDS = 30 * 60;
/** A confirmed payout's record is kept as long as our records of payments. */
const PAYOUT_TTL_SECONDS = 30 * 24 * 3600;

export interface PayoutMaker {
  channel: Channel;
  userId: string;
  /** `<channel>:<conversationId>` of the maker's conversation: where notifications of its payments go. */
  chat: string;
}

export interface PayoutRequest {
  key: string;
  recipients: PayoutRecipient[];
  total: string;
  /** What the request came to, once confirmed. */
  result?: { kind: 'sent'; id: string; state: string } | { kind: 'sentBefore' } | { kind: 'held' } | { kind: 'refused'; reason: string } | { kind: 'unconfirmed' };
}

export interface Payout {
  id: string;
  maker: PayoutMaker;
  currency: string;
  state: 'draft' | 'confirmed';
  requests: PayoutRequest[];
  /** Held for approval when confirmed (the request's total is above the maker's approvalAbove). */
  needsApproval: boolean;
  /** The maker's limits in this currency, as the summary shows them. */
  limits: { perPayment?: string; daily?: string };
}

export type Prepared = { ok: true; payout: Payout } | { ok: false; errors: RowError[] };

export interface PayoutsOptions {
  store: SessionStore;
  policy: AccessPolicy;
  /** The flows' services with maker/checker (ApprovalDesk.guard over the recorded services). */
  services: FlowServices;
  currencies: readonly string[];
  defaultCountry: string;
  logger: Logger;
  /** Clock in ms. Default Date.now. */
  now?: () => number;
  /** How often the sweep looks for payouts cut short. Default 60 s. */
  sweepEveryMs?: number;
}

/** A confirmed payout whose requests are not all made this long after is finished by the sweep. */
const RESUME_AFTER_MS = 2 * 60 * 1000;
/** One process makes a payout's requests at a time, for at most this long (each create may retry 30 s). */
const SENDING_CLAIM_SECONDS = 90;
/** Most payouts being made at once. */
const MAX_OPEN = 1000;

/** Failures that prove nothing was made. */
const REFUSALS = new Set(['validation', 'unauthenticated', 'forbidden', 'not_found', 'not_allowed', 'limit_exceeded', 'rate_limited']);

export class Payouts {
  private readonly open: DueList;
  private readonly now: () => number;
  private tell: (payout: Payout) => Promise<void> = async (payout) => {
    this.o.logger.info({ payout: payout.id, results: payout.requests.map((r) => r.result?.kind) }, 'payouts: made (no channel to tell)');
  };
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: PayoutsOptions) {
    this.open = new DueList(o.store, keys.payoutsOpen, MAX_OPEN);
    this.now = o.now ?? Date.now;
  }

  /** Reads and checks the rows for the maker; a draft to confirm, or every problem by row number. */
  async prepare(maker: PayoutMaker, input: { rows: string; currency: string; description: string }): Promise<Prepared> {
    const { policy } = this.o;
    const currency = input.currency.toUpperCase();
    if (!this.o.currencies.includes(currency)) return { ok: false, errors: [{ row: 0, message: `${currency} is not a currency this product pays in` }] };
    const role = policy.role(maker.channel, maker.userId);
    if (!role || !role.flows.includes('pay')) return { ok: false, errors: [{ row: 0, message: 'you are not allowed to pay: ask the operator for access' }] };
    const parsed = parsePayoutRows(input.rows, { defaultCountry: this.o.defaultCountry, description: input.description || 'Payout' });
    if (!parsed.ok) return parsed;
    const perPayment = role.perPaymentLimit[currency] ?? role.perPaymentLimit['*'];
    const daily = role.dailyLimit[currency] ?? role.dailyLimit['*'];
    if (perPayment === undefined || daily === undefined) return { ok: false, errors: [{ row: 0, message: `your role has no limit set for ${currency}` }] };
    const over = parsed.recipients.flatMap((r, i) =>
      new Decimal(r.amount).gt(perPayment) ? [{ row: parsed.rows[i]!, message: `more than your limit of ${perPayment} ${currency} per payment` }] : [],
    );
    if (over.length > 0) return { ok: false, errors: over };
    const id = randomUUID();
    const requests = chunksOf(parsed.recipients).map((recipients, i) => ({ key: `${id}:payout:${i}`, recipients, total: totalOf(recipients) }));
    const payout: Payout = {
      id,
      maker,
      currency,
      state: 'draft',
      requests,
      needsApproval: requests.some((r) => policy.needsApproval(maker.channel, maker.userId, r.total, currency)),
      limits: { perPayment, daily },
    };
    await this.o.store.set(keys.payout(id), payout, null, DRAFT_TTL_SECONDS);
    return { ok: true, payout };
  }

  async get(id: string): Promise<Payout | null> {
    if (!/^[0-9a-f-]{36}$/.test(id)) return null;
    return ((await this.o.store.get(keys.payout(id)))?.snapshot as Payout | undefined) ?? null;
  }

  /** Where a payout's outcome is told (the Slack adapter: a message to the maker). Default: logged only. */
  tellWith(tell: (payout: Payout) => Promise<void>): void {
    this.tell = tell;
  }

  /**
   * Confirms the maker's draft once (a second confirmation, or anyone else's, is null) and makes its
   * requests, each under the key made with the draft; the maker is told what they came to. Listed for the
   * sweep first: a process that dies on the way leaves the rest to it, made under the same keys.
   */
  async confirm(id: string, maker: Pick<PayoutMaker, 'channel' | 'userId'>): Promise<Payout | null> {
    const stored = await this.o.store.get(keys.payout(id));
    const draft = stored?.snapshot as Payout | undefined;
    if (!stored || !draft || draft.state !== 'draft' || draft.maker.channel !== maker.channel || draft.maker.userId !== maker.userId) return null;
    if (!(await this.open.schedule(id, this.now() + RESUME_AFTER_MS))) throw new Error('too many payouts are being made');
    if ((await this.o.store.set(keys.payout(id), { ...draft, state: 'confirmed' }, stored.version, PAYOUT_TTL_SECONDS)) === null) return null;
    this.o.logger.info({ payout: id, maker: maskUserId(maker.channel, maker.userId), requests: draft.requests.length, currency: draft.currency }, 'payouts: confirmed');
    return this.finish(id);
  }

  /** Makes the requests without a result yet, each result written as it comes; tells the maker. Null when another process is at it. */
  private async finish(id: string): Promise<Payout | null> {
    if (!(await this.o.store.claim(keys.payoutSending(id), SENDING_CLAIM_SECONDS))) return null;
    let payout = await this.get(id);
    if (!payout || payout.state !== 'confirmed') return null;
    for (let index = 0; index < payout.requests.length; index++) {
      if (payout.requests[index]!.result) continue;
      const result = await this.make(payout, payout.requests[index]!);
      payout = (await this.record(id, index, result)) ?? payout;
    }
    await this.open.schedule(id, null);
    await this.tell(payout).catch((err: unknown) => this.o.logger.warn({ payout: id, err: String(err) }, 'payouts: the maker was not told'));
    return payout;
  }

  /** Writes one request's result (compare-and-set; read again after a conflict). */
  private async record(id: string, index: number, result: NonNullable<PayoutRequest['result']>): Promise<Payout | null> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const stored = await this.o.store.get(keys.payout(id));
      if (!stored) return null;
      const payout = stored.snapshot as Payout;
      const requests = payout.requests.map((r, i) => (i === index ? { ...r, result } : r));
      const next = { ...payout, requests };
      if ((await this.o.store.set(keys.payout(id), next, stored.version, PAYOUT_TTL_SECONDS)) !== null) return next;
    }
    throw new Error('the payout kept changing');
  }

  /** Makes the requests of payouts whose making was cut short (its process died), under their keys. */
  async sweep(): Promise<void> {
    for (const id of await this.open.due(this.now())) {
      const payout = await this.get(id);
      if (payout?.state === 'confirmed' && payout.requests.some((r) => !r.result)) await this.finish(id);
      else await this.open.schedule(id, null);
    }
  }

  /** Runs the sweep every `sweepEveryMs` until stop(). */
  start(): void {
    this.timer = setInterval(() => void this.sweep().catch((err: unknown) => this.o.logger.warn({ err: String(err) }, 'payouts: sweep failed')), this.o.sweepEveryMs ?? 60_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async make(payout: Payout, request: PayoutRequest): Promise<NonNullable<PayoutRequest['result']>> {
    const { maker, currency } = payout;
    try {
      await this.o.services.reserveSpend({
        channel: maker.channel,
        userId: maker.userId,
        flow: 'pay',
        amount: request.total,
        currency,
        duplicateCheckKey: request.key,
        largest: largestOf(request.recipients),
      });
      const result = await this.o.services.createPayment({
        channel: maker.channel,
        userId: maker.userId,
        duplicateCheckKey: request.key,
        paymentType: 'money',
        phonenumber: `${request.recipients.length} recipients`,
        amount: request.total,
        currency,
        description: request.recipients[0]!.description,
        metadata: { chat: maker.chat, ref: request.key },
        recipients: request.recipients,
      });
      if (isHeld(result)) return { kind: 'held' };
      if (isAlreadySubmitted(result)) return { kind: 'sentBefore' };
      return { kind: 'sent', id: result.id, state: result.state };
    } catch (error) {
      const code = isServiceFailure(error) ? error.code : 'unknown';
      const reason = isServiceFailure(error) ? (error.message ?? error.code) : 'unknown';
      return REFUSALS.has(code) ? { kind: 'refused', reason } : { kind: 'unconfirmed' };
    }
  }
}
