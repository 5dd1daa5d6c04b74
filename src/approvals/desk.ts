/**
 * Maker/checker: a payment above the maker's role's `approvalAbove` is held instead of sent, posted to the
 * approvals board (Slack: SLACK_APPROVALS_CHANNEL, adapters/slack/approvals.ts), and decided there once by a
 * user whose role has `approve: true`, never by the maker: no identity of the person who made it (src/people).
 * A maker suspended before it is approved has it refused at sending (their role is gone): nothing is sent.
 *
 * - Holding checks only that the maker may pay; their limits and daily total are counted when it is approved,
 *   under the Duplicate-Check-Key made when they confirmed (so however often Approve arrives, one payment).
 * - Approve: the decision is written first (compare-and-set from pending: once), then the payment is created
 *   through the same recorded services a flow uses (our record before the call, its notifications routed to
 *   the maker's chat). A process that dies in between leaves it listed: the sweep sends it again under the key.
 * - Reject (with a reason) and expiry (APPROVAL_TTL_HOURS) send nothing. Every decision is logged, shown in
 *   place on the board, and told to the maker in the chat that asked.
 */
import { createHash } from 'node:crypto';
import { HELD, isAlreadySubmitted, type FlowServices, type Held } from '../../flows/services.js';
import { madeNothing, type Params, type ServiceFailure } from '../../flows/types.js';
import { parseChat } from '../conversation/channels/chat-address.js';
import type { AccessPolicy } from '../conversation/services/access-policy.js';
import type { Address, Channel, SessionStore } from '../conversation/types.js';
import { events, type MoneyJournal } from '../journal/index.js';
import { maskUserId, type Logger } from '../log.js';
import { largestOf } from '../payouts/rows.js';
import { HeldPayments, type Decision, type HeldPayment, type PaymentInput, type SendOutcome } from './held.js';

export type { HeldPayment } from './held.js';

/** Where held payments are shown and decided: one implementation per channel that has one (Slack). */
export interface ApprovalBoard {
  /** Posts the held payment with its Approve and Reject buttons; answers where the message is. */
  post(held: HeldPayment): Promise<{ channel: string; ts: string }>;
  /** Shows the decision (and the sending's outcome) in place of the buttons. */
  update(held: HeldPayment): Promise<void>;
}

/** Who presses: the checker's channel, user id and the name their channel gives them. */
export interface Checker {
  channel: Channel;
  userId: string;
  name?: string;
}

export type Refusal = 'unknown' | 'not_approver' | 'own_payment' | 'decided' | 'expired';

export type DecideResult = { ok: true; held: HeldPayment } | { ok: false; refusal: Refusal; held?: HeldPayment };

export interface ApprovalDeskOptions {
  store: SessionStore;
  policy: AccessPolicy;
  /** The services a flow uses (recorded: src/conversation/services/made-records.ts): an approved payment is created through them. */
  services: FlowServices;
  /** APPROVAL_TTL_HOURS: how long a payment waits for a decision. */
  ttlHours: number;
  /** Tells the maker in the chat that asked (words from the notifications' catalogue); resolves to the words said. */
  tell(address: Address, messageKey: string, params: Params): Promise<string | void>;
  /**
   * The journal (src/journal): a held payment's intent (state `held`, nothing moved), each decision (who,
   * when, why) and each telling of it, through the buffered writer. Default: none.
   */
  journal?: MoneyJournal;
  logger: Logger;
  /** Clock in ms. Default Date.now. */
  now?: () => number;
  /** How often the sweep looks for expired and unsent payments. Default 60 s. */
  sweepEveryMs?: number;
}

/** An approved payment whose sending has no outcome this long after is sent again (its process died). */
const RESEND_AFTER_MS = 2 * 60 * 1000;
/** One process sends an approved payment at a time, for at most this long (the client's retries last 30 s). */
const SENDING_CLAIM_SECONDS = 90;
/** Longest rejection reason kept (it is shown to the maker). */
export const REASON_MAX = 500;

const refuse = (code: ServiceFailure['code'], message: string): ServiceFailure => ({ code, message });

/** The held payment's id: from the maker's key, so a repeated create finds the payment already held. */
const heldIdOf = (duplicateCheckKey: string): string =>
  createHash('sha256').update(duplicateCheckKey).digest('hex').slice(0, 24);

