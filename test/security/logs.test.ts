/**
 * What the logs reveal: the product logs at `trace` into a captured pino destination while one user on
 * each channel (USSD, Telegram, Slack, WhatsApp) pays someone from the first screen to the outcome notification.
 * No line may hold an API key, a token or secret, the PIN, or a full phone number (payer's or payee's).
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { createLogger, maskPhone } from '../../src/log.js';
import type { RunningApp } from '../../src/app.js';
import { AtSession } from '../e2e/helpers.js';
import { reading, until } from '../until.js';
import { BOT_TOKEN, type FakeBotApi } from '../adapters/telegram/fake-bot-api.js';
import {
  BOT_TOKEN as SLACK_BOT_TOKEN,
  FakeSlack,
  SIGNING_SECRET,
  SlackSender,
  buttonLabelled,
  buttonOf,
  textOf,
} from '../adapters/slack/harness.js';
import { TELEGRAM_SECRET, WEBHOOK_PASSWORD, startFuzzProduct, type Product } from '../fuzz/harness.js';
import { TelegramUser } from './drivers.js';
import { APP_SECRET, VERIFY_TOKEN, wordsOf, WhatsAppUser } from '../adapters/whatsapp/deliveries.js';
import { TOKEN as WHATSAPP_TOKEN } from '../adapters/whatsapp/fake-graph-api.js';

const PIN = '73905168';
const USSD_PAYER = '+256772444001';
const WHATSAPP_PAYER = '256772444002';
const API_KEY = 'logs-test-api-key-5f2c';
const VENDING_KEY = 'logs-test-vending-key-9d1e';
/** The payee, in every form a number may be written: what must not appear is its subscriber part. */
const PAYEE = '0772000001';
const SECRETS = [
  API_KEY,
  VENDING_KEY,
  BOT_TOKEN,
  SLACK_BOT_TOKEN,
  SIGNING_SECRET,
  TELEGRAM_SECRET,
  WEBHOOK_PASSWORD,
  WHATSAPP_TOKEN,
  APP_SECRET,
  VERIFY_TOKEN,
];
const FULL_NUMBERS = [USSD_PAYER.slice(4), PAYEE.slice(1), WHATSAPP_PAYER.slice(3)]; // 772444001, 772000001, 772444002

