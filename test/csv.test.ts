import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { csvWriter, readCsv, spreadsheetSafe, writeCsv } from '../src/csv.js';
import { parsePayoutCsv, parsePayoutRows } from '../src/payouts/rows.js';

const fields = (text: string) => {
  const read = readCsv(text);
  if (!read.ok) throw new Error(read.message);
  return read.records.map((r) => r.fields);
};

describe('CSV (RFC 4180)', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks; CRLF, LF, a BOM and no final line break', () => {
    expect(
      fields(
        '\uFEFFphone,amount,description\r\n0772000001,5000,"Wages, March"\r\n"0772000002","10","He said ""hi""\nthen left"\n0772000003,1,',
      ),
    ).toEqual([
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
    expect(readCsv('a,b\nc,d"e"\n')).toMatchObject({
      ok: false,
      row: 2,
      message: expect.stringMatching(/double quote inside a field/),
    });
    expect(readCsv('"a"b,c\n')).toMatchObject({
      ok: false,
      row: 1,
      message: expect.stringMatching(/after the closing quote/),
    });
    expect(readCsv('a\n"b,c\n')).toMatchObject({ ok: false, row: 2, message: expect.stringMatching(/never closed/) });
  });

  it('writes quoted fields where needed, CRLF after each record, and defuses formulas', () => {
    expect(writeCsv([['+256772000001', 'a, b', 'say "x"', '=HYPERLINK("x")', '-5']])).toBe(
      '+256772000001,"a, b","say ""x""","\'=HYPERLINK(""x"")",-5\r\n',
    );
    const round = writeCsv([['x\ny', 'z']]);
    expect(fields(round)).toEqual([['x\ny', 'z']]);
  });
});

/** The cells as a spreadsheet reads them: csv-parse, which keeps every character (no trimming, no casting). */
const spreadsheet = (text: string): string[][] => parse(text, { bom: true, relax_column_count: true }) as string[][];

/** A cell a spreadsheet would run: it starts with a formula character and is not a plain number. */
const runs = (cell: string): boolean => /^[=+\-@\t\r]/.test(cell) && !/^[+-]?\d+(\.\d+)?$/.test(cell);

const HOSTILE = [
  "-1+cmd|' /C calc'!A0",
  '+1+HYPERLINK("http://evil.example/x","Open")',
  '=1+1',
  '@SUM(A1:A2)',
  '\t=cmd',
  '\r=cmd',
  '-2-3',
  '+256 772 000001',
  '-1e3',
];

describe('formula cells in exports', () => {
  it('prefixes every cell that starts with =, +, -, @, a tab or a CR with a quote, unless it is a plain number', () => {
    expect(spreadsheetSafe("-1+cmd|' /C calc'!A0")).toBe("'-1+cmd|' /C calc'!A0");
    expect(spreadsheetSafe('+1+HYPERLINK("http://x","Open")')).toBe('\'+1+HYPERLINK("http://x","Open")');
    // Plain numbers (a signed amount, a phone number in + format) are left alone: a spreadsheet runs nothing.
    for (const plain of ['-1500', '+256772123456', '12.50', '-0.5', '0772000001'])
      expect(spreadsheetSafe(plain)).toBe(plain);
    // A number with more after it is not a plain number.
    for (const hostile of HOSTILE) expect(spreadsheetSafe(hostile)).toBe(`'${hostile}`);
    // Text that starts otherwise is unchanged.
    for (const text of ['Wages, March', ' =1', "'quoted", '']) expect(spreadsheetSafe(text)).toBe(text);
  });

  it('writes a file a spreadsheet reads back cell for cell, no formula left to run', () => {
    const rows = [
      ['phone', 'amount', 'description'],
      ...HOSTILE.map((cell, i) => [`+25677200000${i}`, i % 2 ? '-1500' : '250.5', cell]),
    ];
    const text = writeCsv(rows);
    expect(text.endsWith('\r\n')).toBe(true);
    const read = spreadsheet(text);
    expect(read).toHaveLength(rows.length);
    read.forEach((cells, r) => {
      expect(cells).toHaveLength(3);
      cells.forEach((cell, c) => {
        expect(runs(cell), `row ${r + 1} column ${c + 1}: ${JSON.stringify(cell)}`).toBe(false);
        const original = rows[r]![c]!;
        expect(cell).toBe(runs(original) ? `'${original}` : original);
      });
    });
    expect(read[1]![2]).toBe("'-1+cmd|' /C calc'!A0");
    expect(read[2]![2]).toBe('\'+1+HYPERLINK("http://evil.example/x","Open")');
    expect(read[2]![1]).toBe('-1500');
    expect(read[2]![0]).toBe('+256772000001');
  });

  it('streams the same as it writes at once', async () => {
    const writer = csvWriter();
    const chunks: string[] = [];
    writer.on('data', (chunk: Buffer | string) => chunks.push(String(chunk)));
    const done = new Promise((resolve) => writer.on('end', resolve));
    const rows = [
      ['a', "-1+cmd|' /C calc'!A0"],
      ['x\ny', '-1500'],
    ];
    for (const row of rows) writer.write(row);
    writer.end();
    await done;
    expect(chunks.join('')).toBe(writeCsv(rows));
    expect(spreadsheet(chunks.join(''))).toEqual([
      ['a', "'-1+cmd|' /C calc'!A0"],
      ['x\ny', '-1500'],
    ]);
  });
});

describe('pasted payout rows', () => {
  const read = (text: string) => parsePayoutRows(text, { defaultCountry: 'UG', description: 'Payout' });

  it('reads a quoted description as CSV and names a line whose quote never closes', () => {
    expect(read('0772000001,5000,"Rent, April ""flat 2"""\n0772000002;10;He said "hi"')).toMatchObject({
      ok: true,
      recipients: [
        { phonenumber: '+256772000001', description: 'Rent, April "flat 2"' },
        { phonenumber: '+256772000002', description: 'He said "hi"' },
      ],
    });
    expect(read('0772000001,5000\n\n0772000002,10,"never closed')).toMatchObject({
      ok: false,
      errors: [{ row: 3, message: expect.stringMatching(/never closed/) }],
    });
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
    expect(read('0772000001,"5000\n')).toMatchObject({
      ok: false,
      errors: [{ row: 1, message: expect.stringMatching(/^not a valid CSV file/) }],
    });
    expect(read('phone,amount\n')).toMatchObject({
      ok: false,
      errors: [{ message: expect.stringMatching(/no rows/) }],
    });
  });
});
