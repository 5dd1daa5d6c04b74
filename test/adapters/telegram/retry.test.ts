import { describe, expect, it } from 'vitest';
import { retryDelay, type CallFailure } from '../../../adapters/telegram/retry.js';

const settings = { maxRetries: 3, maxRetryAfterSeconds: 30, baseDelayMs: 500 };

describe('retryDelay', () => {
  it.each<[string, CallFailure, number, number | null]>([
    ['429 waits retry_after', { kind: 'api', errorCode: 429, retryAfterSeconds: 7 }, 0, 7000],
    ['429 waits retry_after on later retries too', { kind: 'api', errorCode: 429, retryAfterSeconds: 2 }, 2, 2000],
    ['429 beyond the longest wait gives up', { kind: 'api', errorCode: 429, retryAfterSeconds: 31 }, 0, null],
    ['429 without retry_after backs off', { kind: 'api', errorCode: 429 }, 1, 1000],
    ['500 backs off', { kind: 'api', errorCode: 500 }, 0, 500],
    ['502 backs off, doubling', { kind: 'api', errorCode: 502 }, 2, 2000],
    ['network failure backs off', { kind: 'network' }, 1, 1000],
    ['400 is final', { kind: 'api', errorCode: 400 }, 0, null],
    ['403 (blocked by the user) is final', { kind: 'api', errorCode: 403 }, 0, null],
    ['out of retries', { kind: 'api', errorCode: 429, retryAfterSeconds: 1 }, 3, null],
    ['out of retries on network failures', { kind: 'network' }, 3, null],
  ])('%s', (_, failure, retry, expected) => {
    expect(retryDelay(failure, retry, settings)).toBe(expected);
  });
});
