/**
 * What a press or a typed answer in one pane of `/preview` means, read by that channel's own adapter code
 * (pure: no I/O). Each pane sends what its channel would deliver: USSD the typed answer (read as the hop
 * planner reads it: `98` / `0` turn pages, a number picks a choice); Telegram a message's text (read by
 * readUpdate, commands included) or a button's callback_data (`c:<index>`, `p:<page>`, `n:<nav>`); Slack a DM's
 * text (parseCommandText), a button's action_id and value (readButton) or the answer modal's text; WhatsApp a
 * text message or a button or list row's id (readMessage). The result is a message for the engine, another page
 * of the prompt shown in that pane, or the channel's own answer outside the conversation (help, an expired
 * button), shown in that pane only.
 */
import type { Update } from 'grammy/types';
import { z } from 'zod';
import { parsePhone } from '../../flows/input.js';
import { LANGS } from '../../flows/types.js';
import type { Inbound, Prompt } from '../../src/conversation/types.js';
import { parseCommandText } from '../slack/command.js';
import { ANSWER_ACTION, readButton } from '../slack/blocks.js';
import { helpText as telegramHelp } from '../telegram/commands.js';
import { expiredText as telegramExpired } from '../telegram/handler.js';
import { parseButton } from '../telegram/keyboard.js';
import { readUpdate } from '../telegram/updates.js';
import { pageTurn, toAction } from '../ussd/plan.js';
import {
  expiredText as whatsappExpired,
  helpText as whatsappHelp,
  unsupportedText,
  readMessage,
} from '../whatsapp/inbound.js';

export const PANES = ['ussd', 'telegram', 'slack', 'whatsapp'] as const;
export type Pane = (typeof PANES)[number];
/** The panes whose channel pages a long list of choices itself (Slack shows them all). */
export type PagedPane = Exclude<Pane, 'slack'>;

/** What the preview keeps with its conversation (the engine's channel state): the prompt shown and each pane's page. */
export interface PreviewState {
  prompt: Prompt;
  pages: Record<PagedPane, number>;
  /** A channel's own answer outside the conversation (help, an expired button): shown in its pane, never stored. */
  said?: { pane: Pane; text: string };
}

/** A preview number: `+` and 8 to 15 digits, as a USSD gateway gives it. */
export const PHONE = /^\+[1-9]\d{7,14}$/;

/** A mobile number as the USSD adapter takes a caller's (flows/input.ts parsePhone), already in its `+` form. */
function isMobile(phone: string): boolean {
  const read = parsePhone(phone, 'UG');
  return read.ok && read.e164 === phone;
}

/** Longest answer a pane takes: a chat message (Telegram's 4096; the preview needs no more). */
const MAX_TEXT = 4096;
const typed = z.string().max(MAX_TEXT);

/** One thing done in a pane (or `show` / `dial` on the page), as the page posts it. */
export const previewAction = z.discriminatedUnion('kind', [
  /** The conversation as it is (a first visit dials). */
  z.object({ kind: z.literal('show') }).strict(),
  /** Start again from the menu, as a USSD dial does. */
  z.object({ kind: z.literal('dial') }).strict(),
  /** An answer typed on the USSD screen (182 characters at most, as on a phone). */
  z.object({ kind: z.literal('ussd'), text: z.string().max(182) }).strict(),
  z.object({ kind: z.literal('telegram-text'), text: typed.min(1) }).strict(),
  /** A press on an inline keyboard button: its callback_data (64 bytes at most on Telegram). */
  z.object({ kind: z.literal('telegram-press'), data: z.string().max(64) }).strict(),
  /** A message typed in the app's DM (as `/momo <text>`). */
  z.object({ kind: z.literal('slack-text'), text: typed }).strict(),
  /** A click on a Block Kit button: its action_id and value (Slack's limits: 255 and 2000). */
  z.object({ kind: z.literal('slack-click'), actionId: z.string().max(255), value: z.string().max(2000) }).strict(),
  /** The answer modal submitted (its input takes 500 characters). */
  z.object({ kind: z.literal('slack-answer'), text: z.string().max(500) }).strict(),
  z.object({ kind: z.literal('whatsapp-text'), text: typed.min(1) }).strict(),
  /** A tap on a reply button or a list row: its id (256 characters at most on WhatsApp). */
  z.object({ kind: z.literal('whatsapp-tap'), id: z.string().min(1).max(256) }).strict(),
]);
export type PreviewAction = z.infer<typeof previewAction>;

/** The body of `POST /preview/turn`: who is previewed, in which language (taken on a dial), and what they did. */
export const previewRequest = z
  .object({
    phone: z
      .string()
      .regex(PHONE, 'a phone number in + form, e.g. +256772123456')
      .refine(isMobile, 'not a valid mobile number (a USSD gateway would not send it)'),
    lang: z.enum(LANGS as [string, ...string[]]).optional(),
    action: previewAction,
  })
  .strict();

