/**
 * CSV as RFC 4180 writes it, read strictly and written for spreadsheets. No CSV library is installed (none in
 * node_modules), so this is a small reader of the RFC's grammar: fields separated by commas, records by CRLF
 * (a bare LF or CR is taken too: files saved on Linux or old Macs), a field in double quotes may hold commas,
 * line breaks and doubled quotes (`""`). A UTF-8 byte order mark at the start is dropped. Anything else the
 * grammar does not allow (a quote inside an unquoted field, text after a closing quote, a quote never closed)
 * is refused with the record's number, never guessed at.
 */

/** One record and its number: 1-based, as a spreadsheet numbers its rows (a quoted line break stays in one). */
export interface CsvRecord {
  row: number;
  fields: string[];
}

export type CsvRead = { ok: true; records: CsvRecord[] } | { ok: false; row: number; message: string };

export function readCsv(text: string): CsvRead {
  const records: CsvRecord[] = [];
  const input = text.startsWith('\uFEFF') ? text.slice(1) : text;
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  /** The current field began with a quote (its closing quote may have come). */
  let wasQuoted = false;
  let row = 1;
  const endRecord = () => {
    fields.push(field);
    records.push({ row, fields });
    fields = [];
    field = '';
    wasQuoted = false;
    row += 1;
  };
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    if (quoted) {
      if (c !== '"') field += c;
      else if (input[i + 1] === '"') {
        field += '"';
        i += 1;
      } else quoted = false;
      continue;
    }
    if (c === ',') {
      fields.push(field);
      field = '';
      wasQuoted = false;
    } else if (c === '\r' || c === '\n') {
      if (c === '\r' && input[i + 1] === '\n') i += 1;
      endRecord();
    } else if (c === '"') {
      if (field !== '' || wasQuoted) return { ok: false, row, message: 'a double quote inside a field that is not quoted (write it as "" inside a quoted field)' };
      quoted = true;
      wasQuoted = true;
    } else if (wasQuoted) {
      return { ok: false, row, message: 'text after the closing quote of a field' };
    } else field += c;
  }
  if (quoted) return { ok: false, row, message: 'a quoted field is never closed' };
  // The last record needs no line break after it.
  if (field !== '' || fields.length > 0 || wasQuoted) endRecord();
  return { ok: true, records };
}

/** A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break. */
function csvField(value: string): string {
  // A leading =, +, - or @ makes spreadsheets run the cell as a formula: such text is prefixed with '.
  const safe = /^[=+\-@\t\r]/.test(value) && !/^[+-]?\d/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** Records as CSV text, CRLF after each (RFC 4180). */
export function writeCsv(records: readonly (readonly string[])[]): string {
  return records.map((fields) => `${fields.map(csvField).join(',')}\r\n`).join('');
}
