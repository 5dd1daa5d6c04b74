import { describe, expect, it } from 'vitest';
import { inputMessages, parseAmount, parseName, parsePhone, parseText, phoneExample } from '../../flows/input.js';

describe('parsePhone', () => {
  const accepted: Array<[string, string, string]> = [
    ['0772123456', 'UG', '+256772123456'],
    ['0772 123-456', 'UG', '+256772123456'],
    ['(0772) 123 456', 'UG', '+256772123456'],
    ['772123456', 'UG', '+256772123456'],
    ['256772123456', 'UG', '+256772123456'],
    ['+256 772 123456', 'UG', '+256772123456'],
    ['00256772123456', 'UG', '+256772123456'],
    ['  0701-234-567 ', 'UG', '+256701234567'],
    ['0712 345 678', 'KE', '+254712345678'],
    ['+254-712-345-678', 'KE', '+254712345678'],
    ['0110 123456', 'KE', '+254110123456'],
    ['0754 123 456', 'TZ', '+255754123456'],
    ['+255 65 412 3456', 'TZ', '+255654123456'],
    // An international number keeps its own country whatever the default.
    ['+254712345678', 'UG', '+254712345678'],
    ['0772123456', 'ug', '+256772123456'],
  ];
  for (const [text, country, e164] of accepted) {
    it(`reads ${JSON.stringify(text)} in ${country} as ${e164}`, () => {
      expect(parsePhone(text, country)).toEqual({ ok: true, e164 });
    });
  }

  const refused: Array<[string, string, string]> = [
    ['', 'UG', 'input.phoneInvalid'],
    ['hello', 'UG', 'input.phoneInvalid'],
    ['12', 'UG', 'input.phoneInvalid'],
    ['0772 123', 'UG', 'input.phoneInvalid'],
    ['07721234567890', 'UG', 'input.phoneInvalid'],
    ['0414 123456', 'UG', 'input.phoneNotMobile'],
    ['020 2123456', 'KE', 'input.phoneNotMobile'],
    ['022 2123456', 'TZ', 'input.phoneNotMobile'],
  ];
  for (const [text, country, key] of refused) {
    it(`refuses ${JSON.stringify(text)} in ${country} with ${key}`, () => {
      const example = key === 'input.phoneInvalid' ? { params: phoneExample(country) } : {};
      expect(parsePhone(text, country)).toEqual({ ok: false, reason: { key, ...example } });
    });
  }

  it("shows an example of the caller's country: Kenyan for a Kenyan, Ugandan where none is known", () => {
    expect(phoneExample('UG')).toEqual({ example: '0772123456', international: '+256772123456' });
    expect(phoneExample('KE')).toEqual({ example: '0712123456', international: '+254712123456' });
    expect(phoneExample('ng')).toEqual({ example: '08021234567', international: '+2348021234567' });
    expect(phoneExample('ZZ')).toEqual(phoneExample('UG'));
    expect(parsePhone('0712', 'KE')).toEqual({
      ok: false,
      reason: { key: 'input.phoneInvalid', params: { example: '0712123456', international: '+254712123456' } },
    });
  });
});

describe('parseAmount', () => {
  const accepted: Array<[string, string]> = [
    ['1500', '1500'],
    [' 1500 ', '1500'],
    ['0.01', '0.01'],
    ['2500.50', '2500.5'],
    ['2500.00', '2500'],
    ['007', '7'],
    // Correctly grouped thousands are a kindness: stripped, never sent to the service.
    ['1,000', '1000'],
    ['1,234,567.89', '1234567.89'],
    ['123456789012345678901234567890', '123456789012345678901234567890'],
  ];
  for (const [text, amount] of accepted) {
    it(`reads ${JSON.stringify(text)} as ${amount}`, () => {
      expect(parseAmount(text)).toEqual({ ok: true, amount });
    });
  }

  const refused: Array<[string, string]> = [
    ['', 'input.amountInvalid'],
    ['abc', 'input.amountInvalid'],
    ['NaN', 'input.amountInvalid'],
    ['Infinity', 'input.amountInvalid'],
    ['-5', 'input.amountInvalid'],
    ['+5', 'input.amountInvalid'],
    ['1e3', 'input.amountInvalid'],
    ['0x10', 'input.amountInvalid'],
    ['.5', 'input.amountInvalid'],
    ['5.', 'input.amountInvalid'],
    ['1,00', 'input.amountInvalid'],
    ['1,0000', 'input.amountInvalid'],
    ['1 000', 'input.amountInvalid'],
    ['10,5', 'input.amountInvalid'],
    ['0', 'input.amountNotPositive'],
    ['0.00', 'input.amountNotPositive'],
    ['10.555', 'input.amountDecimals'],
  ];
  for (const [text, key] of refused) {
    it(`refuses ${JSON.stringify(text)} with ${key}`, () => {
      expect(parseAmount(text)).toEqual({ ok: false, reason: { key } });
    });
  }
});

describe('parseText', () => {
  it('trims and accepts 1..max characters', () => {
    expect(parseText('  School fees ', 140)).toEqual({ ok: true, text: 'School fees' });
    expect(parseText('x', 1)).toEqual({ ok: true, text: 'x' });
    expect(parseText(`  ${'y'.repeat(19)}  `, 19)).toEqual({ ok: true, text: 'y'.repeat(19) });
  });

  it('refuses empty and too long text with the limit', () => {
    expect(parseText('   ', 19)).toEqual({ ok: false, reason: { key: 'input.textEmpty' } });
    expect(parseText('y'.repeat(20), 19)).toEqual({
      ok: false,
      reason: { key: 'input.textTooLong', params: { max: 19 } },
    });
  });
});

describe('parseName', () => {
  it('takes names in any script, with spaces, hyphens and apostrophes', () => {
    expect(parseName('  Sarah ', 50)).toEqual({ ok: true, text: 'Sarah' });
    expect(parseName("N'Dri Kouassi-Yao", 50)).toEqual({ ok: true, text: "N'Dri Kouassi-Yao" });
    expect(parseName('Müller', 50)).toEqual({ ok: true, text: 'Müller' });
  });

  it('refuses a key pressed by mistake, a number, or no letter at all', () => {
    for (const text of ['1', '0772123456', 'Sarah2', '--', '٣']) {
      expect(parseName(text, 50)).toEqual({ ok: false, reason: { key: 'input.nameInvalid' } });
    }
    expect(parseName(' ', 50)).toEqual({ ok: false, reason: { key: 'input.textEmpty' } });
    expect(parseName('a'.repeat(51), 50)).toEqual({
      ok: false,
      reason: { key: 'input.textTooLong', params: { max: 50 } },
    });
  });
});

describe('inputMessages', () => {
  it('has the same keys in English and Swahili, covering every reason given', () => {
    expect(Object.keys(inputMessages.sw).sort()).toEqual(Object.keys(inputMessages.en).sort());
    const reasons = [
      parsePhone('x', 'UG'),
      parsePhone('0414123456', 'UG'),
      parseAmount('x'),
      parseAmount('0'),
      parseAmount('1.234'),
      parseText('', 5),
      parseText('123456', 5),
      parseName('1', 5),
    ];
    for (const reason of reasons) {
      expect(reason.ok).toBe(false);
      if (!reason.ok) expect(Object.keys(inputMessages.en)).toContain(reason.reason.key);
    }
  });
});
