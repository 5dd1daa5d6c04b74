/**
 * The transport: one request = URL building, headers, JSON in and out, timeout, the retry loop around
 * `shouldRetry`, the mapping of error answers through `errorFromResponse`, and zod parsing of the
 * answer. Resources are thin lists of method -> path over it.
 */
import type { z } from 'zod';
import { ConnectionError, MomoError, errorFromResponse, requestIdOf } from './errors.js';
import { shouldRetry } from './retry.js';

export type Query = Record<string, string | number | boolean | undefined>;

export interface TransportOptions {
  /** Every path is appended to this; `next` links are followed on its origin only. */
  baseUrl: string;
  /** Headers sent on every request of this transport (authorization, version). Kept private. */
  headers: Record<string, string>;
  fetch: typeof fetch;
  timeoutMs: number;
  maxRetries: number;
  /** Default time budget of a call in ms (CallRetry.budgetMs). */
  callBudgetMs: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  /** Awaited before every attempt of a GET (each one is a read the service counts): the read budget. */
  beforeRead?: () => Promise<void>;
}

/** How much one call may retry: counts and time, each bounding the other (shouldRetry). */
export interface CallRetry {
  /** Retries after the first attempt. Default: the client's maxRetries. */
  maxRetries?: number;
  /** The call's time budget in ms, retries and waits included. Default: the client's callBudgetMs. */
  budgetMs?: number;
}

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PATCH';
  /** A path under the base URL (`/api/payments`), or an absolute link the service gave (`next`). */
  path: string;
  query?: Query;
  body?: unknown;
  /** Per-request headers (vending authorization, Provider-Date). */
  headers?: Record<string, string>;
  /** Sent as Duplicate-Check-Key, the same on every attempt; makes a write safe to retry. */
  key?: string;
  /** This call's retries, when not the client's. */
  retry?: CallRetry;
}

export class Transport {
  readonly #options: TransportOptions;

  constructor(options: TransportOptions) {
    this.#options = { ...options, baseUrl: options.baseUrl.replace(/\/+$/, '') };
  }

  /** Sends the request (retrying as `shouldRetry` decides) and parses a 2xx answer with `schema`. */
  async request<T>(spec: RequestSpec, schema: z.ZodType<T>): Promise<T> {
    const url = this.url(spec.path, spec.query);
    const where = `${spec.method} ${new URL(url).pathname}`;
    const headers: Record<string, string> = { accept: 'application/json', ...this.#options.headers, ...spec.headers };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.key) headers['duplicate-check-key'] = spec.key;
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const started = Date.now();

    for (let attempt = 0; ; attempt++) {
      if (spec.method === 'GET') await this.#options.beforeRead?.();
      const answer = await this.attempt(url, where, { method: spec.method, headers, body });
      let failure: Error;
      let outcome: { error: ConnectionError } | { status: number; retryAfterHeader: string | null };
      if (answer instanceof ConnectionError) {
        failure = answer;
        outcome = { error: answer };
      } else {
        if (answer.ok) return parse(schema, answer, where);
        failure = errorFromResponse(answer.status, answer.body, answer.headers);
        outcome = { status: answer.status, retryAfterHeader: answer.headers.get('retry-after') };
      }
      const decision = shouldRetry({
        method: spec.method,
        ...outcome,
        hasDuplicateKey: Boolean(spec.key),
        attempt,
        maxRetries: spec.retry?.maxRetries ?? this.#options.maxRetries,
        elapsedMs: Date.now() - started,
        budgetMs: spec.retry?.budgetMs ?? this.#options.callBudgetMs,
        baseDelayMs: this.#options.retryBaseDelayMs,
        maxDelayMs: this.#options.retryMaxDelayMs,
      });
      if (!decision.retry) throw failure;
      await sleep(decision.delayMs);
    }
  }

  /** Absolute URL of a path or of a service-given link, always on the base URL's origin (the key goes nowhere else). */
  private url(path: string, query?: Query): string {
    let url: URL;
    if (/^https?:\/\//i.test(path)) {
      const link = new URL(path);
      url = new URL(link.pathname + link.search, this.#options.baseUrl);
    } else {
      url = new URL(this.#options.baseUrl + path);
    }
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  private async attempt(url: string, where: string, init: RequestInit): Promise<Answer | ConnectionError> {
    try {
      const response = await this.#options.fetch(url, {
        ...init,
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      });
      const text = await response.text();
      return { ok: response.ok, status: response.status, headers: response.headers, body: parseBody(text) };
    } catch (cause) {
      const reason =
        cause instanceof Error && cause.name === 'TimeoutError'
          ? `no answer within ${this.#options.timeoutMs} ms`
          : 'could not reach the service';
      return new ConnectionError(`${where}: ${reason}`, { cause });
    }
  }
}

interface Answer {
  ok: boolean;
  status: number;
  headers: Headers;
  body: unknown;
}

function parseBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function parse<T>(schema: z.ZodType<T>, answer: Answer, where: string): T {
  const result = schema.safeParse(answer.body);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new MomoError(`${where}: unexpected answer: ${issues}`, {
    status: answer.status,
    body: answer.body,
    requestId: requestIdOf(answer.headers),
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Second argument of every write method. */
export interface WriteOptions {
  /**
   * Duplicate-Check-Key of this call. Default: none for contacts and webhooks (not retried). A money-moving
   * create must be given one ({@link MoneyCallOptions}).
   */
  key?: string;
  /** This call's retries (count and time budget), when not the client's: a create whose outcome matters. */
  retry?: CallRetry;
}

/** Second argument of every money-moving create: its Duplicate-Check-Key is required. */
export interface MoneyCallOptions extends WriteOptions {
  /**
   * The key kept in flow context (our ref, written in the journal's intent before the call), so a call repeated
   * after a crash is recognised by the service (409) instead of paying twice. Never made up here: a key the
   * caller did not keep could not be looked up, or repeated, by anyone.
   */
  key: string;
}

/** A money-moving call without its key: thrown before anything is sent. */
export class MissingKeyError extends Error {
  override name = 'MissingKeyError';
}

/**
 * What a money-moving call adds to its request: the caller's key (reused on every retry of the call) and the
 * caller's retries, if any. Throws {@link MissingKeyError} when the key is empty or missing: nothing is sent.
 */
export function moneyCall(options: MoneyCallOptions): Pick<RequestSpec, 'key' | 'retry'> {
  if (typeof options?.key !== 'string' || options.key === '')
    throw new MissingKeyError('a money-moving call needs its Duplicate-Check-Key (our ref): none given, nothing sent');
  return {
    key: options.key,
    ...(options.retry ? { retry: options.retry } : {}),
  };
}
