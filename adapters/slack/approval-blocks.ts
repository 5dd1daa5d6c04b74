/**
 * The approvals channel's messages: a held payment with Approve / Reject, the same message with the decision
 * in place of the buttons, and the modal asking why it is rejected. Text from users is escaped.
 */
import type { types } from '@slack/bolt';
import type { HeldPayment } from '../../src/approvals/desk.js';
import { REASON_MAX } from '../../src/approvals/desk.js';
import { moneyText, plainText } from '../../src/conversation/flow/plain-text.js';
import { referenceOf } from '../../src/journal/short-ref.js';
import { escapeMrkdwn, type SlackMessage } from './blocks.js';

export const APPROVE_ACTION = 'momo_approval_approve';
export const REJECT_ACTION = 'momo_approval_reject';
export const REJECT_VIEW = 'momo_approval_reject';
export const REASON_BLOCK = 'reason';
export const REASON_ELEMENT = 'value';

/** Recipients of a bulk payout listed in its approval message (Slack's 3000 characters a section). */
const RECIPIENTS_LISTED = 30;

const KIND_WORDS: Record<string, string> = { money: 'mobile money', airtime: 'airtime', bank: 'bank transfer' };

/** Text from a user or the network, safe in mrkdwn. */
const safe = (text: string): string => escapeMrkdwn(plainText(text));

/** A time as Slack shows it in the reader's own time zone (UTC ISO as the fallback). */
const when = (ms: number): string =>
  `<!date^${Math.floor(ms / 1000)}^{date_short} {time}|${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC>`;

/** Who someone is in Slack's words: a mention for a Slack user, else their channel and id. */
const who = (channel: string, userId: string): string =>
  channel === 'slack' && /^[UW][A-Z0-9]+$/.test(userId) ? `<@${userId}>` : safe(`${channel} user ${userId}`);

function summary(held: HeldPayment): string {
  const p = held.payment;
  const name = [p.firstName, p.lastName].filter(Boolean).join(' ');
  const payee = p.bank
    ? `${name || p.bank.accountName} (account ${p.bank.accountNumber})`
    : name
      ? `${name} (${p.phonenumber})`
      : p.phonenumber;
  // A bulk payout's request: each recipient, as many as a section holds.
  const listed = (p.recipients ?? [])
    .slice(0, RECIPIENTS_LISTED)
    .map((r) => `• ${safe(r.phonenumber)}: ${safe(moneyText(r.amount, p.currency))}, ${safe(r.description)}`);
  const more =
    (p.recipients?.length ?? 0) > RECIPIENTS_LISTED ? [`…and ${p.recipients!.length - RECIPIENTS_LISTED} more`] : [];
  return [
    `*Payment waiting for approval*`,
    `${who(held.maker.channel, held.maker.userId)} asks to pay *${safe(moneyText(p.amount, p.currency))}* of ${p.recipients ? 'bulk payout' : (KIND_WORDS[p.paymentType] ?? p.paymentType)} to ${safe(payee)}.`,
    ...(p.recipients ? [...listed, ...more] : [`Description: ${safe(p.description)}`]),
    `Held ${when(held.heldAt)}; expires ${when(held.expiresAt)} unless decided.`,
  ].join('\n');
}

/** The decision (and what sending it came to), in place of the buttons. */
function decisionLine(held: HeldPayment): string {
  const d = held.decision;
  const by = d ? `${who(d.channel, d.userId)} ${when(d.at)}` : '';
  if (held.state === 'expired') return `:hourglass: Expired undecided ${when(held.expiresAt)}. Nothing was sent.`;
  if (held.state === 'cancelled') return `:no_entry: Cancelled: it could not be shown to approvers. Nothing was sent.`;
  if (held.state === 'rejected')
    return `:x: Rejected by ${by}: ${safe(d?.reason || 'no reason given')}. Nothing was sent.`;
  const o = held.outcome;
  if (!o) return `:white_check_mark: Approved by ${by}. Sending…`;
  if (o.kind === 'sent')
    return `:white_check_mark: Approved by ${by}. Payment ${safe(referenceOf({ short_ref: o.shortRef, service_id: o.id }))} sent (state: ${safe(o.state)}).`;
  if (o.kind === 'sentBefore') return `:white_check_mark: Approved by ${by}. Sent.`;
  if (o.kind === 'unconfirmed')
    return `:white_check_mark: Approved by ${by}. Whether the service took it is being confirmed; the maker will be told. Do not pay it again.`;
  return `:warning: Approved by ${by}, but not sent: ${safe(o.reason)}. Nothing was sent.`;
}

/** The approvals channel's message of a held payment: buttons while pending, the decision after. */
export function approvalMessage(held: HeldPayment): SlackMessage {
  const blocks: types.KnownBlock[] = [{ type: 'section', text: { type: 'mrkdwn', text: summary(held) } }];
  if (held.state === 'held') {
    blocks.push({
      type: 'actions',
      block_id: 'approval',
      elements: [
        {
          type: 'button',
          action_id: APPROVE_ACTION,
          text: { type: 'plain_text', text: 'Approve' },
          style: 'primary',
          value: held.id,
        },
        {
          type: 'button',
          action_id: REJECT_ACTION,
          text: { type: 'plain_text', text: 'Reject' },
          style: 'danger',
          value: held.id,
        },
      ],
    });
  } else {
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: decisionLine(held) }] });
  }
  const p = held.payment;
  const text =
    held.state === 'held'
      ? `Payment of ${moneyText(p.amount, p.currency)} waiting for approval`
      : `Payment of ${moneyText(p.amount, p.currency)}: ${held.state}`;
  return { text: escapeMrkdwn(text), blocks };
}

/** The modal of Reject: why (required; told to the maker). */
export function rejectModal(heldId: string): types.ModalView {
  return {
    type: 'modal',
    callback_id: REJECT_VIEW,
    private_metadata: heldId,
    title: { type: 'plain_text', text: 'Reject payment' },
    submit: { type: 'plain_text', text: 'Reject' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      {
        type: 'input',
        block_id: REASON_BLOCK,
        label: { type: 'plain_text', text: 'Why is it rejected? The maker is told.' },
        element: { type: 'plain_text_input', action_id: REASON_ELEMENT, multiline: true, max_length: REASON_MAX },
      },
    ],
  };
}
