import { ValidationError } from '../errors.js';
import { moneyCall, type MoneyCallOptions, type Transport } from '../http.js';
import { listAll, listPage, type MoneyListFilters } from '../pagination.js';
import { amount, metadata, phone, required, type Amount, type Metadata } from '../params.js';
import { paymentSchema, type Page, type Payment } from '../schemas.js';

const PATH = '/api/payments';

export type NationalIdType = 'passport' | 'military' | 'national';

/** One recipient of a multi-recipient payment; `amount` falls back to the top-level amount. */
export interface PaymentRecipient {
  phonenumber: string;
  amount?: Amount | null;
  description?: string;
  first_name?: string;
  last_name?: string;
  national_id?: string | number;
  national_id_type?: NationalIdType;
}

export interface PaymentCreateParams {
  /** International format. Required unless `recipient_data` is given. */
  phonenumber?: string;
  /** `money` (default) or `airtime`. */
  payment_type?: 'money' | 'airtime';
  /** Required unless every recipient of `recipient_data` has its own amount. Sent as a decimal string. */
  amount?: Amount;
  /** One of currency/account is required. */
  currency?: string;
  account?: number;
  description: string;
  /** Up to 10 string attributes; name the conversation here so notifications route without a read. */
  metadata?: Metadata;
  first_name?: string;
  last_name?: string;
  national_id?: string | number;
  national_id_type?: NationalIdType;
  send_sms_message?: boolean;
  start_date?: string;
  recipient_data?: PaymentRecipient[];
  /** Bank payments: recipient's account number, account name, bank id (banks.list) and e-mail. */
  account_number?: string | number;
  account_name?: string;
  bank?: number;
  email?: string;
}

export interface PaymentListFilters extends MoneyListFilters {
  payment_type?: string;
  payment_id?: number;
  /** Per-recipient state. */
  payment_state?: string;
  /** Payment state. */
  state?: string;
  paused_reason?: string;
  network?: string;
}

export class Payments {
  constructor(private readonly http: Transport) {}

  /**
   * Always sent with the caller's Duplicate-Check-Key (required: MissingKeyError without it, nothing sent), so
   * it is retried safely. A DuplicateRequestError on the caller's own key means the service holds the key, not
   * that it made the payment (src/momo/assumptions.ts DUPLICATE_KEY_CONFLICT).
   */
  async create(params: PaymentCreateParams, options: MoneyCallOptions): Promise<Payment> {
    return this.http.request(
      { method: 'POST', path: PATH, body: paymentBody(params), ...moneyCall(options) },
      paymentSchema,
    );
  }

  async get(id: number | string): Promise<Payment> {
    return this.http.request({ method: 'GET', path: `${PATH}/${encodeURIComponent(id)}` }, paymentSchema);
  }

  async list(filters: PaymentListFilters = {}): Promise<Page<Payment>> {
    return listPage(this.http, PATH, { ...filters }, paymentSchema);
  }

  listAll(filters: PaymentListFilters = {}): AsyncGenerator<Payment, void, undefined> {
    return listAll(this.http, PATH, { ...filters }, paymentSchema);
  }
}

function paymentBody(params: PaymentCreateParams): Record<string, unknown> {
  const recipients = params.recipient_data?.map((r, i) => ({
    ...r,
    phonenumber: phone(r.phonenumber, `recipient_data[${i}].phonenumber`),
    amount: r.amount === undefined || r.amount === null ? r.amount : amount(r.amount, `recipient_data[${i}].amount`),
  }));
  if (params.amount === undefined && (recipients === undefined || recipients.some((r) => r.amount == null))) {
    throw ValidationError.local({ amount: ['is required'] });
  }
  if (params.currency === undefined && params.account === undefined) {
    throw ValidationError.local({ currency: ['currency or account is required'] });
  }
  const onlyRecipients = recipients !== undefined && params.phonenumber === undefined;
  return {
    ...params,
    phonenumber: onlyRecipients ? undefined : phone(params.phonenumber, 'phonenumber'),
    amount: params.amount === undefined ? undefined : amount(params.amount),
    description: required(params.description, 'description'),
    metadata: params.metadata === undefined ? undefined : metadata(params.metadata),
    recipient_data: recipients,
  };
}
