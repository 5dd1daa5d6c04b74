import { describe, expect, it } from 'vitest';
import { PAYOUT_REQUEST_MAX, chunksOf, largestOf, parsePayoutRows, totalOf } from '../../src/payouts/rows.js';

const read = (text: string) => parsePayoutRows(text, { defaultCountry: 'UG', description: 'Payout' });

describe('payout rows', () => {
  it('reads phone, amount and description, normalising numbers and amounts; the default description fills a row without one', () => {
    const parsed = read(
      'phone,amount,description\n0772000001, 5000, March wages\n\n+256 772 000 002;250.50\n"0772000003"\t10,bonus, with a comma',
    );
    expect(parsed).toEqual({
      ok: true,
      rows: [2, 4, 5],
      recipients: [
        { phonenumber: '+256772000001', amount: '5000', description: 'March wages' },
        { phonenumber: '+256772000002', amount: '250.5', description: 'Payout' },
        { phonenumber: '+256772000003', amount: '10', description: 'bonus, with a comma' },
      ],
    });
    if (parsed.ok) {
      expect(totalOf(parsed.recipients)).toBe('5260.5');
      expect(largestOf(parsed.recipients)).toBe('5000');
    }
  });

  it('names every bad row by its number, as pasted (blank lines counted)', () => {
    const parsed = read(
      '0772000001, 5000\n\nnot-a-phone, 10\n0772000002, -5\n0772000003\n0772000004, 1.234\n0772000005, 10, ' +
        'x'.repeat(141),
    );
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.errors.map((e) => e.row)).toEqual([3, 4, 5, 6, 7]);
    expect(parsed.errors[0]!.message).toMatch(/"not-a-phone" is not a phone number/);
    expect(parsed.errors[3]!.message).toMatch(/decimal/i);
    expect(parsed.errors[4]!.message).toMatch(/longer than 140/);
  });

  it('refuses an empty paste and more rows than a payout takes', () => {
    expect(read('  \n ')).toMatchObject({ ok: false, errors: [{ row: 1, message: expect.stringMatching(/no rows/) }] });
    const many = Array.from({ length: 1001 }, () => '0772000001, 1').join('\n');
    expect(read(many)).toMatchObject({
      ok: false,
      errors: [{ message: expect.stringMatching(/more than 1000 rows/) }],
    });
  });

  it('splits a payout into requests of at most PAYOUT_REQUEST_MAX recipients, in order', () => {
    const parsed = read(
      Array.from({ length: 250 }, (_, i) => `07720${String(i).padStart(5, '0')}, ${i + 1}`).join('\n'),
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors.slice(0, 3)));
    const chunks = chunksOf(parsed.recipients);
    expect(chunks.map((c) => c.length)).toEqual([PAYOUT_REQUEST_MAX, PAYOUT_REQUEST_MAX, 50]);
    expect(chunks[2]![49]!.amount).toBe('250');
  });
});
