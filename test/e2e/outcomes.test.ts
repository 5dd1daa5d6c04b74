/**
 * Every state the service can reach is told right, in every channel, end to end: the whole product
 * (startApp with the embedded sandbox, Telegram on a local Bot API server, Slack on a local Web API, USSD
 * through Africa's Talking requests) makes each payment and request through a conversation; the test
 * then plays the web portal, the network and the subscriber with the sandbox's controls over HTTP, and
 * reads what each user was told: the Telegram chat's messages, the Slack direct messages, the USSD
 * screen at the next dial.
 */
import type { Update } from 'grammy/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { startApp } from '../../src/app.js';
import { createLogger } from '../../src/log.js';
import { MadeRecords } from '../../src/conversation/calls/made-records.js';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { BOT_TOKEN as TELEGRAM_TOKEN, startFakeBotApi, type FakeBotApi } from '../adapters/telegram/fake-bot-api.js';
import { CHAT, pressUpdate, textUpdate } from '../adapters/telegram/harness.js';
import {
  BOT_TOKEN as SLACK_TOKEN,
  buttonLabelled,
  buttonOf,
  FakeSlack,
  SIGNING_SECRET,
  SlackSender,
  textOf,
  USER,
} from '../adapters/slack/harness.js';
import { AtSession } from './helpers.js';
import { reading, until } from '../until.js';
import { productDatabase } from '../journal/server-database.js';

const number = (behaviour: string) => TEST_NUMBERS.find((t) => t.behaviour === behaviour)!.phonenumber;
const SARAH = number('registered');

let app: RunningApp;
let bot: FakeBotApi;
let slack: FakeSlack;
let sender: SlackSender;

beforeAll(async () => {
  bot = await startFakeBotApi();
  slack = new FakeSlack();
  await slack.start();
  app = await startApp(
    loadConfig({
      ...(await productDatabase()),
      PORT: '0',
      TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
      TELEGRAM_API_ROOT: bot.apiRoot,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_BOT_TOKEN: SLACK_TOKEN,
      SLACK_API_URL: slack.apiUrl,
    }),
    { logger: createLogger((process.env.E2E_LOG as 'silent') ?? 'silent') },
  );
  sender = new SlackSender(app.url, slack);
});
afterAll(async () => {
  await app?.stop();
  await bot?.close();
  await slack?.close();
});

