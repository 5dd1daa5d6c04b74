/**
 * A user's message -> what the bot does with it, read against the prompt the chat shows. Pure, so every
 * kind of message is tested as a table.
 *
 * - A tap on a button or list row: the choice it carries, if the prompt shown offers it (a tap on an older
 *   message whose prompt has gone is "expired"); a "More options" row turns the page without the engine.
 * - Typed text: `menu`, `back`, `cancel`, `help` and the flows' `/pay`-style commands; on a screen of
 *   choices, a choice's label or its number (1 is the first); anything else goes to the engine as text.
 * - Another kind (image, audio, location, sticker...): a polite answer. A reaction is not a message to the
 *   bot and gets none.
 */
import type { FlowId, Lang } from '../../flows/types.js';
import { render } from '../../src/conversation/flow/render.js';
import type { Inbound, Prompt } from '../../src/conversation/types.js';
import type { IncomingMessage } from './payload.js';
import { parseReply, type Reply } from './render.js';

/** The prompt a chat shows: the messages showing it (the latest last) and the page of its choices. */
export interface ShownPrompt {
  prompt: Prompt;
  page: number;
  /** wamids of the messages showing this prompt (its pages), so a tap on one of them is recognised. */
  messageIds: string[];
}

export type Action =
  /** Ask the engine. */
  | { kind: 'engine'; request: Pick<Inbound, 'text' | 'choice' | 'nav' | 'start'> }
  /** Show another page of the prompt shown. */
  | { kind: 'page'; page: number }
  | { kind: 'help' }
  /** A tap on a button of a prompt no longer shown. */
  | { kind: 'expired' }
  /** A kind of message the bot cannot read. */
  | { kind: 'unsupported' }
  | { kind: 'ignore' };

/** Where a navigation word moves: the engine's own moves, or the channel's help. */
const MOVES = {
  home: { kind: 'engine', request: { nav: 'home' } },
  back: { kind: 'engine', request: { nav: 'back' } },
  cancel: { kind: 'engine', request: { nav: 'cancel' } },
  help: { kind: 'help' },
} as const satisfies Record<string, Action>;
type Move = keyof typeof MOVES;

/**
 * Words that move outside the flow's own choices, with or without a leading slash, in each language as the
 * screen's footer says them (`common.typeNav`). The English ones are read on every screen; another language's
 * only on a screen of that language, so a word of one language is an answer in another.
 */
const WORDS: Record<Lang, Record<Move, readonly string[]>> = {
  en: { home: ['menu', 'home', 'start'], back: ['back'], cancel: ['cancel'], help: ['help'] },
  sw: { home: ['menyu'], back: ['rudi'], cancel: ['ghairi'], help: ['msaada'] },
  fr: { home: ['accueil'], back: ['retour'], cancel: ['annuler'], help: ['aide'] },
};

/** A language's words and their moves. A Map, as the word is anyone's ("constructor" is an answer, not Object's member). */
const heard = (words: Record<Move, readonly string[]>): ReadonlyMap<string, Action> =>
  new Map((Object.keys(words) as Move[]).flatMap((move) => words[move].map((word) => [word, MOVES[move]] as const)));

const NAVIGATION: Record<Lang, ReadonlyMap<string, Action>> = {
  en: heard(WORDS.en),
  sw: heard(WORDS.sw),
  fr: heard(WORDS.fr),
};

/** Flows started by a command (with its slash only: "pay" alone may be an answer). */
const FLOW_COMMANDS: ReadonlyMap<string, FlowId> = new Map(
  Object.entries({
    '/pay': 'pay',
    '/request': 'request',
    '/check': 'check',
    '/data': 'data',
    '/pin': 'pin',
  } satisfies Record<string, FlowId>),
);

/** The answer to `help` (and, after an apology, to messages the bot cannot read), in the user's language. */
export const helpText = (lang: Lang = 'en'): string => render({ key: 'whatsapp.help' }, lang);
export const unsupportedText = (lang: Lang = 'en'): string =>
  `${render({ key: 'whatsapp.unsupported' }, lang)}\n\n${helpText(lang)}`;
export const expiredText = (lang: Lang = 'en'): string => render({ key: 'whatsapp.expired' }, lang);

const normalise = (text: string): string => text.replace(/\s+/gu, ' ').trim().toLowerCase();

/** The choice a reply stands for, if the prompt shown offers it. */
function offered(reply: Reply, shown: ShownPrompt | undefined): Action {
  const choices = shown && !shown.prompt.final ? (shown.prompt.choices ?? []) : [];
  if (reply.kind === 'page') return choices.length > 0 ? { kind: 'page', page: reply.page } : { kind: 'expired' };
  const choice = reply.kind === 'choice' ? choices.find((c) => c.id === reply.id) : choices[reply.index];
  return choice ? { kind: 'engine', request: { choice: choice.id } } : { kind: 'expired' };
}

/** Typed text: navigation, a command, a choice by label or number, or an answer for the flow. */
function typed(text: string, shown: ShownPrompt | undefined): Action {
  const word = normalise(text);
  const bare = word.replace(/^\//, '');
  const lang = shown?.prompt.lang;
  const navigation = NAVIGATION.en.get(bare) ?? (lang ? NAVIGATION[lang].get(bare) : undefined);
  if (navigation) return navigation;
  const flow = FLOW_COMMANDS.get(word);
  if (flow) return { kind: 'engine', request: { start: flow } };
  const choices = shown && !shown.prompt.final ? (shown.prompt.choices ?? []) : [];
  const byLabel = choices.find((c) => normalise(c.label) === word);
  if (byLabel) return { kind: 'engine', request: { choice: byLabel.id } };
  // A number picks a choice only where the screen asks for nothing typed (an amount is a number too).
  const number = /^\d{1,3}$/.test(word) && !shown?.prompt.input ? choices[Number(word) - 1] : undefined;
  if (number) return { kind: 'engine', request: { choice: number.id } };
  return { kind: 'engine', request: { text } };
}

/** What to do with a message, given the prompt the chat shows (none when nothing is recorded). */
export function readMessage(message: IncomingMessage, shown: ShownPrompt | undefined): Action {
  switch (message.type) {
    case 'text':
      return message.text ? typed(message.text.body, shown) : { kind: 'unsupported' };
    case 'button':
      return message.button ? typed(message.button.text, shown) : { kind: 'unsupported' };
    case 'interactive': {
      const tapped = message.interactive?.button_reply ?? message.interactive?.list_reply;
      if (!tapped) return { kind: 'unsupported' };
      const reply = parseReply(tapped.id);
      const contextId = message.context?.id;
      // A tap on a message that no longer shows the prompt is stale, even when the choice looks the same
      // (when Meta gave no wamids for the messages showing it, the choice alone decides).
      const elsewhere =
        contextId !== undefined &&
        shown !== undefined &&
        shown.messageIds.length > 0 &&
        !shown.messageIds.includes(contextId);
      if (!reply || elsewhere) return { kind: 'expired' };
      return offered(reply, shown);
    }
    case 'reaction':
      return { kind: 'ignore' };
    default:
      return { kind: 'unsupported' };
  }
}
