import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { renderPrompt, truncate, withoutError } from '../../../adapters/ussd/renderer.js';
import { GSM7_LIMIT, UCS2_LIMIT, isGsm7, screenLength, toPlain } from '../../../adapters/ussd/gsm7.js';
import type { Prompt } from '../../../src/conversation/types.js';
import { catalogue } from '../../../src/conversation/flow/render.js';
import type { Lang } from '../../../flows/types.js';

const size = (text: string) => screenLength(text, isGsm7(text));
const limitOf = (text: string) => (isGsm7(text) ? GSM7_LIMIT : UCS2_LIMIT);

describe('toPlain and GSM-7', () => {
  it('replaces curly quotes, dashes and ellipsis, and keeps the accents GSM-7 has', () => {
    expect(toPlain('“Café” – l’été… déjà—Ñandú')).toBe('"Café" - l\'été... déjà-Ñandu');
    expect(isGsm7(toPlain('“Café” – l’été…'))).toBe(true);
  });
  it('keeps every accented letter of the GSM-7 basic set and strips only the others', () => {
    const kept = 'éèùìòàÉÇÄÖÑÜÅåÆæØøßäöñü';
    expect(toPlain(kept)).toBe(kept);
    expect(isGsm7(kept)).toBe(true);
    expect(screenLength(kept, true)).toBe([...kept].length);
    // Outside GSM-7: the French circumflexes, the small c cedilla, the diaeresis on e and i.
    expect(toPlain('Arrêter, reçu, dîner, côte, sûr, Noël, maïs, Ê')).toBe(
      'Arreter, recu, diner, cote, sur, Noel, mais, E',
    );
    // An accent typed as a combining mark is the same letter.
    expect(toPlain('Envoye\u0301 a\u0300 Sarah')).toBe('Envoyé à Sarah');
  });
  it('renders French with its GSM-7 accents within the 182-septet screen', () => {
    const screen = renderPrompt({
      text: 'Envoyé : 5 000 UGX à Sarah. Réf 12. Vérifier reçu, être sûr.',
      final: true,
      lang: 'fr',
    });
    expect(screen.text).toBe('Envoyé : 5 000 UGX à Sarah. Réf 12. Vérifier recu, etre sur.');
    expect(screen.limit).toBe(182);
  });
  it('keeps what has no plain form, which makes the screen UCS-2', () => {
    expect(toPlain('Hi 😀')).toBe('Hi 😀');
    expect(isGsm7('Hi 😀')).toBe(false);
    expect(isGsm7('Total {5} €')).toBe(true);
  });
  it('counts extension characters as two septets', () => {
    expect(screenLength('a{b}€', true)).toBe(8);
    expect(screenLength('a{b}€', false)).toBe(5);
  });
});

