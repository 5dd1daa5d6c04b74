/**
 * What makes a PIN too easy to guess, said to the person who chose it: 4 to 6 digits; not one digit repeated
 * (1111); not a run up or down (1234, 9876, 0123); not the end of their own phone number. Every place a PIN is
 * chosen (Change PIN, a PIN set with a one-time code, an operator's import) asks this one function.
 */

/** Why `pin` may not be chosen, as a sentence for the person; null when it may. */
export function pinWeakness(pin: string, ownNumbers: readonly string[] = []): string | null {
  if (!/^\d{4,6}$/.test(pin)) return 'A PIN is 4 to 6 digits.';
  if (/^(\d)\1+$/.test(pin)) return 'A PIN cannot be one digit repeated.';
  const steps = new Set<number>();
  for (let i = 1; i < pin.length; i += 1) steps.add(Number(pin[i]) - Number(pin[i - 1]));
  if (steps.size === 1 && (steps.has(1) || steps.has(-1)))
    return 'A PIN cannot be a run of digits such as 1234 or 9876.';
  for (const number of ownNumbers) {
    const digits = number.replace(/\D/g, '');
    if (digits.length >= pin.length && digits.endsWith(pin)) return 'A PIN cannot be the end of your phone number.';
  }
  return null;
}
