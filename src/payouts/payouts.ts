/**
 * Bulk payouts: pasted rows -> a checked draft (with its Duplicate-Check-Keys made now, before any call) ->
 * confirmed once -> one service request with `recipient_data` per {@link PAYOUT_REQUEST_MAX} recipients, each
 * under its own key, through the flows' services: the access policy (role, per-payment limit for each
 * recipient, daily total for the request's total) and maker/checker (a request above `approvalAbove` is held
 * for an approver, src/approvals) apply as to any payment, and our record routes its notifications to the maker.
 */
import { randomUUID } from 'node:crypto';
import { Decimal } from 'decimal.js';
import { isAlreadySubmitted, isHeld, type FlowCalls, type PayoutRecipient } from '../../flows/calls.js';
import { madeNothing } from '../../flows/types.js';
import { callerCountry, currenciesOfCountry, type CallerCountrySettings } from '../conversation/engine/country.js';
import { moneyText } from '../conversation/flow/plain-text.js';
import { changeStored } from '../store/change-stored.js';
import { DueList } from '../store/due-list.js';
import { keys } from '../store/keys.js';
import type { AccessPolicy } from '../conversation/calls/access-policy.js';
import type { Channel } from '../conversation/types.js';
import type { Store } from '../store/types.js';
import { maskUserId, type Logger } from '../log.js';
import { chunksOf, largestOf, parsePayoutCsv, parsePayoutRows, totalOf, type RowError } from './rows.js';
import { mergeStates, type RecipientReport, type RecipientState } from './recipients.js';

/** A draft waits this long for its confirmation. */
const DRAFT_TTL_SECONDS = 30 * 60;
/** A confirmed payout's record is kept as long as our records of payments. */
const PAYOUT_TTL_SECONDS = 30 * 24 * 3600;

export interface PayoutMaker {
  channel: Channel;
  userId: string;
  /** `<channel>:<conversationId>` of the maker's conversation: where notifications of its payments go. */
  chat: string;
  /** Where the maker ran the payout (Slack: the channel id): where its message is posted. */
  origin?: string;
}

export interface PayoutRequest {
  key: string;
  recipients: PayoutRecipient[];
  total: string;
  /** What the request came to, once confirmed. */
  result?:
    | { kind: 'sent'; id: string; state: string; /** Our short ref (src/journal/short-ref.ts). */ shortRef?: string }
    | { kind: 'sentBefore' }
    | { kind: 'held' }
    | { kind: 'refused'; reason: string }
    | { kind: 'unconfirmed' };
  /** Each recipient's state as the service reported it (same order as `recipients`); absent until reported. */
  states?: RecipientState[];
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
  /** The file the rows were read from, when they were not pasted. */
  file?: string;
  /** The payout's message, once posted (Slack: channel and ts); it is updated in place as states come. */
  board?: { channel: string; ts: string };
  /** How many times reported states changed the payout, and how many of those its message shows. */
  changes?: number;
  shown?: number;
}

/** Where a payout's message goes (the Slack adapter): posted once its requests are made, then updated in place. */
export interface PayoutBoard {
  post(payout: Payout): Promise<{ channel: string; ts: string }>;
  update(payout: Payout): Promise<void>;
}

/** The rows as the maker gave them: pasted text, or a CSV file's text and its name. */
export type PayoutRows = { pasted: string } | { csv: string; file: string };

export type Prepared = { ok: true; payout: Payout } | { ok: false; errors: RowError[] };

export interface PayoutsOptions {
  store: Store;
  policy: AccessPolicy;
  /** The flows' services with maker/checker (ApprovalDesk.guard over the recorded services). */
  calls: FlowCalls;
  /** CURRENCIES: what the organization allows. */
  currencies: readonly string[];
  /**
   * COUNTRY_CURRENCIES and TEST_CURRENCIES: a maker is offered their country's currencies that CURRENCIES allows,
   * as in their conversation, never a test currency (a payout pays many numbers, not one of the test numbers).
   * Absent: every one of `currencies`.
   */
  countryCurrencies?: Readonly<Record<string, readonly string[]>>;
  testCurrencies?: readonly string[];
  /**
   * DEFAULT_COUNTRY and CHANNEL_COUNTRIES: a row's number without its country code is read in the maker's
   * country, as their conversation reads one (src/conversation/engine/country.ts).
   */
  country: CallerCountrySettings;
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

export class Payouts {
  private readonly open: DueList;
  private readonly now: () => number;
  private board?: PayoutBoard;
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: PayoutsOptions) {
    this.open = new DueList(o.store, keys.payoutsOpen, keys.payoutsOpenParts, MAX_OPEN);
    this.now = o.now ?? Date.now;
  }

