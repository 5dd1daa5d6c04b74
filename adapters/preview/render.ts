/**
 * One Prompt as each channel shows it, through the adapters' own renderers (pure): USSD the screen
 * (adapters/ussd/renderer.ts: 182 characters, paged), Telegram the text and inline keyboard the bot sends
 * (adapters/telegram/keyboard.ts), Slack the Block Kit message and, when it asks for an answer, the modal its
 * "Answer" button opens (adapters/slack/blocks.ts), WhatsApp the Graph API messages (adapters/whatsapp/render.ts).
 * The page draws these as mock-ups of each channel.
 */
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { types } from '@slack/bolt';
import type { Prompt } from '../../src/conversation/types.js';
import { answerModal, promptMessage, type SlackMessage } from '../slack/blocks.js';
import { renderKeyboard } from '../telegram/keyboard.js';
import { renderPrompt as ussdScreen, type Screen } from '../ussd/renderer.js';
import type { OutboundMessage } from '../whatsapp/graph-api.js';
import { renderPrompt as whatsappMessages } from '../whatsapp/render.js';
import type { Pane, PreviewState } from './read.js';

/** What the page shows: the engine's Prompt and each channel's rendering of it. */
export interface Renderings {
  prompt: Prompt;
  ussd: Screen;
  /** As sendMessage / editMessageText take it (no keyboard on a final prompt). */
  telegram: { text: string; reply_markup?: InlineKeyboardMarkup };
  /** The message, and the modal "Answer" opens when the prompt asks for input. */
  slack: SlackMessage & { modal?: types.ModalView };
  whatsapp: OutboundMessage[];
  /** A channel's own answer outside the conversation, shown in its pane. */
  said?: { pane: Pane; text: string };
}

export function renderAll(state: PreviewState): Renderings {
  const { prompt, pages, said } = state;
  const reply_markup = renderKeyboard(prompt, pages.telegram);
  const modal = prompt.input && !prompt.final ? answerModal(prompt.input, { responseUrl: '' }) : undefined;
  return {
    prompt,
    ussd: ussdScreen(prompt, pages.ussd),
    telegram: { text: prompt.text, ...(reply_markup ? { reply_markup } : {}) },
    slack: { ...promptMessage(prompt), ...(modal ? { modal } : {}) },
    whatsapp: whatsappMessages(prompt, pages.whatsapp),
    ...(said ? { said } : {}),
  };
}
