/**
 * Pure validators and normalisers of what people type, shared by every flow. Each returns either the
 * normalised value or a reason as catalogue Text (keys `input.*`, words in {@link inputMessages}).
 */
import { Decimal } from 'decimal.js';
import { getExampleNumber, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import mobileExamples from 'libphonenumber-js/mobile/examples';
import type { Lang, Messages, Text } from './types.js';

/** A refused input and why, in catalogue text. */
export interface Invalid {
  ok: false;
  reason: Text;
}

/**
 * Reads a phone number in any local or international form (spaces, dashes, brackets, a leading `00`)
 * and returns it in the international `+` format the service demands. Local forms are read with
 * `defaultCountry` (ISO 3166 alpha-2): `0772 123-456` with `UG` gives `+256772123456`. The number
 * must be valid and able to receive mobile money (a mobile or mobile-capable line).
 */
export function parsePhone(text: string, defaultCountry: string): { ok: true; e164: string } | Invalid {
  const key = `${defaultCountry}\u0000${text}`;
  let result = parsedPhones.get(key);
  if (!result) {
    result = readPhone(text, defaultCountry);
    if (parsedPhones.size >= PARSED_PHONES_KEPT) parsedPhones.delete(parsedPhones.keys().next().value!);
    parsedPhones.set(key, result);
  }
  // A copy: callers keep the reason in flow context, and the cached one must never change.
  if (result.ok) return { ok: true, e164: result.e164 };
  const { params } = result.reason;
  return { ok: false, reason: { ...result.reason, ...(params ? { params: { ...params } } : {}) } };
}

/**
 * parsePhone's recent answers. Reading a number with libphonenumber-js's full metadata is not cheap, and
 * the same number is read several times per message (the USSD caller on every hop, a flow's guard and
 * then its action), so a bounded memo of this pure function saves that; the oldest entry goes first.
 */
const parsedPhones = new Map<string, { ok: true; e164: string } | Invalid>();
const PARSED_PHONES_KEPT = 2000;

function readPhone(text: string, defaultCountry: string): { ok: true; e164: string } | Invalid {
  const cleaned = text.trim().replace(/^00(?=[1-9])/, '+');
  const phone = parsePhoneNumberFromString(cleaned, defaultCountry.toUpperCase() as CountryCode);
  if (!phone || !phone.isValid())
    return { ok: false, reason: { key: 'input.phoneInvalid', params: phoneExample(defaultCountry) } };
  const type = phone.getType();
  if (type !== 'MOBILE' && type !== 'FIXED_LINE_OR_MOBILE') {
    return { ok: false, reason: { key: 'input.phoneNotMobile' } };
  }
  return { ok: true, e164: phone.number };
}

/** The example number the refusal shows a caller of each country, where it is not libphonenumber's. */
const EXAMPLES: Record<string, string> = { UG: '+256772123456' };

/**
 * A mobile number of `country` to show as an example, as typed there (`0712123456`) and in international form
 * (`+254712123456`); the Ugandan one for a country without examples.
 */
export function phoneExample(country: string): { example: string; international: string } {
  const code = country.toUpperCase();
  const known = EXAMPLES[code];
  const phone = known ? parsePhoneNumberFromString(known) : getExampleNumber(code as CountryCode, mobileExamples);
  if (!phone) return phoneExample('UG');
  return { example: phone.formatNational().replace(/\s/g, ''), international: phone.number };
}

/**
 * The country (ISO 3166 alpha-2) of a number in international `+` format; undefined for none or one that does
 * not say (a chat without a number). Pure: the pay flow reads it once, when it lists banks.
 */
export function countryOf(phone: string | undefined): string | undefined {
  return phone ? parsePhoneNumberFromString(phone)?.country : undefined;
}

/**
 * True when every word of a typed name is a word of the name the network holds for the number, without case or
 * order: `Okello John` is within `JOHN OKELLO` and `John Peter Okello`, `Otim Peter` is not within `Otim
 * Geoffrey Okwir`. The one test of a name against the network's: the pay flow's, and what may be remembered
 * (src/conversation/calls/flow-calls.ts keeps only names that pass it).
 */
export function namesWithin(typed: string, nameOnNetwork: string): boolean {
  const words = (s: string) => s.toLowerCase().split(/\s+/).filter(Boolean);
  const network = new Set(words(nameOnNetwork));
  const given = words(typed);
  return network.size > 0 && given.length > 0 && given.every((w) => network.has(w));
}

/**
 * Digits, optionally grouped in thousands with commas (`1,000` or `1000`), then at most one dot and
 * decimals. Signs, exponents (`1e3`), spaces inside the number and a bare `.5` are refused.
 */
const AMOUNT = /^(\d+|\d{1,3}(?:,\d{3})+)(?:\.(\d+))?$/;

/**
 * Reads a positive amount with at most 2 decimals and returns it as a plain decimal string without
 * thousands separators (the service forbids them): `1,000.50` gives `1000.5`. Being kind to people,
 * correctly grouped commas are accepted and stripped; badly grouped ones (`1,00`) are refused because
 * they may be a decimal comma.
 */
export function parseAmount(text: string): { ok: true; amount: string } | Invalid {
  const match = AMOUNT.exec(text.trim());
  if (!match) return { ok: false, reason: { key: 'input.amountInvalid' } };
  if ((match[2] ?? '').length > 2) return { ok: false, reason: { key: 'input.amountDecimals' } };
  const amount = new Decimal(text.trim().replaceAll(',', ''));
  if (amount.lte(0)) return { ok: false, reason: { key: 'input.amountNotPositive' } };
  return { ok: true, amount: amount.toFixed() };
}

/** Trims text and checks it holds 1..max characters. */
export function parseText(text: string, max: number): { ok: true; text: string } | Invalid {
  const trimmed = text.trim();
  if (trimmed.length === 0) return { ok: false, reason: { key: 'input.textEmpty' } };
  if (trimmed.length > max) return { ok: false, reason: { key: 'input.textTooLong', params: { max } } };
  return { ok: true, text: trimmed };
}

/**
 * A person's name as typed (first or last): parseText's bounds, and letters in it but no digits, so a key
 * pressed by mistake on a name screen (`1`, `0772…`) is asked again instead of sent to the service's name check.
 */
export function parseName(text: string, max: number): { ok: true; text: string } | Invalid {
  const parsed = parseText(text, max);
  if (!parsed.ok) return parsed;
  if (!/\p{L}/u.test(parsed.text) || /\p{N}/u.test(parsed.text))
    return { ok: false, reason: { key: 'input.nameInvalid' } };
  return parsed;
}

/**
 * The words of the reasons above. A flow that uses these validators spreads them into its own
 * catalogue (`messages: { en: { ...inputMessages.en, ... } }`), so every reason it can show is found.
 */
export const inputMessages: Record<Lang, Messages> = {
  en: {
    'input.phoneInvalid': 'That is not a phone number we can read. Try e.g. {example} or {international}.',
    'input.phoneNotMobile': 'That number cannot receive mobile money. Enter a mobile number.',
    'input.amountInvalid': 'Enter the amount in digits, e.g. 5000 or 2500.50.',
    'input.amountDecimals': 'Use at most 2 decimals.',
    'input.amountNotPositive': 'The amount must be more than 0.',
    'input.textEmpty': 'Please type something.',
    'input.textTooLong': 'Too long: at most {max} characters.',
    'input.nameInvalid': 'Enter a name in letters, e.g. Sarah.',
  },
  sw: {
    'input.phoneInvalid': 'Hatuwezi kusoma namba hiyo. Jaribu mfano {example} au {international}.',
    'input.phoneNotMobile': 'Namba hiyo haiwezi kupokea pesa ya simu. Weka namba ya simu ya mkononi.',
    'input.amountInvalid': 'Weka kiasi kwa tarakimu, mfano 5000 au 2500.50.',
    'input.amountDecimals': 'Tumia desimali 2 tu au chini.',
    'input.amountNotPositive': 'Kiasi lazima kiwe zaidi ya 0.',
    'input.textEmpty': 'Tafadhali andika kitu.',
    'input.textTooLong': 'Ni ndefu mno: herufi {max} tu au chini.',
    'input.nameInvalid': 'Weka jina kwa herufi, mfano Sarah.',
  },
  fr: {
    'input.phoneInvalid': 'Nous ne pouvons pas lire ce numéro. Essayez par ex. {example} ou {international}.',
    'input.phoneNotMobile': "Ce numéro ne peut pas recevoir d'argent mobile. Entrez un numéro de mobile.",
    'input.amountInvalid': 'Entrez le montant en chiffres, par ex. 5000 ou 2500.50.',
    'input.amountDecimals': 'Deux décimales au plus.',
    'input.amountNotPositive': 'Le montant doit être supérieur à 0.',
    'input.textEmpty': 'Veuillez écrire quelque chose.',
    'input.textTooLong': 'Trop long : {max} caractères au plus.',
    'input.nameInvalid': 'Entrez un nom en lettres, par ex. Sarah.',
  },
};
