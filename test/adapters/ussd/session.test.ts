import { describe, expect, it } from 'vitest';
import { answersDigest, readHop, type UssdState } from '../../../adapters/ussd/session.js';

const digest = answersDigest('test-digest-key');

function state(seen: string, hop: number, final = false, sessionId = 'S1'): UssdState {
  return {
    gateway: 'africastalking',
    sessionId,
    hop,
    seenLength: seen.length,
    seenDigest: digest(seen),
    prompt: { text: 'x', final },
    page: 0,
  };
}
const at = (stored: UssdState | undefined, text: string, sessionId = 'S1') =>
  readHop(stored, 'africastalking', sessionId, { kind: 'cumulative', text }, digest);

describe('readHop (cumulative text)', () => {
  it('opens a session on the first request, keeping a dial extension as seen text', () => {
    expect(at(undefined, '')).toEqual({ kind: 'dial', seen: '' });
    expect(at(undefined, '5')).toEqual({ kind: 'dial', seen: '5' });
  });

  it('takes the remainder after the seen text and its *, stars included', () => {
    expect(at(state('', 0), '1')).toMatchObject({ kind: 'answer', hop: 1, answer: '1' });
    expect(at(state('1*20', 2), '1*20*a*b*')).toMatchObject({
      kind: 'answer',
      hop: 3,
      answer: 'a*b*',
      seen: '1*20*a*b*',
    });
  });

  it('repeats for the same text, an older text, a text that does not extend it, and after the END', () => {
    const s = state('1*20', 2);
    for (const text of ['1*20', '1', '2*20*3', '1*205']) expect(at(s, text).kind).toBe('repeat');
    expect(at(state('1', 1, true), '1*2').kind).toBe('repeat');
  });

  it('treats a request of another gateway session as a new dial (the state is of the last one)', () => {
    expect(at(state('1*20', 2), '', 'S2')).toEqual({ kind: 'dial', seen: '' });
    expect(readHop(state('1', 1), 'hubtel', 'S1', { kind: 'latest', start: true, input: '*1#' }, digest).kind).toBe(
      'dial',
    );
    expect(at({ hop: 1 } as unknown as UssdState, '1').kind).toBe('dial');
  });
});

describe('readHop (latest answer only)', () => {
  const latest = (stored: UssdState, input: string, extra: { start?: boolean; sequence?: number } = {}) =>
    readHop(
      { ...stored, gateway: 'hubtel' },
      'hubtel',
      'S1',
      { kind: 'latest', start: extra.start ?? false, input, sequence: extra.sequence },
      digest,
    );
  it('numbers hops itself without a sequence, and drops an answered sequence', () => {
    expect(latest(state('', 3), '7')).toMatchObject({ kind: 'answer', hop: 4, answer: '7' });
    expect(latest(state('', 3), '7', { sequence: 3 }).kind).toBe('repeat');
    expect(latest(state('', 3), '7', { sequence: 4 }).kind).toBe('answer');
    expect(latest(state('', 0), '*1#', { start: true }).kind).toBe('repeat');
  });
});

describe('answersDigest', () => {
  it('is HMAC-SHA256 under the key, base64url, byte for byte, for short, long and non-ASCII keys and texts', async () => {
    const { createHmac } = await import('node:crypto');
    for (const key of ['k', 'bench-digest-key', 'x'.repeat(64), 'y'.repeat(65), 'ключ-🔑'.repeat(20)]) {
      const digest = answersDigest(key);
      for (const text of ['', '1', '1*0772123456*5000*1234', 'é'.repeat(300)]) {
        expect(digest(text), `${key.length} ${text.length}`).toBe(
          createHmac('sha256', key).update(text).digest('base64url'),
        );
      }
      // Each text from the same keyed states: nothing of one leaks into the next.
      expect(digest('1')).toBe(createHmac('sha256', key).update('1').digest('base64url'));
    }
  });
});
