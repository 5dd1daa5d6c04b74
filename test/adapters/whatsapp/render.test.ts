/**
 * Prompt -> Graph API messages, as a table: text, reply buttons, lists, paged lists, and every message
 * within the Cloud API's documented format and limits (the same check the local Graph API server makes).
 */
import { describe, expect, it } from 'vitest';
import {
  cut,
  LIMITS,
  pageCount,
  parseReply,
  renderPrompt,
  split,
  templateMessage,
} from '../../../adapters/whatsapp/render.js';
import type { OutboundMessage } from '../../../adapters/whatsapp/graph-api.js';
import type { Choice, Prompt } from '../../../src/conversation/types.js';
import { wireProblem } from './fake-graph-api.js';

const choices = (n: number, label = (i: number) => `Option ${i + 1}`): Choice[] =>
  Array.from({ length: n }, (_, i) => ({ id: `o${i + 1}`, label: label(i) }));
const prompt = (text: string, list?: Choice[], final = false): Prompt => ({
  text,
  ...(list ? { choices: list } : {}),
  final,
});

/** Each message as Meta would take it: none refused. */
function fits(messages: OutboundMessage[]): OutboundMessage[] {
  for (const m of messages)
    expect(
      wireProblem({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '256772000001', ...m }),
    ).toBeNull();
  return messages;
}

const rowsOf = (m: OutboundMessage) =>
  (
    (m as any).interactive.action.sections as Array<{
      rows: Array<{ id: string; title: string; description?: string }>;
    }>
  ).flatMap((s) => s.rows);
const buttonsOf = (m: OutboundMessage) =>
  ((m as any).interactive.action.buttons as Array<{ reply: { id: string; title: string } }>).map((b) => b.reply);

