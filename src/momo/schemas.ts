/**
 * zod schemas of every answer. Objects are loose: the spec promises added fields without a new version,
 * so unknown keys pass through untouched. Where samples vary, the schemas accept every variant seen and
 * normalise: amounts (string or number) become decimal strings; `organization`, `account`, `currency`
 * may be an id or a name; `phone_nos` holds recipient entries from v5 and bare phone strings before;
 * `collection_request` is an id before v3 and an object from v3; `transaction` appears from v4.
 */
import { Decimal } from 'decimal.js';
import { z } from 'zod';
import { BANK_COUNTRY_FIELD, PIN_PRODUCT_CODE_FIELD } from './assumptions.js';

/** Identifiers are long integers; a numeric string is read as one. */
const id = z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)]);
/** Declared an id, some samples show a name (organization, account, currency, users). */
const ref = z.union([z.number(), z.string()]);
const text = z.string().nullish();

/** A decimal amount: decimal strings are kept as sent, numbers become decimal strings. */
const decimalString = z.union([
  z.string().refine((s) => isDecimal(s), 'not a decimal number'),
  z
    .number()
    .refine(Number.isFinite)
    .transform((n) => new Decimal(n).toFixed()),
]);

/** Metadata is a hash; a JSON text of one is parsed, anything unreadable is read as null. */
const metadata = z
  .union([z.record(z.string(), z.unknown()), z.string().transform(parseObject)])
  .nullish()
  .transform((v) => v ?? null);

function isDecimal(s: string): boolean {
  try {
    return new Decimal(s).isFinite();
  } catch {
    return false;
  }
}

