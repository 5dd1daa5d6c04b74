/**
 * Maker/checker in Slack: the approvals board in SLACK_APPROVALS_CHANNEL (src/approvals/desk.ts decides).
 * Approve and Reject are acknowledged at once; someone who may not decide (no `approve: true` role, the maker
 * themselves, a payment already decided or expired) gets an ephemeral refusal and changes nothing. Reject
 * asks for a reason in a modal. The message is updated in place with the decision, who took it and when.
 */
import type { App, BlockAction, ViewSubmitAction } from '@slack/bolt';
import type { ApprovalBoard, ApprovalDesk, Checker, Refusal } from '../../src/approvals/desk.js';
import type { Logger } from '../../src/log.js';
import {
  APPROVE_ACTION,
  REASON_BLOCK,
  REASON_ELEMENT,
  REJECT_ACTION,
  REJECT_VIEW,
  approvalMessage,
  rejectModal,
} from './approval-blocks.js';

export interface SlackApprovalsOptions {
  desk: ApprovalDesk;
  /** SLACK_APPROVALS_CHANNEL: the channel id (C…) where held payments are posted; the bot must be a member. */
  channel: string;
  logger: Logger;
}

const REFUSALS: Record<Refusal, string> = {
  unknown: 'This payment is not known here. Nothing was changed.',
  not_approver:
    'You are not an approver: only users whose role has approve: true can decide payments. Nothing was changed.',
  own_payment: 'You asked for this payment, so you cannot decide it: another approver must. Nothing was changed.',
  decided: 'This payment was already decided. Nothing was changed.',
  expired: 'This payment expired before it was decided. Nothing was sent.',
};

interface Presser {
  user: { id: string; username?: string; name?: string };
  channel?: { id: string };
}

const checkerOf = (body: Presser): Checker => ({
  channel: 'slack',
  userId: body.user.id,
  name: body.user.username ?? body.user.name,
});

/** Registers the board's buttons and modal on the Bolt app and answers the board the desk posts to. */
export function registerApprovals(app: App, options: SlackApprovalsOptions): ApprovalBoard {
  const { desk, channel, logger } = options;

  const refuse = async (body: Presser, refusal: Refusal): Promise<void> => {
    await app.client.chat
      .postEphemeral({ channel: body.channel?.id ?? channel, user: body.user.id, text: REFUSALS[refusal] })
      .catch((err: unknown) => logger.warn({ err: String(err) }, 'slack: approval refusal not shown'));
  };

  app.action<BlockAction>({ type: 'block_actions', action_id: APPROVE_ACTION }, async ({ ack, body, action }) => {
    await ack();
    if (action.type !== 'button' || !body.user?.id) return;
    const result = await desk.decide(action.value ?? '', checkerOf(body), 'approve');
    if (!result.ok) await refuse(body, result.refusal);
  });

  app.action<BlockAction>(
    { type: 'block_actions', action_id: REJECT_ACTION },
    async ({ ack, body, action, client }) => {
      await ack();
      if (action.type !== 'button' || !body.user?.id) return;
      const id = action.value ?? '';
      const refused = await desk.refusalFor(id, checkerOf(body));
      if (refused) await refuse(body, refused.refusal);
      else await client.views.open({ trigger_id: body.trigger_id, view: rejectModal(id) });
    },
  );

  app.view<ViewSubmitAction>(REJECT_VIEW, async ({ ack, body, view }) => {
    const typed: unknown = view.state?.values?.[REASON_BLOCK]?.[REASON_ELEMENT]?.value;
    const reason = typeof typed === 'string' ? typed.trim() : '';
    if (!reason) {
      await ack({
        response_action: 'errors',
        errors: { [REASON_BLOCK]: 'Please say why it is rejected: the maker is told.' },
      });
      return;
    }
    const checker = checkerOf(body);
    const refused = await desk.refusalFor(view.private_metadata, checker);
    if (refused) {
      await ack({ response_action: 'errors', errors: { [REASON_BLOCK]: REFUSALS[refused.refusal] } });
      return;
    }
    await ack();
    const result = await desk.decide(view.private_metadata, checker, 'reject', reason);
    if (!result.ok) await refuse(body, result.refusal);
  });

  return {
    async post(held) {
      const message = approvalMessage(held);
      const posted = await app.client.chat.postMessage({ channel, text: message.text, blocks: message.blocks });
      if (!posted.ok || !posted.ts)
        throw new Error(`chat.postMessage to the approvals channel failed: ${posted.error ?? 'no ts'}`);
      return { channel: posted.channel ?? channel, ts: posted.ts };
    },
    async update(held) {
      if (!held.board) return;
      const message = approvalMessage(held);
      await app.client.chat.update({
        channel: held.board.channel,
        ts: held.board.ts,
        text: message.text,
        blocks: message.blocks,
      });
    },
  };
}
