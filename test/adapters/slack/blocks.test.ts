/**
 * Rendering and parsing rules of the adapter, as tables: Slack's limits, markup safety, command words,
 * conversation ids.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  answerModal,
  escapeMrkdwn,
  promptMessage,
  readAnswerMetadata,
  readButton,
} from '../../../adapters/slack/blocks.js';
import { parseCommandText } from '../../../adapters/slack/command.js';
import { conversationIdOf, userIdOf } from '../../../adapters/slack/address.js';
import { SLACK_EVENTS_PATH } from '../../../adapters/slack/index.js';

type Block = Record<string, any>;
const actions = (blocks: Block[]) => blocks.filter((b) => b.type === 'actions');

describe('promptMessage', () => {
  it('puts more than 25 choices in several rows, numbering action ids across rows', () => {
    const choices = Array.from({ length: 30 }, (_, i) => ({ id: `b${i}`, label: `Bundle ${i}` }));
    const { blocks } = promptMessage({ text: 'Pick a bundle', choices, final: false }) as { blocks: Block[] };
    const [first, second, controls] = actions(blocks);
    expect(first?.elements).toHaveLength(25);
    expect(second?.elements).toHaveLength(5);
    expect(second?.elements[0]).toMatchObject({ action_id: 'momo_choice_25', value: 'b25' });
    expect(controls?.elements.map((e: Block) => e.action_id)).toEqual([
      'momo_nav_back',
      'momo_nav_home',
      'momo_nav_cancel',
    ]);
  });

  it("words the Answer and navigation buttons in the prompt's language (the catalogue)", () => {
    const words = (lang?: 'sw') => {
      const { blocks } = promptMessage({
        text: 'Kiasi?',
        input: 'amount',
        ...(lang ? { lang } : {}),
        final: false,
      }) as { blocks: Block[] };
      return actions(blocks)
        .at(-1)
        ?.elements.map((e: Block) => e.text.text);
    };
    expect(words('sw')).toEqual(['Jibu', 'Rudi', 'Mwanzo', 'Ghairi']);
    expect(words()).toEqual(['Answer', 'Back', 'Home', 'Cancel']);
  });

  it('clips labels to 75 and text to 3000 characters', () => {
    const { blocks } = promptMessage({
      text: 'x'.repeat(5000),
      choices: [{ id: 'c', label: 'y'.repeat(100) }],
      final: false,
    }) as {
      blocks: Block[];
    };
    expect(blocks[0]?.text.text).toHaveLength(3000);
    expect(actions(blocks)[0]?.elements[0].text.text).toHaveLength(75);
  });

  it('offers "Answer" (value = input kind) only when the prompt asks for input, and no buttons when final', () => {
    const asking = promptMessage({ text: 'PIN?', input: 'pin', final: false }) as { blocks: Block[] };
    expect(actions(asking.blocks)[0]?.elements[0]).toMatchObject({
      action_id: 'momo_answer',
      value: 'pin',
      style: 'primary',
    });
    const choosing = promptMessage({ text: 'Menu', choices: [{ id: 'pay', label: 'Pay' }], final: false }) as {
      blocks: Block[];
    };
    expect(JSON.stringify(choosing.blocks)).not.toContain('momo_answer');
    const done = promptMessage({ text: 'Done', final: true }) as { blocks: Block[] };
    expect(actions(done.blocks)).toEqual([]);
  });

  it('never lets prompt text act as markup', () => {
    expect(escapeMrkdwn('<!channel> & <@U1>')).toBe('&lt;!channel&gt; &amp; &lt;@U1&gt;');
    const { text, blocks } = promptMessage({ text: '<!channel>', final: true }) as { text: string; blocks: Block[] };
    expect(text).toBe('&lt;!channel&gt;');
    expect(blocks[0]?.text).toEqual({ type: 'plain_text', text: '<!channel>', emoji: false });
  });
});

describe('readButton', () => {
  it.each([
    ['momo_choice_0', 'pay', { choice: 'pay' }],
    ['momo_choice_27', 'b27', { choice: 'b27' }],
    ['momo_choice_3', undefined, { choice: '' }],
    ['momo_nav_back', 'ignored', { nav: 'back' }],
    ['momo_nav_home', undefined, { nav: 'home' }],
    ['momo_nav_cancel', 'cancel', { nav: 'cancel' }],
    ['momo_nav_exit', 'exit', null],
    ['momo_choice_x', 'pay', null],
    ['momo_answer', 'phone', null],
    ['other_app_button', 'v', null],
  ])('%s (%s) -> %j', (actionId, value, expected) => {
    expect(readButton(actionId, value)).toEqual(expected);
  });

  it('reads back every button promptMessage renders', () => {
    const { blocks } = promptMessage({ text: 'Menu', choices: [{ id: 'pay', label: 'Pay' }], final: false }) as {
      blocks: Block[];
    };
    const meanings = actions(blocks)
      .flatMap((b) => b.elements)
      .map((e: Block) => readButton(e.action_id, e.value));
    expect(meanings).toEqual([{ choice: 'pay' }, { nav: 'back' }, { nav: 'home' }, { nav: 'cancel' }]);
  });
});

describe('answer modal metadata', () => {
  it('round-trips the response_url and rejects anything else', () => {
    const view = answerModal('amount', { responseUrl: 'https://hooks.slack.com/actions/T/1/x' });
    expect(readAnswerMetadata(view.private_metadata)).toEqual({ responseUrl: 'https://hooks.slack.com/actions/T/1/x' });
    for (const bad of [undefined, '', 'not json', '{}', '{"responseUrl": 5}', 'null'])
      expect(readAnswerMetadata(bad)).toBeNull();
  });
});

describe('parseCommandText', () => {
  it.each([
    [undefined, { start: 'menu' }],
    ['', { start: 'menu' }],
    ['   ', { start: 'menu' }],
    ['pay', { start: 'pay' }],
    [' Data ', { start: 'data' }],
    ['pin', { start: 'pin' }],
    ['back', { nav: 'back' }],
    ['CANCEL', { nav: 'cancel' }],
    ['menu', { text: 'menu' }],
    ['  0772 123 456 ', { text: '0772 123 456' }],
    ['paying', { text: 'paying' }],
  ])('%j -> %j', (text, expected) => {
    expect(parseCommandText(text)).toEqual(expected);
  });
});

describe('conversation ids', () => {
  it('is team:user and gives the user back', () => {
    expect(conversationIdOf('T1', 'U2')).toBe('T1:U2');
    expect(userIdOf('T1:U2')).toBe('U2');
    for (const bad of ['U2', 'T1:U2:X', ':U2', 'T1:'])
      expect(() => userIdOf(bad)).toThrow(/Not a Slack conversation id/);
  });
});

describe('manifest.json', () => {
  it('registers the command, the one Request URL and the DM events the adapter handles', async () => {
    const manifest = JSON.parse(
      await readFile(new URL('../../../adapters/slack/manifest.json', import.meta.url), 'utf8'),
    );
    expect(manifest.features.slash_commands.map((c: Block) => c.command)).toEqual(['/momo']);
    const urls = [
      manifest.features.slash_commands[0].url,
      manifest.settings.interactivity.request_url,
      manifest.settings.event_subscriptions.request_url,
    ];
    for (const url of urls) expect(new URL(url).pathname).toBe(SLACK_EVENTS_PATH);
    expect(manifest.settings.event_subscriptions.bot_events).toEqual(['message.im']);
    expect(manifest.oauth_config.scopes.bot).toEqual(expect.arrayContaining(['commands', 'chat:write', 'im:history']));
  });
});
