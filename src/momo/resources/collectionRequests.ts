import { moneyCall, type MoneyCallOptions, type Transport } from '../http.js';
import { listAll, listPage, type MoneyListFilters } from '../pagination.js';
import { amount, metadata, phone, required, type Amount, type Metadata } from '../params.js';
import { collectionRequestSchema, type CollectionRequest, type Page } from '../schemas.js';

const PATH = '/api/collectionrequests';

export interface CollectionRequestCreateParams {
  /** International format. */
  phonenumber: string;
  first_name?: string;
  last_name?: string;
  /** Sent as a decimal string. */
  amount: Amount;
  currency: string;
  account?: number;
  /** Keep below 20 characters: networks may truncate. */
  reason?: string;
  metadata?: Metadata;
  success_message?: string;
  /** Must be true for the customer to be prompted and told. Default false (the service's). */
  send_instructions?: boolean;
  instructions?: string;
  expiry_date?: string;
  start_date?: string;
  retry_interval_minutes?: number;
  max_attempts?: number;
  subscription_settings?: Record<string, string> | string;
}

export interface CollectionRequestListFilters extends MoneyListFilters {
  collection?: number;
  status?: string;
  reason?: string;
}

export class CollectionRequests {
  constructor(private readonly http: Transport) {}

  /** Always sent with the caller's Duplicate-Check-Key (required), so it is retried safely. */
  async create(params: CollectionRequestCreateParams, options: MoneyCallOptions): Promise<CollectionRequest> {
    const body = {
      ...params,
      phonenumber: phone(params.phonenumber, 'phonenumber'),
      amount: amount(params.amount),
      currency: required(params.currency, 'currency'),
      metadata: params.metadata === undefined ? undefined : metadata(params.metadata),
    };
    return this.http.request({ method: 'POST', path: PATH, body, ...moneyCall(options) }, collectionRequestSchema);
  }

  async get(id: number | string): Promise<CollectionRequest> {
    return this.http.request({ method: 'GET', path: `${PATH}/${encodeURIComponent(id)}` }, collectionRequestSchema);
  }

  async list(filters: CollectionRequestListFilters = {}): Promise<Page<CollectionRequest>> {
    return listPage(this.http, PATH, { ...filters }, collectionRequestSchema);
  }

  listAll(filters: CollectionRequestListFilters = {}): AsyncGenerator<CollectionRequest, void, undefined> {
    return listAll(this.http, PATH, { ...filters }, collectionRequestSchema);
  }
}
