/**
 * `/momo payout` in Slack: a modal where rows `phone, amount[, description]` are pasted, with the currency and
 * a description for rows without one. A submission with bad rows is refused in the modal, each by row number;
 * good rows become a summary (count, total, the maker's limits, whether approval is needed) with Confirm.
 * Confirming makes the payout's requests (src/payouts) and sends the maker one message listing each
 * recipient and what their request came to.
 */
import type { App, ViewSubmitAction, types } from '@slack/bolt';
import type { Payout, Payouts } from '../../src/payouts/payouts.js';
import type { RowError } from '../../src/payouts/rows.js';
import { totalOf as sumOf } from '../../src/payouts/rows.js';
import { chatOf } from '../../src/conversation/address.js';
import type { Logger } from '../../src/log.js';
import { conversationIdOf } from './address.js';
import { escapeMrkdwn, type SlackMessage } from './blocks.js';
import type { Replier } from './reply.js';

export const PAYOUT_VIEW = 'momo_payout';
export const PAYOUT_CONFIRM_VIEW = 'momo_payout_confirm';
export const ROWS_BLOCK = 'rows';
export const CURRENCY_BLOCK = 'currency';
export const DESCRIPTION_BLOCK = 'description';
export const FIELD = 'value';

/** Slack's largest plain_text_input. */
const ROWS_INPUT_MAX = 3000;
/** Slack shows an input's error under it: the first problems, and how many more. */
const ERRORS_SHOWN = 15;
/** Recipients listed in one message section (Slack's 3000 characters). */
const LISTED_PER_SECTION = 40;
const MAX_BLOCKS = 50;

export interface SlackPayoutsOptions {
  payouts: Payouts;
  currencies: readonly string[];
  replier: Replier;
  logger: Logger;
}

export function payoutModal(currencies: readonly string[]): types.ModalView {
  const options = currencies.map((c) => ({ text: { type: 'plain_text' as const, text: c }, value: c }));
  return {
    type: 'modal',
    callback_id: PAYOUT_VIEW,
    title: { type: 'plain_text', text: 'Bulk payout' },
    submit: { type: 'plain_text', text: 'Check rows' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      {
        type: 'input',
        block_id: ROWS_BLOCK,
        label: { type: 'plain_text', text: 'Recipients: one "phone, amount[, description]" a line' },
        hint: { type: 'plain_text', text: 'e.g. 0772000001, 5000, March wages. Amounts without thousands separators. The box holds 3000 characters (about 150 rows).' },
        element: { type: 'plain_text_input', action_id: FIELD, multiline: true, max_length: ROWS_INPUT_MAX },
      },
      {
        type: 'input',
        block_id: CURRENCY_BLOCK,
        label: { type: 'plain_text', text: 'Currency' },
        element: { type: 'static_select', action_id: FIELD, options, initial_option: options[0] },
      },
      {
        type: 'input',
        block_id: DESCRIPTION_BLOCK,
        optional: true,
        label: { type: 'plain_text', text: 'Description for rows without one' },
        element: { type: 'plain_text_input', action_id: FIELD, max_length: 140 },
      },
    ],
  };
}

/** The problems of the rows as Slack shows them under the input. */
export function rowErrorsText(errors: RowError[]): string {
  const shown = errors.slice(0, ERRORS_SHOWN).map((e) => (e.row > 0 ? `Row ${e.row}: ${e.message}` : e.message));
  const more = errors.length > ERRORS_SHOWN ? [`…and ${errors.length - ERRORS_SHOWN} more rows with problems`] : [];
  return [...shown, ...more].join('\n');
}

const countOf = (payout: Payout) => payout.requests.reduce((n, r) => n + r.recipients.length, 0);
const totalOf = (payout: Payout): string => sumOf(payout.requests.flatMap((r) => r.recipients));

