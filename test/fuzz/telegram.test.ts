/**
 * Fuzzing the Telegram webhook over real HTTP: updates shaped like Telegram's (messages, commands, button
 * presses with our data and with junk, other update kinds, wrong types) with the right secret header, and
 * the same without it or with a wrong one; then anything at all at /telegram/*.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  TELEGRAM_SECRET,
  anyRequestTo,
  anyValue,
  count,
  fuzz,
  fuzzSuite,
  pathsUnder,
  sendAll,
  shaped,
  type FuzzRequest,
} from './harness.js';

const suite = fuzzSuite('telegram');

const SECRET_HEADER = 'x-telegram-bot-api-secret-token';
const userId = fc.oneof(fc.constantFrom(7, 8, 9), fc.integer(), fc.constant(0));
const chat = shaped({
  id: fc.oneof(fc.constantFrom(42, -1001234567890, 7), fc.integer()),
  type: fc.constantFrom('private', 'group', 'supergroup', 'channel', 'weird'),
  first_name: fc.string({ maxLength: 10 }),
  title: fc.string({ maxLength: 10 }),
});
const from = shaped({
  id: userId,
  is_bot: fc.boolean(),
  first_name: fc.string({ maxLength: 10 }),
  language_code: fc.constantFrom('en', 'sw', 'xx'),
});
const text = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '/start',
      '/pay',
      '/request',
      '/check',
      '/data',
      '/pin',
      '/help',
      '/cancel',
      '/pay@momo_test_bot',
      '/pay@other_bot',
      '/',
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom('1', '2', '0772000001', '+256772000001', 'Sarah', '5000', 'lunch', 'back', 'home', ''),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 4100 }) },
);
const callbackData = fc.oneof(
  fc.constantFrom('c:0', 'c:1', 'c:2', 'c:9999', 'p:0', 'p:1', 'p:9999', 'n:back', 'n:home', 'c:', 'x'),
  fc.string({ maxLength: 70 }),
);
const message = shaped({
  message_id: fc.nat(1000),
  date: fc.nat(),
  chat,
  from,
  text,
  entities: fc.constant([{ type: 'bot_command', offset: 0, length: 4 }]),
});
const update = fc
  .tuple(
    fc.oneof({ weight: 5, arbitrary: fc.nat(1_000_000) }, { weight: 1, arbitrary: anyValue }),
    fc.oneof(
      { weight: 4, arbitrary: message.map((m) => ({ message: m })) },
      {
        weight: 3,
        arbitrary: shaped({
          id: fc.string({ maxLength: 8 }),
          from,
          chat_instance: fc.string(),
          data: callbackData,
          message,
        }).map((q) => ({ callback_query: q })),
      },
      { weight: 1, arbitrary: message.map((m) => ({ edited_message: m })) },
      { weight: 1, arbitrary: message.map((m) => ({ channel_post: m })) },
      {
        weight: 1,
        arbitrary: fc.dictionary(fc.constantFrom('my_chat_member', 'inline_query', 'poll', 'unknown_kind'), anyValue, {
          maxKeys: 2,
        }),
      },
    ),
  )
  .map(([id, rest]) => ({ update_id: id, ...rest }));

const post = (body: unknown, headers: Record<string, string>): FuzzRequest => ({
  method: 'POST',
  path: '/telegram/webhook',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const BATCH = 6;

describe('Telegram webhook under fuzzing', () => {
  it('with the right secret: shaped updates are answered, never 5xx, never hang', async () => {
    const statuses = new Set<number>();
    const sent = await fuzz(
      fc.array(
        update.map((u) => post(u, { [SECRET_HEADER]: TELEGRAM_SECRET })),
        { minLength: BATCH, maxLength: BATCH },
      ),
      async (batch) => {
        for (const res of await sendAll(suite.product.url, batch)) statuses.add(res.status);
      },
      50,
    );
    count('/telegram/webhook (secret)', sent);
    expect(statuses).toContain(200);
    expect(suite.watch.failures).toEqual([]);
  });

  it('without the secret or with a wrong one: every update refused with a 4xx, none handled', async () => {
    const secret = fc.option(
      fc.oneof(
        fc.constantFrom(TELEGRAM_SECRET.slice(0, -1), TELEGRAM_SECRET + 'x', ''),
        fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
      ),
      { nil: undefined },
    );
    const before = suite.product.bot.calls.filter(
      (c) => c.method === 'sendMessage' || c.method === 'editMessageText',
    ).length;
    const sent = await fuzz(
      fc.array(
        fc.tuple(update, secret).map(([u, s]) => post(u, s === undefined ? {} : { [SECRET_HEADER]: s })),
        { minLength: BATCH, maxLength: BATCH },
      ),
      async (batch) => {
        await sendAll(suite.product.url, batch, (req, res) => {
          if (res.status < 400 || res.status >= 500)
            return `forged update answered ${res.status}: ${String(req.body).slice(0, 120)}`;
          if (res.text.trim() === '') return `forged update refused ${res.status} without a reason`;
          return null;
        });
      },
      40,
    );
    count('/telegram/webhook (forged)', sent);
    // Nothing forged reached the bot: it sent no message because of them.
    expect(
      suite.product.bot.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText').length,
    ).toBe(before);
    expect(suite.watch.failures).toEqual([]);
  });

  it('a malformed update (a button press on no message, ids of the wrong type) is answered 200 and ignored', async () => {
    const malformed = [
      { update_id: 501, callback_query: { id: 'q', from: { id: 7 }, chat_instance: 'c', data: 'c:0', message: [] } },
      {
        update_id: 502,
        callback_query: {
          id: 'q',
          from: { id: 'x' },
          chat_instance: 'c',
          data: 'c:0',
          message: { message_id: 1, date: 1, chat: { id: 42, type: 'private' } },
        },
      },
      { update_id: 503, message: { message_id: 1, date: 1, chat: { id: 42, type: 'private' }, from: -5, text: 'hi' } },
      {
        update_id: 504,
        message: { message_id: 1, date: 1, chat: { id: 42, type: 'private' }, from: { id: 7 }, text: { not: 'text' } },
      },
    ];
    const answers = await sendAll(
      suite.product.url,
      malformed.map((u) => post(u, { [SECRET_HEADER]: TELEGRAM_SECRET })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  });

  it('/telegram/*: any method, path, headers and body (with and without the secret)', async () => {
    const paths = pathsUnder('/telegram', ['/webhook', '/webhook/', '']);
    const withSecret = fc.boolean().chain((on) => anyRequestTo(paths, on ? { [SECRET_HEADER]: TELEGRAM_SECRET } : {}));
    const sent = await fuzz(
      fc.array(withSecret, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => void (await sendAll(suite.product.url, batch)),
      45,
    );
    count('/telegram/* (any)', sent);
    expect(suite.watch.failures).toEqual([]);
  });
});
