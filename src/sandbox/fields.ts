/**
 * zod field types shared by the request schemas, with the messages the service uses. Form bodies carry
 * every value as a string, so numbers, booleans (`True`/`False`) and metadata (JSON text) are read from
 * strings as well as from their JSON types.
 */
import { Decimal } from 'decimal.js';
import { z } from 'zod';
import { parseInternational } from './directory.js';
import { CURRENCIES } from './state.js';

export const REQUIRED = 'This field is required.';
const required = (kind: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? REQUIRED : `Not a valid ${kind}.`;

/** '' from a form field (and null) counts as absent for optional fields. */
const blankAsAbsent = (v: unknown) => (v === '' || v === null ? undefined : v);

/** An optional field: absent, null or '' are all "not given". */
export const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankAsAbsent, schema.optional());

/** JSON text read as its value; other values, and text that is not JSON, are left for the schema to refuse. */
export const parseJsonText = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

/** A code given as a string or a JSON number (ids, account numbers), read as a string. */
export const code = z
  .union([z.string(), z.number()], { error: (i) => (i.input === undefined ? REQUIRED : 'Not a valid code.') })
  .transform((v) => String(v).trim());

export const text = (max: number) =>
  z
    .string({ error: required('string') })
    .trim()
    .min(1, 'This field may not be blank.')
    .max(max, `Ensure this field has no more than ${max} characters.`);

export const optionalText = (max: number) => optional(text(max));

export const email = optional(z.email('Enter a valid email address.'));

export const phone = z.string({ error: required('string') }).transform((v, ctx) => {
  // A `+` sent unencoded in a form body arrives as a space: read it back as the `+` it was.
  const parsed = parseInternational(v.replace(/^ (?=\d)/, '+'));
  if (!parsed) {
    ctx.addIssue({
      code: 'custom',
      message: 'Enter a valid phone number in international format, starting with + and the country code.',
    });
    return z.NEVER;
  }
  return parsed;
});

/** A decimal of zero or more, as a string or a JSON number, without thousands separators, at most 2 places. */
export const decimal = z.union([z.string(), z.number()], { error: required('number') }).transform((v, ctx) => {
  const s = String(v).trim();
  if (/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) {
    ctx.addIssue({ code: 'custom', message: 'Enter a number without thousands separators.' });
    return z.NEVER;
  }
  if (!/^\d+(\.\d{1,2})?$/.test(s)) {
    ctx.addIssue({ code: 'custom', message: 'A valid number with at most 2 decimal places is required.' });
    return z.NEVER;
  }
  return new Decimal(s);
});

/** A positive decimal amount. */
export const amount = decimal.refine((d) => d.gt(0), 'Ensure this value is greater than 0.');

export const integer = z.preprocess(
  (v) => (typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v),
  z.number({ error: required('integer') }).int('A valid integer is required.'),
);

export const optionalInteger = optional(integer);

const TRUE = new Set(['true', 'True', 'TRUE', '1', 'yes', 'on']);
const FALSE = new Set(['false', 'False', 'FALSE', '0', 'no', 'off']);

/** Booleans as JSON, or as the strings Python clients send (`True`/`False`). */
export const boolean = z.preprocess(
  (v) => (typeof v === 'string' ? (TRUE.has(v) ? true : FALSE.has(v) ? false : v) : v),
  z.boolean({ error: 'Must be a valid boolean.' }),
);

export const currency = z.preprocess(
  (v) => (typeof v === 'string' ? v.trim().toUpperCase() : v),
  z.enum(CURRENCIES, {
    error: (i) => (i.input === undefined ? REQUIRED : `"${String(i.input)}" is not a valid choice.`),
  }),
);

/** A JSON object given as an object or as JSON text. */
export const jsonObject = z.preprocess(
  parseJsonText,
  z.record(z.string(), z.unknown(), { error: 'Value must be valid JSON (an object).' }),
);

export const metadata = optional(jsonObject);

/** `metadata` that must hold only string values, at most `max` of them (payments: 10). */
export const stringMetadata = (max: number) =>
  optional(
    jsonObject
      .refine((m) => Object.values(m).every((v) => typeof v === 'string'), 'Metadata keys and values must be strings.')
      .refine((m) => Object.keys(m).length <= max, `Metadata holds at most ${max} attributes.`)
      .transform((m) => m as Record<string, string>),
  );

const NATIONAL_ID_TYPES = ['passport', 'military', 'national'] as const;
export const nationalIdType = optional(
  z.enum(NATIONAL_ID_TYPES, { error: (i) => `"${String(i.input)}" is not a valid choice.` }),
);

/** Currency of money coming in (collections, collection requests): the test currency is refused. */
export const incomingCurrency = currency.refine(
  (c) => c !== 'BXC',
  'The test currency BXC works only for outgoing payments.',
);
