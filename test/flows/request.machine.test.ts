import { describe, expect, it } from 'vitest';
import { requestFlow } from '../../flows/request.machine.js';
import { missingMessages, walkFlow } from './coverage.js';

describe('request machine', () => {
  it('visits every state', () => {
    const walk = walkFlow(requestFlow);
    expect(walk.missing).toEqual([]);
    expect(missingMessages(requestFlow, walk.keys)).toEqual([]);
  });
});