describe('renderPrompt', () => {
  it('sends a final prompt, or one without choices, as text without link previews', () => {
    expect(fits(renderPrompt(prompt('Paid 5000 UGX.', choices(2), true)))).toEqual([
      { type: 'text', text: { body: 'Paid 5000 UGX.', preview_url: false } },
    ]);
    expect(renderPrompt(prompt('Enter the amount:'))).toEqual([
      { type: 'text', text: { body: 'Enter the amount:', preview_url: false } },
    ]);
  });

  it('the first screen (the main menu) carries no "Type back, menu or cancel" footer: nothing to go back to', () => {
    const choices = Array.from({ length: 6 }, (_, i) => ({ id: `f${i}`, label: `Flow ${i}` }));
    const [top] = fits(renderPrompt({ ...prompt('What would you like to do?', choices), top: true }));
    const [later] = fits(renderPrompt(prompt('Choose the bank:', choices)));
    expect((top as { interactive: Record<string, unknown> }).interactive).not.toHaveProperty('footer');
    expect((later as { interactive: Record<string, unknown> }).interactive.footer).toEqual({
      text: 'Type back, menu or cancel at any time',
    });
  });

  it("says its own words in the prompt's language: footer, page rows, list button and section", () => {
    for (const [lang, footer, rows, button] of [
      ['sw', 'Andika rudi, menyu au ghairi wakati wowote', ['Chaguo za awali', 'Chaguo zaidi'], 'Chagua (2/3)'],
      ['fr', 'Tapez retour, menu ou annuler à tout moment', ['Options précédentes', "Plus d'options"], 'Choisir (2/3)'],
    ] as const) {
      const [page] = fits(renderPrompt({ ...prompt('Chagua benki:', choices(20)), lang }, 1));
      const interactive = (page as any).interactive;
      expect(interactive.footer).toEqual({ text: footer });
      expect(interactive.action.button).toBe(button);
      expect(
        rowsOf(page!)
          .slice(-2)
          .map((r) => r.title),
      ).toEqual(rows);
      expect(rowsOf(page!).at(-1)?.description).toBe(lang === 'sw' ? 'Ukurasa 3 kati ya 3' : 'Page 3 sur 3');
    }
  });

  it('shows up to 3 choices as reply buttons whose ids carry the choice ids', () => {
    const [message] = fits(
      renderPrompt(
        prompt('Send 5000 UGX?', [
          { id: 'confirm', label: 'Confirm' },
          { id: 'cancel', label: 'Cancel' },
        ]),
      ),
    );
    expect(message).toEqual({
      type: 'interactive',
      interactive: {
        type: 'button',
        body: { text: 'Send 5000 UGX?' },
        footer: { text: 'Type back, menu or cancel at any time' },
        action: {
          buttons: [
            { type: 'reply', reply: { id: 'c:confirm', title: 'Confirm' } },
            { type: 'reply', reply: { id: 'c:cancel', title: 'Cancel' } },
          ],
        },
      },
    });
  });

  it('cuts button titles at a word within 20 characters and keeps them unique', () => {
    const labels = ['Pay with mobile money now', 'Pay with mobile money later', 'Pay with mobile money later'];
    const [message] = fits(
      renderPrompt(
        prompt(
          'How?',
          choices(3, (i) => labels[i]!),
        ),
      ),
    );
    const titles = buttonsOf(message!).map((b) => b.title);
    for (const title of titles) expect(Array.from(title).length).toBeLessThanOrEqual(LIMITS.buttonTitle);
    expect(titles[0]).toBe('Pay with mobile…');
    expect(new Set(titles).size).toBe(3);
    expect(buttonsOf(message!).map((b) => b.id)).toEqual(['c:o1', 'c:o2', 'c:o3']);
  });

  it('shows 4 to 10 choices as one list; a cut row title keeps the whole label in its description', () => {
    const long = 'JAMB UTME registration PIN 6200';
    const [message] = fits(renderPrompt(prompt('Choose the exam:', [...choices(3), { id: 'jamb', label: long }])));
    expect((message as any).interactive).toMatchObject({
      type: 'list',
      body: { text: 'Choose the exam:' },
      action: { button: 'Choose' },
    });
    expect(rowsOf(message!).at(-1)).toEqual({ id: 'c:jamb', title: 'JAMB UTME registration…', description: long });
    expect(rowsOf(message!)[0]).toEqual({ id: 'c:o1', title: 'Option 1' });
    expect(rowsOf(fits(renderPrompt(prompt('Ten', choices(10))))[0]!)).toHaveLength(10);
  });

  it('pages more than 10 choices, 8 a page, with Previous and More rows that turn the page', () => {
    const many = prompt('Choose the bundle:', choices(20));
    expect(pageCount(many)).toBe(3);
    const pages = [0, 1, 2].map((page) => fits(renderPrompt(many, page))[0]!);
    expect(rowsOf(pages[0]!).map((r) => r.id)).toEqual([...choices(8).map((c) => `c:${c.id}`), 'p:1']);
    expect(rowsOf(pages[1]!).map((r) => r.id)).toEqual([
      ...choices(16)
        .slice(8)
        .map((c) => `c:${c.id}`),
      'p:0',
      'p:2',
    ]);
    expect(rowsOf(pages[2]!).map((r) => r.id)).toEqual(['c:o17', 'c:o18', 'c:o19', 'c:o20', 'p:1']);
    expect(pages.map((p) => (p as any).interactive.action.button)).toEqual([
      'Choose (1/3)',
      'Choose (2/3)',
      'Choose (3/3)',
    ]);
    expect(
      rowsOf(pages[1]!)
        .slice(-2)
        .map((r) => r.title),
    ).toEqual(['Previous options', 'More options']);
    // Every choice is on exactly one page.
    const shown = pages.flatMap((p) =>
      rowsOf(p)
        .filter((r) => r.id.startsWith('c:'))
        .map((r) => r.id),
    );
    expect(shown).toEqual(choices(20).map((c) => `c:${c.id}`));
    // A page past the end shows the last one.
    expect(renderPrompt(many, 99)).toEqual(renderPrompt(many, 2));
  });

  it('uses the choice index in the id when the choice id would not fit or has surrounding spaces', () => {
    const odd = [
      { id: 'x'.repeat(250), label: 'Long id' },
      { id: ' spaced ', label: 'Spaced' },
      { id: 'ok', label: 'Fine' },
      { id: 'y', label: 'Four' },
    ];
    expect(rowsOf(fits(renderPrompt(prompt('Pick', odd)))[0]!).map((r) => r.id)).toEqual(['i:0', 'i:1', 'c:ok', 'c:y']);
    expect(buttonsOf(fits(renderPrompt(prompt('Pick', odd.slice(0, 2))))[0]!).map((b) => b.id)).toEqual([
      'c:' + 'x'.repeat(250),
      'i:1',
    ]);
  });

  it('sends text longer than an interactive body first, in pieces within 4096, and nothing of it is lost', () => {
    const line = 'Bundle details and terms that go on for a while. ';
    const text = line.repeat(200).trim();
    const messages = fits(renderPrompt(prompt(text, choices(2))));
    expect(messages.at(-1)!.type).toBe('interactive');
    const pieces = [
      ...messages.slice(0, -1).map((m) => (m as any).text.body),
      (messages.at(-1) as any).interactive.body.text,
    ];
    expect(pieces.join(' ').replace(/\s+/g, ' ')).toBe(text);
    expect(Array.from((messages.at(-1) as any).interactive.body.text as string).length).toBeLessThanOrEqual(
      LIMITS.buttonBody,
    );
    const plain = fits(renderPrompt(prompt('x'.repeat(9000))));
    expect(plain.map((m) => (m as any).text.body.length)).toEqual([4096, 4096, 808]);
  });
});