/** A sandbox control over HTTP, with the sandbox organization's key. */
async function control(method: string, path: string, json?: unknown): Promise<any> {
  const res = await fetch(`${app.url}/sandbox${path}`, {
    method,
    headers: {
      authorization: 'Token sandbox-key',
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const body = await res.json();
  expect(res.status, `${method} ${path}: ${JSON.stringify(body)}`).toBeLessThan(300);
  return body;
}

/**
 * The short ref a screen names (`Ref MC-…`, ours) and the service's id of that operation, as the journal links
 * them once the service answered: the sandbox's controls and its notifications' words name the service's id.
 */
async function refsOf(screen: string): Promise<{ short: string; id: string }> {
  const short = /Ref (MC-[A-Z0-9]+)\./.exec(screen)![1]!;
  const op = await until(
    `the service's id of ${short}`,
    reading(
      async () => (await app.journal.search({ ref: short })).items[0],
      (row) => Boolean(row?.service_id),
    ),
    { timeoutMs: 10_000, everyMs: 50 },
  );
  return { short, id: op!.service_id! };
}

/**
 * Our short ref of the operation of that kind the service knows by `id` (a payment and a request may share one),
 * once the journal links them: the service's answer is written there after the chat was answered.
 */
const shortOf = async (kind: 'payment' | 'request', id: string): Promise<string> =>
  (
    await until(
      `the journal's ${kind} of service id ${id}`,
      async () => (await app.journal.search({ id, kind })).items[0],
      { timeoutMs: 10_000, everyMs: 50 },
    )
  ).short_ref;

const approvalRules = (rules: Array<{ currency: string; above: string }>) =>
  control('PATCH', '/organization', { approvalRules: rules });

// Telegram: one private chat, updates by long polling.
let updateId = 1;
const telegramScreen = () =>
  bot.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText').at(-1)!.payload;
async function say(text: string) {
  const sent = bot.of('sendMessage').length;
  bot.pushUpdate(textUpdate(updateId++, text) as Update);
  await bot.waitForCalls('sendMessage', sent + 1);
  return telegramScreen();
}
async function press(label: string) {
  const screen = telegramScreen();
  const buttons = (screen.reply_markup?.inline_keyboard ?? []).flat() as Array<{ text: string; callback_data: string }>;
  const button = buttons.find((b) => b.text === label);
  if (!button) throw new Error(`no button "${label}" on "${screen.text}"`);
  const answered = bot.of('answerCallbackQuery').length;
  const messageId = bot.calls.filter((c) => c.method === 'sendMessage').length + 99;
  bot.pushUpdate(pressUpdate(updateId++, messageId, button.callback_data) as Update);
  await bot.waitForCalls('answerCallbackQuery', answered + 1);
  return telegramScreen();
}
/** Waits until the Telegram chat was told a message matching `pattern`. */
const toldOnTelegram = (pattern: RegExp) =>
  until(
    `Telegram to be told ${pattern}`,
    reading(
      async () => bot.of('sendMessage').map((m) => String(m.text)),
      (texts) => texts.some((t) => pattern.test(t)),
    ),
    { timeoutMs: 10_000, everyMs: 50 },
  ).then((texts) => texts.find((t) => pattern.test(t))!);

// Slack: `/momo <flow>`, buttons and the answer modal; outcomes come as direct messages.
let click = 0;
async function slackFlow(
  flow: string,
  steps: Array<[RegExp, { press: string } | { type: string }]>,
  until: RegExp,
): Promise<string> {
  let blocks = ((await (await sender.command(flow)).json()) as { blocks: Array<Record<string, any>> }).blocks;
  for (let screen = 0; screen < 15 && !until.test(textOf(blocks)); screen++) {
    const text = textOf(blocks);
    const step = steps.find(([pattern]) => pattern.test(text));
    if (!step) throw new Error(`no step for Slack screen: ${text}`);
    const action = step[1];
    const id = `outcome-${++click}`;
    if ('press' in action) await sender.click(buttonLabelled(blocks, action.press), id);
    else {
      await sender.click(buttonOf(blocks, 'momo_answer'), id);
      await sender.submit((await slack.next('views.open')).body.view, action.type);
    }
    blocks = (await slack.next('respond')).body.blocks;
  }
  return textOf(blocks);
}
const toldOnSlack = (pattern: RegExp) =>
  until(
    `Slack to be told ${pattern}`,
    reading(
      async () =>
        slack.of('chat.postMessage').map((m) => `${m.body.text ?? ''} ${m.body.blocks ? textOf(m.body.blocks) : ''}`),
      (texts) => texts.some((t) => pattern.test(t)),
    ),
    { timeoutMs: 10_000, everyMs: 50 },
  ).then((texts) => {
    const dm = slack
      .of('chat.postMessage')
      .find((m) => pattern.test(`${m.body.text ?? ''} ${m.body.blocks ? textOf(m.body.blocks) : ''}`))!;
    expect(dm.body.channel).toBe(USER);
    return texts.find((t) => pattern.test(t))!;
  });

// USSD: Africa's Talking sessions; outcomes wait for the next dial.
async function ussd(phone: string, answers: string[]): Promise<string> {
  const session = new AtSession(app.url, phone);
  await session.dial();
  let screen = '';
  for (const a of answers) screen = await session.answer(a);
  return screen;
}
const toldAtNextDial = (phone: string, pattern: RegExp) =>
  until(
    `the next dial of ${phone} to show ${pattern}`,
    reading(
      () => new AtSession(app.url, phone).dial(),
      (screen) => pattern.test(screen),
    ),
    { timeoutMs: 10_000, everyMs: 50 },
  );

/**
 * The newest of the sandbox's records whose metadata names this chat, read in process (the API allows 30
 * reads a minute, which the product's own calls share).
 */
const newest = (kind: 'payments' | 'collectionRequests', chat: string): any =>
  app
    .sandbox!.controls[kind]()
    .filter((r) => (r.metadata as Record<string, unknown> | null)?.chat === chat)
    .at(-1);

const TELEGRAM_PAY = async (phone: string, amount: string) => {
  await say('/pay');
  await press('Mobile money');
  await say(phone);
  await say('Sarah');
  await say('Nakato');
  await say(amount);
  await press('UGX');
  await say('School fees');
  expect((await press('Confirm')).text).toMatch(/^Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./);
};
const TELEGRAM_REQUEST = async (phone: string, amount: string, reason: string) => {
  await say('/request');
  await say(phone);
  // A Ugandan chat (DEFAULT_COUNTRY) requests in UGX, its one currency: no currency screen.
  await say(amount);
  await say(reason);
  await press('No');
  expect((await press('Send request')).text).toMatch(/^Asked .+ Ref MC-[A-Z0-9]+\./);
};

describe('payments', () => {
  it('USSD: approval needed says who must act, at the next dial; then rejected with its reason', async () => {
    const me = '+256700555001';
    await approvalRules([{ currency: 'UGX', above: '10000' }]);
    const done = await ussd(me, ['1', '1', '0772000001', 'Sarah', 'Nakato', '20000', '1', 'Rent', '1', '1234']);
    expect(done).toMatch(/^END /);
    const waiting = await toldAtNextDial(me, /Needs approval/);
    expect(waiting).toMatch(/20,000 UGX/);
    expect(waiting).toMatch(/Ref MC-[A-Z0-9]+\./);
    expect(waiting.replace(/^(CON|END) /, '').length).toBeLessThanOrEqual(182);
    const payment = newest('payments', `ussd:${me}`);
    await until(
      'approval requested',
      reading(
        async () => newest('payments', `ussd:${me}`).state,
        (state) => state === 'approval_requested',
      ),
      { timeoutMs: 10_000, everyMs: 50 },
    );
    await control('POST', `/payments/${payment.id}/reject`, { reason: 'Over budget' });
    expect(await toldAtNextDial(me, /Rejected: 20,000 UGX to \+256772000001\. Ref MC-[A-Z0-9]+\. Over budget/)).toMatch(
      /20,000 UGX/,
    );
    await approvalRules([]);
  });

  it('Telegram: approval needed, then cancelled with its reason', async () => {
    await approvalRules([{ currency: 'UGX', above: '10000' }]);
    await TELEGRAM_PAY('+256772000001', '30000');
    expect(await toldOnTelegram(/needs approval/)).toMatch(/approver/);
    const payment = newest('payments', `telegram:${CHAT}`);
    await control('POST', `/payments/${payment.id}/cancel`, { reason: 'Paid in cash' });
    const short = await shortOf('payment', String(payment.id));
    expect(await toldOnTelegram(new RegExp(`Payment ${short} .*cancelled: Paid in cash`))).toMatch(/30,000 UGX/);
    await approvalRules([]);
  });

  it('Slack: a transfer on hold for an administrator, released by approve, then done', async () => {
    const last = await slackFlow(
      'pay',
      [
        [/What do you want to send/, { press: 'Mobile money' }],
        [/phone number of the person/, { type: number('payment_needs_admin') }],
        [/first name/, { type: 'Janet' }],
        [/last name/, { type: 'Nansubuga' }],
        [/Enter the amount/, { type: '4000' }],
        [/Choose the currency/, { press: 'UGX' }],
        [/description/, { type: 'Stock' }],
        [/^Send 4,000/, { press: 'Confirm' }],
      ],
      /Sent: [\d,]+ UGX to .+\. Ref MC-[A-Z0-9]+\./,
    );
    const { short, id } = await refsOf(last);
    expect(await toldOnSlack(new RegExp(`Payment ${short} .*on hold: an administrator`))).toMatch(/4,000 UGX/);
    await control('POST', `/payments/${id}/approve`, {});
    expect(
      await toldOnSlack(new RegExp(`Done: 4,000 UGX reached .*\\. Ref ${short} \\(service ${id}\\)\\.`)),
    ).toBeTruthy();
  });
});

describe('collection requests', () => {
  it('Slack: a request the subscriber cannot pay fails, with the reason', async () => {
    const last = await slackFlow(
      'request',
      [
        [/phone number of the person who should pay/, { type: number('collection_fails') }],
        [/amount to request/, { type: '1500' }],
        [/Choose the currency/, { press: 'UGX' }],
        [/short reason/, { type: 'Water bill' }],
        [/instructions/, { press: 'No' }],
        [/^Ask /, { press: 'Send request' }],
      ],
      /^Asked .+ Ref MC-[A-Z0-9]+\./,
    );
    const { short } = await refsOf(last);
    await control('POST', '/clock/advance', { seconds: 10 });
    expect(
      await toldOnSlack(new RegExp(`request ${short} \\(service \\d+\\) of 1,500 UGX .*failed: .*not hold enough`)),
    ).toBeTruthy();
  });

  it('Telegram: a request paid, then its payment reversed', async () => {
    await TELEGRAM_REQUEST(SARAH, '2500', 'Lunch club');
    const request = newest('collectionRequests', `telegram:${CHAT}`);
    const collection = await control('POST', '/collections', {
      phonenumber: SARAH,
      amount: '2500',
      currency: 'UGX',
      reference: 'club',
    });
    expect(collection.collection_request.id).toBe(request.id);
    const short = await shortOf('request', String(request.id));
    expect(
      await toldOnTelegram(new RegExp(`request ${short} \\(service \\d+\\) of 2,500 UGX .* was paid`)),
    ).toBeTruthy();
    expect(await toldOnTelegram(/You received 2,500 UGX from \+256772000001/)).toBeTruthy();
    await control('POST', `/collections/${collection.id}/reverse`);
    expect(
      await toldOnTelegram(new RegExp(`request ${short} \\(service \\d+\\) of 2,500 UGX .* was reversed`)),
    ).toBeTruthy();
  });

  it('USSD: a request that expired unpaid, at the next dial', async () => {
    const me = '+256700555002';
    const done = await ussd(me, ['2', '0772000001', '3300', '1', 'Dues', '2', '1']);
    const { short } = await refsOf(done);
    await control('POST', '/clock/advance', { seconds: 25 * 3600 });
    // Its full words (with our ref) or, past the note's room, their short twin.
    expect(await toldAtNextDial(me, new RegExp(`Expired unpaid: 3,300 UGX from \\+\\d+\\. Ref ${short}\\.`))).toMatch(
      /^CON /,
    );
  });

  it('each occurrence of a recurring request is told as its own request', async () => {
    const chat = `telegram:${CHAT}`;
    const now = new Date((await control('GET', '/clock')).now);
    const at = (ms: number) => {
      const d = new Date(now.getTime() + ms);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${p(d.getUTCDate())}/${p(d.getUTCMonth() + 1)}/${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
    };
    // The request flow makes one-off requests: a recurring one is made here with the metadata it would carry,
    // recorded as the product records what it makes (notifications are believed only for that).
    const made = new MadeRecords({ store: app.store, logger: app.logger });
    await made.intend({
      kind: 'request',
      ref: 'recurring-1',
      chat,
      amount: '800',
      currency: 'UGX',
      payee: number('pays_requests'),
    });
    const first = await app.client.collectionRequests.create(
      {
        phonenumber: number('pays_requests'),
        amount: '800',
        currency: 'UGX',
        reason: 'Weekly dues',
        metadata: { chat, ref: 'recurring-1' },
        subscription_settings: { start_date: at(60_000), end_date: at(3 * 3_600_000 + 120_000), frequency: 'hourly' },
      },
      { key: 'k-outcomes-310' },
    );
    await made.accepted('recurring-1', String(first.id));
    await control('POST', '/clock/advance', { seconds: 4 * 3600 });
    const ids = [Number(first.id), Number(first.id) + 1, Number(first.id) + 2, Number(first.id) + 3];
    for (const id of ids)
      expect(await toldOnTelegram(new RegExp(`request ${id} of 800 UGX from \\+256772000011 was paid`))).toBeTruthy();
  });

  it('an organization whose saved version is below v5 still has a received collection told in its chat', async () => {
    await control('PATCH', '/organization', { version: 'v2' });
    try {
      await TELEGRAM_REQUEST('+256772345678', '4100', 'Old version');
      const request = newest('collectionRequests', `telegram:${CHAT}`);
      await control('POST', '/collections', {
        phonenumber: '+256772345678',
        amount: '4100',
        currency: 'UGX',
        reference: 'v2',
      });
      // The notification (rendered at v2) names the request by id only.
      const received = app
        .sandbox!.controls.events()
        .filter((e) => e.type === 'collection.received')
        .at(-1) as any;
      expect(received.data.collection_request).toBe(request.id);
      expect(await toldOnTelegram(/You received 4,100 UGX from \+256772345678/)).toMatch(
        /for your request MC-[A-Z0-9]+ \(service \d+\) \(their reference: v2\)/,
      );
    } finally {
      await control('PATCH', '/organization', { version: 'v5' });
    }
  });
});
