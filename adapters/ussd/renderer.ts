/**
 * Prompt -> USSD screen. Pure: the same Prompt and page always give the same screen.
 *
 * A screen holds 182 GSM-7 septets, or 80 characters when a character outside GSM-7 remains after the
 * plain replacements of toPlain(). Choices are numbered from 1 across the whole list (a number means the
 * same choice on every page); a list too long for one screen is paged with `98 More` (later pages repeat
 * only the last line of the text, the question), and every screen that waits for the user ends with
 * `0 Back 00 Home`, these words in the prompt's language (the catalogue's `common.more`, `common.back`,
 * `common.home`: `0 Rudi 00 Mwanzo` in Kiswahili). Text too long for a screen is cut at a word with `...`.
 *
 * One paging rule, with or without an error line: a refused answer's screen (`prompt.refused`) opens with the
 * error line above the text. A list's pages are cut from its text and choices with room kept on the first
 * page for an error line ({@link errorRoom}: the wrong-key error, which any list can show), so the pages are
 * the same whether an error is shown or not, and the error plus the page always fit. An error longer than
 * that room (a service failure above a list) is shortened whole to the room the page leaves. The error
 * belongs to the answer refused: a page turn drops it ({@link withoutError}), so `0 Back` from a later page
 * shows the list's previous page, not the error again.
 */
import { LRUCache } from 'lru-cache';
import type { Lang } from '../../flows/types.js';
import { catalogue } from '../../src/conversation/flow/render.js';
import { fitWhole } from '../../src/conversation/flow/plain-text.js';
import type { Prompt } from '../../src/conversation/types.js';
import { GSM7_LIMIT, UCS2_LIMIT, isGsm7, screenLength, toPlain } from './gsm7.js';

/** Keys the user types to navigate; the router reads answers with the same constants. */
export const NAV = { more: '98', back: '0', home: '00' } as const;

/** The navigation lines in each language, made once. */
const NAV_LINES = Object.fromEntries(
  (Object.keys(catalogue.messages) as Lang[]).map((lang) => {
    const word = (key: string) => toPlain(catalogue.render({ key }, lang));
    return [
      lang,
      {
        more: `${NAV.more} ${word('common.more')}`,
        nav: `${NAV.back} ${word('common.back')} ${NAV.home} ${word('common.home')}`,
        wrongKey: word('common.pickOne'),
      },
    ];
  }),
) as Record<Lang, { more: string; nav: string; wrongKey: string }>;
const ELLIPSIS = '...';

export interface Screen {
  /** The screen text, without the gateway's CON/END. */
  text: string;
  /** The session ends with this screen. */
  final: boolean;
  /** The page shown (clamped into range). */
  page: number;
  /** Pages of the prompt's choices (1 when it has none or they fit). */
  pageCount: number;
  /** Character limit this screen was fitted to (182 GSM-7 or 80 UCS-2). */
  limit: number;
}

/**
 * Screens rendered lately, by what they depend on: most are the same few questions and menus, and rendering
 * one (plain-text replacements, GSM-7 checks, fitting and paging) is kept rather than redone on every hop.
 */
const rendered = new LRUCache<string, Screen>({ max: 2_000 });

/** Renders `prompt` as one screen, showing page `page` of its choices (pure, so kept: {@link rendered}). */
export function renderPrompt(prompt: Prompt, page = 0): Screen {
  let key = `${prompt.lang ?? 'en'}\u0000${prompt.final ? 1 : 0}${prompt.top ? 1 : 0}${prompt.refused ? 1 : 0}\u0000${page}\u0000${prompt.text}`;
  for (const choice of prompt.choices ?? []) key += `\u0000${choice.label}`;
  let screen = rendered.get(key);
  if (!screen) {
    screen = render(prompt, page);
    rendered.set(key, screen);
  }
  return screen;
}

/**
 * The error line of a refused answer's screen and the text below it. The catalogue puts the error on the
 * first line (renderView, one line); a screen not refused has none.
 */
function splitError(prompt: Prompt): { error?: string; body: string } {
  if (!prompt.refused) return { body: prompt.text };
  const at = prompt.text.indexOf('\n');
  return at < 0
    ? { error: prompt.text, body: '' }
    : { error: prompt.text.slice(0, at), body: prompt.text.slice(at + 1) };
}

/**
 * `prompt` without its error line: the screen after a page turn. The error answered the key refused; the
 * pages are the same without it (see the file comment), so the page numbers still hold.
 */
export function withoutError(prompt: Prompt): Prompt {
  if (!prompt.refused) return prompt;
  const { refused: _refused, ...rest } = prompt;
  return { ...rest, text: splitError(prompt).body };
}

