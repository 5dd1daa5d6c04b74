/**
 * The main menu: the flows this user may start (FlowInput.allowedFlows) and a language choice.
 * Picking a flow ends with `next: <flow>`; picking a language ends with `remember: { lang }` and
 * `next: 'menu'`, so the menu comes back in the new language.
 */
import { assign, setup } from 'xstate';
import { chosenId } from './events.js';
import { menuMessages } from './messages/menu.js';
import {
  contextFromInput,
  LANGS,
  type FlowEvent,
  type FlowId,
  type FlowInput,
  type FlowModule,
  type FlowOutput,
  type Lang,
  type View,
} from './types.js';

/**
 * The flows the menu can offer, in the order shown: the role's, then the person's own (Change PIN, and on USSD
 * Link a chat app), as FlowInput.allowedFlows lists them.
 */
export const MENU_FLOWS: readonly FlowId[] = ['pay', 'request', 'check', 'data', 'pin', 'changePin', 'link'];
/** The languages that ship. */
export const LANGUAGES: readonly Lang[] = LANGS;
/** Choice id of the language entry. */
const LANGUAGE_CHOICE = 'lang';

interface MenuContext {
  offered: FlowId[];
  next?: FlowId;
  lang?: Lang;
  /** Catalogue key of the reason the last answer was refused. */
  error?: string;
}

export const menuMachine = setup({
  types: {
    context: {} as MenuContext,
    input: {} as FlowInput,
    events: {} as FlowEvent,
    output: {} as FlowOutput,
  },
  guards: {
    isOfferedFlow: ({ context, event }) => context.offered.some((id) => id === chosenId(event)),
    isLanguageEntry: ({ event }) => chosenId(event) === LANGUAGE_CHOICE,
    isLanguage: ({ event }) => LANGUAGES.some((lang) => lang === chosenId(event)),
  },
  actions: {
    storeNext: assign({ next: ({ event }) => chosenId(event) as FlowId, error: undefined }),
    storeLanguage: assign({ lang: ({ event }) => chosenId(event) as Lang, error: undefined }),
    refuseAnswer: assign({ error: 'common.pickOne' }),
    clearError: assign({ error: undefined }),
  },
}).createMachine({
  id: 'menu',
  context: contextFromInput((input) => ({ offered: MENU_FLOWS.filter((id) => input.allowedFlows?.includes(id)) })),
  initial: 'choosing',
  states: {
    choosing: {
      meta: {
        view: (context: MenuContext): View => ({
          top: true,
          text: { key: context.offered.length > 0 ? 'menu.title' : 'menu.titleLanguageOnly' },
          ...(context.error ? { error: { key: context.error } } : {}),
          choices: [
            ...context.offered.map((id) => ({ id, text: { key: `menu.flow.${id}` } })),
            { id: LANGUAGE_CHOICE, text: { key: 'menu.language' } },
          ],
        }),
      },
      on: {
        CHOSEN: [
          { guard: 'isOfferedFlow', target: 'flowChosen', actions: 'storeNext' },
          { guard: 'isLanguageEntry', target: 'choosingLanguage', actions: 'clearError' },
          { actions: 'refuseAnswer' },
        ],
        ANSWERED: { actions: 'refuseAnswer' },
        // The top of the menu: nothing to go back to; show it again, clean.
        BACK: { actions: 'clearError' },
      },
    },
    choosingLanguage: {
      meta: {
        view: (context: MenuContext): View => ({
          text: { key: 'menu.chooseLanguage' },
          ...(context.error ? { error: { key: context.error } } : {}),
          choices: LANGUAGES.map((lang) => ({ id: lang, text: { key: `menu.lang.${lang}` } })),
        }),
      },
      on: {
        CHOSEN: [
          { guard: 'isLanguage', target: 'languageChosen', actions: 'storeLanguage' },
          { actions: 'refuseAnswer' },
        ],
        ANSWERED: { actions: 'refuseAnswer' },
        BACK: { target: 'choosing', actions: 'clearError' },
      },
    },
    flowChosen: { type: 'final', meta: { outcome: () => 'done' } },
    languageChosen: { type: 'final', meta: { outcome: () => 'done' } },
  },
  output: ({ context }): FlowOutput =>
    context.next ? { next: context.next } : { remember: { lang: context.lang ?? 'en' }, next: 'menu' },
});

export const menuFlow: FlowModule = { id: 'menu', machine: menuMachine, messages: menuMessages };
