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
    ['2580', 'keypad'],
    ['0852', 'keypad'],
    ['1357', 'keypad'],
    ['2468', 'keypad'],
    ['7890', 'keypad'],
    ['890123', 'keypad'],
    ['1212', 'pair'],
    ['474747', 'pair'],
    ['123123', 'pair'],
  ])('refuses %j: %s', (pin, reason) => {
    expect(pinWeakness(pin)).toBe(reason);
  });

  it('refuses the end of their own number, and accepts the rest', () => {
    expect(pinWeakness('3456', ['+256772123456'])).toBe('run');
    expect(pinWeakness('2345', ['+256772012345'])).toBe('run');
    expect(pinWeakness('4821', ['+256772004821'])).toBe('ownNumber');
    expect(pinWeakness('04821', ['+256772004821'])).toBe('ownNumber');
    expect(pinWeakness('4821', ['+256772004822'])).toBeNull();
    // The start, with its country code or as dialled at home.
    expect(pinWeakness('2567', ['+256772004822'])).toBe('ownNumber');
    expect(pinWeakness('0772', ['+256772004822'])).toBe('ownNumber');
    expect(pinWeakness('7720', ['+256772004822'])).toBe('ownNumber');
    for (const pin of ['4821', '1123', '9870', '120934', '1470', '3917']) expect(pinWeakness(pin)).toBeNull();
  });
});
