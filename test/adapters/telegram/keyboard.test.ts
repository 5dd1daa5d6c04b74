import { describe, expect, it } from 'vitest';
import type { InlineKeyboardButton } from 'grammy/types';
import {
  encodeButton,
  PAGE_SIZE,
  pageCount,
  parseButton,
  renderKeyboard,
  type Button,
} from '../../../adapters/telegram/keyboard.js';
import type { Prompt } from '../../../src/conversation/types.js';

const choices = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `id-${i}-${'x'.repeat(80)}`, label: `Choice ${i}` }));
const data = (b: InlineKeyboardButton) => ('callback_data' in b ? b.callback_data : undefined);

describe('callback data', () => {
  it.each<Button>([
    { kind: 'choice', index: 0 },
    { kind: 'choice', index: 137 },
    { kind: 'page', page: 3 },
    { kind: 'nav', nav: 'back' },
    { kind: 'nav', nav: 'home' },
  ])('round-trips %o', (button) => {
    expect(parseButton(encodeButton(button))).toEqual(button);
  });

  it.each([undefined, '', 'c:', 'c:-1', 'c:x', 'p:1:2', 'n:cancel', 'c:12345', 'x:1'])('rejects %j', (raw) => {
    expect(parseButton(raw)).toBeUndefined();
  });
});

describe('renderKeyboard', () => {
  it('shows choices one per row with Back and Home, keeping long ids out of callback data', () => {
    const prompt: Prompt = { text: 'Pick', choices: choices(3), final: false };
    const rows = renderKeyboard(prompt)!.inline_keyboard;
    expect(rows.map((r) => r.map((b) => b.text))).toEqual([['Choice 0'], ['Choice 1'], ['Choice 2'], ['Back', 'Home']]);
    expect(rows.map((r) => r.map(data))).toEqual([['c:0'], ['c:1'], ['c:2'], ['n:back', 'n:home']]);
  });

  it("words its own buttons in the prompt's language (the catalogue)", () => {
    const prompt: Prompt = { text: 'Chagua', choices: choices(PAGE_SIZE * 2 + 1), lang: 'sw', final: false };
    const rows = renderKeyboard(prompt, 1)!.inline_keyboard.map((r) => r.map((b) => b.text));
    expect(rows.at(-2)).toEqual(['< Nyuma', 'Zaidi >']);
    expect(rows.at(-1)).toEqual(['Rudi', 'Mwanzo']);
  });

  it('has no keyboard for a final prompt', () => {
    expect(renderKeyboard({ text: 'Done', choices: choices(2), final: true })).toBeUndefined();
  });

  it('pages long lists with global indexes and Prev / More', () => {
    const prompt: Prompt = { text: 'Pick', choices: choices(PAGE_SIZE * 2 + 3), final: false };
    expect(pageCount(prompt)).toBe(3);
    const first = renderKeyboard(prompt, 0)!.inline_keyboard;
    expect(first).toHaveLength(PAGE_SIZE + 2);
    expect(first[PAGE_SIZE]!.map(data)).toEqual(['p:1']);
    const middle = renderKeyboard(prompt, 1)!.inline_keyboard;
    expect(middle[0]!.map(data)).toEqual([`c:${PAGE_SIZE}`]);
    expect(middle[PAGE_SIZE]!.map(data)).toEqual(['p:0', 'p:2']);
    const last = renderKeyboard(prompt, 2)!.inline_keyboard;
    expect(last.map((r) => r.map(data))).toEqual([['c:16'], ['c:17'], ['c:18'], ['p:1'], ['n:back', 'n:home']]);
  });

  it('clamps a page past the end to the last page', () => {
    const prompt: Prompt = { text: 'Pick', choices: choices(PAGE_SIZE + 1), final: false };
    expect(renderKeyboard(prompt, 99)).toEqual(renderKeyboard(prompt, 1));
  });

  it('keeps every callback_data within 64 bytes', () => {
    const prompt: Prompt = { text: 'Pick', choices: choices(500), final: false };
    for (let page = 0; page < pageCount(prompt); page++) {
      for (const b of renderKeyboard(prompt, page)!.inline_keyboard.flat()) {
        expect(Buffer.byteLength(data(b) ?? '')).toBeLessThanOrEqual(64);
      }
    }
  });
});
