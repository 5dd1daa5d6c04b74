/**
 * Prompt -> the Graph API messages that show it. Pure, so every shape is tested as a table.
 *
 * - A final prompt, or one without choices: text (long text in several messages, each within 4096).
 * - Up to 3 choices: reply buttons.
 * - Up to 10: a list (one section; rows carry the whole label in their description when the title is cut).
 * - More: a paged list, 8 choices a page plus "Previous" / "More options" rows; a page turn shows the next
 *   page of the same prompt without asking the engine.
 * Titles are cut at a word within WhatsApp's limits; a button or row id carries the choice id (`c:<id>`),
 * or its index (`i:<n>`) when the id would not fit. The handler reads replies against the prompt shown.
 */
import { render } from '../../src/conversation/flow/render.js';
import type { Prompt } from '../../src/conversation/types.js';
import type { OutboundMessage } from './graph-api.js';

/** The Cloud API's documented limits (text, reply buttons and list messages), in characters. */
export const LIMITS = {
  textBody: 4096,
  buttonBody: 1024,
  listBody: 4096,
  buttons: 3,
  buttonTitle: 20,
  buttonId: 256,
  rows: 10,
  rowTitle: 24,
  rowDescription: 72,
  rowId: 200,
  listButton: 20,
  sectionTitle: 24,
  footer: 60,
  /** A template's body holds 1024 characters with its parameters: the outcome text keeps within 1000. */
  templateParameter: 1000,
} as const;

/** Choices a page of a paged list shows (two rows left for Previous / More). */
const PAGE_SIZE = 8;

/**
 * The adapter's own words in the prompt's language (the catalogue's `common.*`): the footer saying how to move
 * outside the choices (words inbound.ts reads in that language), the list's page rows, its button and section.
 */
const wordsOf = (prompt: Prompt) => (key: string, params?: Record<string, number>) =>
  render({ key, ...(params ? { params } : {}) }, prompt.lang ?? 'en');

/** What a button or row id stands for. */
export type Reply = { kind: 'choice'; id: string } | { kind: 'index'; index: number } | { kind: 'page'; page: number };

/** A choice id fit to travel in a button or row id: printable, no surrounding spaces (Meta refuses those). */
const PLAIN_ID = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** The id of the choice at `index` of a prompt: its own id when that fits in `limit`, else its index. */
function choiceId(id: string, index: number, limit: number): string {
  return PLAIN_ID.test(id) && id.length + 2 <= limit ? `c:${id}` : `i:${index}`;
}

const pageId = (page: number): string => `p:${page}`;

/** A button or row id as sent by {@link renderPrompt}; undefined for anything else. */
export function parseReply(id: string): Reply | undefined {
  if (id.startsWith('c:') && id.length > 2) return { kind: 'choice', id: id.slice(2) };
  const number = /^([ip]):(\d{1,4})$/.exec(id);
  if (!number) return undefined;
  return number[1] === 'i' ? { kind: 'index', index: Number(number[2]) } : { kind: 'page', page: Number(number[2]) };
}

/** One line, spaces collapsed: titles take no line breaks. */
const oneLine = (text: string): string => text.replace(/\s+/gu, ' ').trim();

/** `text` within `max` characters (code points), cut at a word when one ends past the middle, with an ellipsis. */
export function cut(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  const head = chars.slice(0, max - 1).join('');
  const space = head.lastIndexOf(' ');
  return `${(space >= head.length / 2 ? head.slice(0, space) : head).trimEnd()}…`;
}

/** `text` in pieces of at most `max` characters, broken at a line end or a space where one is near. */
export function split(text: string, max: number): string[] {
  const pieces: string[] = [];
  let rest = Array.from(text);
  while (rest.length > max) {
    const head = rest.slice(0, max).join('');
    const at = Math.max(head.lastIndexOf('\n'), head.lastIndexOf(' '));
    const taken = at >= max / 2 ? Array.from(head.slice(0, at)).length : max;
    pieces.push(rest.slice(0, taken).join('').trimEnd());
    rest = rest.slice(taken);
    while (rest[0] === '\n' || rest[0] === ' ') rest = rest.slice(1);
  }
  pieces.push(rest.join(''));
  return pieces.filter((piece) => piece.trim() !== '');
}

/** Titles cut to `max`, made unique (Meta refuses two equal button titles) with a number at the end. */
function titles(labels: string[], max: number): string[] {
  const taken = new Set<string>();
  return labels.map((label) => {
    let title = cut(oneLine(label) || '-', max);
    for (let n = 2; taken.has(title); n++) title = `${cut(oneLine(label) || '-', max - String(n).length - 1)} ${n}`;
    taken.add(title);
    return title;
  });
}

