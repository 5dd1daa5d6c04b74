/**
 * Webhook body -> messages and statuses (payload.ts), and message + prompt shown -> what the bot does
 * (inbound.ts), as tables.
 */
import { describe, expect, it } from 'vitest';
import {
  expiredText,
  helpText,
  readMessage,
  unsupportedText,
  type ShownPrompt,
} from '../../../adapters/whatsapp/inbound.js';
import { readDelivery, type IncomingMessage } from '../../../adapters/whatsapp/payload.js';
import { buttonReply, delivery, listReply, textMessage } from './deliveries.js';
import { PHONE_NUMBER_ID } from './fake-graph-api.js';

const USER = '256772000001';
const menu: ShownPrompt = {
  prompt: {
    text: 'Main menu',
    choices: [
      { id: 'pay', label: 'Pay someone' },
      { id: 'request', label: 'Request money' },
    ],
    final: false,
  },
  page: 0,
  messageIds: ['wamid.MENU'],
};
const amount: ShownPrompt = {
  prompt: { text: 'Enter the amount:', choices: [{ id: 'x', label: 'Five' }], input: 'amount', final: false },
  page: 0,
  messageIds: ['wamid.AMT'],
};
const done: ShownPrompt = {
  prompt: { text: 'Paid.', choices: [{ id: 'pay', label: 'Pay someone' }], final: true },
  page: 0,
  messageIds: [],
};

const sw: ShownPrompt = { ...menu, prompt: { ...menu.prompt, lang: 'sw' } };
const fr: ShownPrompt = { ...menu, prompt: { ...menu.prompt, lang: 'fr' } };

const read = (message: unknown, shown?: ShownPrompt) => readMessage(message as IncomingMessage, shown);

describe('readMessage', () => {
  it.each([
    ['menu', undefined, { kind: 'engine', request: { nav: 'home' } }],
    ['  MENU ', menu, { kind: 'engine', request: { nav: 'home' } }],
    ['/start', menu, { kind: 'engine', request: { nav: 'home' } }],
    ['Back', menu, { kind: 'engine', request: { nav: 'back' } }],
    ['cancel', menu, { kind: 'engine', request: { nav: 'cancel' } }],
    ['help', menu, { kind: 'help' }],
    ['/pay', undefined, { kind: 'engine', request: { start: 'pay' } }],
    ['/PIN', menu, { kind: 'engine', request: { start: 'pin' } }],
    ['pay', undefined, { kind: 'engine', request: { text: 'pay' } }],
    ['pay someone', menu, { kind: 'engine', request: { choice: 'pay' } }],
    ['2', menu, { kind: 'engine', request: { choice: 'request' } }],
    ['3', menu, { kind: 'engine', request: { text: '3' } }],
    ['1', amount, { kind: 'engine', request: { text: '1' } }],
    ['five', amount, { kind: 'engine', request: { choice: 'x' } }],
    ['1', done, { kind: 'engine', request: { text: '1' } }],
    ['Hi there', undefined, { kind: 'engine', request: { text: 'Hi there' } }],
    // The words the footer says in the screen's language, besides the English ones; another language's are text.
    ['Rudi', sw, { kind: 'engine', request: { nav: 'back' } }],
    ['menyu', sw, { kind: 'engine', request: { nav: 'home' } }],
    ['ghairi', sw, { kind: 'engine', request: { nav: 'cancel' } }],
    ['back', sw, { kind: 'engine', request: { nav: 'back' } }],
    ['annuler', fr, { kind: 'engine', request: { nav: 'cancel' } }],
    ['retour', fr, { kind: 'engine', request: { nav: 'back' } }],
    ['rudi', fr, { kind: 'engine', request: { text: 'rudi' } }],
    ['rudi', menu, { kind: 'engine', request: { text: 'rudi' } }],
    ['msaada', sw, { kind: 'help' }],
    ['accueil', fr, { kind: 'engine', request: { nav: 'home' } }],
    ['/aide', fr, { kind: 'help' }],
    // A word that is a member of every object is an answer like any other.
    ['constructor', fr, { kind: 'engine', request: { text: 'constructor' } }],
  ] as const)('reads the text %j against the prompt shown', (text, shown, action) => {
    expect(read(textMessage(USER, text), shown)).toEqual(action);
  });

  it('takes a tap on a button or row of the prompt shown as its choice, and a page row as a page turn', () => {
    expect(read(buttonReply(USER, 'c:pay', 'Pay someone', 'wamid.MENU'), menu)).toEqual({
      kind: 'engine',
      request: { choice: 'pay' },
    });
    expect(read(listReply(USER, 'i:1', 'Request money', 'wamid.MENU'), menu)).toEqual({
      kind: 'engine',
      request: { choice: 'request' },
    });
    expect(read(listReply(USER, 'p:1', 'More options', 'wamid.MENU'), menu)).toEqual({ kind: 'page', page: 1 });
    // Without a context (some clients), or with no wamid known for the prompt's messages, the choice decides.
    expect(read(buttonReply(USER, 'c:request', 'Request money'), menu)).toEqual({
      kind: 'engine',
      request: { choice: 'request' },
    });
    expect(read(buttonReply(USER, 'c:request', 'Request money', 'wamid.ANY'), { ...menu, messageIds: [] })).toEqual({
      kind: 'engine',
      request: { choice: 'request' },
    });
  });

  it('answers a tap on an older message, a choice not offered or an id not ours with "expired"', () => {
    for (const tap of [
      buttonReply(USER, 'c:pay', 'Pay someone', 'wamid.OLD'),
      buttonReply(USER, 'c:check', 'Check', 'wamid.MENU'),
      buttonReply(USER, 'i:7', 'Seven', 'wamid.MENU'),
      listReply(USER, 'forged-row', 'X', 'wamid.MENU'),
      buttonReply(USER, 'c:pay', 'Pay someone'),
    ]) {
      expect(read(tap, tap.context ? menu : done)).toEqual({ kind: 'expired' });
    }
    expect(read(buttonReply(USER, 'c:pay', 'Pay someone'), undefined)).toEqual({ kind: 'expired' });
  });

  it('answers other kinds politely and ignores reactions', () => {
    const base = { from: USER, id: 'wamid.X', timestamp: '1700000000' };
    for (const type of [
      'image',
      'audio',
      'location',
      'sticker',
      'contacts',
      'document',
      'video',
      'unsupported',
      'order',
    ]) {
      expect(read({ ...base, type }, menu)).toEqual({ kind: 'unsupported' });
    }
    expect(read({ ...base, type: 'text' }, menu)).toEqual({ kind: 'unsupported' });
    expect(read({ ...base, type: 'interactive', interactive: { type: 'nfm_reply' } }, menu)).toEqual({
      kind: 'unsupported',
    });
    expect(read({ ...base, type: 'reaction', reaction: { message_id: 'wamid.MENU', emoji: '👍' } }, menu)).toEqual({
      kind: 'ignore',
    });
    expect(read({ ...base, type: 'button', button: { text: 'Menu', payload: 'x' } }, menu)).toEqual({
      kind: 'engine',
      request: { nav: 'home' },
    });
  });
});

