import { describe, expect, it } from 'vitest';
import { readCsv, writeCsv } from '../../src/payouts/csv.js';
import { parsePayoutCsv } from '../../src/payouts/rows.js';

const fields = (text: string) => {
  const read = readCsv(text);
  if (!read.ok) throw new Error(read.message);
  return read.records.map((r) => r.fields);
};

describe('CSV (RFC 4180)', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks; CRLF, LF, a BOM and no final line break', () => {
    expect(fields('\uFEFFphone,amount,description\r\n0772000001,5000,"Wages, March"\r\n"0772000002","10","He said ""hi""\nthen left"\n0772000003,1,')).toEqual([
      ['phone', 'amount', 'description'],
      ['0772000001', '5000', 'Wages, March'],
      ['0772000002', '10', 'He said "hi"\nthen left'],
      ['0772000003', '1', ''],
    ]);
    // A record spanning two lines is one row: the next one is numbered as a spreadsheet numbers it.
    const read = readCsv('a,"b\nc"\nd,e\n');
    expect(read.ok && read.records.map((r) => r.row)).toEqual([1, 2]);
  });

  it('refuses what the grammar does not allow, naming the record', () => {
    expect(readCsv('a,b\nc,d"e"\n')).toMatchObject({ ok: false, row: 2, message: expect.stringMatching(/double quote inside a field/) });
    expect(readCsv('"a"b,c\n')).toMatchObject({ ok: false, row: 1, message: expect.stringMatching(/after the closing quote/) });
    expect(readCsv('a\n"b,c\n')).toMatchObject({ ok: false, row: 2, message: expect.stringMatching(/never closed/) });
  });

  it('writes quoted fields where needed, CRLF after each record, and defuses formulas', () => {
    expect(writeCsv([['+256772000001', 'a, b', 'say "x"', '=HYPERLINK("x")', '-5']])).toBe('+256772000001,"a, b","say ""x""","\'=HYPERLINK(""x"")",-5\r\n');
    const round = writeCsv([['x\ny', 'z']]);
    expect(fields(round)).toEqual([['x\ny', 'z']]);
  });
});

describe('payout rows from a CSV file', () => {
  const read = (text: string) => parsePayoutCsv(text, { defaultCountry: 'UG', description: 'Payout' });

  it('takes a header, quoted descriptions with commas, and checks each row as pasted rows are', () => {
    expect(read('phone,amount,description\r\n0772000001,5000,"Wages, March"\r\n+256772000002,250.50\r\n')).toEqual({
      ok: true,
      rows: [2, 3],
      recipients: [
        { phonenumber: '+256772000001', amount: '5000', description: 'Wages, March' },
        { phonenumber: '+256772000002', amount: '250.5', description: 'Payout' },
      ],
    });
    const bad = read('phone,amount,description\n0772000001,5000\n0772abc,10\n0772000003,5,a,b\n"0772000004",1.234\n');
    expect(bad).toMatchObject({
      ok: false,
      errors: [
        { row: 3, message: '"0772abc" is not a phone number' },
        { row: 4, message: expect.stringMatching(/more than 3 columns/) },
        { row: 5, message: expect.stringMatching(/decimal/i) },
      ],
    });
    expect(read('0772000001,"5000\n')).toMatchObject({ ok: false, errors: [{ row: 1, message: expect.stringMatching(/^not a valid CSV file/) }] });
    expect(read('phone,amount\n')).toMatchObject({ ok: false, errors: [{ message: expect.stringMatching(/no rows/) }] });
  });
});