describe('reply ids', () => {
  it('read back as the choice, the index or the page they were made for; anything else is not ours', () => {
    expect(parseReply('c:confirm')).toEqual({ kind: 'choice', id: 'confirm' });
    expect(parseReply('c:a:b')).toEqual({ kind: 'choice', id: 'a:b' });
    expect(parseReply('i:3')).toEqual({ kind: 'index', index: 3 });
    expect(parseReply('p:2')).toEqual({ kind: 'page', page: 2 });
    for (const junk of ['', 'c:', 'x:1', 'p:', 'p:-1', 'i:abc', 'p:99999', 'confirm'])
      expect(parseReply(junk)).toBeUndefined();
  });
});

describe('cut and split', () => {
  it('never breaks a character made of two code units, and cuts mid-word only when no word ends past the middle', () => {
    expect(cut('💸'.repeat(30), 20)).toBe('💸'.repeat(19) + '…');
    expect(cut('Supercalifragilisticexpialidocious', 10)).toBe('Supercali…');
    expect(cut('short', 10)).toBe('short');
    expect(split('a\nb', 4096)).toEqual(['a\nb']);
    expect(split('12345 67890', 6)).toEqual(['12345', '67890']);
  });
});

describe('templateMessage', () => {
  it('puts the outcome on one line as the body parameter, within the template limits', () => {
    const message = templateMessage(
      { name: 'payment_update', language: 'en_US' },
      'Paid 5000 UGX\n\tto Sarah.     Ref 1',
    );
    expect(message).toEqual({
      type: 'template',
      template: {
        name: 'payment_update',
        language: { code: 'en_US' },
        components: [{ type: 'body', parameters: [{ type: 'text', text: 'Paid 5000 UGX to Sarah. Ref 1' }] }],
      },
    });
    const long = templateMessage({ name: 't', language: 'en' }, 'word '.repeat(500));
    expect(Array.from((long as any).template.components[0].parameters[0].text as string).length).toBeLessThanOrEqual(
      1000,
    );
    fits([message, long]);
  });
});
