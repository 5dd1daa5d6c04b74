/**
 * The message catalogue: every flow's messages merged with the common ones, and the rendering of a flow's
 * View into a channel-neutral Prompt. Values put into the words (names, references from the network or
 * other users) and literal choice labels are made plain text first (plain-text.ts). A key missing in a language falls back to English, then to the key
 * itself (so a gap shows as `pay.askAmount`, never as an empty screen).
 */
import type { AnyMachineSnapshot } from 'xstate';
import { flows as registeredFlows } from '../../../flows/index.js';
import { commonMessages } from '../../../flows/messages/common.js';
import {
  LANGS,
  type FlowModule,
  type Lang,
  type Messages,
  type StateMeta,
  type Text,
  type View,
} from '../../../flows/types.js';
import { fillTemplate, plainText } from './plain-text.js';
import type { Prompt } from '../types.js';

export interface Catalogue {
  /** Every key of every language. */
  readonly messages: Record<Lang, Messages>;
  /** The words of `text` in `lang`, placeholders `{name}` filled from its params. */
  render(text: Text, lang: Lang): string;
  /** A View as a Prompt: the error line and the notice above the text, choice labels rendered. */
  renderView(view: View, lang: Lang): Prompt;
}

/** The catalogue of the given flows plus the common messages. */
export function createCatalogue(modules: Iterable<FlowModule | undefined>): Catalogue {
  const messages = Object.fromEntries(LANGS.map((lang) => [lang, { ...commonMessages[lang] }])) as Record<
    Lang,
    Messages
  >;
  for (const module of modules) {
    if (!module) continue;
    for (const lang of LANGS) Object.assign(messages[lang], module.messages[lang]);
  }
  const render = (text: Text, lang: Lang): string =>
    fillTemplate(messages[lang]?.[text.key] ?? messages.en[text.key] ?? text.key, text.params, lang);
  /** `words` with the line of `text` (if any) below them. */
  const below = (words: string | undefined, text: Text | undefined, lang: Lang): string | undefined =>
    text ? (words === undefined ? render(text, lang) : `${words}\n${render(text, lang)}`) : words;
  // Every screen of every hop is made here: its lines are joined and its fields set without the arrays and the
  // spread objects a literal with conditional parts would make. The fields keep this order (the record's JSON).
  const renderView = (view: View, lang: Lang): Prompt => {
    const prompt: Omit<Prompt, 'final'> & { final?: boolean } = {
      text: below(below(below(undefined, view.error, lang), view.notice, lang), view.text, lang) ?? '',
    };
    if (view.choices)
      prompt.choices = view.choices.map((c) => ({
        id: c.id,
        label: c.label !== undefined ? plainText(c.label) : c.text ? render(c.text, lang) : c.id,
      }));
    if (view.input) prompt.input = view.input;
    if (view.error) prompt.refused = true;
    if (view.top) prompt.top = true;
    if (view.masked) prompt.masked = render(view.masked, lang);
    if (lang !== 'en') prompt.lang = lang;
    prompt.final = view.final ?? false;
    return prompt as Prompt;
  };
  return { messages, render, renderView };
}

/** The catalogue of every registered flow (flows/index.ts). */
export const catalogue: Catalogue = createCatalogue(Object.values(registeredFlows));
export const render: Catalogue['render'] = catalogue.render;
export const renderView: Catalogue['renderView'] = catalogue.renderView;

/**
 * The View of the snapshot's current state: the deepest active state with `meta.view`, computed from the
 * context. Undefined when no active state has one (busy states usually).
 */
export function currentView(snapshot: AnyMachineSnapshot): View | undefined {
  const metas = Object.values(snapshot.getMeta() as Record<string, Partial<StateMeta> | undefined>);
  const view = metas.filter((meta) => typeof meta?.view === 'function').at(-1)?.view;
  return view ? view(snapshot.context) : undefined;
}

/** Every catalogue key a View uses (text, error, notice, choice texts). */
export function viewKeys(view: View): string[] {
  return [view.text, view.error, view.notice, ...(view.choices ?? []).map((c) => c.text)].flatMap((t) =>
    t ? [t.key] : [],
  );
}
