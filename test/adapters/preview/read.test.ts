/**
 * What each pane's input means (adapters/preview/read.ts), read by the channels' own code, and that the
 * renderings are the adapters' own (render.ts): a table over one long list and one question.
 */
import { describe, expect, it } from 'vitest';
import {
  readAction,
  shown,
  type PreviewAction,
  type PreviewState,
  type Reading,
} from '../../../adapters/preview/read.js';
import { renderAll } from '../../../adapters/preview/render.js';
import { promptMessage } from '../../../adapters/slack/blocks.js';
import { renderKeyboard } from '../../../adapters/telegram/keyboard.js';
import { renderPrompt as ussdScreen } from '../../../adapters/ussd/renderer.js';
import { renderPrompt as whatsappMessages } from '../../../adapters/whatsapp/render.js';
import type { Prompt } from '../../../src/conversation/types.js';

/** Twelve banks: more than one USSD screen, Telegram's page of 8 and WhatsApp's list of 10. */
const banks: Prompt = {
  text: 'Which bank?',
  choices: Array.from({ length: 12 }, (_, i) => ({ id: `bank-${i + 1}`, label: `Bank number ${i + 1} of Kampala` })),
  final: false,
};
const amount: Prompt = { text: 'Enter amount', input: 'amount', final: false };
const done: Prompt = { text: 'Sent.', final: true };

const at = (prompt: Prompt, pages: Partial<PreviewState['pages']> = {}): PreviewState => ({
  ...shown(prompt),
  pages: { ...shown(prompt).pages, ...pages },
});

