/**
 * The vending group (base `vendingUrl`, which includes the group's prefix). Every answer is the envelope
 * `{status, message, code, data}`: `data` is returned, any other status is mapped to the error tree by its
 * `code` (a non-2xx HTTP answer by its HTTP status, through the transport, with retries).
 *
 * The purchase endpoints are not shown in the spec (VENDING_PATHS in ../assumptions.ts). This is the shape
 * the whole team uses (the sandbox implements the same), headers as the bundle listings plus
 * Duplicate-Check-Key:
 *   POST {vendingUrl}/services/epin/purchase
 *     body { service_type, product_code, account_number, gsmNo, amount, quantity, reference? }
 *     data { reference, status: 'successful', amount, quantity, pins: [{ pin, serial }] }
 *   POST {vendingUrl}/services/databundle/purchase
 *     body { service_type, datacode, phonenumber, amount, account_number?, reference? }
 *     data { reference, status: 'successful', datacode, phonenumber, amount }
 */
import type { z } from 'zod';
import { VENDING_PATHS } from '../assumptions.js';
import { ValidationError, errorFromResponse } from '../errors.js';
import { moneyCall, type MoneyCallOptions, type RequestSpec, type Transport } from '../http.js';
import { amount, phone, required, type Amount } from '../params.js';
import {
  dataBundleSchema,
  dataPurchaseSchema,
  nameValidationSchema,
  pinBundleSchema,
  pinPurchaseSchema,
  vendingSchema,
  type DataBundle,
  type DataPurchase,
  type NameValidation,
  type PinBundle,
  type PinPurchase,
} from '../schemas.js';

export interface VendingCredentials {
  /** `x-api-key` of name validation. */
  apiKey: string | undefined;
  /** `Authorization` of bundle listings and purchases. */
  authorization: string | undefined;
}

export interface NameValidationParams {
  /** For example `jamb`. */
  service_type: string;
  /** The candidate's confirmation code. */
  account_number: string;
  product_code: string;
}

export interface DataBundleListParams {
  /** `mtn`, `airtel`, `9mobile`, `glo`. */
  service_type: string;
  /** Only for SPECTRANET. */
  account_number?: string;
}

export interface PinBundleListParams {
  service_type: string;
}

export interface PinPurchaseParams {
  service_type: string;
  product_code: string;
  account_number: string;
  /** The `gsmNo` that name validation returned (NameValidation.gsmNo); required by the group. */
  gsmNo: string;
  /** Sent as a decimal string. */
  amount: Amount;
  /** Pins to buy, at most the bundle's `available`. */
  quantity: number;
  reference?: string;
}

export interface DataPurchaseParams {
  service_type: string;
  /** The bundle's datacode. */
  datacode: string | number;
  /** International format. */
  phonenumber: string;
  amount: Amount;
  account_number?: string;
  reference?: string;
}

export class Vending {
  /** Private (#) so the keys do not show when the client is inspected or logged. */
  readonly #credentials: VendingCredentials;

  constructor(
    private readonly http: Transport | undefined,
    credentials: VendingCredentials,
  ) {
    this.#credentials = credentials;
  }

  async validateName(params: NameValidationParams): Promise<NameValidation> {
    const body = {
      service_type: required(params.service_type, 'service_type'),
      account_number: required(params.account_number, 'account_number'),
      product_code: required(params.product_code, 'product_code'),
    };
    const headers = { 'x-api-key': this.setting(this.#credentials.apiKey, 'vendingApiKey') };
    return this.post(VENDING_PATHS.nameValidation, body, headers, nameValidationSchema);
  }

  async listDataBundles(params: DataBundleListParams): Promise<DataBundle[]> {
    const body = { ...params, service_type: required(params.service_type, 'service_type') };
    return this.post(VENDING_PATHS.dataBundles, body, this.providerHeaders(), dataBundleSchema.array());
  }

  async listPinBundles(params: PinBundleListParams): Promise<PinBundle[]> {
    const body = { service_type: required(params.service_type, 'service_type') };
    return this.post(VENDING_PATHS.pinBundles, body, this.providerHeaders(), pinBundleSchema.array());
  }

  /** Money-moving: always sent with the caller's Duplicate-Check-Key (required). */
  async purchasePin(params: PinPurchaseParams, options: MoneyCallOptions): Promise<PinPurchase> {
    if (!Number.isInteger(params.quantity) || params.quantity < 1) {
      throw ValidationError.local({ quantity: ['must be a whole number of at least 1'] });
    }
    const body = {
      ...params,
      service_type: required(params.service_type, 'service_type'),
      product_code: required(params.product_code, 'product_code'),
      account_number: required(params.account_number, 'account_number'),
      gsmNo: required(params.gsmNo, 'gsmNo'),
      amount: amount(params.amount),
    };
    return this.post(VENDING_PATHS.pinPurchase, body, this.providerHeaders(), pinPurchaseSchema, moneyCall(options));
  }

  /** Money-moving: always sent with the caller's Duplicate-Check-Key (required). */
  async purchaseData(params: DataPurchaseParams, options: MoneyCallOptions): Promise<DataPurchase> {
    const body = {
      ...params,
      service_type: required(params.service_type, 'service_type'),
      datacode: required(String(params.datacode), 'datacode'),
      phonenumber: phone(params.phonenumber, 'phonenumber'),
      amount: amount(params.amount),
    };
    return this.post(VENDING_PATHS.dataPurchase, body, this.providerHeaders(), dataPurchaseSchema, moneyCall(options));
  }

  private providerHeaders(): Record<string, string> {
    return {
      authorization: this.setting(this.#credentials.authorization, 'vendingAuthorization or vendingApiKey'),
      'provider-date': new Date().toUTCString(),
    };
  }

  private async post<T>(
    path: string,
    body: unknown,
    headers: Record<string, string>,
    data: z.ZodType<T>,
    call: Pick<RequestSpec, 'key' | 'retry'> = {},
  ): Promise<T> {
    const http = this.setting(this.http, 'vendingUrl');
    const answer = await http.request({ method: 'POST', path, body, headers, ...call }, vendingSchema(data));
    if (answer.ok) return answer.data;
    const code = Number(answer.envelope.code);
    // An error envelope without a usable code is still the service saying no: read it as a 500.
    throw errorFromResponse(Number.isInteger(code) && code >= 400 ? code : 500, answer.envelope, new Headers());
  }

  private setting<T>(value: T | undefined, name: string): T {
    if (value === undefined) throw new Error(`MomoClient: ${name} is not configured, the vending group cannot be used`);
    return value;
  }
}
