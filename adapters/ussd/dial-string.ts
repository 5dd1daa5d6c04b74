/**
 * Dial strings: the answers a user typed into the code they dialled (`*384*123*1*1*0772123456#` dialled where
 * the service is `*384*123#` carries the answers `1`, `1`, `0772123456`), as each gateway sends them.
 *
 * - Africa's Talking sends the service code apart and the answers as the first request's `text`
 *   (`1*1*0772123456`): {@link answersOfText}.
 * - Hubtel, Arkesel, Nalo and Beem send the dialled string itself on the session's first request
 *   (`*384*123*1*1*0772123456#`): {@link answersOfDialString} takes off the longest service code it starts
 *   with (the configured USSD_SERVICE_CODE, or the one the request names) and keeps what follows.
 */

/** The parts of a code between its `*`s, without the leading `*` and the closing `#`: `*384*123#` -> [384, 123]. */
function partsOf(code: string): string[] {
  const trimmed = code.trim().replace(/^\*/, '').replace(/#$/, '');
  return trimmed === '' ? [] : trimmed.split('*');
}

/** Africa's Talking's first `text`: empty on a plain dial, else the answers joined by `*`. */
export function answersOfText(text: string): string[] {
  return text === '' ? [] : text.split('*');
}

/**
 * The answers a dialled string carries past the service code: none when it is not a dialled string (a
 * gateway that sends an empty or other first input) or starts with none of `serviceCodes`.
 */
export function answersOfDialString(dialled: string, serviceCodes: readonly string[]): string[] {
  const text = dialled.trim();
  if (!/^\*[0-9*]*#?$/.test(text)) return [];
  const parts = partsOf(text);
  let best = 0;
  for (const code of serviceCodes) {
    const prefix = partsOf(code);
    if (prefix.length === 0 || prefix.length > parts.length || prefix.length <= best) continue;
    if (prefix.every((part, i) => parts[i] === part)) best = prefix.length;
  }
  if (best === 0) return [];
  return parts.slice(best).filter((part) => part !== '');
}
