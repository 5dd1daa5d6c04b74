import { describe, expect, it } from 'vitest';
import { payFlow } from '../../flows/pay.machine.js';
import { missingMessages, walkFlow } from './coverage.js';

describe('pay machine', () => {
  it('visits every state', () => {
    const walk = walkFlow(payFlow, { input: { requirePin: true }, answers: { awaitingEmail: ['x', 'a@b.co'], awaitingFirstName: ['', 'Jane'], awaitingLastName: ['', 'Doe'] } });
    console.log(walk.paths.length, walk.missing);
    expect(walk.missing).toEqual([]);
    expect(missingMessages(payFlow, walk.keys)).toEqual([]);
  });
});