describe('readAction', () => {
  const cases: Array<[string, PreviewAction, PreviewState | undefined, Reading | ((r: Reading) => void)]> = [
    [
      'anything before the first dial dials',
      { kind: 'ussd', text: '1' },
      undefined,
      { kind: 'message', request: { newSession: true } },
    ],
    ['dial', { kind: 'dial' }, at(banks), { kind: 'message', request: { newSession: true } }],
    ['show', { kind: 'show' }, at(banks), { kind: 'show' }],
    ['USSD 98 turns the page', { kind: 'ussd', text: '98' }, at(banks), { kind: 'page', pane: 'ussd', page: 1 }],
    [
      'USSD 0 on page 2 goes back a page',
      { kind: 'ussd', text: '0' },
      at(banks, { ussd: 1 }),
      { kind: 'page', pane: 'ussd', page: 0 },
    ],
    ['USSD 0 on page 1 is Back', { kind: 'ussd', text: '0' }, at(banks), { kind: 'message', request: { nav: 'back' } }],
    [
      'USSD 12 picks the 12th',
      { kind: 'ussd', text: '12' },
      at(banks),
      { kind: 'message', request: { choice: 'bank-12' } },
    ],
    ['USSD text', { kind: 'ussd', text: '5000' }, at(amount), { kind: 'message', request: { text: '5000' } }],
    [
      'USSD after END',
      { kind: 'ussd', text: '1' },
      at(done),
      (r) => expect(r).toMatchObject({ kind: 'say', pane: 'ussd' }),
    ],
    [
      'Telegram c:9',
      { kind: 'telegram-press', data: 'c:9' },
      at(banks),
      { kind: 'message', request: { choice: 'bank-10' } },
    ],
    ['Telegram p:1', { kind: 'telegram-press', data: 'p:1' }, at(banks), { kind: 'page', pane: 'telegram', page: 1 }],
    [
      'Telegram n:home',
      { kind: 'telegram-press', data: 'n:home' },
      at(banks),
      { kind: 'message', request: { nav: 'home' } },
    ],
    [
      'Telegram c:40 expired',
      { kind: 'telegram-press', data: 'c:40' },
      at(banks),
      (r) => expect(r).toMatchObject({ kind: 'say', pane: 'telegram', text: expect.stringMatching(/expired/) }),
    ],
    [
      'Telegram not ours',
      { kind: 'telegram-press', data: 'x' },
      at(banks),
      (r) => expect(r).toMatchObject({ kind: 'say', pane: 'telegram' }),
    ],
    [
      'Telegram /pay',
      { kind: 'telegram-text', text: '/pay' },
      at(banks),
      { kind: 'message', request: { start: 'pay' } },
    ],
    [
      'Telegram /help',
      { kind: 'telegram-text', text: '/help' },
      at(banks),
      (r) => expect(r).toMatchObject({ kind: 'say', pane: 'telegram' }),
    ],
    [
      'Telegram text',
      { kind: 'telegram-text', text: '5000' },
      at(amount),
      { kind: 'message', request: { text: '5000' } },
    ],
    [
      'Slack choice',
      { kind: 'slack-click', actionId: 'momo_choice_3', value: 'bank-4' },
      at(banks),
      { kind: 'message', request: { choice: 'bank-4' } },
    ],
    [
      'Slack cancel',
      { kind: 'slack-click', actionId: 'momo_nav_cancel', value: 'cancel' },
      at(banks),
      { kind: 'message', request: { nav: 'cancel' } },
    ],
    [
      'Slack other action',
      { kind: 'slack-click', actionId: 'momo_approval_x', value: '' },
      at(banks),
      { kind: 'show' },
    ],
    ['Slack DM "pay"', { kind: 'slack-text', text: 'pay' }, at(banks), { kind: 'message', request: { start: 'pay' } }],
    [
      'Slack modal',
      { kind: 'slack-answer', text: ' 5000 ' },
      at(amount),
      { kind: 'message', request: { text: '5000' } },
    ],
    [
      'Slack empty modal',
      { kind: 'slack-answer', text: ' ' },
      at(amount),
      (r) => expect(r).toMatchObject({ kind: 'say', pane: 'slack' }),
    ],
    [
      'WhatsApp row',
      { kind: 'whatsapp-tap', id: 'c:bank-2' },
      at(banks),
      { kind: 'message', request: { choice: 'bank-2' } },
    ],
    [
      'WhatsApp More options',
      { kind: 'whatsapp-tap', id: 'p:1' },
      at(banks),
      { kind: 'page', pane: 'whatsapp', page: 1 },
    ],
    [
      'WhatsApp row not shown',
      { kind: 'whatsapp-tap', id: 'c:bank-99' },
      at(banks),
      (r) => expect(r).toMatchObject({ kind: 'say', pane: 'whatsapp' }),
    ],
    [
      'WhatsApp "3"',
      { kind: 'whatsapp-text', text: '3' },
      at(banks),
      { kind: 'message', request: { choice: 'bank-3' } },
    ],
    [
      'WhatsApp "menu"',
      { kind: 'whatsapp-text', text: 'menu' },
      at(banks),
      { kind: 'message', request: { nav: 'home' } },
    ],
    [
      'WhatsApp "3" on an amount',
      { kind: 'whatsapp-text', text: '3' },
      at(amount),
      { kind: 'message', request: { text: '3' } },
    ],
  ];
  for (const [name, action, state, expected] of cases)
    it(name, () => {
      const reading = readAction(action, state);
      if (typeof expected === 'function') expected(reading);
      else expect(reading).toEqual(expected);
    });
});

describe('renderAll', () => {
  it("is each adapter's own rendering of the prompt, at each pane's page", () => {
    const state = at(banks, { ussd: 1, telegram: 1, whatsapp: 1 });
    const all = renderAll(state);
    expect(all.ussd).toEqual(ussdScreen(banks, 1));
    expect(all.ussd.page).toBe(1);
    expect(all.telegram).toEqual({ text: banks.text, reply_markup: renderKeyboard(banks, 1) });
    expect(all.slack).toEqual(promptMessage(banks));
    expect(all.whatsapp).toEqual(whatsappMessages(banks, 1));
    expect(all.said).toBeUndefined();
  });

  it("offers Slack's answer modal when the prompt asks for input, and no keyboard at the end", () => {
    expect(renderAll(at(amount)).slack.modal?.blocks[0]).toMatchObject({ label: { text: 'Amount' } });
    const end = renderAll(at(done));
    expect(end.telegram).toEqual({ text: 'Sent.' });
    expect(end.slack.modal).toBeUndefined();
    expect(end.ussd.final).toBe(true);
  });
});
