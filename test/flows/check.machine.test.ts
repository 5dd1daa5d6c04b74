import { describe, expect, it } from 'vitest';
import { checkFlow } from '../../flows/check.machine.js';
import { missingMessages, walkFlow } from './coverage.js';

describe('check machine', () => {
  it('visits every state', () => {
    const walk = walkFlow(checkFlow, { answers: { awaitingTransactionId: ['', 'TX123'] } });
    expect(walk.missing).toEqual([]);
    expect(missingMessages(checkFlow, walk.keys)).toEqual([]);
  });
});