/** Who made a held payment, as logs show it (a USSD or WhatsApp number masked). */
const makerOf = (held: HeldPayment) => ({
  channel: held.maker.channel,
  maker: maskUserId(held.maker.channel, held.maker.userId),
});

export class ApprovalDesk {
  readonly held: HeldPayments;
  private board?: ApprovalBoard;
  private readonly now: () => number;
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: ApprovalDeskOptions) {
    this.held = new HeldPayments(o.store);
    this.now = o.now ?? Date.now;
  }

  /** Where held payments go; until one is attached a payment that needs approval is refused (nothing sent). */
  attach(board: ApprovalBoard): void {
    this.board = board;
  }

  /** The flows' services with maker/checker: payments that need approval are held, not sent. */
  guard(services: FlowServices): FlowServices {
    const { policy } = this.o;
    const needsApproval = (input: { channel?: string; userId?: string; amount: string; currency: string }) =>
      input.channel !== undefined &&
      input.userId !== undefined &&
      policy.needsApproval(input.channel as Channel, input.userId, input.amount, input.currency);
    return {
      ...services,
      // Limits and the daily total count at approval: holding only checks the maker may pay.
      reserveSpend: async (input) =>
        input.flow === 'pay' && needsApproval(input)
          ? policy.checkFlow(input.channel as Channel, input.userId, input.flow)
          : services.reserveSpend(input),
      checkSpend: async (input) =>
        input.flow === 'pay' && needsApproval(input)
          ? policy.checkFlow(input.channel as Channel, input.userId, input.flow)
          : services.checkSpend(input),
      createPayment: (input) => (needsApproval(input) ? this.hold(input) : services.createPayment(input)),
    };
  }

  /** Holds the payment and posts it to the board (once per key, whatever repeats the create). */
  async hold(payment: PaymentInput): Promise<Held> {
    const board = this.board;
    if (!board) throw refuse('not_allowed', 'approvals are not set up (SLACK_APPROVALS_CHANNEL); nothing was sent');
    const heldAt = this.now();
    const id = heldIdOf(payment.duplicateCheckKey);
    const fresh: HeldPayment = {
      id,
      key: payment.duplicateCheckKey,
      maker: {
        channel: payment.channel as Channel,
        userId: payment.userId!,
        person: this.o.policy.personOf(payment.channel as Channel, payment.userId!),
      },
      payment,
      heldAt,
      expiresAt: heldAt + this.o.ttlHours * 3600 * 1000,
      state: 'pending',
    };
    const { held } = await this.held.create(fresh);
    this.journalHeld(held);
    if (held.board) return HELD;
    try {
      if (!(await this.held.schedule(id, held.expiresAt))) throw new Error('too many payments wait for approval');
      const where = await board.post(held);
      await this.held.update(id, (h) => ({ ...h, board: where }));
    } catch (error) {
      // Nobody saw it, so nobody can approve it: it is not held. Nothing was sent; the maker may try again.
      // Should these writes fail, the hold expires at its time as any other (nobody can approve it meanwhile).
      const unwritten = (what: string) => (err: unknown) =>
        this.o.logger.warn(
          { approval: id, err: String(err) },
          `approvals: ${what} not written; the hold expires at its time`,
        );
      await this.held.update(id, (h) => (h.board ? null : { ...h, state: 'expired' })).catch(unwritten('expiry'));
      await this.held.schedule(id, null).catch(unwritten('unscheduling'));
      this.o.logger.error(
        { approval: id, err: String(error) },
        'approvals: the held payment could not be posted; nothing was sent',
      );
      this.o.journal?.write(
        events.refusal(held.key, {
          reason: 'the approvals channel could not be reached; nothing was sent',
          state: 'cancelled',
          source: 'approval',
        }),
      );
      throw refuse('approvals_unavailable', 'the approvals channel could not be reached; nothing was sent');
    }
    this.o.logger.info({ approval: id, ...makerOf(held), currency: payment.currency }, 'approvals: payment held');
    return HELD;
  }

  /** Why `checker` may not decide the held payment `id` now, or null when they may. */
  async refusalFor(id: string, checker: Checker): Promise<{ refusal: Refusal; held?: HeldPayment } | null> {
    const held = await this.held.get(id);
    if (!held) return { refusal: 'unknown' };
    if (this.isMaker(held, checker)) return { refusal: 'own_payment', held };
    if (!this.o.policy.mayApprove(checker.channel, checker.userId)) return { refusal: 'not_approver', held };
    if (held.state === 'pending' && this.now() >= held.expiresAt) {
      await this.expire(id);
      return { refusal: 'expired', held };
    }
    if (held.state !== 'pending') return { refusal: held.state === 'expired' ? 'expired' : 'decided', held };
    return null;
  }

  /**
   * True when the checker is the maker: the same identity, or any identity of the person who made it (as it
   * was when they made it, or as the directory says now: an identity linked since is theirs too).
   */
  private isMaker(held: HeldPayment, checker: Checker): boolean {
    if (held.maker.channel === checker.channel && held.maker.userId === checker.userId) return true;
    const checkerPerson = this.o.policy.personOf(checker.channel, checker.userId);
    if (checkerPerson === undefined) return false;
    return (
      checkerPerson === held.maker.person ||
      checkerPerson === this.o.policy.personOf(held.maker.channel, held.maker.userId)
    );
  }

  /** Approves (and sends) or rejects the held payment, once; answers why not otherwise. */
  async decide(id: string, checker: Checker, verdict: 'approve' | 'reject', reason?: string): Promise<DecideResult> {
    const refused = await this.refusalFor(id, checker);
    if (refused) {
      this.o.logger.info(
        { approval: id, verdict, by: maskUserId(checker.channel, checker.userId), refusal: refused.refusal },
        'approvals: decision refused',
      );
      return { ok: false, ...refused };
    }
    const decision: Decision = {
      channel: checker.channel,
      userId: checker.userId,
      name: checker.name || checker.userId,
      at: this.now(),
      ...(verdict === 'reject' ? { reason: (reason ?? '').slice(0, REASON_MAX) } : {}),
    };
    const state = verdict === 'approve' ? 'approved' : 'rejected';
    const { before, after } = await this.held.update(id, (h) =>
      h.state === 'pending' ? { ...h, state, decision } : null,
    );
    if (!after)
      return {
        ok: false,
        refusal: before?.state === 'expired' ? 'expired' : before ? 'decided' : 'unknown',
        ...(before ? { held: before } : {}),
      };
    this.o.logger.info(
      {
        approval: id,
        verdict,
        by: maskUserId(checker.channel, checker.userId),
        ...makerOf(after),
        currency: after.payment.currency,
      },
      'approvals: payment decided',
    );
    this.o.journal?.write(
      events.approval(after.key, {
        decision: verdict === 'approve' ? 'approved' : 'rejected',
        by: `${checker.channel}:${checker.userId}`,
        name: decision.name,
        ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
        at: new Date(decision.at),
      }),
    );
    if (verdict === 'reject') {
      await this.held.schedule(id, null);
      await this.show(after, 'notify.approval.rejected', { reason: decision.reason ?? '' });
      return { ok: true, held: after };
    }
    await this.held.schedule(id, this.now() + RESEND_AFTER_MS);
    return { ok: true, held: (await this.send(id)) ?? after };
  }

  /**
   * Sends an approved payment under the maker's key: their limits and daily total first, then the create.
   * Null when another process is sending it (or it has its outcome).
   */
  private async send(id: string): Promise<HeldPayment | null> {
    if (!(await this.held.claimSending(id, SENDING_CLAIM_SECONDS))) return null;
    const held = await this.held.get(id);
    if (!held || held.state !== 'approved' || held.outcome) return null;
    const { payment } = held;
    let outcome: SendOutcome;
    try {
      await this.o.services.reserveSpend({
        channel: held.maker.channel,
        userId: held.maker.userId,
        flow: 'pay',
        amount: payment.amount,
        currency: payment.currency,
        duplicateCheckKey: held.key,
        ...(payment.recipients ? { largest: largestOf(payment.recipients) } : {}),
      });
      const result = await this.o.services.createPayment(payment);
      outcome = isAlreadySubmitted(result)
        ? { kind: 'sentBefore' }
        : 'id' in result
          ? { kind: 'sent', id: result.id, state: result.state }
          : { kind: 'unconfirmed' };
    } catch (error) {
      // Refused (told so, not sent again) only when the failure proves nothing was made (flows/types.ts madeNothing).
      outcome = madeNothing(error) ? { kind: 'refused', reason: error.message ?? error.code } : { kind: 'unconfirmed' };
    }
    const { after } = await this.held.update(id, (h) => (h.outcome ? null : { ...h, outcome }));
    if (!after) return null;
    await this.held.schedule(id, null);
    this.o.logger.info({ approval: id, outcome: outcome.kind }, 'approvals: approved payment sent');
    const key = {
      sent: 'notify.approval.approved',
      sentBefore: 'notify.approval.approvedBefore',
      unconfirmed: 'notify.approval.unconfirmed',
      refused: 'notify.approval.refused',
    }[outcome.kind];
    await this.show(
      after,
      key,
      outcome.kind === 'sent'
        ? { id: outcome.id, state: outcome.state }
        : outcome.kind === 'refused'
          ? { reason: outcome.reason }
          : {},
    );
    return after;
  }

  /** Expires a pending payment whose time has passed: nothing is sent, the maker is told. */
  private async expire(id: string): Promise<void> {
    const { after } = await this.held.update(id, (h) =>
      h.state === 'pending' && this.now() >= h.expiresAt ? { ...h, state: 'expired' } : null,
    );
    if (!after) return;
    await this.held.schedule(id, null);
    this.o.logger.info({ approval: id, ...makerOf(after) }, 'approvals: payment expired undecided');
    this.o.journal?.write(events.approval(after.key, { decision: 'expired', at: new Date(this.now()) }));
    await this.show(after, 'notify.approval.expired', { hours: String(this.o.ttlHours) });
  }

  /** The decision in place on the board, and told to the maker; a failure of either is logged, not thrown. */
  private async show(held: HeldPayment, messageKey: string, params: Params): Promise<void> {
    const { payment } = held;
    const address = parseChat(payment.metadata.chat);
    const words: Params = {
      amount: payment.amount,
      currency: payment.currency,
      phone: payment.phonenumber,
      by: held.decision?.name ?? '',
      ...params,
    };
    await Promise.all([
      this.board
        ?.update(held)
        .catch((err: unknown) =>
          this.o.logger.warn({ approval: held.id, err: String(err) }, 'approvals: the board message was not updated'),
        ),
      address
        ? this.o
            .tell(address, messageKey, words)
            .then((text) => {
              if (typeof text === 'string') {
                this.o.journal?.write(
                  events.telling(held.key, {
                    channel: address.channel,
                    to: `${address.channel}:${address.conversationId}`,
                    text,
                    source: 'approval',
                    key: `${held.key}:telling:${messageKey}`,
                  }),
                );
              }
            })
            .catch((err: unknown) =>
              this.o.logger.warn({ approval: held.id, err: String(err) }, 'approvals: the maker was not told'),
            )
        : undefined,
    ]);
  }

  /** The held payment's intent in the journal (state `held`: nothing moved yet); written again, it changes nothing. */
  private journalHeld(held: HeldPayment): void {
    const journal = this.o.journal;
    if (!journal) return;
    const { payment, maker } = held;
    const who = journal.who(maker.channel, maker.userId);
    journal.writeIntent({
      ref: held.key,
      kind: payment.recipients ? 'payout' : 'payment',
      state: 'held',
      amount: payment.amount,
      currency: payment.currency,
      payee: payment.phonenumber,
      channel: maker.channel,
      channelUser: maker.userId,
      chat: payment.metadata.chat ?? '',
      role: who.role,
      flow: payment.recipients ? 'payout' : 'pay',
      ...(payment.parentRef ? { parentRef: payment.parentRef } : {}),
      at: new Date(held.heldAt),
      data: { approval: held.id, ...(who.person ? { person: who.person } : {}) },
    });
  }

  /** Expires payments past their time and sends approved ones whose sending was cut short. */
  async sweep(): Promise<void> {
    for (const id of await this.held.due(this.now())) {
      const held = await this.held.get(id);
      if (held?.state === 'pending') await this.expire(id);
      else if (held?.state === 'approved' && !held.outcome) await this.send(id);
      else await this.held.schedule(id, null);
    }
  }

  /** Runs the sweep every `sweepEveryMs` until stop(). */
  start(): void {
    const every = this.o.sweepEveryMs ?? 60_000;
    this.timer = setInterval(
      () =>
        void this.sweep().catch((err: unknown) => this.o.logger.warn({ err: String(err) }, 'approvals: sweep failed')),
      every,
    );
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
