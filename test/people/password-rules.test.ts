import { describe, expect, it } from 'vitest';
import { passwordWeakness } from '../../src/people/password-rules.js';

describe('passwordWeakness', () => {
  it.each([
    ['short', /12 to 200 characters/],
    ['a'.repeat(201), /12 to 200 characters/],
    ['aaaaaaaaaaaa', /too easy to guess \(Repeated/],
    ['password1234', /too easy to guess/],
    ['qwertyuiop12', /too easy to guess/],
    ['zawadi123456', /too easy to guess \(There should not be any personal/],
    ['Password2026!', /too easy to guess/],
  ])('refuses %j', (password, why) => {
    expect(passwordWeakness(password, 'zawadi')).toMatch(why);
  });

  it('accepts a long phrase of unrelated words and a random string', () => {
    for (const password of ['a long operator password', 'k9#Lm2!pQz7v', 'money-kept-ops-password'])
      expect(passwordWeakness(password, 'operator')).toBeNull();
  });
});
