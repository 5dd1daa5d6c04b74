/**
 * The operator's search of payments as the query string of /ops/payments, /ops/payments.json and
 * /ops/payments.csv gives it: each value bounded and checked, a wrong one refused with its reason (a 400),
 * never passed on. Empty values (a form's blank fields) are no filter.
 *
 * `phone` (read with libphonenumber-js as every number is, in DEFAULT_COUNTRY unless in `+` form), `ref` (ours),
 * `id` (the service's), `channel`, `state`, `kind` from fixed lists, `from` / `to` UTC days `YYYY-MM-DD`
 * (both included), `size` 1 to {@link SIZE_MAX} a page, `cursor` the `next` of the page before.
 */
import { z } from 'zod';
import { parsePhone } from '../../flows/input.js';
import type { SearchQuery } from '../journal/journal.js';
import { OPERATION_KINDS, OPERATION_STATES } from '../journal/schema.js';
import { CHANNELS } from './funnel.js';

/** Rows a page shows by default, and at most. */
export const SIZE_DEFAULT = 50;
export const SIZE_MAX = 500;
/** Our refs and the service's ids are short printable strings (a UUID, `pay_…`); anything longer is not one. */
const REF_MAX = 100;
/** The longest period one search covers: ten years of days. */
const DAYS_MAX = 3660;

/** The parameters taken. */
const TAKEN = 'phone, ref, id, channel, state, kind, from, to, size, cursor';

/** A query as parsed: the journal's search, and the values as given (to fill the form and the links again). */
export interface PaymentsQuery {
  search: SearchQuery;
  given: Record<string, string>;
}

export type ParsedQuery = { ok: true; query: PaymentsQuery } | { ok: false; reasons: string[] };

const blankIsAbsent = (v: unknown) =>
  typeof v === 'string' && v.trim() === '' ? undefined : typeof v === 'string' ? v.trim() : v;
/** A query value that may be absent: a blank one is absent; the rest is trimmed, then checked by `schema`. */
export const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankIsAbsent, schema.optional());

const printable = (what: string) =>
  z
    .string(`${what} is one value`)
    .max(REF_MAX, `${what} is at most ${REF_MAX} characters`)
    .regex(/^[\x21-\x7e]+$/, `${what} is printable characters without spaces`);

/** A UTC day `YYYY-MM-DD` of the calendar, named `what` in a refusal. */
export const day = (what: string) =>
  z
    .string(`${what} is one value`)
    .regex(/^\d{4}-\d{2}-\d{2}$/, `${what} is a day, YYYY-MM-DD`)
    .refine((v) => {
      const date = new Date(`${v}T00:00:00Z`);
      return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === v;
    }, `${what} is not a day of the calendar`);

/** The schema of the query; `defaultCountry` reads numbers written without their country code. */
function schemaFor(defaultCountry: string) {
  return z
    .object({
      phone: optional(
        z
          .string('phone is one value')
          .max(32, 'phone is at most 32 characters')
          .transform((v, ctx) => {
            const phone = parsePhone(v, defaultCountry);
            if (phone.ok) return phone.e164;
            ctx.addIssue({ code: 'custom', message: 'phone is not a mobile number' });
            return z.NEVER;
          }),
      ),
      ref: optional(printable('ref')),
      id: optional(printable('id')),
      channel: optional(z.enum(CHANNELS, `channel is one of ${CHANNELS.join(', ')}`)),
      state: optional(z.enum(OPERATION_STATES, `state is one of ${OPERATION_STATES.join(', ')}`)),
      kind: optional(z.enum(OPERATION_KINDS, `kind is one of ${OPERATION_KINDS.join(', ')}`)),
      from: optional(day('from')),
      to: optional(day('to')),
      size: optional(
        z
          .string('size is one value')
          .regex(/^\d{1,4}$/, 'size is a whole number')
          .transform(Number)
          .pipe(z.number().min(1, `size is 1 to ${SIZE_MAX}`).max(SIZE_MAX, `size is 1 to ${SIZE_MAX}`)),
      ),
      cursor: optional(
        z
          .string('cursor is one value')
          .max(200, 'cursor is not one this search gave')
          .regex(/^[A-Za-z0-9_-]+$/, 'cursor is not one this search gave'),
      ),
    })
    .strict()
    .superRefine((q, ctx) => {
      if (q.from && q.to) {
        const span = (Date.parse(q.to) - Date.parse(q.from)) / 86_400_000;
        if (span < 0) ctx.addIssue({ code: 'custom', message: 'from is after to' });
        else if (span > DAYS_MAX) ctx.addIssue({ code: 'custom', message: `the period is at most ${DAYS_MAX} days` });
      }
    });
}

/** Reads the query string (express's `req.query`): a search, or every reason it is refused. */
export function parsePaymentsQuery(raw: unknown, defaultCountry: string): ParsedQuery {
  const parsed = schemaFor(defaultCountry).safeParse(raw ?? {});
  if (!parsed.success) {
    return {
      ok: false,
      reasons: parsed.error.issues.map((i) =>
        i.code === 'unrecognized_keys' ? `${i.keys.join(', ')}: not taken (${TAKEN})` : i.message,
      ),
    };
  }
  const q = parsed.data;
  const given: Record<string, string> = {};
  for (const key of ['phone', 'ref', 'id', 'channel', 'state', 'kind', 'from', 'to'] as const) {
    const value = (raw as Record<string, unknown>)[key];
    if (typeof value === 'string' && value.trim() !== '') given[key] = value.trim();
  }
  if (q.size !== undefined) given.size = String(q.size);
  const search: SearchQuery = {
    ...(q.phone ? { phone: q.phone } : {}),
    ...(q.ref ? { ref: q.ref } : {}),
    ...(q.id ? { id: q.id } : {}),
    ...(q.channel ? { channel: q.channel } : {}),
    ...(q.state ? { state: q.state } : {}),
    ...(q.kind ? { kind: q.kind } : {}),
    ...(q.from ? { from: new Date(`${q.from}T00:00:00Z`) } : {}),
    // `to` is a whole day: up to the start of the next.
    ...(q.to ? { to: new Date(Date.parse(`${q.to}T00:00:00Z`) + 86_400_000) } : {}),
    limit: q.size ?? SIZE_DEFAULT,
    ...(q.cursor ? { cursor: q.cursor } : {}),
  };
  return { ok: true, query: { search, given } };
}
