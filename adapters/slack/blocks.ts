/**
 * Prompt -> Block Kit. A prompt's words go in `plain_text` objects, so nothing a user or the service typed
 * (a payee called `<!channel>`, an `&`) is read as Slack markup; the top-level `text` (the notification
 * fallback) is escaped the way Slack asks. Slack's size limits are applied here, once.
 */
import type { types } from '@slack/bolt';
import type { InputKind } from '../../flows/types.js';
import type { Inbound, Prompt } from '../../src/conversation/types.js';
import { render } from '../../src/conversation/flow/render.js';

/** A message as the Web API and response_url take it. */
export interface SlackMessage {
  text: string;
  blocks: types.KnownBlock[];
}

/** action_id of the n-th choice is `momo_choice_<n>`; its value is the choice id. */
export const CHOICE_ACTION_PREFIX = 'momo_choice_';
/** The button that opens the answer modal; its value is the InputKind asked for. */
export const ANSWER_ACTION = 'momo_answer';
/** Back / Home / Cancel: action_id `momo_nav_<nav>`, value `<nav>`. */
export const NAV_ACTION_PREFIX = 'momo_nav_';
/** callback_id of the answer modal. */
export const ANSWER_VIEW = 'momo_answer';
/** block_id / action_id of the modal's one input. */
export const ANSWER_BLOCK = 'answer';
export const ANSWER_ELEMENT = 'value';

/** The navigation buttons, worded by the catalogue (`common.back`...) in the prompt's language. */
const NAVS = [
  { nav: 'back', key: 'common.back' },
  { nav: 'home', key: 'common.home' },
  { nav: 'cancel', key: 'common.cancel' },
] as const;

const INPUT_LABELS: Record<InputKind, string> = {
  text: 'Your answer',
  phone: 'Phone number',
  amount: 'Amount',
  pin: 'PIN',
  code: 'Code',
};

// Slack's limits: section text 3000, button text 75, elements per actions block 25, input label 2000.
const MAX_SECTION = 3000;
const MAX_BUTTON_TEXT = 75;
const MAX_ACTIONS = 25;

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** &, < and > escaped, as Slack requires in mrkdwn `text`. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function button(actionId: string, label: string, value: string, style?: 'primary' | 'danger'): types.Button {
  return {
    type: 'button',
    action_id: actionId,
    text: { type: 'plain_text', text: clip(label, MAX_BUTTON_TEXT), emoji: false },
    value,
    ...(style ? { style } : {}),
  };
}

/** A plain message: the text alone (notifications, errors). */
export function textMessage(text: string): SlackMessage {
  return {
    text: escapeMrkdwn(text),
    blocks: [{ type: 'section', text: { type: 'plain_text', text: clip(text, MAX_SECTION), emoji: false } }],
  };
}

/**
 * A prompt as a message: its text; its choices as buttons (25 to a row block); an "Answer" button when it
 * asks for input; Back / Home / Cancel unless it is final.
 */
export function promptMessage(prompt: Prompt): SlackMessage {
  const message = textMessage(prompt.text);
  const choices = prompt.choices ?? [];
  for (let start = 0; start < choices.length; start += MAX_ACTIONS) {
    message.blocks.push({
      type: 'actions',
      block_id: `choices_${start / MAX_ACTIONS}`,
      elements: choices
        .slice(start, start + MAX_ACTIONS)
        .map((choice, i) => button(`${CHOICE_ACTION_PREFIX}${start + i}`, choice.label, choice.id)),
    });
  }
  if (!prompt.final) {
    const word = (key: string) => render({ key }, prompt.lang ?? 'en');
    const controls: types.Button[] = prompt.input
      ? [button(ANSWER_ACTION, word('common.answer'), prompt.input, 'primary')]
      : [];
    // The first screen has nothing to go back to: no Back or Home there.
    for (const { nav, key } of NAVS)
      if (!prompt.top || nav === 'cancel') controls.push(button(`${NAV_ACTION_PREFIX}${nav}`, word(key), nav));
    message.blocks.push({ type: 'actions', block_id: 'controls', elements: controls });
  }
  return message;
}

const BUTTON_ACTION = new RegExp(`^(?:${CHOICE_ACTION_PREFIX}\\d+|${NAV_ACTION_PREFIX}(back|home|cancel))$`);

/** What a click on a choice or nav button means to the engine; null for any other action_id. */
export function readButton(actionId: string, value: string | undefined): Pick<Inbound, 'choice' | 'nav'> | null {
  const match = BUTTON_ACTION.exec(actionId);
  if (!match) return null;
  const nav = match[1] as Inbound['nav'];
  return nav ? { nav } : { choice: value ?? '' };
}

/** What the answer modal carries back in private_metadata. */
export interface AnswerMetadata {
  /** response_url of the "Answer" click: the submission's prompt replaces the message that had the button. */
  responseUrl: string;
}

export function isInputKind(value: string): value is InputKind {
  return Object.hasOwn(INPUT_LABELS, value);
}

/** The modal opened by "Answer": one plain_text_input, labelled for the kind of input asked. */
export function answerModal(kind: InputKind, metadata: AnswerMetadata): types.ModalView {
  return {
    type: 'modal',
    callback_id: ANSWER_VIEW,
    private_metadata: JSON.stringify(metadata),
    title: { type: 'plain_text', text: 'MoMo' },
    submit: { type: 'plain_text', text: 'Send' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      {
        type: 'input',
        block_id: ANSWER_BLOCK,
        label: { type: 'plain_text', text: INPUT_LABELS[kind] },
        element: { type: 'plain_text_input', action_id: ANSWER_ELEMENT, max_length: 500 },
      },
    ],
  };
}

/** The private_metadata of a submitted answer modal, or null when it is not ours. */
export function readAnswerMetadata(privateMetadata: string | undefined): AnswerMetadata | null {
  try {
    const parsed: unknown = JSON.parse(privateMetadata ?? '');
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      'responseUrl' in parsed &&
      typeof parsed.responseUrl === 'string'
    ) {
      return { responseUrl: parsed.responseUrl };
    }
  } catch {
    // not JSON: not ours
  }
  return null;
}
