/**
 * Bulk payout rows, as pasted (`phone, amount[, description]`, one a line): each read on its own, numbers
 * normalised to `+` format, amounts decimal (no thousands separators: the comma separates fields), errors
 * named by row number; or a CSV file's records, checked the same way. Grouped into requests of at most {@link PAYOUT_REQUEST_MAX} recipients.
 */
import { Decimal } from 'decimal.js';
import { inputMessages, parseAmount, parsePhone } from '../../flows/input.js';
import type { PayoutRecipient } from '../../flows/calls.js';
import type { Text } from '../../flows/types.js';
import { fillTemplate, plainText } from '../conversation/flow/plain-text.js';
import { readCsv, readPastedLine } from '../csv.js';

/** Most rows in one payout. */
const PAYOUT_ROWS_MAX = 1000;
/**
 * Most recipients in one service request. The contract does not say how many `recipient_data` takes; 100
 * keeps a request small (and one approval per request readable); a larger payout is split, one key each.
 */
export const PAYOUT_REQUEST_MAX = 100;
/** The service sends the description to the recipient and keeps it to about 140 characters. */
const DESCRIPTION_MAX = 140;

export interface RowError {
  /** 1-based, counting every line pasted (blank lines included), as the user sees them. */
  row: number;
  message: string;
}

/** The recipients, each with its row number in `rows`; or every problem by row. */
export type ParsedRows =
  { ok: true; recipients: PayoutRecipient[]; rows: number[] } | { ok: false; errors: RowError[] };

const say = (reason: Text): string => fillTemplate(inputMessages.en[reason.key] ?? reason.key, reason.params);

/** Reads pasted rows; `description` is used for rows without their own. */
export function parsePayoutRows(text: string, options: RowOptions): ParsedRows {
  const records = text.split(/\r\n|\r|\n/).map((line, index): RowFields => {
    const row = index + 1;
    const blank = line.trim() === '';
    const read = blank ? { fields: [], rest: '' } : readPastedLine(line);
    if ('error' in read) return { row, fields: [], blank, unreadable: read.error };
    // Phone and amount end at the first two separators; the description is the rest, commas and all.
    const [phone = '', amount = '', description = ''] = read.fields;
    return { row, fields: [phone, amount, read.fields.length > 3 ? read.rest : description], blank };
  });
  return checkRows(records, options, 'no rows: paste one `phone, amount[, description]` a line');
}

/**
 * Reads a CSV file's text (RFC 4180, src/csv.ts): columns phone, amount and an optional description
 * (quoted when it holds commas), an optional header row; each record checked as a pasted row is, by its number.
 */
export function parsePayoutCsv(text: string, options: RowOptions): ParsedRows {
  const read = readCsv(text);
  if (!read.ok) return { ok: false, errors: [{ row: read.row, message: `not a valid CSV file: ${read.message}` }] };
  const records = read.records.map(({ row, fields }) => ({
    row,
    fields: fields.map((f) => f.trim()),
    blank: fields.every((f) => f.trim() === ''),
    extra: fields.length > 3,
  }));
  return checkRows(records, options, 'the file has no rows: one `phone,amount,description` a line');
}

export interface RowOptions {
  defaultCountry: string;
  /** Used for rows without a description of their own. */
  description: string;
}

interface RowFields {
  row: number;
  /** Phone, amount, description (missing ones empty). */
  fields: string[];
  blank: boolean;
  /** A CSV record with more than three columns. */
  extra?: boolean;
  /** Why a pasted line could not be read (a quote never closed). */
  unreadable?: string;
}

/** Every row checked on its own: numbers normalised, amounts decimal, descriptions bounded; problems by row number. */
function checkRows(records: RowFields[], options: RowOptions, none: string): ParsedRows {
  const errors: RowError[] = [];
  const recipients: PayoutRecipient[] = [];
  const rows: number[] = [];
  for (const { row, fields, blank, extra, unreadable } of records) {
    if (blank) continue;
    if (unreadable) {
      errors.push({ row, message: unreadable });
      continue;
    }
    const [phoneField = '', amountField = '', descriptionField = ''] = fields;
    // A CSV header such as `phone,amount,description` is not a payment.
    if (row === 1 && /^\s*"?(phone|number|msisdn)/i.test(phoneField)) continue;
    const problems: string[] = [];
    if (extra) problems.push('more than 3 columns (phone, amount, description): quote a description that holds commas');
    const phone = parsePhone(phoneField, options.defaultCountry);
    if (!phone.ok) problems.push(`"${plainText(phoneField).slice(0, 30)}" is not a phone number`);
    const amount =
      amountField === '' ? { ok: false as const, reason: { key: 'input.amountInvalid' } } : parseAmount(amountField);
    if (!amount.ok) problems.push(say(amount.reason));
    const description = plainText(descriptionField).trim() || options.description;
    if (description.length > DESCRIPTION_MAX)
      problems.push(`the description is longer than ${DESCRIPTION_MAX} characters`);
    if (problems.length > 0) errors.push({ row, message: problems.join('; ') });
    else if (phone.ok && amount.ok) {
      recipients.push({ phonenumber: phone.e164, amount: amount.amount, description });
      rows.push(row);
    }
    if (recipients.length + errors.length > PAYOUT_ROWS_MAX) {
      errors.push({ row, message: `more than ${PAYOUT_ROWS_MAX} rows: split the payout` });
      break;
    }
  }
  if (recipients.length === 0 && errors.length === 0) errors.push({ row: 1, message: none });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, recipients, rows };
}

/** The payout's requests: at most {@link PAYOUT_REQUEST_MAX} recipients each, in the order pasted. */
export function chunksOf(recipients: PayoutRecipient[]): PayoutRecipient[][] {
  const chunks: PayoutRecipient[][] = [];
  for (let start = 0; start < recipients.length; start += PAYOUT_REQUEST_MAX)
    chunks.push(recipients.slice(start, start + PAYOUT_REQUEST_MAX));
  return chunks;
}

/** The sum of the recipients' amounts, as a decimal string. */
export const totalOf = (recipients: PayoutRecipient[]): string =>
  recipients.reduce((sum, r) => sum.plus(r.amount), new Decimal(0)).toFixed();

/** The largest amount among the recipients (the per-payment limit applies to each). */
export const largestOf = (recipients: PayoutRecipient[]): string =>
  Decimal.max(...recipients.map((r) => r.amount)).toFixed();