function render(prompt: Prompt, page: number): Screen {
  const { more: MORE_LINE, nav: NAV_LINE, wrongKey: WRONG_KEY } = NAV_LINES[prompt.lang ?? 'en'] ?? NAV_LINES.en;
  // The first screen has nothing to go back to: no `0 Back 00 Home` there (0 and 00 still show it again).
  const navLines = prompt.top ? [] : [NAV_LINE];
  const footer = (more: boolean): string[] => (more ? [MORE_LINE, ...navLines] : navLines);
  const header = toPlain(prompt.text).trim();
  const labels = (prompt.choices ?? []).map((c) => toPlain(c.label).trim());
  const gsm7 = isGsm7([header, ...labels].join(''));
  const limit = gsm7 ? GSM7_LIMIT : UCS2_LIMIT;
  const size = (lines: string[]) => screenLength(lines.join('\n'), gsm7);
  const cut = (text: string, max: number) => truncate(text, max, gsm7);

  if (prompt.final) {
    const lines = [cut(header, limit)];
    // A final screen has nothing to page back to: its choices (rare) get what room is left.
    for (const [i, label] of labels.entries()) {
      const line = `${i + 1}. ${label}`;
      if (size([...lines, line]) > limit) break;
      lines.push(line);
    }
    return { text: lines.join('\n'), final: true, page: 0, pageCount: 1, limit };
  }

  if (labels.length === 0) {
    const head = header === '' ? [] : [cut(header, limit - size(navLines) - 1)];
    return { text: [...head, ...navLines].join('\n'), final: false, page: 0, pageCount: 1, limit };
  }

  // A choice line takes at most a third of the screen, so the header and one choice always fit a page.
  const choiceLines = labels.map((label, i) => cut(`${i + 1}. ${label}`, Math.floor(limit / 3)));
  const longest = Math.max(...choiceLines.map((l) => size([l])));
  // The first page keeps room for an error line (shown or not: the same pages either way).
  const errorRoom = size([WRONG_KEY, '']);
  const headRoom = limit - size([MORE_LINE, ...navLines]) - longest - 3;
  // The first page shows the whole text; later pages only its last line (the question), leaving room
  // for choices.
  const { error, body } = splitError({ ...prompt, text: header });
  const text = body.trim();
  const firstHead = text === '' ? [] : [cut(text, headRoom)];
  const question = text.split('\n').at(-1) ?? '';
  const laterHead = question === '' ? [] : [cut(question, headRoom)];
  const headOf = (page: number) => (page === 0 ? firstHead : laterHead);

  /**
   * The error line above page 0's `lines`: whole when it fits (the kept room, unless a long text took it); a
   * longer one shortened whole to the room left, at least the kept room, the text below giving way if need be.
   */
  const fitError = (error: string, lines: string[], headed: boolean): string[] => {
    const room = limit - size([...lines, '']);
    if (size([error]) <= room) return [error];
    const want = Math.max(room, errorRoom - 1);
    const whole = fitWhole(error, want);
    const line = size([whole]) <= want ? whole : cut(error, want);
    if (headed && size([line, ...lines]) > limit)
      lines[0] = cut(lines[0]!, limit - size([line, ...lines.slice(1), '']));
    return [line];
  };

  const pages = paginate(
    choiceLines,
    (chosen, more, page) => size([...headOf(page), ...chosen, ...footer(more)]) + (page === 0 ? errorRoom : 0) <= limit,
  );
  const shown = Math.min(Math.max(0, Math.trunc(page)), pages.length - 1);
  const more = shown < pages.length - 1;
  const lines = [...headOf(shown), ...(pages[shown] ?? []), ...footer(more)];
  const errorLine = error?.trim();
  if (errorLine && shown === 0) lines.unshift(...fitError(errorLine, lines, firstHead.length > 0));
  return {
    text: lines.join('\n'),
    final: false,
    page: shown,
    pageCount: pages.length,
    limit,
  };
}

/**
 * Splits lines into pages greedily; `fits(lines, more, page)` says whether page number `page` holding
 * `lines`, with or without `98 More`, fits a screen.
 */
function paginate(lines: string[], fits: (lines: string[], more: boolean, page: number) => boolean): string[][] {
  const pages: string[][] = [];
  let start = 0;
  while (start < lines.length) {
    let end = lines.length;
    while (end > start + 1 && !fits(lines.slice(start, end), end < lines.length, pages.length)) end--;
    pages.push(lines.slice(start, end));
    start = end;
  }
  return pages;
}

/** Cuts `text` to at most `max` screen characters, at a word boundary when one is near, ending in `...`. */
export function truncate(text: string, max: number, gsm7: boolean): string {
  if (screenLength(text, gsm7) <= max) return text;
  const room = Math.max(0, max - ELLIPSIS.length);
  let out = '';
  for (const ch of text) {
    if (screenLength(out + ch, gsm7) > room) break;
    out += ch;
  }
  const boundary = out.search(/\s\S*$/);
  if (boundary > out.length / 2) out = out.slice(0, boundary);
  return out.trimEnd() + ELLIPSIS;
}
