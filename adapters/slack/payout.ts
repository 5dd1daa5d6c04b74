/**
 * `/momo payout` in Slack: a modal where rows `phone, amount[, description]` are pasted, or a CSV file shared in
 * the channel is named (`latest`, or its link: read through the Web API, payout-file.ts), with the currency and
 * a description for rows without one. A submission with bad rows is refused in the modal, each by row number;
 * good rows become a summary (count, total, the maker's limits, whether approval is needed) with Confirm.
 * Confirming makes the payout's requests (src/payouts) and posts ONE message in the channel where the payout
 * was run (the maker's DM when the app cannot post there) listing each recipient; it is updated in place
 * (chat.update) as the service reports each recipient's state, and its "Download CSV" button uploads the
 * outcomes into its thread (files.getUploadURLExternal, the upload, files.completeUploadExternal) for the
 * maker and approvers; anyone else pressing it gets an ephemeral refusal.
 */
import type { App, BlockAction, ViewSubmitAction, types } from '@slack/bolt';
import type { Payout, PayoutBoard, PayoutRows, Payouts } from '../../src/payouts/payouts.js';
import type { RowError } from '../../src/payouts/rows.js';
import { totalOf as sumOf } from '../../src/payouts/rows.js';
import { outcomesCsv, outcomesOf, requestStatus, tally } from '../../src/payouts/outcomes.js';
import { chatOf } from '../../src/store/chat-address.js';
import { moneyText, plainText } from '../../src/conversation/flow/plain-text.js';
import { phoneExample } from '../../flows/input.js';
import { referenceOf } from '../../src/journal/short-ref.js';
import type { Logger } from '../../src/log.js';
import { conversationIdOf } from './address.js';
import { escapeMrkdwn, type SlackMessage } from './blocks.js';
import { errorOf, readSharedCsv } from './payout-file.js';

export const PAYOUT_VIEW = 'momo_payout';
export const PAYOUT_CONFIRM_VIEW = 'momo_payout_confirm';
export const ROWS_BLOCK = 'rows';
export const FILE_BLOCK = 'file';
export const CURRENCY_BLOCK = 'currency';
export const DESCRIPTION_BLOCK = 'description';
export const FIELD = 'value';
/** The payout message's "Download CSV" button; its value is the payout's id. */
export const DOWNLOAD_ACTION = 'momo_payout_csv';

/** Slack's largest plain_text_input. */
const ROWS_INPUT_MAX = 3000;
const FILE_INPUT_MAX = 300;
/** Slack shows an input's error under it: the first problems, and how many more. */
const ERRORS_SHOWN = 15;
/** Recipients listed in one message section (Slack's 3000 characters). */
const LISTED_PER_SECTION = 40;
const MAX_BLOCKS = 50;

export interface SlackPayoutsOptions {
  payouts: Payouts;
  /** The bot token: sent (as Bearer) to download a shared CSV file from Slack. */
  botToken: string;
  /** The Web API base in use (a test server's download addresses are allowed). */
  apiUrl: string;
  logger: Logger;
}

/** What the payout modal carries in private_metadata: the channel `/momo payout` was run in. */
const originOf = (metadata: string | undefined): string | undefined => {
  try {
    const parsed: unknown = JSON.parse(metadata ?? '');
    const channel = typeof parsed === 'object' && parsed !== null && 'channel' in parsed ? parsed.channel : undefined;
    return typeof channel === 'string' && /^[CGD][A-Z0-9]{2,30}$/.test(channel) ? channel : undefined;
  } catch {
    return undefined;
  }
};