  /**
   * The currencies offered to `maker` for a payout: their country's (their channel's, else DEFAULT_COUNTRY) that
   * CURRENCIES allows and their role has limits in. Empty: none.
   */
  currenciesOf(maker: Pick<PayoutMaker, 'channel' | 'userId'>): string[] {
    return this.ofCountry(maker).filter((c) => {
      const { perPayment, daily } = this.o.policy.limitsOf(maker.channel, maker.userId, c);
      return perPayment !== undefined && daily !== undefined;
    });
  }

  /** The country of a maker on `channel` (who has no number): the channel's, else DEFAULT_COUNTRY. */
  countryOf(channel: Channel): string {
    return callerCountry(undefined, channel, this.o.country);
  }

  /** The maker's country's currencies that CURRENCIES allows (the one rule: engine/country.ts). */
  private ofCountry(maker: Pick<PayoutMaker, 'channel'>): string[] {
    const { currencies, countryCurrencies, testCurrencies } = this.o;
    if (!countryCurrencies) return [...currencies];
    const country = this.countryOf(maker.channel);
    return currenciesOfCountry(country, {
      ...this.o.country,
      currencies,
      countryCurrencies,
      ...(testCurrencies ? { testCurrencies } : {}),
    }).currencies;
  }

  /** Reads and checks the rows for the maker; a draft to confirm, or every problem by row number. */
  async prepare(
    maker: PayoutMaker,
    input: { rows: PayoutRows; currency: string; description: string },
  ): Promise<Prepared> {
    const { policy } = this.o;
    const currency = input.currency.toUpperCase();
    if (!this.o.currencies.includes(currency))
      return { ok: false, errors: [{ row: 0, message: `${currency} is not a currency this product pays in` }] };
    if (!this.ofCountry(maker).includes(currency))
      return { ok: false, errors: [{ row: 0, message: `${currency} is not a currency you may pay in here` }] };
    const role = policy.role(maker.channel, maker.userId);
    if (!role || !role.flows.includes('pay'))
      return { ok: false, errors: [{ row: 0, message: 'you are not allowed to pay: ask the operator for access' }] };
    // The maker's country as their conversation has it: a payout's maker is a Slack user, with no number of their
    // own, so their channel's (CHANNEL_COUNTRIES), else DEFAULT_COUNTRY.
    const defaultCountry = callerCountry(undefined, maker.channel, this.o.country);
    const options = { defaultCountry, description: input.description || 'Payout' };
    const parsed =
      'csv' in input.rows ? parsePayoutCsv(input.rows.csv, options) : parsePayoutRows(input.rows.pasted, options);
    if (!parsed.ok) return parsed;
    const { perPayment, daily } = policy.limitsOf(maker.channel, maker.userId, currency);
    if (perPayment === undefined || daily === undefined)
      return { ok: false, errors: [{ row: 0, message: `your role has no limit set for ${currency}` }] };
    const over = parsed.recipients.flatMap((r, i) =>
      new Decimal(r.amount).gt(perPayment)
        ? [{ row: parsed.rows[i]!, message: `more than your limit of ${moneyText(perPayment, currency)} per payment` }]
        : [],
    );
    if (over.length > 0) return { ok: false, errors: over };
    const id = randomUUID();
    const requests = chunksOf(parsed.recipients).map((recipients, i) => ({
      key: `${id}:payout:${i}`,
      recipients,
      total: totalOf(recipients),
    }));
    const payout: Payout = {
      id,
      maker,
      currency,
      state: 'draft',
      requests,
      needsApproval: requests.some((r) => policy.needsApproval(maker.channel, maker.userId, r.total, currency)),
      limits: { perPayment, daily },
      ...('file' in input.rows ? { file: input.rows.file } : {}),
    };
    await this.o.store.set(keys.payout(id), payout, null, DRAFT_TTL_SECONDS);
    return { ok: true, payout };
  }

  async get(id: string): Promise<Payout | null> {
    if (!/^[0-9a-f-]{36}$/.test(id)) return null;
    return ((await this.o.store.get(keys.payout(id)))?.snapshot as Payout | undefined) ?? null;
  }