const text = (body: string): OutboundMessage => ({ type: 'text', text: { body, preview_url: false } });

/** Text messages for `body` (several when it is longer than one message holds). */
export function textMessages(body: string): OutboundMessage[] {
  return split(body, LIMITS.textBody).map(text);
}

/**
 * A template message with `text` as its one body parameter. Meta refuses a parameter with a line break, a
 * tab or more than four spaces in a row, so the text becomes one line; and a template body holds 1024
 * characters, so it is cut within that.
 */
export function templateMessage(template: { name: string; language: string }, text: string): OutboundMessage {
  const parameter = cut(oneLine(text) || '-', LIMITS.templateParameter);
  return {
    type: 'template',
    template: {
      name: template.name,
      language: { code: template.language },
      components: [{ type: 'body', parameters: [{ type: 'text', text: parameter }] }],
    },
  };
}

/** The prompt's text as the interactive message's body (within `limit`), and what goes before it as text. */
function bodyWithin(prompt: Prompt, limit: number): { before: OutboundMessage[]; body: string } {
  const pieces = split(prompt.text, limit);
  const body = pieces.pop() ?? wordsOf(prompt)('common.chooseOne');
  return { before: pieces.flatMap(textMessages), body };
}

interface Row {
  id: string;
  title: string;
  description?: string;
}

function listRows(prompt: Prompt, page: number, pages: number): Row[] {
  const choices = prompt.choices ?? [];
  const start = pages > 1 ? page * PAGE_SIZE : 0;
  const shown = pages > 1 ? choices.slice(start, start + PAGE_SIZE) : choices;
  const cutTitles = titles(
    shown.map((c) => c.label),
    LIMITS.rowTitle,
  );
  const rows: Row[] = shown.map((choice, i) => {
    const label = oneLine(choice.label);
    const title = cutTitles[i]!;
    const row: Row = { id: choiceId(choice.id, start + i, LIMITS.rowId), title };
    if (title !== label && label !== '') row.description = cut(label, LIMITS.rowDescription);
    return row;
  });
  const word = wordsOf(prompt);
  if (page > 0)
    rows.push({
      id: pageId(page - 1),
      title: cut(word('common.previousOptions'), LIMITS.rowTitle),
      description: word('common.pageOf', { page, pages }),
    });
  if (page < pages - 1)
    rows.push({
      id: pageId(page + 1),
      title: cut(word('common.moreOptions'), LIMITS.rowTitle),
      description: word('common.pageOf', { page: page + 2, pages }),
    });
  return rows;
}

/** Pages of a prompt's choices: 1 up to {@link LIMITS.rows}, else {@link PAGE_SIZE} a page. */
export function pageCount(prompt: Prompt): number {
  const n = prompt.choices?.length ?? 0;
  return n <= LIMITS.rows ? 1 : Math.ceil(n / PAGE_SIZE);
}

/** The messages showing page `page` of a prompt, in the order they are sent. */
export function renderPrompt(prompt: Prompt, page = 0): OutboundMessage[] {
  const choices = prompt.choices ?? [];
  if (prompt.final || choices.length === 0) return textMessages(prompt.text);
  // The first screen (the main menu) has nothing to go back to: no "Type back, menu or cancel" there.
  const word = wordsOf(prompt);
  const footer = prompt.top ? {} : { footer: { text: cut(word('common.typeNav'), LIMITS.footer) } };
  if (choices.length <= LIMITS.buttons) {
    const { before, body } = bodyWithin(prompt, LIMITS.buttonBody);
    const buttonTitles = titles(
      choices.map((c) => c.label),
      LIMITS.buttonTitle,
    );
    const buttons = choices.map((choice, index) => ({
      type: 'reply',
      reply: { id: choiceId(choice.id, index, LIMITS.buttonId), title: buttonTitles[index]! },
    }));
    return [
      ...before,
      { type: 'interactive', interactive: { type: 'button', body: { text: body }, ...footer, action: { buttons } } },
    ];
  }
  const pages = pageCount(prompt);
  const current = Math.min(Math.max(0, page), pages - 1);
  const { before, body } = bodyWithin(prompt, LIMITS.listBody);
  const button = cut(
    pages > 1 ? `${word('common.choose')} (${current + 1}/${pages})` : word('common.choose'),
    LIMITS.listButton,
  );
  const sections = [
    { title: cut(word('common.options'), LIMITS.sectionTitle), rows: listRows(prompt, current, pages) },
  ];
  return [
    ...before,
    {
      type: 'interactive',
      interactive: { type: 'list', body: { text: body }, ...footer, action: { button, sections } },
    },
  ];
}