/** The payout form: `currencies` offered, `example` a mobile number of the maker's country as typed there. */
export function payoutModal(currencies: readonly string[], origin: string, example = '0772123456'): types.ModalView {
  const options = currencies.map((c) => ({ text: { type: 'plain_text' as const, text: c }, value: c }));
  return {
    type: 'modal',
    callback_id: PAYOUT_VIEW,
    private_metadata: JSON.stringify({ channel: origin }),
    title: { type: 'plain_text', text: 'Bulk payout' },
    submit: { type: 'plain_text', text: 'Check rows' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      {
        type: 'input',
        block_id: ROWS_BLOCK,
        optional: true,
        label: { type: 'plain_text', text: 'Recipients: one "phone, amount[, description]" a line' },
        hint: {
          type: 'plain_text',
          text: `e.g. ${example}, 5000, March wages. Amounts without thousands separators. The box holds 3000 characters (about 150 rows).`,
        },
        element: { type: 'plain_text_input', action_id: FIELD, multiline: true, max_length: ROWS_INPUT_MAX },
      },
      {
        type: 'input',
        block_id: FILE_BLOCK,
        optional: true,
        label: { type: 'plain_text', text: 'Or a CSV file shared in this channel' },
        hint: {
          type: 'plain_text',
          text: "Type latest for the newest CSV file shared here, or paste the file's link (its menu > Copy link). Columns phone, amount, description; a header row is optional; at most 1000 rows.",
        },
        element: {
          type: 'plain_text_input',
          action_id: FIELD,
          max_length: FILE_INPUT_MAX,
          placeholder: { type: 'plain_text', text: 'latest, or https://…slack.com/files/…' },
        },
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
const totalOf = (payout: Payout): string =>
  moneyText(sumOf(payout.requests.flatMap((r) => r.recipients)), payout.currency);
const fileLine = (payout: Payout): string[] =>
  payout.file ? [`Rows from the file *${escapeMrkdwn(payout.file)}*.`] : [];

/** A limit as the summary says it (a draft stored before its limits were checked may lack one). */
const limitText = (limit: string | undefined, currency: string): string =>
  limit === undefined ? `no limit set in ${currency}` : moneyText(limit, currency);

export function summaryView(payout: Payout): types.ModalView {
  const lines = [
    `*${countOf(payout)} recipients*, total *${totalOf(payout)}*, in ${payout.requests.length} request${payout.requests.length === 1 ? '' : 's'} to the service.`,
    ...fileLine(payout),
    `Your limits: ${limitText(payout.limits.perPayment, payout.currency)} per payment, ${limitText(payout.limits.daily, payout.currency)} a day (the total counts in the day).`,
    payout.needsApproval
      ? ':raised_hand: Above your approval threshold: it will be held for an approver, not sent, until approved.'
      : 'It is sent when you confirm.',
  ];
  return {
    type: 'modal',
    callback_id: PAYOUT_CONFIRM_VIEW,
    private_metadata: payout.id,
    title: { type: 'plain_text', text: 'Confirm payout' },
    submit: { type: 'plain_text', text: payout.needsApproval ? 'Ask approval' : 'Pay' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') } },
      ...recipientSections(payout, MAX_BLOCKS - 1),
    ],
  };
}

/** A recipient's status in words (the service's recipient states, and what a request came to before them). */
const STATUS_WORDS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    complete: 'paid',
    error: 'failed',
    aborted: 'aborted by the network',
    processing: 'processing',
    pending_confirmation: 'waiting for the network to confirm',
    queued: 'queued at the network',
    paused: 'paused at the network',
    parked: 'parked at the network',
    paused_for_admin_action: 'on hold for an administrator',
    submitted: 'sent to the service',
    held_for_approval: 'held for approval',
    being_confirmed: 'being confirmed (do not pay again)',
    not_sent: 'not sent',
    not_made: 'not made yet',
  }),
);
const statusWords = (status: string): string => STATUS_WORDS.get(status) ?? status.replace(/_/g, ' ');

/** Each recipient with its status once confirmed (a draft: none), in at most `blocks` sections. */
function recipientSections(payout: Payout, blocks: number): types.KnownBlock[] {
  const confirmed = payout.state === 'confirmed';
  const lines = outcomesOf(payout).map((o) => {
    const status = confirmed ? ` — ${statusWords(o.status)}${o.error ? `: ${plainText(o.error)}` : ''}` : '';
    return escapeMrkdwn(`${o.phone}: ${moneyText(o.amount, payout.currency)}, ${plainText(o.description)}${status}`);
  });
  const sections: types.KnownBlock[] = [];
  for (let start = 0; start < lines.length && sections.length < blocks; start += LISTED_PER_SECTION) {
    sections.push({
      type: 'section',
      text: { type: 'mrkdwn', text: lines.slice(start, start + LISTED_PER_SECTION).join('\n') },
    });
  }
  return sections;
}

/** A request's outcome in words; one held or unconfirmed whose recipients the service reports was sent. */
function requestWords(request: Payout['requests'][number]): string {
  const { result } = request;
  if (!result) return 'not made';
  if (result.kind === 'sent')
    return `sent as payment ${referenceOf({ short_ref: result.shortRef, service_id: result.id })}`;
  if (result.kind !== 'refused' && request.states?.some((s) => s.state !== 'new'))
    return result.kind === 'held' ? 'approved and sent' : 'sent';
  const { status, error } = requestStatus(request);
  return error ? `${statusWords(status)}: ${error}` : statusWords(status);
}

/**
 * The payout's one message: how many recipients were paid, failed or still wait, each request's outcome,
 * each recipient with their status (from our record: the service's reports only move a state), and the
 * "Download CSV" button.
 */
export function payoutMessage(payout: Payout): SlackMessage {
  const count = tally(outcomesOf(payout));
  const head = [
    `*Payout of ${countOf(payout)} recipients, ${totalOf(payout)}*, by <@${payout.maker.userId}>`,
    ...fileLine(payout),
    `Paid ${count.paid} (${moneyText(count.paidTotal, payout.currency)}) · failed ${count.failed} · waiting ${count.waiting}`,
    ...payout.requests.map((r, i) =>
      escapeMrkdwn(
        `Request ${i + 1} (${r.recipients.length} recipients, ${moneyText(r.total, payout.currency)}): ${plainText(requestWords(r))}.`,
      ),
    ),
    'Each recipient is updated here as the service reports them.',
  ];
  const actions: types.KnownBlock = {
    type: 'actions',
    block_id: 'payout_actions',
    elements: [
      {
        type: 'button',
        action_id: DOWNLOAD_ACTION,
        text: { type: 'plain_text', text: 'Download CSV' },
        value: payout.id,
      },
    ],
  };
  return {
    text: escapeMrkdwn(
      `Payout of ${countOf(payout)} recipients: paid ${count.paid}, failed ${count.failed}, waiting ${count.waiting}`,
    ),
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: head.join('\n') } },
      ...recipientSections(payout, MAX_BLOCKS - 2),
      actions,
    ],
  };
}

