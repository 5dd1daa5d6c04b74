import { describe, expect, it } from 'vitest';
import { pinWeakness } from '../../src/people/pin-rules.js';

describe('pinWeakness', () => {
  it.each([
    ['123', 'length'],
    ['1234567', 'length'],
    ['12a4', 'length'],
    ['', 'length'],
    ['1111', 'repeated'],
    ['000000', 'repeated'],
    ['1234', 'run'],
    ['9876', 'run'],
    ['012345', 'run'],
    ['56789', 'run'],
  ])('refuses %j: %s', (pin, reason) => {
    expect(pinWeakness(pin)).toBe(reason);
  });

  it('refuses the end of their own number, and accepts the rest', () => {
    expect(pinWeakness('3456', ['+256772123456'])).toBe('run');
    expect(pinWeakness('2345', ['+256772012345'])).toBe('run');
    expect(pinWeakness('4821', ['+256772004821'])).toBe('ownNumber');
    expect(pinWeakness('04821', ['+256772004821'])).toBe('ownNumber');
    expect(pinWeakness('4821', ['+256772004822'])).toBeNull();
    for (const pin of ['4821', '1357', '2468', '1123', '9870', '120934']) expect(pinWeakness(pin)).toBeNull();
  });
});
