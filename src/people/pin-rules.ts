/**
 * What makes a PIN too easy to guess: 4 to 6 digits; not one digit repeated (1111); not a run up or down
 * (1234, 9876, 0123); not the end of their own phone number. Every place a person chooses a PIN (Change PIN, a
 * PIN set with a one-time code: src/people/pin-change.ts) asks this one function; the flow says the reason in
 * the person's language (`changePin.weak.<reason>`, flows/messages/change-pin.ts).
 */

/** Why a PIN may not be chosen. */
export type PinWeakness = 'length' | 'repeated' | 'run' | 'ownNumber';
export const PIN_WEAKNESSES: readonly PinWeakness[] = ['length', 'repeated', 'run', 'ownNumber'];

/** Why `pin` may not be chosen; null when it may. `ownNumbers`: the person's phone numbers, any format. */
export function pinWeakness(pin: string, ownNumbers: readonly string[] = []): PinWeakness | null {
  if (!/^\d{4,6}$/.test(pin)) return 'length';
  if (/^(\d)\1+$/.test(pin)) return 'repeated';
  const steps = new Set<number>();
  for (let i = 1; i < pin.length; i += 1) steps.add(Number(pin[i]) - Number(pin[i - 1]));
  if (steps.size === 1 && (steps.has(1) || steps.has(-1))) return 'run';
  for (const number of ownNumbers) {
    const digits = number.replace(/\D/g, '');
    if (digits.length >= pin.length && digits.endsWith(pin)) return 'ownNumber';
  }
  return null;
}
