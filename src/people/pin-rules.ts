/**
 * What makes a PIN too easy to guess: 4 to 6 digits; not one digit repeated (1111); not a run up or down
 * (1234, 9876, 0123); not a line of the keypad (2580), a sequence that steps by two or wraps round (1357,
 * 7890); not a pair or a triple repeated (1212, 123123); not the start or the end of their own phone number.
 * Every place a person chooses a PIN (Change PIN, a PIN set with a one-time code: src/people/pin-change.ts)
 * asks this one function (and, where the current PIN is known, refuses it too: `current`); the flow says the
 * reason in the person's language (`changePin.weak.<reason>`, flows/messages/change-pin.ts).
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js';

/** Why a PIN may not be chosen. */
export type PinWeakness = 'length' | 'repeated' | 'run' | 'keypad' | 'pair' | 'ownNumber' | 'current';
export const PIN_WEAKNESSES: readonly PinWeakness[] = [
  'length',
  'repeated',
  'run',
  'keypad',
  'pair',
  'ownNumber',
  'current',
];

/** Where each digit sits on a phone's keypad: [row, column] (1 2 3 / 4 5 6 / 7 8 9 / _ 0 _). */
const KEYPAD: Record<string, readonly [number, number]> = {
  '1': [0, 0],
  '2': [0, 1],
  '3': [0, 2],
  '4': [1, 0],
  '5': [1, 1],
  '6': [1, 2],
  '7': [2, 0],
  '8': [2, 1],
  '9': [2, 2],
  '0': [3, 1],
};

/** Every digit one key further the same way: a straight line on the keypad (2580, 0852). */
function keypadLine(pin: string): boolean {
  const moves = new Set<string>();
  for (let i = 1; i < pin.length; i += 1) {
    const [r0, c0] = KEYPAD[pin[i - 1]!]!;
    const [r1, c1] = KEYPAD[pin[i]!]!;
    if (Math.abs(r1 - r0) > 1 || Math.abs(c1 - c0) > 1) return false;
    moves.add(`${r1 - r0},${c1 - c0}`);
  }
  return moves.size === 1 && !moves.has('0,0');
}

/** Every digit the last plus the same step, counted round the ten digits: 7890, 1357, 8642. */
function evenSteps(pin: string): boolean {
  const steps = new Set<number>();
  for (let i = 1; i < pin.length; i += 1) steps.add((Number(pin[i]) - Number(pin[i - 1]) + 10) % 10);
  return steps.size === 1 && [1, 2, 8, 9].some((s) => steps.has(s));
}

/** A block of two or three digits said again: 1212, 121212, 123123. */
function repeatedBlock(pin: string): boolean {
  return [2, 3].some(
    (size) => pin.length > size && pin.length % size === 0 && pin === pin.slice(0, size).repeat(pin.length / size),
  );
}

/** The ways a person's number is written: with its country code, and as dialled at home (0772…). */
function numberForms(number: string): string[] {
  const digits = number.replace(/\D/g, '');
  const parsed = parsePhoneNumberFromString(number.startsWith('+') ? number : `+${digits}`);
  const national = parsed?.nationalNumber ?? '';
  return [digits, national, national ? `0${national}` : ''].filter((form) => form.length > 0);
}

/** Why `pin` may not be chosen; null when it may. `ownNumbers`: the person's phone numbers, any format. */
export function pinWeakness(pin: string, ownNumbers: readonly string[] = []): PinWeakness | null {
  if (!/^\d{4,6}$/.test(pin)) return 'length';
  if (/^(\d)\1+$/.test(pin)) return 'repeated';
  const steps = new Set<number>();
  for (let i = 1; i < pin.length; i += 1) steps.add(Number(pin[i]) - Number(pin[i - 1]));
  if (steps.size === 1 && (steps.has(1) || steps.has(-1))) return 'run';
  if (keypadLine(pin) || evenSteps(pin)) return 'keypad';
  if (repeatedBlock(pin)) return 'pair';
  for (const number of ownNumbers) {
    for (const form of numberForms(number)) {
      if (form.length >= pin.length && (form.endsWith(pin) || form.startsWith(pin))) return 'ownNumber';
    }
  }
  return null;
}