/** The rows a submission gives: pasted, or a shared file read now; or the problem, under its input. */
async function rowsOf(
  values: { rows: unknown; file: unknown; origin?: string },
  options: SlackPayoutsOptions,
  client: App['client'],
): Promise<{ ok: true; rows: PayoutRows } | { ok: false; block: string; error: string }> {
  const rows = typeof values.rows === 'string' ? values.rows : '';
  const file = typeof values.file === 'string' ? values.file.trim() : '';
  if (rows.length > ROWS_INPUT_MAX)
    return { ok: false, block: ROWS_BLOCK, error: `At most ${ROWS_INPUT_MAX} characters: share a CSV file instead.` };
  if (file.length > FILE_INPUT_MAX)
    return { ok: false, block: FILE_BLOCK, error: "Type latest, or paste one file's link." };
  if (rows.trim() !== '' && file !== '')
    return { ok: false, block: FILE_BLOCK, error: 'Paste rows or name a file, not both.' };
  if (file === '')
    return rows.trim() === ''
      ? { ok: false, block: ROWS_BLOCK, error: 'Paste the rows, or name a CSV file shared in this channel below.' }
      : { ok: true, rows: { pasted: rows } };
  if (!values.origin)
    return { ok: false, block: FILE_BLOCK, error: 'Run /momo payout in the channel where the file is shared.' };
  const read = await readSharedCsv({
    client,
    botToken: options.botToken,
    apiUrl: options.apiUrl,
    channel: values.origin,
    reference: file,
  });
  return read.ok
    ? { ok: true, rows: { csv: read.text, file: read.name } }
    : { ok: false, block: FILE_BLOCK, error: read.reason };
}

