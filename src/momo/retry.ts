/**
 * The one retry decision (stripe-node `_shouldRetry`): given what happened to one attempt, retry or not,
 * and after how long, within the call's count of retries and its time budget. Pure: the transport asks, this
 * answers; tested as a table. Nothing above the client retries a call again.
 */

/** Methods that change state on the service: retried only under a Duplicate-Check-Key. */
const WRITES = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

export interface RetryQuestion {
  method: string;
  /** HTTP status of the answer; absent when there was no answer. */
  status?: number;
  /** Set when the service could not be reached (network failure or timeout): no answer at all. */
  error?: unknown;
  /** The request carries a Duplicate-Check-Key, so the service drops a repeat of an applied write. */
  hasDuplicateKey: boolean;
  /** Retries already made for this call: 0 after the first attempt failed. */
  attempt: number;
  maxRetries: number;
  /** Time since the call's first attempt started, in ms. */
  elapsedMs?: number;
  /**
   * The call's time budget in ms, retries and their waits included: no retry is made whose wait would end
   * past it (an attempt started inside it may still run its timeout). Unset: no budget, only maxRetries.
   */
  budgetMs?: number;
  /** The answer's Retry-After header (seconds or an HTTP date). */
  retryAfterHeader?: string | null;
  /** First backoff step in ms, doubled per retry. Default 300: a blip heals fast, chats wait little. */
  baseDelayMs?: number;
  /**
   * Longest wait in ms, for backoff and for Retry-After. Default 5000: callers are chats with a few
   * seconds of patience. A Retry-After longer than this is not retried: the error is returned at once
   * (with retryAfterMs) instead of asking early and being throttled again.
   */
  maxDelayMs?: number;
  /** Source of jitter in [0, 1). Default Math.random; tests pin it. */
  random?: () => number;
  /** Clock for HTTP-date Retry-After values. Default Date.now(). */
  now?: number;
}

export interface RetryDecision {
  retry: boolean;
  delayMs: number;
}

export const DEFAULT_RETRY_BASE_DELAY_MS = 300;
export const DEFAULT_RETRY_MAX_DELAY_MS = 5000;

const NO_RETRY: RetryDecision = { retry: false, delayMs: 0 };

export function shouldRetry(q: RetryQuestion): RetryDecision {
  if (q.attempt >= q.maxRetries) return NO_RETRY;
  if (WRITES.has(q.method.toUpperCase()) && !q.hasDuplicateKey) return NO_RETRY;
  const noAnswer = q.error !== undefined && q.status === undefined;
  const transient = q.status !== undefined && (q.status === 429 || q.status >= 500);
  if (!noAnswer && !transient) return NO_RETRY;

  const maxDelayMs = q.maxDelayMs ?? DEFAULT_RETRY_MAX_DELAY_MS;
  const retryAfterMs = parseRetryAfter(q.retryAfterHeader, q.now);
  const within = (delayMs: number): RetryDecision =>
    q.budgetMs !== undefined && (q.elapsedMs ?? 0) + delayMs > q.budgetMs ? NO_RETRY : { retry: true, delayMs };
  if (retryAfterMs !== undefined) {
    return retryAfterMs <= maxDelayMs ? within(retryAfterMs) : NO_RETRY;
  }
  const step = Math.min(maxDelayMs, (q.baseDelayMs ?? DEFAULT_RETRY_BASE_DELAY_MS) * 2 ** q.attempt);
  // "Equal jitter": at least half the step, so clients that failed together do not retry together.
  const random = q.random ?? Math.random;
  return within(Math.round(step / 2 + (random() * step) / 2));
}

/** Retry-After as ms from now: delta seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null | undefined, now: number = Date.now()): number | undefined {
  if (header === null || header === undefined || header.trim() === '') return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