function parseObject(s: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(s);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

const stamps = {
  created: text,
  modified: text,
  author: ref.nullish(),
  updated_by: ref.nullish(),
};

export const contactSchema = z.looseObject({
  id,
  organization: ref.nullish(),
  first_name: text,
  last_name: text,
  email: text,
  phone_number: z.string(),
  type: text,
  status: text,
  metadata,
  ...stamps,
  // Present once verification data exists.
  phone_is_supported: text,
  phone_is_mm_registered: text,
  name_on_network: text,
  name_matches_network_status: text,
  name_matches_network_score: z.union([z.number(), z.string()]).nullish(),
  network_name: text,
  national_id: text,
  national_id_type: text,
});

export const recipientEntrySchema = z.looseObject({
  phonenumber: z.string(),
  amount: decimalString.nullish(),
  description: text,
  metadata,
  state: text,
  last_error: text,
  contact: ref.nullish(),
  batch_id: ref.nullish(),
  payment_id: ref.nullish(),
});

export const paymentSchema = z.looseObject({
  id,
  organization: ref.nullish(),
  payment_type: text,
  amount: decimalString.nullish(),
  currency: ref.nullish(),
  account: ref.nullish(),
  description: text,
  /** From v5 recipient entries; before v5 bare phone numbers. */
  phone_nos: z.array(z.union([recipientEntrySchema, z.string()])).nullish(),
  start_date: text,
  metadata,
  state: z.string(),
  last_error: text,
  rejected_reason: text,
  rejected_time: text,
  rejected_by: ref.nullish(),
  cancelled_reason: text,
  cancelled_time: text,
  cancelled_by: ref.nullish(),
  ...stamps,
  remote_transaction_id: text,
  send_sms_message: z.boolean().nullish(),
  charged_fee: decimalString.nullish(),
  transactions: z.array(z.unknown()).nullish(),
});

export const collectionRequestSchema = z.looseObject({
  id,
  organization: ref.nullish(),
  amount: decimalString,
  currency: ref,
  account: ref.nullish(),
  phonenumber: z.string(),
  mfscode: text,
  contact: z.union([contactSchema, ref]).nullish(),
  reason: text,
  metadata,
  ...stamps,
  collection: ref.nullish(),
  success_message: text,
  instructions: text,
  send_instructions: z.boolean().nullish(),
  status: z.string(),
  error_message: text,
  expiry_date: text,
  start_date: text,
  retry_interval_minutes: z.number().nullish(),
  max_attempts: z.number().nullish(),
  subscription_settings: z.unknown().optional(),
});

/** From v4: the transaction that credited the organization's account. */
export const transactionSchema = z.looseObject({
  id: ref,
  amount: decimalString.nullish(),
  currency: ref.nullish(),
  description: text,
  created: text,
  type: text,
  fee_transaction: z.unknown().optional(),
  account: z.union([z.looseObject({ id: ref }), ref]).nullish(),
});

export const collectionSchema = z.looseObject({
  id,
  remote_transaction_id: text,
  organization: ref.nullish(),
  amount: decimalString,
  currency: ref,
  phonenumber: z.string(),
  payment_date: text,
  reference: text,
  status: z.string(),
  ...stamps,
  contact: z.union([contactSchema, ref]).nullish(),
  /** Before v3 the request's id; from v3 the expanded request. */
  collection_request: z.union([collectionRequestSchema, ref]).nullish(),
  transaction: transactionSchema.nullish(),
});

export const webhookSchema = z.looseObject({
  id,
  user: ref.nullish(),
  event: z.string(),
  target: z.string(),
  created: text,
  updated: text,
});

export const eventSchema = z.looseObject({
  id,
  organization: ref.nullish(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()).nullish(),
  ...stamps,
});

/**
 * GET /api/banks: the spec does not show its shape. Our choice: the list envelope of `{ id, name, code,
 * country }` like every other list (a bare list is accepted too, see pageSchema). `code` is optional; so is the
 * country ({@link BANK_COUNTRY_FIELD}: a bank without one is offered everywhere).
 */
export const bankSchema = z.looseObject({
  id,
  name: z.string(),
  code: text,
  [BANK_COUNTRY_FIELD]: text,
});

export interface Page<T> {
  /** Total records matching, not only this page. */
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

// Vending group.

const rawOutputSchema = z.looseObject({
  firstName: text,
  lastName: text,
  middleName: text,
  gsmNo: text,
  error: z.unknown().optional(),
});

/**
 * Name validation `data`. The sample nests `rawOutput` and `errorMessage` beside the `user` fields; which
 * level they sit on is not clear, so both are read and `gsmNo` (the number a pin purchase must send) is
 * lifted to the top.
 */
export const nameValidationSchema = z
  .looseObject({
    user: z
      .looseObject({
        name: text,
        address: text,
        outstandingBalance: z.unknown().optional(),
        dueDate: text,
        district: text,
        accountNumber: text,
        minimumAmount: z.unknown().optional(),
        rawOutput: rawOutputSchema.nullish(),
        errorMessage: text,
      })
      .nullish(),
    rawOutput: rawOutputSchema.nullish(),
    errorMessage: text,
  })
  .transform((v) => ({ ...v, gsmNo: v.user?.rawOutput?.gsmNo ?? v.rawOutput?.gsmNo ?? null }));

/** `datacode` identifies the bundle in a purchase; read as a string whatever the sample's type. */
const code = z.union([z.number(), z.string()]).transform(String);

export const dataBundleSchema = z.looseObject({
  name: z.string(),
  allowance: text,
  price: decimalString,
  validity: text,
  datacode: code,
});

/**
 * `product_code`: not in the spec's element, which leaves the product list unshown; read from the field
 * PIN_PRODUCT_CODE_FIELD names (../assumptions.ts) when the listing sends it (the sandbox does).
 */
export const pinBundleSchema = z
  .looseObject({
    amount: decimalString,
    available: z.number().int(),
    description: text,
  })
  .transform((b) => {
    const productCode = (b as Record<string, unknown>)[PIN_PRODUCT_CODE_FIELD];
    return {
      ...b,
      product_code:
        typeof productCode === 'string' || typeof productCode === 'number' ? String(productCode) : undefined,
    };
  });

export const pinPurchaseSchema = z.looseObject({
  reference: z.string(),
  status: z.string(),
  amount: decimalString,
  quantity: z.number().int(),
  pins: z.array(z.looseObject({ pin: code, serial: code.nullish() })),
});

export const dataPurchaseSchema = z.looseObject({
  reference: z.string(),
  status: z.string(),
  datacode: code,
  phonenumber: z.string(),
  amount: decimalString,
});

export type Contact = z.infer<typeof contactSchema>;
export type RecipientEntry = z.infer<typeof recipientEntrySchema>;
export type Payment = z.infer<typeof paymentSchema>;
export type CollectionRequest = z.infer<typeof collectionRequestSchema>;
export type Transaction = z.infer<typeof transactionSchema>;
export type Collection = z.infer<typeof collectionSchema>;
export type Webhook = z.infer<typeof webhookSchema>;
export type Event = z.infer<typeof eventSchema>;
export type Bank = z.infer<typeof bankSchema>;
export type NameValidation = z.infer<typeof nameValidationSchema>;
export type DataBundle = z.infer<typeof dataBundleSchema>;
export type PinBundle = z.infer<typeof pinBundleSchema>;
export type PinPurchase = z.infer<typeof pinPurchaseSchema>;
export type DataPurchase = z.infer<typeof dataPurchaseSchema>;

/**
 * A vending answer read as success (`data` parsed by `data`) or failure (the envelope, for the error
 * tree). The group's error body is not shown in the spec; we assume the same envelope with status
 * `error`, a message, and `code` = the HTTP status.
 */
export function vendingSchema<T>(data: z.ZodType<T>) {
  return z.union([
    z.looseObject({ status: z.literal('success'), data }).transform((e) => ({ ok: true as const, data: e.data })),
    z
      .looseObject({
        status: z.string().refine((s) => s !== 'success'),
        message: text,
        code: z.union([z.number(), z.string()]).nullish(),
      })
      .transform((envelope) => ({ ok: false as const, envelope })),
  ]);
}
