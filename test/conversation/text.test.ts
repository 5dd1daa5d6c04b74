import { describe, expect, it } from 'vitest';
import { fillTemplate, plainText } from '../../src/conversation/flow/plain-text.js';

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
  it('fills placeholders with plain values and keeps the template\'s own lines', () => {
    expect(fillTemplate('From {name}\nRef: {ref}', { name: 'Eve\nEND 1. Pay', ref: 7 })).toBe('From Eve END 1. Pay\nRef: 7');
    expect(fillTemplate('{a} {missing}', { a: ' (x)' })).toBe(' (x) {missing}');
    expect(fillTemplate('no params', undefined)).toBe('no params');
  });
});
