/**
 * Maker/checker: a payment above the maker's role's `approvalAbove` is held instead of sent, posted to the
 * approvals board (Slack: SLACK_APPROVALS_CHANNEL, adapters/slack/approvals.ts), and decided there once by a
 * user whose role has `approve: true`, never by the maker: no identity of the person who made it (src/people).
 * A maker suspended before it is approved has it refused at sending (their role is gone): nothing is sent.
 *
 * Holds and decisions live in the database (`held_payments`, ./held.ts), never in Redis: a Redis loss loses no
 * hold (it stays on the board, approvable exactly once), no decision and no telling owed to the maker.
 * - Holding checks only that the maker may pay; their limits and daily total are counted when it is approved,
 *   under the Duplicate-Check-Key made when they confirmed (so however often Approve arrives, one payment). The
 *   hold and its journal intent (state `held`) are committed in one transaction before it is posted.
 * - Approve: the decision (who: the checker's identity and person; when) and its journal event are committed
 *   in one transaction by a conditional update from `held` (once), then the payment is created through the
 *   same recorded services a flow uses (our record before the call, its notifications routed to the maker's
 *   chat). A process that dies in between leaves the sending's claim to lapse: the sweep sends it again under
 *   the key.
 * - Reject (with a reason) and expiry (APPROVAL_TTL_HOURS, a row state `expired`) send nothing. Every decision
 *   is logged, shown in place on the board, and told to the maker in the chat that asked; a telling the process
 *   did not finish is owed in the row and told by the sweep.
 */
import { createHash } from 'node:crypto';
import { HELD, isAlreadySubmitted, type FlowCalls, type Held } from '../../flows/calls.js';
import { madeNothing, type Params, type ServiceFailure } from '../../flows/types.js';
import { parseChat } from '../store/chat-address.js';
import type { AccessPolicy } from '../conversation/calls/access-policy.js';
import type { Address, Channel } from '../conversation/types.js';
import { events, Journal, type Intent, type MoneyJournal } from '../journal/index.js';
import type { Schema } from '../journal/schema.js';
import { maskUserId, type Logger } from '../log.js';
import { largestOf } from '../payouts/rows.js';
import type { Kysely, Transaction } from 'kysely';
import {
  HeldPayments,
  type ApprovalsSchema,
  type Decision,
  type HeldPayment,
  type PaymentInput,
  type SendOutcome,
} from './held.js';

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
  /** The database (src/journal/database.ts): holds, decisions and their journal events are written here. */
  db: Kysely<Schema>;
  policy: AccessPolicy;
  /** The services a flow uses (recorded: src/conversation/calls/made-records.ts): an approved payment is created through them. */
  calls: FlowCalls;
  /** APPROVAL_TTL_HOURS: how long a payment waits for a decision. */
  ttlHours: number;
  /** Tells the maker in the chat that asked (words from the notifications' catalogue); resolves to the words said. */
  tell(address: Address, messageKey: string, params: Params): Promise<string | void>;
  /** The buffered journal (src/journal) for the tellings of decisions. Default: none. */
  journal?: MoneyJournal;
  logger: Logger;
  /** Clock in ms. Default Date.now. */
  now?: () => number;
  /** How often the sweep looks for expired and unsent payments. Default 60 s. */
  sweepEveryMs?: number;
}

/**
 * One process sends an approved payment at a time, for at most this long (the client's retries last 30 s);
 * after it, a sending without an outcome is taken again by the sweep (its process died).
 */
