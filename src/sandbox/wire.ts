/**
 * The sandbox's answers as zod schemas, for its OpenAPI document (openapi.ts): what render.ts writes, in the
 * latest version's shapes (v5). Objects are open (more fields may come, as the spec's versioning promises);
 * test/sandbox/openapi.test.ts checks real answers against these.
 */
import { z } from 'zod';
import {
  COLLECTION_STATUSES,
  CURRENCIES,
  EVENT_TYPES,
  PAYMENT_STATES,
  RECIPIENT_STATES,
  REQUEST_STATUSES,
  VERSIONS,
} from './state.js';

const timestamp = z.string().meta({ description: 'UTC, `YYYY-MM-DDTHH:MM:SSZ`.', examples: ['2026-11-22T09:13:00Z'] });
const money = z.string().meta({ description: 'Decimal string, two places.', examples: ['2500.00'] });
const id = z.number().int();
const metadata = z.record(z.string(), z.unknown()).nullable();
const stamps = {
  created: timestamp,
  modified: timestamp,
  author: id.nullable(),
  updated_by: z.string().nullable(),
};

export const contact = z.looseObject({
  id,
  organization: id,
  first_name: z.string(),
  last_name: z.string(),
  email: z.string().nullable(),
  phone_number: z.string(),
  type: z.string(),
  status: z.enum(['active', 'inactive']),
  metadata,
  national_id: z.string().nullable(),
  national_id_type: z.string().nullable(),
  phone_is_supported: z.enum(['yes', 'no']).optional(),
  phone_is_mm_registered: z.enum(['yes', 'no']).optional(),
  name_on_network: z.string().optional(),
  name_matches_network_status: z.string().optional(),
  name_matches_network_score: z.number().optional(),
  network_name: z.string().optional(),
  ...stamps,
});

export const recipientEntry = z.looseObject({
  phonenumber: z.string(),
  amount: money,
  description: z.string(),
  metadata,
  state: z.enum(RECIPIENT_STATES),
  last_error: z.string().nullable(),
  contact: z.string(),
  batch_id: id,
  payment_id: id,
});

export const payment = z.looseObject({
  id,
  organization: id,
  payment_type: z.enum(['money', 'airtime']),
  amount: money,
  currency: z.enum(CURRENCIES),
  account: id,
  description: z.string(),
  phone_nos: z
    .array(recipientEntry)
    .meta({ description: 'Recipient entries (v5); before v5 a list of phone numbers.' }),
  start_date: timestamp,
  metadata,
  state: z.enum(PAYMENT_STATES),
  last_error: z.string().nullable(),
  rejected_reason: z.string().nullable(),
  rejected_time: timestamp.nullable(),
  rejected_by: id.nullable(),
  cancelled_reason: z.string().nullable(),
  cancelled_time: timestamp.nullable(),
  cancelled_by: id.nullable(),
  paused_reason: z.string().nullable().meta({ description: 'Added by the sandbox: why a recipient is paused.' }),
  remote_transaction_id: z.string().nullable(),
  send_sms_message: z.boolean(),
  charged_fee: money.nullable(),
  transactions: z.array(z.unknown()),
  bank: id.optional(),
  account_number: z.string().optional(),
  account_name: z.string().optional(),
  email: z.string().optional(),
  ...stamps,
});

export const collectionRequest = z.looseObject({
  id,
  organization: id,
  amount: money,
  currency: z.enum(CURRENCIES),
  account: id.nullable(),
  phonenumber: z.string(),
  mfscode: z.string(),
  contact: contact.nullable(),
  reason: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  collection: id.nullable(),
  success_message: z.string().nullable(),
  instructions: z.string().nullable(),
  send_instructions: z.boolean(),
  status: z.enum(REQUEST_STATUSES),
  error_message: z.string(),
  expiry_date: timestamp.nullable(),
  start_date: timestamp.nullable(),
  retry_interval_minutes: z.number().int().nullable(),
  max_attempts: z.number().int().nullable(),
  subscription_settings: z.string().nullable().meta({ description: 'JSON text of the recurrence settings.' }),
  ...stamps,
});

export const account = z.looseObject({
  id,
  organization: id,
  status: z.string(),
  label: z.string(),
  description: z.string(),
  currency: z.enum(CURRENCIES),
  balance: money,
  low_balance_threshold: z.unknown(),
  low_balance_notification_last_send_time: z.unknown(),
  ...stamps,
});

export const transaction = z.looseObject({
  id,
  amount: money,
  currency: z.enum(CURRENCIES),
  description: z.string(),
  created: timestamp,
  type: z.string(),
  fee_transaction: z.unknown(),
  account: account.nullable(),
});

