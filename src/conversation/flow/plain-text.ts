/**
 * The one way words are made: every screen, choice label and notification is an ICU MessageFormat template
 * (intl-messageformat, FormatJS) of the catalogue, formatted in the person's language: plurals
 * (`{left, plural, one {# attempt left} other {# attempts left}}`), amounts grouped the way the language
 * writes them (`{amount, number, money}`: 5,000 in English, 5 000 in French, at most two decimals, none for a
 * whole amount). Each template is compiled once per language and kept ({@link fillTemplate}), never per hop; one
 * that reads no value is formatted once too.
 *
 * Text from the network or from other users (names, reasons, references, bundle and product descriptions)
 * is data, never layout. Before it is put on any screen or into any notification, control characters, line
 * and paragraph breaks and bidirectional overrides are taken out, so a name cannot add lines to a USSD
 * screen (a fake "1. Confirm"), end a Telegram message early, or show its words in another order. Values are
 * given to the formatter as values, never spliced into a template, so a name holding `{` or `}` or `#` is
 * shown as typed.
 */
import { IntlMessageFormat } from 'intl-messageformat';
import type { Lang, Params } from '../../../flows/types.js';

/**
 * C0 and C1 controls (line feed, carriage return, tab, escape, DEL...), the line and paragraph separators,
 * and the bidirectional marks, embeddings, overrides and isolates.
 */
const UNSAFE = /[\p{Cc}\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/** The value as one plain line: each unsafe character becomes a space, and runs of spaces one space. */
export function plainText(value: string): string {
  return value.replace(UNSAFE, ' ').replace(/ {2,}/g, ' ');
}

/** The locale each language formats in (plural rules and number grouping). */
const LOCALES: Record<Lang, string> = { en: 'en', sw: 'sw', fr: 'fr' };

/**
 * Named formats the templates use. `money`: an amount as people write it, grouped, with its decimals only
 * when it has some (`5,000`, `2,500.50`). An amount is given as the decimal string the flows keep.
 */
const FORMATS = {
  number: { money: { minimumFractionDigits: 2, maximumFractionDigits: 2, trailingZeroDisplay: 'stripIfInteger' } },
} as const;

/** A compiled template and the names of the values it reads (a missing one is shown as `{name}`). */
interface Compiled {
  format: IntlMessageFormat;
  names: string[];
  /** The words of a template that reads no value: formatted once, the same every time. */
  words?: string;
}

/**
 * Compiled templates by language and template text. The catalogue is finite (a few hundred templates a
 * language), so this is bounded by it; the bound is for text that is not a template (a key shown as itself).
 */
const compiled = new Map<string, Compiled | null>();
const COMPILED_KEPT = 5000;

/** The names of the arguments a parsed template reads, at any depth (plural branches included). */
function argumentNames(elements: ReturnType<IntlMessageFormat['getAst']>, into: Set<string>): Set<string> {
  for (const element of elements) {
    // Literals (0) and the plural's `#` (7) read nothing; every other element names its argument.
    if (element.type !== 0 && element.type !== 7 && 'value' in element && typeof element.value === 'string')
      into.add(element.value);
    if ('options' in element && typeof element.options === 'object') {
      for (const option of Object.values(element.options as Record<string, { value: typeof elements }>))
        argumentNames(option.value, into);
    }
    if ('children' in element && Array.isArray(element.children)) argumentNames(element.children, into);
  }
  return into;
}

function compile(template: string, lang: Lang): Compiled | null {
  const key = `${lang}\u0000${template}`;
  let entry = compiled.get(key);
  if (entry === undefined) {
    try {
      const format = new IntlMessageFormat(template, LOCALES[lang] ?? 'en', FORMATS, { ignoreTag: true });
      entry = { format, names: [...argumentNames(format.getAst(), new Set())] };
    } catch {
      // Not ICU (a key shown as itself, a stray brace): shown as it is.
      entry = null;
    }
    if (compiled.size >= COMPILED_KEPT) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, entry);
  }
  return entry;
}

/**
 * A catalogue template formatted in `lang` with `params`, each string value made {@link plainText} first.
 * A value the template names but `params` lacks is shown as `{name}` (a gap is visible, never a crash).
 */
export function fillTemplate(template: string, params: Params | undefined, lang: Lang = 'en'): string {
  const entry = compile(template, lang);
  if (!entry) return template;
  if (entry.names.length === 0) return (entry.words ??= String(entry.format.format()));
  const values: Record<string, string | number> = {};
  for (const name of entry.names) {
    const value = params && Object.hasOwn(params, name) ? params[name] : undefined;
    values[name] = value === undefined ? `{${name}}` : typeof value === 'string' ? plainText(value) : value;
  }
  return String(entry.format.format(values));
}

/**
 * An amount with its currency as every template writes it (`{amount, number, money} {currency}`): `150,000 UGX`,
 * `2,500.50 KES` in English; for words made outside the catalogues (Slack's payouts and approvals).
 */
export const moneyText = (amount: string, currency: string, lang: Lang = 'en'): string =>
  fillTemplate('{amount, number, money} {currency}', { amount, currency }, lang);

/**
 * Room for outcomes kept for the next USSD dial, shown above the menu's question on its first page: a 182
 * character screen less the header line, the question, the navigation lines and the longest menu choice, in
 * the language whose words for those are longest. A note longer than this is shortened whole ({@link fitWhole}).
 */
export const DIAL_NOTES_MAX = 64;

/**
 * `text` within `max` characters, shortened whole: its leading sentences that fit (an outcome says what
 * happened first, then what follows). Only a first sentence longer than `max` by itself is cut, at a word,
 * with `...`: never mid-word.
 */
export function fitWhole(text: string, max: number): string {
  if (text.length <= max) return text;
  const sentences = text.split(/(?<=[.!?])\s+/);
  let kept = '';
  for (const sentence of sentences) {
    const next = kept === '' ? sentence : `${kept} ${sentence}`;
    if (next.length > max) break;
    kept = next;
  }
  if (kept !== '') return kept;
  const room = text.slice(0, Math.max(0, max - 3));
  const boundary = room.search(/\s\S*$/);
  return `${(boundary > 0 ? room.slice(0, boundary) : room).trimEnd()}...`;
}
