/**
 * Emptying Redis at noon changes no limit and opens no lock (issue 46, item 1), from outside: the product runs
 * on real PostgreSQL and a Redis server of this file's own (started on a free port, so FLUSHALL empties nothing
 * of anyone else's), and one person pays over USSD (Africa's Talking, with their PIN) and Telegram (a local Bot
 * API server, long polling). They spend most of a low daily limit on USSD; Telegram refuses the next payment
 * with the figures; Redis is emptied; Telegram refuses it again with the same figures, and nothing more is sent.
 * Three wrong PINs lock the person; Redis is emptied; the next dial is still locked, and the People page says
 * why.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { createLogger } from '../../src/log.js';
import { BOT_TOKEN, startFakeBotApi, type FakeBotApi } from '../adapters/telegram/fake-bot-api.js';
import { pressUpdate, textUpdate, USER as TELEGRAM_USER } from '../adapters/telegram/harness.js';
import { serverDatabase, type ServerDatabase } from '../journal/databases.js';
import { startOwnRedis, stopAll } from '../redis/servers.js';
import { AtSession } from './helpers.js';

const OPS_TOKEN = 'limits-kept-ops-token-0123456789';
const AMINA = '+256700888001';
const POLICY = {
  roles: {
    teller: { flows: ['pay', 'check'], perPaymentLimit: { UGX: '10000' }, dailyLimit: { UGX: '10000' } },
  },
  users: {
    ussd: { [AMINA]: { role: 'teller', person: 'amina', pin: hashPin('4821') } },
    telegram: { [String(TELEGRAM_USER)]: { role: 'teller', person: 'amina' } },
    slack: {},
    whatsapp: {},
  },
};

let database: ServerDatabase;
let redis: Redis;
let bot: FakeBotApi;
let app: RunningApp;
beforeAll(async () => {
  database = await serverDatabase('limits_kept');
  const server = await startOwnRedis();
  const redisUrl = `redis://127.0.0.1:${server.port}`;
  redis = new Redis(redisUrl);
  bot = await startFakeBotApi();
  app = await startApp(
    loadConfig({
      PORT: '0',
      LOG_LEVEL: 'silent',
      OPS_TOKEN,
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl,
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_API_ROOT: bot.apiRoot,
      ACCESS_POLICY: JSON.stringify(POLICY),
      RATE_LIMIT_MESSAGES: '1000',
      // The figures are read from the answer itself: on a loaded machine a short deadline answers "still
      // working on it" first, so the deadlines are long enough never to be what a test sees.
      USSD_DEADLINE_MS: '30000',
      CHAT_DEADLINE_MS: '30000',
    }),
    { logger: createLogger('silent') },
  );
});
afterAll(async () => {
  await app?.stop();
  await bot?.close();
  await database?.drop();
  await redis?.quit();
  await stopAll();
});

/** Empties the product's whole Redis (its own server): conversations, records, counters, everything. */
async function emptyRedis(): Promise<void> {
  // FLUSHALL is one atomic command; the running product may write a key of its own the moment after (a rate
  // count, a queue's heartbeat), so nothing is asserted of the size afterwards.
  expect(await redis.flushall()).toBe('OK');
}

/** The number of the choice labelled `label` on a USSD screen (`2. Mobile money`). */
function choice(screen: string, label: RegExp): string {
  for (const line of screen.split('\n')) {
    const m = /^(?:CON |END )?(\d+)[.)]?\s+(.*)$/.exec(line.trim());
    if (m && label.test(m[2]!)) return m[1]!;
  }
  throw new Error(`no choice ${label} on the screen: ${screen}`);
}

/**
 * Pays Sarah `amount` UGX over USSD, typing `pins` in turn when the PIN is asked; stops at the first END screen or
 * at a screen matching `stopAt`. Returns every screen.
 */
async function payByUssd(amount: string, pins: string[], stopAt?: RegExp): Promise<string[]> {
  const ussd = new AtSession(app.url, AMINA);
  let screen = await ussd.dial();
  if (/Continue where you left off/.test(screen)) screen = await ussd.answer(choice(screen, /start over|new/i));
  const typed = [...pins];
  let amountAsked = false;
  const steps: Array<[RegExp, (s: string) => string]> = [
    [/Enter your PIN|Wrong PIN/, () => typed.shift() ?? '0000'],
    [/second payment/i, (s) => choice(s, /send again/i)],
    [/UGX of mobile money to/, (s) => choice(s, /Confirm/)],
    [/What do you want to send/, (s) => choice(s, /Mobile money/)],
    [/Pay whom\?/, (s) => choice(s, /Sarah Nakato/)],
    [/phone number/i, () => '0772000001'],
    [/first name/i, () => 'Sarah'],
    [/last name/i, () => 'Nakato'],
    [/amount/i, () => ((amountAsked = true), amount)],
    [/Pay someone/i, (s) => choice(s, /Pay someone/i)],
  ];
  for (let step = 0; step < 20 && screen.startsWith('CON '); step++) {
    if (stopAt?.test(screen) && amountAsked) break;
    const found = steps.find(([pattern]) => pattern.test(screen));
    if (!found) throw new Error(`no step for the screen: ${screen}`);
    screen = await ussd.answer(found[1](screen));
  }
  return ussd.screens;
}