export type Reading =
  /** The conversation as stored. */
  | { kind: 'show' }
  /** A message for the engine. */
  | { kind: 'message'; request: Pick<Inbound, 'text' | 'choice' | 'nav' | 'start' | 'newSession'> }
  /** Another page of the prompt shown in one pane; the flow is not touched. */
  | { kind: 'page'; pane: PagedPane; page: number }
  /** The channel's own answer in its pane (help, an expired button); the flow is not touched. */
  | { kind: 'say'; pane: Pane; text: string };

/** The bot name the preview's Telegram messages are read for (`/pay@momo_preview_bot`). */
export const PREVIEW_BOT = 'momo_preview_bot';
const SLACK_EMPTY_ANSWER = 'Please type an answer.';
const USSD_ENDED = 'The session has ended: dial again.';

const DIAL: Reading = { kind: 'message', request: { newSession: true } };

/** A private-chat message as Telegram delivers it, for readUpdate. */
function telegramMessage(text: string): Update {
  const user = { id: 1, is_bot: false, first_name: 'Preview' };
  return {
    update_id: 1,
    message: { message_id: 1, date: 0, chat: { id: 1, type: 'private', first_name: 'Preview' }, from: user, text },
  };
}

/** What `action` means on the conversation as stored (`state`: none before the first dial, which any action makes). */
export function readAction(action: PreviewAction, state: PreviewState | undefined): Reading {
  if (action.kind === 'dial' || !state) return DIAL;
  const { prompt, pages } = state;
  switch (action.kind) {
    case 'show':
      return { kind: 'show' };
    case 'ussd': {
      if (prompt.final) return { kind: 'say', pane: 'ussd', text: USSD_ENDED };
      const page = pageTurn(action.text.trim(), { prompt, page: pages.ussd });
      if (page !== undefined) return { kind: 'page', pane: 'ussd', page };
      return { kind: 'message', request: toAction(action.text, prompt) };
    }
    case 'telegram-text': {
      const read = readUpdate(telegramMessage(action.text), PREVIEW_BOT);
      if (read?.kind !== 'message') return { kind: 'show' };
      if (read.request === 'help') return { kind: 'say', pane: 'telegram', text: telegramHelp(prompt.lang) };
      return { kind: 'message', request: read.request };
    }
    case 'telegram-press': {
      // As the handler reads a press on the message showing the current prompt.
      const button = parseButton(action.data);
      if (!button) return { kind: 'say', pane: 'telegram', text: telegramExpired(prompt.lang) };
      if (button.kind === 'page') return { kind: 'page', pane: 'telegram', page: button.page };
      if (button.kind === 'nav') return { kind: 'message', request: { nav: button.nav } };
      const choice = prompt.choices?.[button.index];
      if (!choice) return { kind: 'say', pane: 'telegram', text: telegramExpired(prompt.lang) };
      return { kind: 'message', request: { choice: choice.id } };
    }
    case 'slack-text':
      return { kind: 'message', request: parseCommandText(action.text) };
    case 'slack-click': {
      // "Answer" opens the modal in the page; any other action_id is acknowledged and left alone, as Slack's is.
      const meaning = action.actionId === ANSWER_ACTION ? null : readButton(action.actionId, action.value);
      return meaning ? { kind: 'message', request: meaning } : { kind: 'show' };
    }
    case 'slack-answer': {
      const text = action.text.trim();
      return text ? { kind: 'message', request: { text } } : { kind: 'say', pane: 'slack', text: SLACK_EMPTY_ANSWER };
    }
    case 'whatsapp-text':
    case 'whatsapp-tap': {
      const message =
        action.kind === 'whatsapp-text'
          ? { id: 'wamid.preview', from: '1', type: 'text', text: { body: action.text } }
          : {
              id: 'wamid.preview',
              from: '1',
              type: 'interactive',
              interactive: { type: 'list_reply', list_reply: { id: action.id } },
            };
      const read = readMessage(message, { prompt, page: pages.whatsapp, messageIds: [] });
      switch (read.kind) {
        case 'engine':
          return { kind: 'message', request: read.request };
        case 'page':
          return { kind: 'page', pane: 'whatsapp', page: read.page };
        case 'help':
          return { kind: 'say', pane: 'whatsapp', text: whatsappHelp(prompt.lang) };
        case 'unsupported':
          return { kind: 'say', pane: 'whatsapp', text: unsupportedText(prompt.lang) };
        case 'expired':
          return { kind: 'say', pane: 'whatsapp', text: whatsappExpired(prompt.lang) };
        case 'ignore':
          return { kind: 'show' };
      }
    }
  }
}

/** The state after the engine answered `prompt`: every pane on its first page. */
export function shown(prompt: Prompt): PreviewState {
  return { prompt, pages: { ussd: 0, telegram: 0, whatsapp: 0 } };
}
