/**
 * CSV in and out through csv-parse and csv-stringify (RFC 4180): payout files read strictly, every export
 * (payout outcomes, /ops/payments.csv) written for spreadsheets.
 *
 * Reading: fields separated by commas, records by CRLF, LF or CR (files saved on Windows, Linux or old Macs,
 * mixed too), a quoted field may hold commas, line breaks and doubled quotes, a UTF-8 byte order mark is
 * dropped. What the grammar does not allow (a quote inside an unquoted field, text after a closing quote, a
 * quote never closed) is refused with the record's number, never guessed at.
 *
 * Writing: CRLF after each record; a field is quoted when it holds a comma, a quote or a line break; and a
 * cell a spreadsheet would run as a formula is defused ({@link spreadsheetSafe}).
 */
import { parse } from 'csv-parse/sync';
import { stringify as stringifyStream, type Options as StringifyOptions, type Stringifier } from 'csv-stringify';
import { stringify } from 'csv-stringify/sync';

/** One record and its number: 1-based, as a spreadsheet numbers its rows (a quoted line break stays in one). */
export interface CsvRecord {
  row: number;
  fields: string[];
}

export type CsvRead = { ok: true; records: CsvRecord[] } | { ok: false; row: number; message: string };

/** csv-parse's error codes, as the person who saved the file can act on them. */
const READ_ERRORS: Record<string, string> = {
  INVALID_OPENING_QUOTE: 'a double quote inside a field that is not quoted (write it as "" inside a quoted field)',
  CSV_INVALID_CLOSING_QUOTE: 'text after the closing quote of a field',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'text after the closing quote of a field',
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is never closed',
};

/** The error csv-parse threw, as a row number (1-based) and a sentence. */
function readError(err: unknown): { row: number; message: string } {
  const { code, records } = (err ?? {}) as { code?: unknown; records?: unknown };
  const row = typeof records === 'number' ? records + 1 : 1;
  return { row, message: (typeof code === 'string' && READ_ERRORS[code]) || 'not readable as CSV' };
}

/** Every record of `text`, blank lines included (as `['']`), each with its row number. */
export function readCsv(text: string): CsvRead {
  try {
    const rows = parse(text, {
      bom: true,
      record_delimiter: ['\r\n', '\n', '\r'],
      relax_column_count: true,
      skip_empty_lines: false,
    }) as string[][];
    return { ok: true, records: rows.map((fields, index) => ({ row: index + 1, fields })) };
  } catch (err) {
    return { ok: false, ...readError(err) };
  }
}

/**
 * One line as a person pastes it: fields separated by a comma, a semicolon or a tab, each trimmed, quotes
 * taken as CSV quotes where they open a field and kept as text inside one. Also returns the line's text after
 * its first two separators, for a last column that may hold separators of its own. A quote that never
 * closes is an error (the caller names the line).
 */
export function readPastedLine(line: string): { fields: string[]; rest: string } | { error: string } {
  try {
    const [fields = ['']] = parse(line, {
      delimiter: [',', ';', '\t'],
      record_delimiter: ['\r\n', '\n', '\r'],
      relax_column_count: true,
      relax_quotes: true,
      trim: true,
      skip_empty_lines: false,
    }) as string[][];
    const rest = /^(?:"[^"]*"|[^,;\t]*)[,;\t](?:"[^"]*"|[^,;\t]*)[,;\t](.*)$/s.exec(line)?.[1] ?? '';
    return { fields, rest: rest.trim().replace(/^"(.*)"$/s, '$1') };
  } catch (err) {
    return { error: readError(err).message };
  }
}

/**
 * A whole cell that is a number, signed or not, with an optional decimal part: `-1500`, `+256772123456`,
 * `12.50`. A spreadsheet reads it as that number and runs nothing, so it is written as it is (a phone number
 * in `+` format stays dialable text in the file; a spreadsheet may show it as a number).
 */
const PLAIN_NUMBER = /^[+-]?\d+(?:\.\d+)?$/;

/** Leading characters that make a spreadsheet run a cell as a formula (or hide one behind a tab or CR). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * The cell as a spreadsheet may read it safely: one that starts with `=`, `+`, `-`, `@`, a tab or a carriage
 * return is written with a leading `'` (shown as text, never run) unless the whole cell is a plain number
 * ({@link PLAIN_NUMBER}). So `-1+cmd|' /C calc'!A0` becomes `'-1+cmd|' /C calc'!A0`, and `-1500` stays.
 */
export function spreadsheetSafe(value: string): string {
  return FORMULA_START.test(value) && !PLAIN_NUMBER.test(value) ? `'${value}` : value;
}

/** The writing rules every export shares: CRLF, quotes where needed (line breaks too), formulas defused. */
const WRITE: StringifyOptions = {
  record_delimiter: 'windows',
  quoted_match: /[\r\n]/,
  cast: {
    string: (value: string) => spreadsheetSafe(value),
    number: (value: number) => spreadsheetSafe(String(value)),
    boolean: (value: boolean) => String(value),
    date: (value: Date) => value.toISOString(),
  },
};

/** Records as CSV text, CRLF after each (RFC 4180), formulas defused. */
export function writeCsv(records: readonly (readonly string[])[]): string {
  return stringify(records as string[][], WRITE);
}

/**
 * A streaming writer of records (arrays of cells) with the same rules as {@link writeCsv}: pipe it to a
 * response and write rows as they are read, so an export never holds all its rows in memory.
 */
export function csvWriter(): Stringifier {
  return stringifyStream(WRITE);
}
