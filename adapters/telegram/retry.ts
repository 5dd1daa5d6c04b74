/**
 * Retries of Bot API calls, as a grammY API transformer (installed on bot.api, so replies, edits and the
 * notifier all get it). Telegram's 429 carries `retry_after`: the call is repeated after exactly that
 * wait, because nothing was done. 5xx and network failures are repeated with exponential backoff.
 * Anything else (a 400 for a bad request, a 403 from a user who blocked the bot) is final.
 */
import { HttpError, type Transformer } from 'grammy';

export interface RetryOptions {
  /** Retries after the first attempt. Default 3: a short burst or blip passes, an outage surfaces in seconds. */
  maxRetries?: number;
  /**
   * Longest `retry_after` worth waiting, in seconds. Default 30: beyond that the caller (a chat waiting for
   * an answer, a notification queue with its own retries) is better served by an error now.
   */
  maxRetryAfterSeconds?: number;
  /** First backoff for 5xx and network failures, in ms, doubled on each retry. Default 500. */
  baseDelayMs?: number;
  /** How to wait. Default: a timer. Tests pass a recorder so they neither wait nor measure time. */
  sleep?: (ms: number) => Promise<void>;
}

/** What went wrong with one call: Telegram answered with an error, or no answer came. */
export type CallFailure = { kind: 'api'; errorCode: number; retryAfterSeconds?: number } | { kind: 'network' };

type Settings = Required<Omit<RetryOptions, 'sleep'>>;

const DEFAULTS: Settings = { maxRetries: 3, maxRetryAfterSeconds: 30, baseDelayMs: 500 };

/** The one retry decision: ms to wait before retry number `retry` (0 for the first), or null to give up. */
export function retryDelay(failure: CallFailure, retry: number, settings: Settings = DEFAULTS): number | null {
  if (retry >= settings.maxRetries) return null;
  const backoff = settings.baseDelayMs * 2 ** retry;
  if (failure.kind === 'network') return backoff;
  if (failure.errorCode === 429) {
    if (failure.retryAfterSeconds === undefined) return backoff;
    return failure.retryAfterSeconds <= settings.maxRetryAfterSeconds ? failure.retryAfterSeconds * 1000 : null;
  }
  return failure.errorCode >= 500 ? backoff : null;
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function retryTransformer(options: RetryOptions = {}): Transformer {
  const { sleep = timer, ...given } = options;
  const settings: Settings = { ...DEFAULTS, ...given };
  return async (prev, method, payload, signal) => {
    for (let retry = 0; ; retry++) {
      let delay: number | null;
      try {
        const response = await prev(method, payload, signal);
        if (response.ok) return response;
        const failure: CallFailure = {
          kind: 'api',
          errorCode: response.error_code,
          retryAfterSeconds: response.parameters?.retry_after,
        };
        delay = retryDelay(failure, retry, settings);
        if (delay === null) return response;
      } catch (error) {
        // An aborted call (long polling being stopped) is not a failure to retry.
        if (!(error instanceof HttpError) || signal?.aborted) throw error;
        delay = retryDelay({ kind: 'network' }, retry, settings);
        if (delay === null) throw error;
      }
      await sleep(delay);
    }
  };
}