describe('renderPrompt', () => {
  it('numbers choices and ends a waiting screen with the navigation line', () => {
    const screen = renderPrompt({
      text: 'Welcome',
      choices: [
        { id: 'pay', label: 'Pay' },
        { id: 'req', label: 'Request' },
      ],
      final: false,
    });
    expect(screen.text).toBe('Welcome\n1. Pay\n2. Request\n0 Back 00 Home');
    expect(screen).toMatchObject({ final: false, page: 0, pageCount: 1, limit: 182 });
  });

  it('shows a final screen without navigation', () => {
    expect(renderPrompt({ text: 'Paid 5,000 UGX.', final: true })).toMatchObject({
      text: 'Paid 5,000 UGX.',
      final: true,
    });
  });

  it('pages a long menu with 98 More, keeping numbers stable across pages, every page within 182', () => {
    const choices = Array.from({ length: 30 }, (_, i) => ({
      id: `c${i + 1}`,
      label: `Choice number ${i + 1} of the list`,
    }));
    const prompt: Prompt = { text: 'Pick one', choices, final: false };
    const first = renderPrompt(prompt, 0);
    expect(first.pageCount).toBeGreaterThan(2);
    const numbers: number[] = [];
    for (let page = 0; page < first.pageCount; page++) {
      const screen = renderPrompt(prompt, page);
      expect(size(screen.text)).toBeLessThanOrEqual(182);
      expect(screen.text.startsWith('Pick one\n')).toBe(true);
      expect(screen.text.includes('98 More')).toBe(page < first.pageCount - 1);
      expect(screen.text.endsWith('0 Back 00 Home')).toBe(true);
      numbers.push(...[...screen.text.matchAll(/^(\d+)\. /gm)].map((m) => Number(m[1])));
    }
    expect(numbers).toEqual(choices.map((_, i) => i + 1));
  });

  it('shows a long text on the first page only, and its question on later pages', () => {
    const prompt: Prompt = {
      text: 'Update on your last request:\nPayment 1 submitted (state: new). You will be notified when it completes.\nWhat would you like to do?',
      choices: [
        'Pay someone',
        'Request money',
        'Check a payment received',
        'Buy data',
        'Buy an exam PIN',
        'Language',
      ].map((label, i) => ({ id: `${i}`, label })),
      final: false,
    };
    const first = renderPrompt(prompt, 0);
    expect(first.text.startsWith(prompt.text + '\n1. Pay someone\n')).toBe(true);
    expect(first.pageCount).toBe(2);
    const second = renderPrompt(prompt, 1);
    expect(second.text).toBe(
      'What would you like to do?\n' +
        [2, 3, 4, 5, 6].map((n) => `${n}. ${prompt.choices?.[n - 1]?.label}`).join('\n') +
        '\n0 Back 00 Home',
    );
  });

  it('clamps a page past the end to the last page', () => {
    const prompt: Prompt = {
      text: 'x',
      choices: Array.from({ length: 40 }, (_, i) => ({ id: `${i}`, label: `Item ${i}` })),
      final: false,
    };
    const last = renderPrompt(prompt, 0).pageCount - 1;
    expect(renderPrompt(prompt, 99).page).toBe(last);
    expect(renderPrompt(prompt, -3).page).toBe(0);
  });

  it('cuts long text at a word with ...', () => {
    const text = 'Your last payments: ' + Array.from({ length: 40 }, (_, i) => `payment${i}`).join(' ');
    const screen = renderPrompt({ text, final: true });
    expect(size(screen.text)).toBeLessThanOrEqual(182);
    expect(screen.text.endsWith('...')).toBe(true);
    expect(screen.text).toMatch(/payment\d+\.\.\.$/);
  });

  it('fits a screen with a character outside GSM-7 into 80', () => {
    const screen = renderPrompt({
      text: 'Karibu 😀 chagua huduma unayotaka kutumia leo tafadhali',
      choices: Array.from({ length: 8 }, (_, i) => ({ id: `${i}`, label: `Huduma ya ${i + 1}` })),
      final: false,
    });
    expect(screen.limit).toBe(80);
    expect(screen.text.length).toBeLessThanOrEqual(80);
    expect(screen.pageCount).toBeGreaterThan(1);
  });

  it('replaces curly quotes so a screen stays GSM-7 (182, not 80)', () => {
    const screen = renderPrompt({ text: '“Pay” Jane’s shop — 5,000 UGX? ' + 'a'.repeat(90), final: false });
    expect(screen.limit).toBe(182);
    expect(screen.text.startsWith('"Pay" Jane\'s shop - 5,000 UGX?')).toBe(true);
  });

  it('keeps every screen of any prompt within its limit (property)', () => {
    const label = fc.string({ unit: 'binary', maxLength: 120 });
    fc.assert(
      fc.property(
        label,
        fc.array(fc.record({ id: fc.string({ minLength: 1, maxLength: 5 }), label }), { maxLength: 40 }),
        fc.boolean(),
        fc.nat(10),
        fc.boolean(),
        (text, choices, final, page, refused) => {
          const screen = renderPrompt({ text, choices, final, ...(refused ? { refused } : {}) }, page);
          expect(size(screen.text)).toBeLessThanOrEqual(limitOf(screen.text));
          expect(screen.text.length).toBeLessThanOrEqual(screen.limit);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('truncate', () => {
  it('leaves short text alone and cuts long text to the limit', () => {
    expect(truncate('short', 10, true)).toBe('short');
    const cut = truncate('one two three four five six', 15, true);
    expect(cut).toBe('one two...');
    expect(cut.length).toBeLessThanOrEqual(15);
  });
});

describe('paging with an error line', () => {
  const banks = {
    text: 'Choose the bank:',
    choices: [
      'Co-operative Bank of Kenya',
      'Equity Bank Kenya',
      'KCB Bank Kenya',
      'Equity Bank Uganda',
      'dfcu Bank',
      'Centenary Bank',
      'Stanbic Bank Uganda',
    ].map((label, i) => ({ id: `b${i}`, label })),
    final: false,
  };
  const refused = { ...banks, text: `Please pick one of the options.\n${banks.text}`, refused: true };
  /** The choice numbers on each page. */
  const numbersOf = (prompt: Prompt) =>
    Array.from({ length: renderPrompt(prompt).pageCount }, (_, page) =>
      renderPrompt(prompt, page)
        .text.split('\n')
        .flatMap((line) => /^(\d+)\. /.exec(line)?.[1] ?? []),
    );

  it('pages a list the same way from the first screen as after a wrong key (the bank list)', () => {
    expect(numbersOf(banks)).toEqual([
      ['1', '2', '3', '4', '5'],
      ['6', '7'],
    ]);
    expect(numbersOf(refused)).toEqual(numbersOf(banks));
    expect(renderPrompt(refused).text).toBe(
      [
        'Please pick one of the options.',
        'Choose the bank:',
        '1. Co-operative Bank of Kenya',
        '2. Equity Bank Kenya',
        '3. KCB Bank Kenya',
        '4. Equity Bank Uganda',
        '5. dfcu Bank',
        '98 More',
        '0 Back 00 Home',
      ].join('\n'),
    );
    expect(renderPrompt(banks).text).toBe(renderPrompt(refused).text.replace('Please pick one of the options.\n', ''));
  });

  it('drops the error line for a page turn, keeping the page numbers', () => {
    expect(withoutError(refused)).toEqual(banks);
    expect(withoutError(banks)).toBe(banks);
  });

  it('shortens a long error (a service failure) whole to the room the page leaves', () => {
    const failure = 'The network did not answer. Nothing was bought. Try again in a few minutes, or pick another one.';
    const screen = renderPrompt({ ...banks, text: `${failure}\n${banks.text}`, refused: true });
    expect(screen.text.split('\n')[0]).toBe('The network did not answer.');
    expect(size(screen.text)).toBeLessThanOrEqual(182);
  });

  it('keeps the same pages with or without an error, every screen within its limit (property)', () => {
    const words = fc.stringMatching(/^[A-Za-z][A-Za-z ]{0,40}[a-z]$/);
    fc.assert(
      fc.property(
        words,
        fc.array(words, { minLength: 1, maxLength: 20 }),
        fc.constantFrom<Lang | undefined>(undefined, 'sw', 'fr'),
        (question, labels, lang) => {
          const prompt: Prompt = {
            text: question,
            choices: labels.map((label, i) => ({ id: `c${i}`, label })),
            final: false,
            ...(lang ? { lang } : {}),
          };
          const wrong = catalogue.render({ key: 'common.pickOne' }, lang ?? 'en');
          const withError = { ...prompt, text: `${wrong}\n${question}`, refused: true };
          expect(numbersOf(withError)).toEqual(numbersOf(prompt));
          for (let page = 0; page < renderPrompt(withError).pageCount; page++) {
            expect(size(renderPrompt(withError, page).text)).toBeLessThanOrEqual(182);
          }
          expect(renderPrompt(withError).text.startsWith(`${toPlain(wrong)}\n`)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('the main menu', () => {
  it('fits one screen, with room for a wrong key, in every language, for up to six choices', () => {
    // A Ugandan and a Nigerian number (vending flows), and a person of the directory (Change PIN, Link).
    const menus = [
      ['pay', 'request', 'check'],
      ['pay', 'request', 'check', 'data', 'pin'],
      ['pay', 'request', 'check', 'changePin', 'link'],
    ];
    for (const lang of ['en', 'sw', 'fr'] as const) {
      for (const flows of menus) {
        const menu: Prompt = {
          text: catalogue.render({ key: 'menu.title' }, lang),
          choices: [
            ...flows.map((id) => ({ id, label: catalogue.render({ key: `menu.flow.${id}` }, lang) })),
            { id: 'language', label: catalogue.render({ key: 'menu.language' }, lang) },
          ],
          top: true,
          final: false,
          lang,
        };
        expect(renderPrompt(menu).pageCount, `${lang} ${flows.join(',')}`).toBe(1);
      }
    }
  });
});

describe('the first screen', () => {
  it('offers no "0 Back 00 Home" where there is nothing to go back to; later screens do', () => {
    const menu = { text: 'What would you like to do?', choices: [{ id: 'pay', label: 'Pay someone' }], final: false };
    expect(renderPrompt({ ...menu, top: true }).text).toBe('What would you like to do?\n1. Pay someone');
    expect(renderPrompt(menu).text).toBe('What would you like to do?\n1. Pay someone\n0 Back 00 Home');
  });
});