export function summaryView(payout: Payout): types.ModalView {
  const lines = [
    `*${countOf(payout)} recipients*, total *${totalOf(payout)} ${payout.currency}*, in ${payout.requests.length} request${payout.requests.length === 1 ? '' : 's'} to the service.`,
    `Your limits: ${payout.limits.perPayment} ${payout.currency} per payment, ${payout.limits.daily} ${payout.currency} a day (the total counts in the day).`,
    payout.needsApproval ? ':raised_hand: Above your approval threshold: it will be held for an approver, not sent, until approved.' : 'It is sent when you confirm.',
  ];
  return {
    type: 'modal',
    callback_id: PAYOUT_CONFIRM_VIEW,
    private_metadata: payout.id,
    title: { type: 'plain_text', text: 'Confirm payout' },
    submit: { type: 'plain_text', text: payout.needsApproval ? 'Ask approval' : 'Pay' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [{ type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') } }, ...recipientSections(payout)],
  };
}

const RESULT_WORDS = {
  sent: 'sent',
  sentBefore: 'sent',
  held: 'held for approval',
  refused: 'not sent',
  unconfirmed: 'being confirmed (do not pay again)',
} as const;

/** Each recipient, with what its request came to once confirmed. */
function recipientSections(payout: Payout): types.KnownBlock[] {
  const lines = payout.requests.flatMap((request) =>
    request.recipients.map((r) => {
      const result = request.result ? ` — ${RESULT_WORDS[request.result.kind]}${request.result.kind === 'sent' ? ` (payment ${request.result.id})` : ''}` : '';
      return `${escapeMrkdwn(r.phonenumber)}: ${escapeMrkdwn(r.amount)} ${payout.currency}, ${escapeMrkdwn(r.description)}${escapeMrkdwn(result)}`;
    }),
  );
  const sections: types.KnownBlock[] = [];
  for (let start = 0; start < lines.length && sections.length < MAX_BLOCKS - 2; start += LISTED_PER_SECTION) {
    sections.push({ type: 'section', text: { type: 'mrkdwn', text: lines.slice(start, start + LISTED_PER_SECTION).join('\n') } });
  }
  return sections;
}

/** The payout's message to its maker once confirmed: each request's outcome and each recipient. */
export function payoutMessage(payout: Payout): SlackMessage {
  const refused = payout.requests.filter((r) => r.result?.kind === 'refused');
  const head = [
    `*Payout of ${countOf(payout)} recipients in ${payout.currency}*`,
    ...payout.requests.map((r, i) => {
      const result = r.result;
      const what = !result
        ? 'not made'
        : result.kind === 'refused'
          ? `not sent: ${result.reason}`
          : result.kind === 'sent'
            ? `sent as payment ${result.id} (state: ${result.state})`
            : RESULT_WORDS[result.kind];
      return escapeMrkdwn(`Request ${i + 1} (${r.recipients.length} recipients, ${r.total} ${payout.currency}): ${what}.`);
    }),
    'You will be told here as the service reports each payment.',
  ];
  return {
    text: escapeMrkdwn(`Payout of ${countOf(payout)} recipients: ${refused.length === 0 ? 'submitted' : `${refused.length} request(s) not sent`}`),
    blocks: [{ type: 'section', text: { type: 'mrkdwn', text: head.join('\n') } }, ...recipientSections(payout)],
  };
}

/** Registers the payout modals; answers the function `/momo payout` calls to open the first one. */
export function registerPayouts(app: App, options: SlackPayoutsOptions): (triggerId: string) => Promise<void> {
  const { payouts, currencies, replier, logger } = options;

  app.view<ViewSubmitAction>(PAYOUT_VIEW, async ({ ack, body, view }) => {
    const values = view.state?.values ?? {};
    const rows: unknown = values[ROWS_BLOCK]?.[FIELD]?.value;
    const currency: unknown = values[CURRENCY_BLOCK]?.[FIELD]?.selected_option?.value;
    const description: unknown = values[DESCRIPTION_BLOCK]?.[FIELD]?.value;
    const teamId = body.team?.id ?? body.user.team_id;
    if (typeof rows !== 'string' || rows.length > ROWS_INPUT_MAX || typeof currency !== 'string' || !teamId) {
      await ack({ response_action: 'errors', errors: { [ROWS_BLOCK]: 'Paste the rows and choose a currency.' } });
      return;
    }
    const maker = { channel: 'slack' as const, userId: body.user.id, chat: chatOf({ channel: 'slack', conversationId: conversationIdOf(teamId, body.user.id) }) };
    const prepared = await payouts.prepare(maker, { rows, currency, description: typeof description === 'string' ? description.trim() : '' });
    if (!prepared.ok) {
      await ack({ response_action: 'errors', errors: { [ROWS_BLOCK]: rowErrorsText(prepared.errors) } });
      return;
    }
    await ack({ response_action: 'update', view: summaryView(prepared.payout) });
  });

  app.view<ViewSubmitAction>(PAYOUT_CONFIRM_VIEW, async ({ ack, body, view }) => {
    await ack();
    const payout = await payouts.confirm(view.private_metadata, { channel: 'slack', userId: body.user.id });
    if (!payout) logger.info({ payout: view.private_metadata }, 'payouts: confirmation of no draft of this user (expired, or confirmed before) ignored');
  });
  // Told to the maker when its requests are made: after the confirmation, or by the sweep that finished it.
  payouts.tellWith(async (payout) => {
    if (payout.maker.channel === 'slack') await replier.direct(payout.maker.userId, payoutMessage(payout));
  });

  return async (triggerId) => {
    await app.client.views.open({ trigger_id: triggerId, view: payoutModal(currencies) });
  };
}
