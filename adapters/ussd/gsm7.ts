/**
 * GSM 03.38 (GSM-7) arithmetic for USSD screens. A screen holds 182 septets when every character is in
 * GSM-7 (extension characters take two), and about 80 characters once one is not (the handset switches
 * the whole screen to UCS-2).
 */

/** The GSM-7 default alphabet (one septet each), without the escape character. */
const BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
/** The GSM-7 extension table: an escape plus the character, two septets each. */
const EXTENSION = '^{}\\[~]|€\f';

const basic = new Set(BASIC);
const extension = new Set(EXTENSION);

/** Septets of a GSM-7 screen. */
export const GSM7_LIMIT = 182;
/** UTF-16 code units of a UCS-2 screen (one character outside GSM-7 makes the whole screen UCS-2). */
export const UCS2_LIMIT = 80;

/** Characters with a plain equivalent a handset shows in GSM-7. */
const PLAIN: Record<string, string> = {
  '\u2018': "'", // ‘
  '\u2019': "'", // ’
  '\u201A': "'", // ‚
  '\u201B': "'",
  '\u2032': "'", // ′
  '\u00B4': "'", // ´
  '`': "'",
  '\u201C': '"', // “
  '\u201D': '"', // ”
  '\u201E': '"', // „
  '\u2033': '"', // ″
  '\u00AB': '"', // «
  '\u00BB': '"', // »
  '\u2010': '-', // hyphen
  '\u2011': '-', // non-breaking hyphen
  '\u2012': '-', // figure dash
  '\u2013': '-', // en dash
  '\u2014': '-', // em dash
  '\u2015': '-', // horizontal bar
  '\u2212': '-', // minus sign
  '\u2026': '...', // …
  '\u2022': '-', // •
  '\u00B7': '.', // ·
  '\u00A0': ' ', // no-break space
  '\u2007': ' ',
  '\u2009': ' ', // thin space
  '\u202F': ' ', // narrow no-break space
  '\u200B': '', // zero-width space
  '\u2122': 'TM',
  '\u00A9': '(c)',
  '\u00D7': 'x', // ×
  '\t': ' ',
};

/** Text toPlain() leaves as it is: printable ASCII without the backtick, and line breaks. */
const PLAIN_ALREADY = /^[\x20-\x5f\x61-\x7e\n\r]*$/;

/**
 * Replaces what has a plain equivalent: curly quotes, dashes, ellipsis, odd spaces, and the accented letters
 * GSM-7 lacks (ê -> e, ç -> c, î -> i). The accented letters of GSM-7's basic set stay as they are, as a
 * handset shows them in GSM-7 at one septet each (é è ù ì ò à É Ç Ä Ö Ñ Ü Å Æ Ø ä ö ñ ü å æ ø ß). Characters
 * with no plain form (emoji, other scripts) are kept, and make the screen UCS-2.
 */
export function toPlain(text: string): string {
  // Printable ASCII (but the backtick, which PLAIN maps) has nothing to replace: every screen of ours in
  // English takes this path instead of normalising character by character.
  if (PLAIN_ALREADY.test(text)) return text.replace(/\r\n?/g, '\n');
  let out = '';
  // Composed first: an "e" and a combining acute typed apart are the GSM-7 "é".
  for (const ch of text.normalize('NFC').replace(/\r\n?/g, '\n')) {
    const mapped = PLAIN[ch];
    if (mapped !== undefined) {
      out += mapped;
      continue;
    }
    if (basic.has(ch) || extension.has(ch)) {
      out += ch;
      continue;
    }
    const stripped = ch.normalize('NFD').replace(/\p{M}+/gu, '');
    out += stripped === '' ? ch : stripped;
  }
  return out;
}

/** True when every character is in GSM-7 (basic or extension table). */
export function isGsm7(text: string): boolean {
  for (const ch of text) if (!basic.has(ch) && !extension.has(ch)) return false;
  return true;
}

/** Screen size of `text`: septets in GSM-7, UTF-16 code units otherwise. */
export function screenLength(text: string, gsm7: boolean): number {
  if (!gsm7) return text.length;
  let n = 0;
  for (const ch of text) n += extension.has(ch) ? 2 : 1;
  return n;
}