let updateId = 1;
/** The text of the last message the bot sent or edited. */
const shown = () =>
  bot.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText').at(-1)!.payload as {
    text: string;
    reply_markup?: { inline_keyboard?: Array<Array<{ text: string; callback_data: string }>> };
  };
async function say(text: string) {
  const sent = bot.of('sendMessage').length;
  bot.pushUpdate(textUpdate(updateId++, text));
  await bot.waitForCalls('sendMessage', sent + 1);
  return shown().text;
}
async function press(label: RegExp) {
  const buttons = (shown().reply_markup?.inline_keyboard ?? []).flat();
  const button = buttons.find((b) => label.test(b.text));
  if (!button) throw new Error(`no button ${label} on "${shown().text}": ${buttons.map((b) => b.text).join(', ')}`);
  const answered = bot.of('answerCallbackQuery').length;
  const screens = () => bot.of('sendMessage').length + bot.of('editMessageText').length;
  const before = screens();
  bot.pushUpdate(pressUpdate(updateId++, 99 + bot.of('sendMessage').length, button.callback_data));
  await bot.waitForCalls('answerCallbackQuery', answered + 1);
  // The press is answered before its next screen is shown: wait for that screen, not only the answer.
  await vi.waitFor(() => expect(screens()).toBeGreaterThan(before), { timeout: 20_000, interval: 20 });
  return shown().text;
}

/** Asks to pay Sarah `amount` UGX on Telegram: the screen that answers the amount. */
async function askOnTelegram(amount: string): Promise<string> {
  let screen = await say('/pay');
  for (let step = 0; step < 12; step++) {
    if (/What do you want to send/.test(screen)) screen = await press(/^Mobile money$/);
    else if (/Pay whom\?/.test(screen)) screen = await press(/Sarah Nakato/);
    else if (/phone number of the person/.test(screen)) screen = await say('0772000001');
    else if (/The network knows \+256772000001 as/.test(screen)) screen = await press(/^Pay Sarah Nakato$/i);
    else if (/first name/.test(screen)) screen = await say('Sarah');
    else if (/last name/.test(screen)) screen = await say('Nakato');
    else if (/Enter the amount/.test(screen)) return say(amount);
    else throw new Error(`no step for the Telegram screen: ${screen}`);
  }
  throw new Error(`the amount was never asked: ${screen}`);
}

describe('limits and locks when Redis is emptied', () => {
  it('refuses the same person on another channel with the same figures after Redis is emptied', async () => {
    const paid = await payByUssd('8000', ['4821']);
    expect(paid.at(-1), paid.join('\n---\n')).toMatch(/^END Sent: 8,000 UGX to Sarah Nakato/);
    expect(app.sandbox!.controls.payments()).toHaveLength(1);

    const before = await askOnTelegram('5000');
    expect(before).toMatch(/You can send at most 2,000 UGX today \(8,000 already sent\)/);

    await emptyRedis();
    const after = await askOnTelegram('5000');
    expect(after).toMatch(/You can send at most 2,000 UGX today \(8,000 already sent\)/);
    expect(after).toBe(before);
    expect(app.sandbox!.controls.payments()).toHaveLength(1);
  });

  it('keeps a person locked after three wrong PINs when Redis is emptied', async () => {
    const tried = await payByUssd('500', ['1111', '2222', '3333']);
    expect(tried.join('\n')).toMatch(/Wrong PIN\. 2 attempts left/);
    expect(tried.join('\n')).toMatch(/Wrong PIN\. 1 attempt left/);
    expect(tried.at(-1)).toMatch(/^END Your PIN is locked after too many wrong attempts/);

    await emptyRedis();
    // Told as soon as the amount is known, before the PIN is asked; the right PIN would open nothing.
    const again = await payByUssd('500', ['4821'], /PIN is locked/);
    expect(again.at(-1)).toMatch(/Your PIN is locked after too many wrong attempts/);
    expect(again.join('\n')).not.toMatch(/Enter your PIN|Sent:/);
    expect(app.sandbox!.controls.payments()).toHaveLength(1);

    const res = await fetch(`${app.url}/ops/people.json`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } });
    const people = (await res.json()) as { persons: Array<{ id: string; pinLockedUntil: string | null }> };
    const amina = people.persons.find((p) => p.id === 'amina');
    expect(amina?.pinLockedUntil).not.toBeNull();
    expect(Date.parse(amina!.pinLockedUntil!)).toBeGreaterThan(Date.now());
  });
});
