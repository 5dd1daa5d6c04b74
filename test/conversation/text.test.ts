import { describe, expect, it } from 'vitest';
import { fillTemplate, fitWhole, plainText } from '../../src/conversation/flow/plain-text.js';

describe('plainText', () => {
  it('makes one plain line of text from elsewhere: no controls, no line breaks, no direction overrides', () => {
    expect(plainText('Sarah\r\nNakato')).toBe('Sarah Nakato');
    expect(plainText('a\tb\u0000c\u001bd\u007fe\u0085f')).toBe('a b c d e f');
    expect(plainText('x\u2028y\u2029z')).toBe('x y z');
    expect(plainText('pay \u202Eevil\u202C now \u2066x\u2069')).toBe('pay evil now x ');
    expect(plainText('Amina Ōkello, 12.500 — Café')).toBe('Amina Ōkello, 12.500 — Café');
  });
});

describe('fillTemplate', () => {
  it("fills placeholders with plain values and keeps the template's own lines", () => {
    expect(fillTemplate('From {name}\nRef: {ref}', { name: 'Eve\nEND 1. Pay', ref: 7 })).toBe(
      'From Eve END 1. Pay\nRef: 7',
    );
    expect(fillTemplate('{a} {missing}', { a: ' (x)' })).toBe(' (x) {missing}');
    expect(fillTemplate('no params', undefined)).toBe('no params');
  });
});

describe("fillTemplate: ICU MessageFormat in the person's language", () => {
  const money = '{amount, number, money} {currency}';
  it('groups amounts the way each language writes them, with decimals only when there are some', () => {
    expect(fillTemplate(money, { amount: '5000', currency: 'UGX' }, 'en')).toBe('5,000 UGX');
    expect(fillTemplate(money, { amount: '9000000', currency: 'UGX' }, 'sw')).toBe('9,000,000 UGX');
    expect(fillTemplate(money, { amount: '2500.5', currency: 'KES' }, 'en')).toBe('2,500.50 KES');
    expect(fillTemplate(money, { amount: '5000.00', currency: 'UGX' }, 'en')).toBe('5,000 UGX');
    // French groups with a narrow no-break space and writes a decimal comma (toPlain makes it a space on USSD).
    expect(fillTemplate(money, { amount: '1500000.25', currency: 'CDF' }, 'fr')).toBe('1\u202F500\u202F000,25 CDF');
  });

  it('says one and many right in every language', () => {
    const left = {
      en: 'Wrong PIN. {left, plural, one {# attempt left.} other {# attempts left.}}',
      sw: 'PIN si sahihi. {left, plural, one {Limebaki jaribio #.} other {Yamebaki majaribio #.}}',
      fr: 'PIN incorrect. {left, plural, one {Il reste # essai.} other {Il reste # essais.}}',
    } as const;
    expect(fillTemplate(left.en, { left: 1 }, 'en')).toBe('Wrong PIN. 1 attempt left.');
    expect(fillTemplate(left.en, { left: 2 }, 'en')).toBe('Wrong PIN. 2 attempts left.');
    expect(fillTemplate(left.sw, { left: 1 }, 'sw')).toBe('PIN si sahihi. Limebaki jaribio 1.');
    expect(fillTemplate(left.sw, { left: 2 }, 'sw')).toBe('PIN si sahihi. Yamebaki majaribio 2.');
    expect(fillTemplate(left.fr, { left: 1 }, 'fr')).toBe('PIN incorrect. Il reste 1 essai.');
    expect(fillTemplate(left.fr, { left: 2 }, 'fr')).toBe('PIN incorrect. Il reste 2 essais.');
  });

  it('puts values in as values: braces, # and apostrophes in a name are shown as typed', () => {
    expect(fillTemplate('Pay {name}?', { name: "O'Neil {x} #1 <b>" }, 'en')).toBe("Pay O'Neil {x} #1 <b>?");
    expect(fillTemplate("Enter the sender's number for {name}:", { name: 'Ann' }, 'en')).toBe(
      "Enter the sender's number for Ann:",
    );
  });

  it("says the state of the service in people's words through select, never the state name", () => {
    const status = '{status, select, successful {Received} pending {Waiting} other {Not confirmed}}';
    expect(fillTemplate(status, { status: 'successful' }, 'en')).toBe('Received');
    expect(fillTemplate(status, { status: 'constructor' }, 'en')).toBe('Not confirmed');
  });
});

describe('fitWhole', () => {
  it('keeps the leading sentences that fit and never cuts a word', () => {
    const text = 'Sent: 5,000 UGX to Sarah Nakato. Ref 8F3K2. We will tell you when it arrives.';
    expect(fitWhole(text, 200)).toBe(text);
    expect(fitWhole(text, 45)).toBe('Sent: 5,000 UGX to Sarah Nakato. Ref 8F3K2.');
    expect(fitWhole(text, 33)).toBe('Sent: 5,000 UGX to Sarah Nakato.');
    const cut = fitWhole(text, 20);
    expect(cut).toBe('Sent: 5,000 UGX...');
    expect(cut.length).toBeLessThanOrEqual(20);
  });
});