  /** Where payouts' messages go (the Slack adapter). Until one is attached, a payout's outcome is only logged. */
  attach(board: PayoutBoard): void {
    this.board = board;
  }

  /**
   * May this user see the payout (its message's CSV of outcomes)? Its maker, and users whose role may approve
   * payments (approve: true).
   */
  mayRead(payout: Payout, channel: PayoutMaker['channel'], userId: string): boolean {
    const { policy } = this.o;
    const reader = policy.personOf(channel, userId);
    const own =
      (payout.maker.channel === channel && payout.maker.userId === userId) ||
      (reader !== undefined && reader === policy.personOf(payout.maker.channel, payout.maker.userId));
    return own || policy.mayApprove(channel, userId);
  }

  /**
   * Confirms the maker's draft once (a second confirmation, or anyone else's, is null) and makes its
   * requests, each under the key made with the draft; the maker is told what they came to. Listed for the
   * sweep first: a process that dies on the way leaves the rest to it, made under the same keys.
   */
  async confirm(id: string, maker: Pick<PayoutMaker, 'channel' | 'userId'>): Promise<Payout | null> {
    const stored = await this.o.store.get(keys.payout(id));
    const draft = stored?.snapshot as Payout | undefined;
    if (
      !stored ||
      !draft ||
      draft.state !== 'draft' ||
      draft.maker.channel !== maker.channel ||
      draft.maker.userId !== maker.userId
    )
      return null;
    if (!(await this.open.schedule(id, this.now() + RESUME_AFTER_MS)))
      throw new Error('too many payouts are being made');
    if (
      (await this.o.store.set(
        keys.payout(id),
        { ...draft, state: 'confirmed' },
        stored.version,
        PAYOUT_TTL_SECONDS,
      )) === null
    )
      return null;
    this.o.logger.info(
      {
        payout: id,
        maker: maskUserId(maker.channel, maker.userId),
        requests: draft.requests.length,
        currency: draft.currency,
      },
      'payouts: confirmed',
    );
    return this.finish(id);
  }

  /**
   * Makes the requests without a result yet, each result written as it comes, then posts the payout's message;
   * only then is the payout unlisted, so a process dying before its message was recorded leaves that to the
   * sweep too. Null when another process is at it.
   */
  private async finish(id: string): Promise<Payout | null> {
    if (!(await this.o.store.claim(keys.payoutSending(id), SENDING_CLAIM_SECONDS))) return null;
    let payout = await this.get(id);
    if (!payout || payout.state !== 'confirmed') return null;
    for (let index = 0; index < payout.requests.length; index++) {
      if (payout.requests[index]!.result) continue;
      const result = await this.make(payout, payout.requests[index]!);
      payout = (await this.record(id, index, result)) ?? payout;
    }
    if (!payout.board) payout = await this.post(payout);
    await this.open.schedule(id, null);
    return payout;
  }

  /** A confirmed payout with work left: a request not made, or its message not posted (recorded) yet. */
  private unfinished(payout: Payout | null): boolean {
    return (
      payout?.state === 'confirmed' &&
      (payout.requests.some((r) => !r.result) || (this.board !== undefined && !payout.board))
    );
  }

  /** Posts the payout's message once, writes where it is, and shows what was reported meanwhile. */
  private async post(payout: Payout): Promise<Payout> {
    if (!this.board) {
      this.o.logger.info(
        { payout: payout.id, results: payout.requests.map((r) => r.result?.kind) },
        'payouts: made (no channel to tell)',
      );
      return payout;
    }
    try {
      const board = await this.board.post(payout);
      const shown = payout.changes ?? 0;
      const posted =
        (await this.change(payout.id, (p) =>
          p.board ? null : { ...p, board, shown: Math.max(p.shown ?? 0, shown) },
        )) ?? payout;
      await this.refresh(payout.id);
      return posted;
    } catch (err) {
      this.o.logger.warn({ payout: payout.id, err: String(err) }, 'payouts: the maker was not told');
      return payout;
    }
  }

