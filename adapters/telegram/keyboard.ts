/**
 * Prompt -> inline keyboard, and the callback data of its buttons.
 *
 * Telegram allows 64 bytes of callback_data, less than a choice id may need, so buttons carry only small
 * numbers: `c:<index>` picks the choice at that index of the prompt kept in the store (prompt-record.ts),
 * `p:<page>` shows another page of a long list, `n:back` / `n:home` navigate.
 */
import type { InlineKeyboardButton, InlineKeyboardMarkup } from 'grammy/types';
import type { Prompt } from '../../src/conversation/types.js';
import { render } from '../../src/conversation/flow/render.js';

/** Choices shown per page; longer lists get Prev / More buttons that edit the message in place. */
export const PAGE_SIZE = 8;

export type Button =
  { kind: 'choice'; index: number } | { kind: 'page'; page: number } | { kind: 'nav'; nav: 'back' | 'home' };

export function encodeButton(button: Button): string {
  switch (button.kind) {
    case 'choice':
      return `c:${button.index}`;
    case 'page':
      return `p:${button.page}`;
    case 'nav':
      return `n:${button.nav}`;
  }
}

/** The button behind a callback_data, or undefined for anything this bot did not make. */
export function parseButton(data: string | undefined): Button | undefined {
  const match = /^(?:c:(\d{1,4})|p:(\d{1,4})|n:(back|home))$/.exec(data ?? '');
  if (!match) return undefined;
  if (match[1] !== undefined) return { kind: 'choice', index: Number(match[1]) };
  if (match[2] !== undefined) return { kind: 'page', page: Number(match[2]) };
  return { kind: 'nav', nav: match[3] as 'back' | 'home' };
}

/** Number of pages of a prompt's choices (at least 1). */
export function pageCount(prompt: Prompt): number {
  return Math.max(1, Math.ceil((prompt.choices?.length ?? 0) / PAGE_SIZE));
}

const button = (text: string, b: Button): InlineKeyboardButton => ({ text, callback_data: encodeButton(b) });

/**
 * The keyboard of one page of a prompt: its choices one per row, Prev / More when the list is longer than a
 * page, then Back / Home. A final prompt has no keyboard (undefined), which also removes one when editing.
 */
export function renderKeyboard(prompt: Prompt, page = 0): InlineKeyboardMarkup | undefined {
  if (prompt.final) return undefined;
  const choices = prompt.choices ?? [];
  const last = pageCount(prompt) - 1;
  const current = Math.min(Math.max(0, page), last);
  const start = current * PAGE_SIZE;
  const rows: InlineKeyboardButton[][] = choices
    .slice(start, start + PAGE_SIZE)
    .map((choice, i) => [button(choice.label, { kind: 'choice', index: start + i })]);
  // The buttons' own words in the prompt's language (the catalogue's `common.*`).
  const word = (key: string) => render({ key }, prompt.lang ?? 'en');
  const paging: InlineKeyboardButton[] = [];
  if (current > 0) paging.push(button(`< ${word('common.previous')}`, { kind: 'page', page: current - 1 }));
  if (current < last) paging.push(button(`${word('common.more')} >`, { kind: 'page', page: current + 1 }));
  if (paging.length > 0) rows.push(paging);
  // The first screen has nothing to go back to.
  if (!prompt.top)
    rows.push([
      button(word('common.back'), { kind: 'nav', nav: 'back' }),
      button(word('common.home'), { kind: 'nav', nav: 'home' }),
    ]);
  return { inline_keyboard: rows };
}