describe('readDelivery', () => {
  it("reads messages and statuses of the product's phone number", () => {
    const status = { id: 'wamid.S', status: 'delivered', timestamp: '1700000000', recipient_id: USER };
    const read = readDelivery(delivery([textMessage(USER, 'hi', 'wamid.A')], [status]), PHONE_NUMBER_ID);
    expect(read).toEqual({
      ok: true,
      delivery: {
        messages: [expect.objectContaining({ id: 'wamid.A', from: USER, type: 'text', text: { body: 'hi' } })],
        statuses: [expect.objectContaining({ id: 'wamid.S', status: 'delivered' })],
        skipped: 0,
      },
    });
  });

  it('skips what cannot be read and what is for another phone number, keeping the rest', () => {
    const good = textMessage(USER, 'hi');
    const bad = [
      { ...good, from: 'not-a-number' },
      { ...good, id: '' },
      { ...good, text: { body: 'x'.repeat(70_000) } },
      'text',
      null,
    ];
    const read = readDelivery(delivery([good, ...bad]), PHONE_NUMBER_ID);
    expect(read.ok && read.delivery.messages).toHaveLength(1);
    expect(read.ok && read.delivery.skipped).toBe(bad.length);
    const other = readDelivery(delivery([good]), '999999');
    expect(other).toEqual({ ok: true, delivery: { messages: [], statuses: [], skipped: 1 } });
    const otherField = {
      object: 'whatsapp_business_account',
      entry: [{ changes: [{ field: 'account_update', value: { event: 'x' } }] }],
    };
    expect(readDelivery(otherField, PHONE_NUMBER_ID)).toEqual({
      ok: true,
      delivery: { messages: [], statuses: [], skipped: 0 },
    });
  });

  it('reads a body without `object` or `field` (Meta always sends them) as the messages webhook', () => {
    const bare = { entry: [{ changes: [{ value: { messages: [textMessage(USER, 'hi', 'wamid.BARE')] } }] }] };
    const read = readDelivery(bare, PHONE_NUMBER_ID);
    expect(read.ok && read.delivery.messages.map((m) => m.id)).toEqual(['wamid.BARE']);
  });

  it('refuses a body that is not a WhatsApp messages webhook, saying why', () => {
    for (const body of [
      {},
      [],
      'x',
      null,
      { object: 'page', entry: [] },
      { object: 'whatsapp_business_account', entry: 'x' },
      { entry: [{ changes: 'x' }] },
    ]) {
      const read = readDelivery(body, PHONE_NUMBER_ID);
      expect(read.ok).toBe(false);
      expect(!read.ok && read.reason).toMatch(/^not a WhatsApp messages webhook: /);
    }
  });
});

describe('help, unsupported and expired answers', () => {
  it("are in the user's language and name the words that language's screens read", () => {
    expect(helpText()).toContain('back - the previous question');
    expect(helpText('sw')).toContain('rudi - swali lililopita');
    expect(helpText('fr')).toContain('retour - la question précédente');
    for (const lang of ['en', 'sw', 'fr'] as const) expect(helpText(lang)).toContain('/pay');
    expect(unsupportedText('sw')).toMatch(/^Samahani[^]*menyu - menyu kuu/);
    expect(expiredText('fr')).toBe('Ce menu a expiré. Tapez accueil pour le menu principal.');
    // Every navigation word a help names is read on a screen of that language.
    const words = (lang: 'sw' | 'fr') => [...helpText(lang).matchAll(/^(\p{L}+) - /gmu)].map((m) => m[1]!);
    for (const [lang, shown] of [
      ['sw', sw],
      ['fr', fr],
    ] as const)
      for (const word of words(lang))
        expect(read(textMessage(USER, word), shown)).not.toEqual({ kind: 'engine', request: { text: word } });
    expect(words('sw')).toEqual(['menyu', 'rudi', 'ghairi']);
  });
});
