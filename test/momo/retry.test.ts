import { describe, expect, it } from 'vitest';
import { parseRetryAfter, shouldRetry, type RetryQuestion } from '../../src/momo/retry.js';

const base: RetryQuestion = {
  method: 'GET',
  hasDuplicateKey: false,
  attempt: 0,
  maxRetries: 2,
  baseDelayMs: 100,
  maxDelayMs: 1000,
  random: () => 0.5,
  now: Date.parse('2026-01-01T00:00:00Z'),
};
const noAnswer = new Error('ECONNREFUSED');

// [case, question changes, expected decision]. With random 0.5, a step s waits s/2 + s/4 = 0.75 s.
const table: Array<[string, Partial<RetryQuestion>, { retry: boolean; delayMs: number }]> = [
  ['GET 200 is not retried', { status: 200 }, { retry: false, delayMs: 0 }],
  ['GET 500 is retried after the first step', { status: 500 }, { retry: true, delayMs: 75 }],
  ['GET 503 second retry doubles the step', { status: 503, attempt: 1 }, { retry: true, delayMs: 150 }],
  ['GET 502 stops at maxRetries', { status: 502, attempt: 2 }, { retry: false, delayMs: 0 }],
  ['maxRetries 0 never retries', { status: 503, maxRetries: 0 }, { retry: false, delayMs: 0 }],
  ['the step is capped at maxDelayMs', { status: 500, attempt: 6, maxRetries: 10 }, { retry: true, delayMs: 750 }],
  ['GET with no answer is retried', { error: noAnswer }, { retry: true, delayMs: 75 }],
  ['GET 400 is never retried', { status: 400 }, { retry: false, delayMs: 0 }],
  ['GET 401 is never retried', { status: 401 }, { retry: false, delayMs: 0 }],
  ['GET 404 is never retried', { status: 404 }, { retry: false, delayMs: 0 }],
  ['GET 409 is never retried', { status: 409 }, { retry: false, delayMs: 0 }],
  ['GET 429 without Retry-After backs off', { status: 429 }, { retry: true, delayMs: 75 }],
  ['GET 429 honours Retry-After seconds', { status: 429, retryAfterHeader: '1' }, { retry: true, delayMs: 1000 }],
  [
    'GET 429 honours an HTTP-date Retry-After',
    { status: 429, retryAfterHeader: 'Thu, 01 Jan 2026 00:00:00 GMT' },
    { retry: true, delayMs: 0 },
  ],
  [
    'GET 429 with Retry-After above the cap is not waited for',
    { status: 429, retryAfterHeader: '60' },
    { retry: false, delayMs: 0 },
  ],
  ['GET 503 honours Retry-After', { status: 503, retryAfterHeader: '0.2' }, { retry: true, delayMs: 200 }],
  [
    'unreadable Retry-After falls back to backoff',
    { status: 429, retryAfterHeader: 'soon' },
    { retry: true, delayMs: 75 },
  ],
  ['POST 503 without a key is not retried', { method: 'POST', status: 503 }, { retry: false, delayMs: 0 }],
  ['POST with no answer and no key is not retried', { method: 'POST', error: noAnswer }, { retry: false, delayMs: 0 }],
  ['POST 429 without a key is not retried', { method: 'POST', status: 429 }, { retry: false, delayMs: 0 }],
  [
    'POST 503 with a key is retried',
    { method: 'POST', status: 503, hasDuplicateKey: true },
    { retry: true, delayMs: 75 },
  ],
  [
    'POST with no answer and a key is retried',
    { method: 'POST', error: noAnswer, hasDuplicateKey: true },
    { retry: true, delayMs: 75 },
  ],
  [
    'POST 409 with a key is not retried',
    { method: 'POST', status: 409, hasDuplicateKey: true },
    { retry: false, delayMs: 0 },
  ],
  [
    'POST 400 with a key is not retried',
    { method: 'POST', status: 400, hasDuplicateKey: true },
    { retry: false, delayMs: 0 },
  ],
  ['PATCH 500 without a key is not retried', { method: 'PATCH', status: 500 }, { retry: false, delayMs: 0 }],
  ['lower-case post is a write too', { method: 'post', status: 500 }, { retry: false, delayMs: 0 }],
  [
    'a retry whose wait ends inside the time budget is made',
    { status: 503, elapsedMs: 900, budgetMs: 1000 },
    { retry: true, delayMs: 75 },
  ],
  [
    'a retry whose wait would end past the time budget is not',
    { status: 503, elapsedMs: 950, budgetMs: 1000 },
    { retry: false, delayMs: 0 },
  ],
  [
    'a Retry-After past the time budget is not waited for',
    { status: 429, retryAfterHeader: '1', elapsedMs: 500, budgetMs: 1000 },
    { retry: false, delayMs: 0 },
  ],
  [
    'the budget bounds a money create with many retries left',
    {
      method: 'POST',
      error: noAnswer,
      hasDuplicateKey: true,
      attempt: 5,
      maxRetries: 10,
      elapsedMs: 29_500,
      budgetMs: 30_000,
    },
    { retry: false, delayMs: 0 },
  ],
  [
    'maxRetries still bounds a call inside its budget',
    { status: 503, attempt: 2, elapsedMs: 10, budgetMs: 30_000 },
    { retry: false, delayMs: 0 },
  ],
];

describe('shouldRetry', () => {
  it.each(table)('%s', (_name, change, expected) => {
    expect(shouldRetry({ ...base, ...change })).toEqual(expected);
  });

  it('jitter keeps the wait between half the step and the step', () => {
    const low = shouldRetry({ ...base, status: 500, attempt: 1, random: () => 0 });
    const high = shouldRetry({ ...base, status: 500, attempt: 1, random: () => 0.999999 });
    expect(low.delayMs).toBe(100);
    expect(high.delayMs).toBe(200);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    ['2', 2000],
    ['0', 0],
    ['Thu, 01 Jan 2026 00:00:03 GMT', 3000],
    ['Wed, 31 Dec 2025 23:59:00 GMT', 0],
  ])('%s -> %i ms', (header, ms) => {
    expect(parseRetryAfter(header, now)).toBe(ms);
  });

  it.each([[null], [undefined], [''], ['later']])('%s -> undefined', (header) => {
    expect(parseRetryAfter(header, now)).toBeUndefined();
  });
});
