/** MomoClient: the one typed client of the service, main API and vending group. */
import { DEFAULT_RETRY_BASE_DELAY_MS, DEFAULT_RETRY_MAX_DELAY_MS } from './retry.js';
import { Transport, type TransportOptions } from './http.js';
import { Banks } from './resources/banks.js';
import { CollectionRequests } from './resources/collectionRequests.js';
import { Collections } from './resources/collections.js';
import { Contacts } from './resources/contacts.js';
import { Events } from './resources/events.js';
import { Payments } from './resources/payments.js';
import { Vending } from './resources/vending.js';
import { Webhooks } from './resources/webhooks.js';

export interface MomoClientOptions {
  /** Base address of the main API, without `/api` (its paths start with `/api`). */
  baseUrl: string;
  /** Sent as `Authorization: Token <apiKey>`. Secret: never logged, not visible on the client object. */
  apiKey: string;
  /** Base address of the vending group, including its prefix (`http://host:4000/vending`). Needed for `vending`. */
  vendingUrl?: string;
  /** Vending key: `x-api-key` on name validation, and `Token <key>` on the other vending calls. */
  vendingApiKey?: string;
  /** Full `Authorization` value of bundle and purchase calls, when the group wants another scheme. Default `Token <vendingApiKey>`. */
  vendingAuthorization?: string;
  /** Sent as `Service-Version` on every main-API request (`v5`). Default: unset, the organization's saved version applies. */
  version?: string;
  /** Per-attempt time limit in ms. Default 15000: the service's slowest synchronous call (instant verification) fits. */
  timeoutMs?: number;
  /** Retries after the first attempt, for 429, 5xx and no answer. Default 2: three tries fit in a chat's patience. */
  maxRetries?: number;
  /**
   * Time budget of one call in ms, its retries and their waits included: no retry starts whose wait would end
   * past it. Default 30000: a chat's answer comes long before (the engine answers "processing" at its deadline
   * and delivers the outcome later), and a money create told to retry longer (WriteOptions.retry) still ends.
   */
  callBudgetMs?: number;
  /** The fetch to use. Default globalThis.fetch; tests and the embedded sandbox inject their own. */
  fetch?: typeof fetch;
  /** First backoff step in ms, doubled per retry, with jitter. Default 300. */
  retryBaseDelayMs?: number;
  /**
   * Cap in ms of one backoff wait and of an honoured Retry-After. Default 5000. A Retry-After above it is
   * not waited for: the RateLimitError is thrown at once, carrying retryAfterMs.
   */
  retryMaxDelayMs?: number;
  /**
   * Awaited before every attempt of a main-API read (src/ops/read-budget.ts: the service allows 30 reads a
   * minute per key, and a read that must wait waits there). Default: none, reads go out at once.
   */
  readBudget?: { take(): Promise<void> };
}

export class MomoClient {
  readonly contacts: Contacts;
  readonly payments: Payments;
  readonly collections: Collections;
  readonly collectionRequests: CollectionRequests;
  readonly webhooks: Webhooks;
  readonly events: Events;
  readonly banks: Banks;
  readonly vending: Vending;

  constructor(options: MomoClientOptions) {
    const common: Omit<TransportOptions, 'baseUrl' | 'headers'> = {
      fetch: options.fetch ?? globalThis.fetch,
      timeoutMs: options.timeoutMs ?? 15_000,
      maxRetries: options.maxRetries ?? 2,
      callBudgetMs: options.callBudgetMs ?? 30_000,
      retryBaseDelayMs: options.retryBaseDelayMs ?? DEFAULT_RETRY_BASE_DELAY_MS,
      retryMaxDelayMs: options.retryMaxDelayMs ?? DEFAULT_RETRY_MAX_DELAY_MS,
    };
    const main = new Transport({
      ...common,
      baseUrl: options.baseUrl,
      beforeRead: options.readBudget?.take.bind(options.readBudget),
      headers: {
        authorization: `Token ${options.apiKey}`,
        ...(options.version ? { 'service-version': options.version } : {}),
      },
    });
    this.contacts = new Contacts(main);
    this.payments = new Payments(main);
    this.collections = new Collections(main);
    this.collectionRequests = new CollectionRequests(main);
    this.webhooks = new Webhooks(main);
    this.events = new Events(main);
    this.banks = new Banks(main);
    this.vending = new Vending(
      options.vendingUrl === undefined
        ? undefined
        : new Transport({ ...common, baseUrl: options.vendingUrl, headers: {} }),
      {
        apiKey: options.vendingApiKey,
        authorization:
          options.vendingAuthorization ??
          (options.vendingApiKey === undefined ? undefined : `Token ${options.vendingApiKey}`),
      },
    );
  }
}