export const collection = z.looseObject({
  id,
  remote_transaction_id: z.string(),
  organization: id.nullable(),
  amount: money,
  currency: z.enum(CURRENCIES),
  phonenumber: z.string(),
  payment_date: timestamp,
  reference: z.string(),
  status: z.enum(COLLECTION_STATUSES),
  contact: contact.nullable(),
  collection_request: collectionRequest.nullable().meta({ description: 'Expanded from v3; the request id before.' }),
  transaction: transaction.nullable().meta({ description: 'From v4.' }),
  ...stamps,
});

export const webhook = z.looseObject({
  id,
  user: id,
  event: z.enum(EVENT_TYPES),
  target: z.string(),
  created: timestamp,
  updated: timestamp,
});

export const event = z.looseObject({
  id,
  organization: id,
  type: z.enum(EVENT_TYPES),
  data: z.record(z.string(), z.unknown()),
  ...stamps,
});

export const bank = z.looseObject({ id, name: z.string(), country: z.string(), currency: z.string() });

/** The list envelope of `item`. */
export const envelope = (item: z.ZodType) =>
  z.looseObject({
    count: z.number().int(),
    next: z.string().nullable(),
    previous: z.string().nullable(),
    results: z.array(item),
  });

export const detail = z.looseObject({ detail: z.string() }).meta({ description: 'Most errors.' });
export const fieldErrors = z
  .record(z.string(), z.array(z.string()))
  .meta({ description: 'Validation errors: field name -> messages (`non_field_errors` for the body as a whole).' });

// Vending group.

/** The vending envelope around `data`; an error has status `error`, code = the HTTP status, data the field map or null. */
export const vendingEnvelope = (data: z.ZodType) =>
  z.looseObject({ status: z.string(), message: z.string(), code: z.number().int(), data });

export const nameValidation = z.looseObject({
  user: z.looseObject({
    name: z.string(),
    address: z.unknown(),
    outstandingBalance: z.unknown(),
    dueDate: z.unknown(),
    district: z.unknown(),
    accountNumber: z.unknown(),
    minimumAmount: z.unknown(),
    rawOutput: z.looseObject({
      firstName: z.string(),
      lastName: z.string(),
      middleName: z.string(),
      gsmNo: z.string(),
      error: z.unknown(),
    }),
    errorMessage: z.unknown(),
  }),
});
export const dataBundle = z.looseObject({
  datacode: z.number(),
  name: z.string(),
  allowance: z.string(),
  price: z.number(),
  validity: z.string(),
});
export const pinBundle = z.looseObject({
  product_code: z.string().meta({ description: 'Added: the product code name validation and purchases take.' }),
  description: z.string(),
  amount: z.number(),
  available: z.number().int(),
});
export const pinPurchaseResult = z.looseObject({
  reference: z.string(),
  status: z.string(),
  amount: z.number(),
  quantity: z.number().int(),
  pins: z.array(z.looseObject({ pin: z.string(), serial: z.string() })),
});
export const dataPurchaseResult = z.looseObject({
  reference: z.string(),
  status: z.string(),
  datacode: z.number(),
  phonenumber: z.string(),
  amount: z.number(),
});

// Controls.

export const organizationSettings = z.looseObject({
  id,
  name: z.string(),
  nameMatchAffectsPayment: z.boolean(),
  acceptCollectionsByDefault: z.boolean(),
  verificationUrl: z.string().nullable(),
  webhookAuth: z.looseObject({ username: z.string(), password: z.string() }).nullable(),
  manageSettings: z.boolean(),
  version: z.enum(VERSIONS).nullable(),
  approvalRules: z.array(z.looseObject({ currency: z.enum(CURRENCIES), above: z.string() })),
});
export const clock = z.looseObject({ now: timestamp });
export const faults = z.looseObject({ maintenance: z.boolean(), latencyMs: z.number().int() });
export const delivery = z.looseObject({
  id,
  event: id,
  event_type: z.enum(EVENT_TYPES),
  webhook: id,
  target: z.string(),
  attempt: z.number().int(),
  at: timestamp,
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number().int(),
  outcome: z.enum(['delivered', 'retry_scheduled', 'failed', 'webhook_deleted', 'certificate_rejected']),
});
export const sms = z.looseObject({ to: z.string(), text: z.string(), at: timestamp });
export const purchase = z.looseObject({
  kind: z.enum(['epin', 'databundle']),
  organization: id,
  reference: z.string(),
  request: z.record(z.string(), z.unknown()),
  data: z.record(z.string(), z.unknown()),
});
export const balances = z.record(z.string(), z.string()).meta({ description: 'Balance of each account by currency.' });