  /**
   * The service reported the recipients' states of our payment `ref` (a payout request's key): each is kept
   * when it moves the recipient on (a repeated or older report changes nothing), and the payout's message
   * is updated. Recipients are matched to ours by number, in order; amounts, names and anything else the
   * report says are not used. Not a payout's ref: nothing.
   */
  async report(ref: string, recipients: readonly RecipientReport[]): Promise<void> {
    const match = /^([0-9a-f-]{36}):payout:(\d{1,4})$/.exec(ref);
    if (!match) return;
    const [, id, at] = match as unknown as [string, string, string];
    const index = Number(at);
    await this.change(id, (payout) => {
      const request = payout.requests[index];
      if (payout.state !== 'confirmed' || !request) return null;
      const states = mergeStates(request.recipients, request.states, recipients);
      if (!states) return null;
      return {
        ...payout,
        requests: payout.requests.map((r, i) => (i === index ? { ...r, states } : r)),
        changes: (payout.changes ?? 0) + 1,
      };
    });
    await this.refresh(id);
  }

  /**
   * Brings the payout's message up to date: while it shows fewer changes than were written, renders the
   * latest and updates it; after each update reads again, so of two updates landing out of order the one
   * that rendered less is followed by another.
   */
  private async refresh(id: string): Promise<void> {
    const first = await this.get(id);
    if (!this.board || !first?.board || (first.shown ?? 0) >= (first.changes ?? 0)) return;
    let payout: Payout | null = first;
    for (let round = 0; round < 10 && payout?.board; round++) {
      const rendered = payout.changes ?? 0;
      await this.board.update(payout);
      await this.change(id, (p) => ((p.shown ?? 0) >= rendered ? null : { ...p, shown: rendered }));
      payout = await this.get(id);
      if (!payout || (payout.changes ?? 0) <= rendered) return;
    }
  }

  /** Writes one request's result (compare-and-set; read again after a conflict). */
  private async record(
    id: string,
    index: number,
    result: NonNullable<PayoutRequest['result']>,
  ): Promise<Payout | null> {
    return this.change(id, (payout) => ({
      ...payout,
      requests: payout.requests.map((r, i) => (i === index ? { ...r, result } : r)),
    }));
  }

  /** Changes the stored payout (`edit` null: nothing to write); the payout as written, or null. */
  private async change(id: string, edit: (payout: Payout) => Payout | null): Promise<Payout | null> {
    return (
      await changeStored<Payout>(
        this.o.store,
        keys.payout(id),
        PAYOUT_TTL_SECONDS,
        (payout) => (payout ? edit(payout) : null),
        'the payout',
      )
    ).after;
  }

  /**
   * Finishes payouts whose making was cut short (their process died): the requests not made, under their keys,
   * and the message. A process that died between posting the message and recording it leaves that message
   * as it was; the sweep posts another, which is the one updated.
   */
  async sweep(): Promise<void> {
    for (const id of await this.open.due(this.now())) {
      if (this.unfinished(await this.get(id))) await this.finish(id);
      else await this.open.schedule(id, null);
    }
  }

  /** Runs the sweep every `sweepEveryMs` until stop(). */
  start(): void {
    this.timer = setInterval(
      () =>
        void this.sweep().catch((err: unknown) => this.o.logger.warn({ err: String(err) }, 'payouts: sweep failed')),
      this.o.sweepEveryMs ?? 60_000,
    );
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async make(payout: Payout, request: PayoutRequest): Promise<NonNullable<PayoutRequest['result']>> {
    const { maker, currency } = payout;
    try {
      await this.o.calls.reserveSpend({
        channel: maker.channel,
        userId: maker.userId,
        flow: 'pay',
        amount: request.total,
        currency,
        duplicateCheckKey: request.key,
        largest: largestOf(request.recipients),
      });
      const result = await this.o.calls.createPayment({
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
        parentRef: payout.id,
      });
      if (isHeld(result)) return { kind: 'held' };
      if (isAlreadySubmitted(result)) return { kind: 'sentBefore' };
      return {
        kind: 'sent',
        id: result.id,
        state: result.state,
        ...(result.shortRef ? { shortRef: result.shortRef } : {}),
      };
    } catch (error) {
      // "Not sent" only when the failure proves nothing was made (flows/types.ts madeNothing). Any other (a 429
      // or 5xx that may end a run whose earlier attempt under this key the service committed, a lost answer) is
      // unconfirmed: our record of the create stays open, and the service's report of the request's recipients
      // under its key (webhook or follow-up, report()) says what it came to.
      if (madeNothing(error)) return { kind: 'refused', reason: error.message ?? error.code };
      return { kind: 'unconfirmed' };
    }
  }
}
