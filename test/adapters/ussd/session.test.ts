import { describe, expect, it } from 'vitest';
import { digest, nextStep, readRecord, type UssdSessionRecord } from '../../../adapters/ussd/session.js';

function record(seen: string, hop: number, final = false): UssdSessionRecord {
  return {
    hop,
    seenLength: seen.length,
    seenDigest: digest(seen),
    prompt: { text: 'x', final },
    page: 0,
    screen: { text: 'x', final },
  };
}

describe('nextStep (cumulative text)', () => {
  it('opens a session on the first request, keeping a dial extension as seen text', () => {
    expect(nextStep(null, { kind: 'cumulative', text: '' })).toEqual({ kind: 'dial', seen: '' });
    expect(nextStep(null, { kind: 'cumulative', text: '5' })).toEqual({ kind: 'dial', seen: '5' });
  });

  it('takes the remainder after the seen text and its *, stars included', () => {
    expect(nextStep(record('', 0), { kind: 'cumulative', text: '1' })).toMatchObject({ kind: 'answer', hop: 1, answer: '1' });
    expect(nextStep(record('1*20', 2), { kind: 'cumulative', text: '1*20*a*b*' })).toMatchObject({
      kind: 'answer',
      hop: 3,
      answer: 'a*b*',
      seen: '1*20*a*b*',
    });
  });

  it('repeats for the same text, an older text, a text that does not extend it, and after the END', () => {
    const r = record('1*20', 2);
    for (const text of ['1*20', '1', '2*20*3', '1*205']) {
      expect(nextStep(r, { kind: 'cumulative', text }).kind).toBe('repeat');
    }
    expect(nextStep(record('1', 1, true), { kind: 'cumulative', text: '1*2' }).kind).toBe('repeat');
  });
});

describe('nextStep (latest answer only)', () => {
  it('numbers hops itself without a sequence, and drops an answered sequence', () => {
    expect(nextStep(record('', 3), { kind: 'latest', start: false, input: '7' })).toMatchObject({ kind: 'answer', hop: 4, answer: '7' });
    expect(nextStep(record('', 3), { kind: 'latest', start: false, input: '7', sequence: 3 }).kind).toBe('repeat');
    expect(nextStep(record('', 3), { kind: 'latest', start: false, input: '7', sequence: 4 }).kind).toBe('answer');
    expect(nextStep(record('', 0), { kind: 'latest', start: true, input: '*1#' }).kind).toBe('repeat');
  });
});

describe('readRecord', () => {
  it('accepts a record and refuses anything else', () => {
    expect(readRecord(record('1', 1))).not.toBeNull();
    expect(readRecord({ hop: 1 })).toBeNull();
    expect(readRecord('text')).toBeNull();
  });
});