const SENDING_CLAIM_MS = 90 * 1000;
/** A telling owed to the maker and not confirmed done this long after is told again by the sweep. */
const TELL_AGAIN_MS = 2 * 60 * 1000;
/** A telling still owed this long after its decision is given up (logged): the maker's chat is gone. */
const TELL_FOR_MS = 24 * 3600 * 1000;
/** Most payments waiting at once: a flood of holds is refused before anything is posted. */
const MAX_WAITING = 5000;
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
    this.held = new HeldPayments(o.db);
    this.now = o.now ?? Date.now;
  }

  /** Where held payments go; until one is attached a payment that needs approval is refused (nothing sent). */
  attach(board: ApprovalBoard): void {
    this.board = board;
  }

  /** The flows' services with maker/checker: payments that need approval are held, not sent. */
  guard(calls: FlowCalls): FlowCalls {
    const { policy } = this.o;
    const needsApproval = (input: { channel?: string; userId?: string; amount: string; currency: string }) =>
      input.channel !== undefined &&
      input.userId !== undefined &&
      policy.needsApproval(input.channel as Channel, input.userId, input.amount, input.currency);
    return {
      ...calls,
      // Limits and the daily total count at approval: holding only checks the maker may pay.
      reserveSpend: async (input) =>
        input.flow === 'pay' && needsApproval(input)
          ? policy.checkFlow(input.channel as Channel, input.userId, input.flow)
          : calls.reserveSpend(input),
      checkSpend: async (input) =>
        input.flow === 'pay' && needsApproval(input)
          ? policy.checkFlow(input.channel as Channel, input.userId, input.flow)
          : calls.checkSpend(input),
      createPayment: (input) => (needsApproval(input) ? this.hold(input) : calls.createPayment(input)),
    };
  }

  /**
   * Holds the payment (its row and journal intent committed first) and posts it to the board, once per key
   * whatever repeats the create.
   */
  async hold(payment: PaymentInput): Promise<Held> {
    const board = this.board;
    if (!board) throw refuse('not_allowed', 'approvals are not set up (SLACK_APPROVALS_CHANNEL); nothing was sent');
    const heldAt = this.now();
    const id = heldIdOf(payment.duplicateCheckKey);
    const maker = {
      channel: payment.channel as Channel,
      userId: payment.userId!,
      person: this.o.policy.personOf(payment.channel as Channel, payment.userId!),
    };
    const fresh: HeldPayment = {
      id,
      key: payment.duplicateCheckKey,
      maker: { channel: maker.channel, userId: maker.userId, ...(maker.person ? { person: maker.person } : {}) },
      payment,
      heldAt,
      expiresAt: heldAt + this.o.ttlHours * 3600 * 1000,
      state: 'held',
    };
    const already = await this.held.get(id);
    if (!already && (await this.held.countWaiting()) >= MAX_WAITING) {
      this.o.logger.error({ approval: id }, 'approvals: too many payments wait for approval; nothing was sent');
      throw refuse('approvals_unavailable', 'too many payments wait for approval; nothing was sent');
    }
    const { held } = await this.held.create(fresh, (trx) => this.journalOn(trx).intend(this.intentOf(fresh)));
    if (held.board || held.state !== 'held') return HELD;
    try {
      const where = await board.post(held);
      await this.held.setBoard(id, where);
    } catch (error) {
      // Nobody saw it, so nobody can approve it: it is not held. Nothing was sent; the maker may try again.
      this.o.logger.error(
        { approval: id, err: String(error) },
        'approvals: the held payment could not be posted; nothing was sent',
      );
      await this.held
        .cancel(id, (trx) =>
          this.journalOn(trx).append(
            events.refusal(held.key, {
              reason: 'the approvals channel could not be reached; nothing was sent',
              state: 'cancelled',
              source: 'approval',
            }),
          ),
        )
        .catch((err: unknown) =>
          this.o.logger.warn({ approval: id, err: String(err) }, 'approvals: the cancelled hold was not written'),
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
    if (held.state === 'held' && this.now() >= held.expiresAt) {
      await this.expire(id);
      return { refusal: 'expired', held };
    }
    if (held.state !== 'held') return { refusal: this.refusalOfState(held), held };
    return null;
  }

  private refusalOfState(held: HeldPayment): Refusal {
    return held.state === 'expired' || held.state === 'cancelled' ? 'expired' : 'decided';
  }

  /**
   * True when the checker is the maker: the same identity, or any identity of the person who made it (as it
   * was when they made it, or as the directory says now: an identity linked since is theirs too). The
   * database's update refuses the same again (./held.ts), whatever this process's directory says.
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
    const person = this.o.policy.personOf(checker.channel, checker.userId);
    const now = this.now();
    const decision: Decision = {
      channel: checker.channel,
      userId: checker.userId,
      ...(person ? { person } : {}),
      name: checker.name || checker.userId,
      at: now,
      ...(verdict === 'reject' ? { reason: (reason ?? '').slice(0, REASON_MAX) } : {}),
    };
    const state = verdict === 'approve' ? 'approved' : 'rejected';
    const after = await this.held.decide(
      id,
      { ...decision, state },
      { now, sendingMs: SENDING_CLAIM_MS, tellAfterMs: TELL_AGAIN_MS },
      async (trx, held) => {
        const event = events.approval(held.key, {
          decision: state,
          by: `${checker.channel}:${checker.userId}`,
          name: decision.name,
          ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
          at: new Date(decision.at),
        });
        await this.journalOn(trx).append({ ...event, data: { ...event.data, ...(person ? { person } : {}) } });
      },
    );
    if (!after) {
      const before = await this.held.get(id);
      const refusal: Refusal = !before
        ? 'unknown'
        : before.state === 'held'
          ? now >= before.expiresAt
            ? 'expired'
            : 'own_payment'
          : this.refusalOfState(before);
      if (refusal === 'expired' && before?.state === 'held') await this.expire(id);
      this.o.logger.info(
        { approval: id, verdict, by: maskUserId(checker.channel, checker.userId), refusal },
        'approvals: decision refused',
      );
      return { ok: false, refusal, ...(before ? { held: before } : {}) };
    }
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
    if (verdict === 'reject') {
      await this.show(after, 'notify.approval.rejected', { reason: decision.reason ?? '' });
      return { ok: true, held: after };
    }
    return { ok: true, held: (await this.send(after)) ?? after };
  }

  /**
   * Sends an approved payment whose sending this process holds, under the maker's key: their limits and daily
   * total first, then the create. Null when another process kept its outcome first.
   */
  private async send(held: HeldPayment): Promise<HeldPayment | null> {
    const { id, payment } = held;
    let outcome: SendOutcome;
    try {
      await this.o.calls.reserveSpend({
        channel: held.maker.channel,
        userId: held.maker.userId,
        flow: 'pay',
        amount: payment.amount,
        currency: payment.currency,
        duplicateCheckKey: held.key,
        ...(payment.recipients ? { largest: largestOf(payment.recipients) } : {}),
      });
      const result = await this.o.calls.createPayment(payment);
      outcome = isAlreadySubmitted(result)
        ? { kind: 'sentBefore' }
        : 'id' in result
          ? {
              kind: 'sent',
              id: result.id,
              state: result.state,
              ...(result.shortRef ? { shortRef: result.shortRef } : {}),
            }
          : { kind: 'unconfirmed' };
    } catch (error) {
      // Refused (told so, not sent again) only when the failure proves nothing was made (flows/types.ts madeNothing).
      outcome = madeNothing(error) ? { kind: 'refused', reason: error.message ?? error.code } : { kind: 'unconfirmed' };
    }
    const after = await this.held.recordOutcome(id, outcome, { now: this.now(), tellAfterMs: TELL_AGAIN_MS });
    if (!after) return null;
    this.o.logger.info({ approval: id, outcome: outcome.kind }, 'approvals: approved payment sent');
    await this.tellOutcome(after);
    return after;
  }

  /** The decision or outcome on the board and to the maker, by the hold's state. */
  private tellOutcome(held: HeldPayment): Promise<void> {
    if (held.state === 'rejected')
      return this.show(held, 'notify.approval.rejected', { reason: held.decision?.reason ?? '' });
    if (held.state === 'expired') return this.show(held, 'notify.approval.expired', { hours: String(this.o.ttlHours) });
    const outcome = held.outcome;
    if (held.state !== 'approved' || !outcome) return this.held.told(held.id);
    const key = {
      sent: 'notify.approval.approved',
      sentBefore: 'notify.approval.approvedBefore',
      unconfirmed: 'notify.approval.unconfirmed',
      refused: 'notify.approval.refused',
    }[outcome.kind];
    return this.show(
      held,
      key,
      outcome.kind === 'sent'
        ? { id: outcome.id, state: outcome.state }
        : outcome.kind === 'refused'
          ? { reason: outcome.reason }
          : {},
    );
  }

  /** Expires a held payment whose time has passed, once: nothing is sent, the maker is told. */
  private async expire(id: string): Promise<void> {
    const now = this.now();
    const after = await this.held.expire(id, { now, tellAfterMs: TELL_AGAIN_MS }, (trx, held) =>
      this.journalOn(trx).append(events.approval(held.key, { decision: 'expired', at: new Date(now) })),
    );
    if (!after) return;
    this.o.logger.info({ approval: id, ...makerOf(after) }, 'approvals: payment expired undecided');
    await this.tellOutcome(after);
  }

  /**
   * The decision in place on the board, and told to the maker; a failure of either is logged, not thrown. Once
   * the maker was told (or has no chat to tell), nothing more is owed; else the sweep tells again.
   */
  private async show(held: HeldPayment, messageKey: string, params: Params): Promise<void> {
    const { payment } = held;
    const address = parseChat(payment.metadata.chat);
    // The reference the maker reads: our short ref (drawn by the hold's intent), else the service's id.
    const shortRef = await new Journal(this.o.db)
      .byRef(held.key)
      .then((op) => op?.short_ref)
      .catch(() => undefined);
    const words: Params = {
      amount: payment.amount,
      currency: payment.currency,
      phone: payment.phonenumber,
      by: held.decision?.name ?? '',
      ...params,
      ref: shortRef ?? params.id ?? '',
    };
    const [, told] = await Promise.all([
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
              return true;
            })
            .catch((err: unknown) => {
              this.o.logger.warn({ approval: held.id, err: String(err) }, 'approvals: the maker was not told');
              return false;
            })
        : true,
    ]);
    if (told)
      await this.held
        .told(held.id)
        .catch((err: unknown) =>
          this.o.logger.warn({ approval: held.id, err: String(err) }, 'approvals: the telling was not marked done'),
        );
  }

  /** The journal on a transaction of the desk's (a hold's or a decision's event commits with its row). */
  private journalOn(trx: Transaction<ApprovalsSchema>): Journal {
    return new Journal(trx as unknown as Kysely<Schema>);
  }

  /** The held payment's intent in the journal (state `held`: nothing moved yet); written again, it changes nothing. */
  private intentOf(held: HeldPayment): Intent {
    const { payment, maker } = held;
    return {
      ref: held.key,
      kind: payment.recipients ? 'payout' : 'payment',
      state: 'held',
      amount: payment.amount,
      currency: payment.currency,
      payee: payment.phonenumber,
      channel: maker.channel,
      channelUser: maker.userId,
      chat: payment.metadata.chat ?? '',
      role: this.o.policy.roleName(maker.channel, maker.userId) ?? '',
      flow: payment.recipients ? 'payout' : 'pay',
      ...(payment.parentRef ? { parentRef: payment.parentRef } : {}),
      at: new Date(held.heldAt),
      data: { approval: held.id, ...(maker.person ? { person: maker.person } : {}) },
    };
  }

  /**
   * Expires payments past their time, sends approved ones whose sending was cut short (its claim lapsed), and
   * tells the makers still owed a telling. Every step is a conditional update: processes sweeping together
   * do each once.
   */
  async sweep(): Promise<void> {
    const now = this.now();
    const due = await this.held.due(now, now - TELL_FOR_MS);
    for (const id of due.expired) await this.expire(id);
    for (const id of due.unsent) {
      const held = await this.held.claimSending(id, this.now(), SENDING_CLAIM_MS);
      if (held) await this.send(held);
    }
    for (const id of due.untold) {
      const held = await this.held.claimTelling(id, this.now(), TELL_AGAIN_MS);
      if (held) await this.tellOutcome(held);
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