/** Registers the payout modals and the download button; answers the function `/momo payout` calls to open the first modal. */
export function registerPayouts(
  app: App,
  options: SlackPayoutsOptions,
): (triggerId: string, channelId: string, userId: string) => Promise<void> {
  const { payouts, logger } = options;

  app.view<ViewSubmitAction>(PAYOUT_VIEW, async ({ ack, body, view, client }) => {
    const values = view.state?.values ?? {};
    const currency: unknown = values[CURRENCY_BLOCK]?.[FIELD]?.selected_option?.value;
    const description: unknown = values[DESCRIPTION_BLOCK]?.[FIELD]?.value;
    const teamId = body.team?.id ?? body.user.team_id;
    if (typeof currency !== 'string' || !teamId) {
      await ack({ response_action: 'errors', errors: { [CURRENCY_BLOCK]: 'Choose a currency.' } });
      return;
    }
    const origin = originOf(view.private_metadata);
    const rows = await rowsOf(
      { rows: values[ROWS_BLOCK]?.[FIELD]?.value, file: values[FILE_BLOCK]?.[FIELD]?.value, origin },
      options,
      client,
    );
    if (!rows.ok) {
      await ack({ response_action: 'errors', errors: { [rows.block]: rows.error } });
      return;
    }
    const maker = {
      channel: 'slack' as const,
      userId: body.user.id,
      chat: chatOf({ channel: 'slack', conversationId: conversationIdOf(teamId, body.user.id) }),
      origin,
    };
    const prepared = await payouts.prepare(maker, {
      rows: rows.rows,
      currency,
      description: typeof description === 'string' ? description.trim() : '',
    });
    if (!prepared.ok) {
      await ack({
        response_action: 'errors',
        errors: { ['csv' in rows.rows ? FILE_BLOCK : ROWS_BLOCK]: rowErrorsText(prepared.errors) },
      });
      return;
    }
    await ack({ response_action: 'update', view: summaryView(prepared.payout) });
  });

  app.view<ViewSubmitAction>(PAYOUT_CONFIRM_VIEW, async ({ ack, body, view }) => {
    await ack();
    const payout = await payouts.confirm(view.private_metadata, { channel: 'slack', userId: body.user.id });
    if (!payout)
      logger.info(
        { payout: view.private_metadata },
        'payouts: confirmation of no draft of this user (expired, or confirmed before) ignored',
      );
  });

  const refuse = async (channel: string | undefined, user: string, text: string): Promise<void> => {
    if (!channel) return;
    await app.client.chat
      .postEphemeral({ channel, user, text })
      .catch((err: unknown) => logger.warn({ err: errorOf(err) }, 'slack: payout refusal not shown'));
  };

  // Download CSV: the outcomes uploaded into the message's thread, for the maker and approvers only.
  app.action<BlockAction>({ type: 'block_actions', action_id: DOWNLOAD_ACTION }, async ({ ack, body, action }) => {
    await ack();
    if (action.type !== 'button' || !body.user?.id) return;
    const channel = body.channel?.id;
    const payout = await payouts.get(action.value ?? '');
    if (!payout?.board)
      return refuse(channel, body.user.id, 'This payout is not known here (it may be older than 30 days).');
    if (!payouts.mayRead(payout, 'slack', body.user.id)) {
      logger.info({ payout: payout.id }, 'payouts: CSV refused to a user who is neither its maker nor an approver');
      return refuse(
        channel,
        body.user.id,
        "Only the payout's maker and approvers can download its outcomes. Nothing was shared.",
      );
    }
    try {
      await app.client.filesUploadV2({
        channel_id: payout.board.channel,
        thread_ts: payout.board.ts,
        content: outcomesCsv(payout),
        filename: `payout-${payout.id.slice(0, 8)}-outcomes.csv`,
        title: `Payout outcomes (${payout.currency})`,
        initial_comment: `Outcomes of this payout as of now, for <@${body.user.id}>.`,
      });
      logger.info({ payout: payout.id }, 'payouts: CSV of outcomes uploaded');
    } catch (err) {
      logger.warn({ payout: payout.id, err: errorOf(err) }, 'payouts: CSV of outcomes not uploaded');
      await refuse(
        channel,
        body.user.id,
        `The CSV could not be uploaded (${plainText(errorOf(err)).slice(0, 80)}): try again.`,
      );
    }
  });

  const board: PayoutBoard = {
    // In the channel where the payout was run; where the app cannot post (not a member), the maker's DM.
    async post(payout) {
      const message = payoutMessage(payout);
      const post = async (channel: string) => {
        const posted = await app.client.chat.postMessage({ channel, text: message.text, blocks: message.blocks });
        if (!posted.ts) throw new Error('chat.postMessage answered no ts');
        return { channel: posted.channel ?? channel, ts: posted.ts };
      };
      if (payout.maker.origin) {
        try {
          return await post(payout.maker.origin);
        } catch (err) {
          logger.warn(
            { payout: payout.id, err: errorOf(err) },
            "payouts: could not post in the channel of the payout; posting to the maker's DM",
          );
        }
      }
      return post(payout.maker.userId);
    },
    async update(payout) {
      if (!payout.board) return;
      const message = payoutMessage(payout);
      await app.client.chat.update({
        channel: payout.board.channel,
        ts: payout.board.ts,
        text: message.text,
        blocks: message.blocks,
      });
    },
  };
  payouts.attach(board);

  return async (triggerId, channelId, userId) => {
    const currencies = payouts.currenciesOf({ channel: 'slack', userId });
    const { example } = phoneExample(payouts.countryOf('slack'));
    await app.client.views.open({ trigger_id: triggerId, view: payoutModal(currencies, channelId, example) });
  };
}