const lines: string[] = [];
const destination = new Writable({
  write(chunk, _encoding, done) {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});

let running: Product;
let app: RunningApp;
let bot: FakeBotApi;
let slack: FakeSlack;
let stopped = false;
beforeAll(async () => {
  const policy = {
    roles: {
      payer: {
        flows: ['pay', 'request', 'check', 'data', 'pin'],
        perPaymentLimit: { '*': '100000' },
        dailyLimit: { '*': '1000000' },
      },
    },
    users: {
      telegram: { '*': { role: 'payer' } },
      slack: { '*': { role: 'payer' } },
      ussd: { '*': { role: 'payer', pin: hashPin(PIN) } },
      whatsapp: { '*': { role: 'payer' } },
    },
  };
  running = await startFuzzProduct(
    {
      SANDBOX_API_KEY: API_KEY,
      SANDBOX_VENDING_API_KEY: VENDING_KEY,
      ACCESS_POLICY: JSON.stringify(policy),
      RATE_LIMIT_MESSAGES: '30',
    },
    createLogger('trace', destination),
  );
  ({ app, bot, slack } = running);
});
afterAll(async () => {
  if (!stopped) await running?.stop();
});

const product = (): Product => running;

describe('logs of a whole payment on every channel', () => {
  it('USSD: dial to PIN to outcome', async () => {
    const ussd = new AtSession(app.url, USSD_PAYER);
    await ussd.dial();
    await ussd.answer('1');
    await ussd.answer('1');
    let screen = await ussd.answer(PAYEE);
    if (/first name/i.test(screen)) {
      await ussd.answer('Sarah');
      screen = await ussd.answer('Nakato');
    }
    expect(screen).toMatch(/amount/i);
    await ussd.answer('5000');
    await ussd.answer('1');
    await ussd.answer('rent');
    expect(await ussd.answer('1')).toMatch(/PIN/);
    expect(await ussd.answer(PIN)).toMatch(/^END /);
  });

  it('Telegram: /pay to Confirm', async () => {
    const user = new TelegramUser(product(), 4242);
    let screen = await user.say('/pay');
    for (let step = 0; step < 12 && !/^Sent: |processing/i.test(screen); step++) {
      if (/What do you want to send/.test(screen)) screen = await user.press('Mobile money');
      else if (/phone number of the person/.test(screen)) screen = await user.say(PAYEE);
      else if (/first name/i.test(screen)) screen = await user.say('Sarah');
      else if (/last name/i.test(screen)) screen = await user.say('Nakato');
      else if (/Enter the amount/.test(screen)) screen = await user.say('5000');
      else if (/currency/i.test(screen)) screen = await user.press('UGX');
      else if (/description/i.test(screen)) screen = await user.say('lunch');
      else if (/^Send /.test(screen)) screen = await user.press('Confirm');
      else throw new Error(`no step for: ${screen}`);
    }
    expect(screen).toMatch(/^Sent: |processing/i);
  });

  it('Slack: /momo, buttons and the answer modal to Confirm', async () => {
    const sender = new SlackSender(app.url, slack);
    let blocks = ((await (await sender.command('')).json()) as { blocks: Array<Record<string, any>> }).blocks;
    let click = 0;
    const respond = async () => (await slack.next('respond')).body.blocks as Array<Record<string, any>>;
    await sender.click(buttonLabelled(blocks, 'Pay someone'), `logs-${click++}`);
    blocks = await respond();
    const type = async (text: string) => {
      await sender.click(buttonOf(blocks, 'momo_answer'), `logs-${click++}`);
      const opened = await slack.next('views.open');
      await sender.submit(opened.body.view, text);
      return respond();
    };
    const press = async (label: string) => {
      await sender.click(buttonLabelled(blocks, label), `logs-${click++}`);
      return respond();
    };
    for (let step = 0; step < 12 && !/^Sent: |processing/i.test(textOf(blocks)); step++) {
      const text = textOf(blocks);
      if (/What do you want to send/.test(text)) blocks = await press('Mobile money');
      else if (/phone number of the person/.test(text)) blocks = await type(PAYEE);
      else if (/first name/i.test(text)) blocks = await type('Sarah');
      else if (/last name/i.test(text)) blocks = await type('Nakato');
      else if (/Enter the amount/.test(text)) blocks = await type('5000');
      else if (/currency/i.test(text)) blocks = await press('UGX');
      else if (/description/i.test(text)) blocks = await type('lunch');
      else if (/^Send /.test(text)) blocks = await press('Confirm');
      else throw new Error(`no step for: ${text}`);
    }
    expect(textOf(blocks)).toMatch(/^Sent: |processing/i);
  });

  it('WhatsApp: a message to Confirm', async () => {
    const user = new WhatsAppUser(app.url, running.graph, WHATSAPP_PAYER);
    let screen = wordsOf(await user.say('/pay'));
    for (let step = 0; step < 12 && !/^Sent: |processing/i.test(screen); step++) {
      if (/What do you want to send/.test(screen)) screen = wordsOf(await user.tap('Mobile money'));
      else if (/phone number of the person/.test(screen)) screen = wordsOf(await user.say(PAYEE));
      else if (/first name/i.test(screen)) screen = wordsOf(await user.say('Sarah'));
      else if (/last name/i.test(screen)) screen = wordsOf(await user.say('Nakato'));
      else if (/Enter the amount/.test(screen)) screen = wordsOf(await user.say('5000'));
      else if (/currency/i.test(screen)) screen = wordsOf(await user.tap('UGX'));
      else if (/description/i.test(screen)) screen = wordsOf(await user.say('lunch'));
      else if (/^Send /.test(screen)) screen = wordsOf(await user.tap('Confirm'));
      else throw new Error(`no step for: ${screen}`);
    }
    expect(screen).toMatch(/^Sent: |processing/i);
  });

  it('the outcomes are notified, and no log line holds a secret, the PIN or a full phone number', async () => {
    const payments = () => app.sandbox!.controls.payments().length;
    expect(payments()).toBe(4);
    await app.sandbox!.controls.advanceClock(600);
    await until(
      'the Telegram outcome message',
      reading(
        async () =>
          bot.of('sendMessage').filter((m) => String(m.chat_id) === '4242' && /5,?000/.test(String(m.text))).length,
        (n) => n >= 1,
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    await running.stop();
    stopped = true;
    // Something was logged at every layer: requests, the engine, the adapters.
    expect(lines.length).toBeGreaterThan(20);
    const all = lines.join('\n');
    expect(all).toMatch(/ussd hop/);
    expect(all).toMatch(/telegram/i);
    // Numbers are logged, masked: enough to tell users apart.
    expect(all).toContain(maskPhone(USSD_PAYER));
    expect(all).toContain(maskPhone(WHATSAPP_PAYER));
    for (const secret of SECRETS)
      expect(
        lines.filter((l) => l.includes(secret)),
        `a log line holds ${secret}`,
      ).toEqual([]);
    expect(
      lines.filter((l) => l.includes(PIN)),
      'a log line holds the PIN',
    ).toEqual([]);
    for (const digits of FULL_NUMBERS)
      expect(
        lines.filter((l) => l.includes(digits)),
        `a log line holds the number …${digits}`,
      ).toEqual([]);
  });
});
