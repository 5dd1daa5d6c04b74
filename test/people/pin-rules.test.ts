import { describe, expect, it } from 'vitest';
import { pinWeakness } from '../../src/people/pin-rules.js';

describe('pinWeakness', () => {
  it.each([
    ['123', 'A PIN is 4 to 6 digits.'],
    ['1234567', 'A PIN is 4 to 6 digits.'],
    ['12a4', 'A PIN is 4 to 6 digits.'],
    ['', 'A PIN is 4 to 6 digits.'],
    ['1111', 'A PIN cannot be one digit repeated.'],
    ['000000', 'A PIN cannot be one digit repeated.'],
    ['1234', 'A PIN cannot be a run of digits such as 1234 or 9876.'],
    ['9876', 'A PIN cannot be a run of digits such as 1234 or 9876.'],
    ['012345', 'A PIN cannot be a run of digits such as 1234 or 9876.'],
    ['56789', 'A PIN cannot be a run of digits such as 1234 or 9876.'],
  ])('refuses %j: %s', (pin, reason) => {
    expect(pinWeakness(pin)).toBe(reason);
  });

  it('refuses the end of their own number, and accepts the rest', () => {
    expect(pinWeakness('3456', ['+256772123456'])).toBe('A PIN cannot be a run of digits such as 1234 or 9876.');
    expect(pinWeakness('2345', ['+256772012345'])).toMatch(/run/);
    expect(pinWeakness('4821', ['+256772004821'])).toBe('A PIN cannot be the end of your phone number.');
    expect(pinWeakness('04821', ['+256772004821'])).toBe('A PIN cannot be the end of your phone number.');
    expect(pinWeakness('4821', ['+256772004822'])).toBeNull();
    for (const pin of ['4821', '1357', '2468', '1123', '9870', '120934']) expect(pinWeakness(pin)).toBeNull();
  });
});
