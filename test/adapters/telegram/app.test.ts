/**
 * The product as it is run: startApp with TELEGRAM_BOT_TOKEN and TELEGRAM_API_ROOT against a local Bot API
 * server, with the embedded sandbox: long polling without PUBLIC_URL, the webhook with it. A user pays
 * someone and buys an exam pin by sending messages and pressing buttons.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { deriveSecretToken, WEBHOOK_PATH } from '../../../adapters/telegram/webhook.js';
import type { Update } from 'grammy/types';
import { BOT_TOKEN, startFakeBotApi, type FakeBotApi } from './fake-bot-api.js';
import { CHAT, pressUpdate, textUpdate } from './harness.js';
import { productDatabase } from '../../journal/server-database.js';

let app: RunningApp | undefined;
let api: FakeBotApi | undefined;
afterEach(async () => {
  await app?.stop();
  await api?.close();
  app = api = undefined;
});

/**
 * Starts the product with a fresh local Bot API server; returns a user of one chat. Updates reach the bot
 * by long polling, or by webhook calls (PUBLIC_URL set; Telegram's calls are posted here with the secret).
 */
async function startChat(delivery: 'polling' | 'webhook' = 'polling') {
  api = await startFakeBotApi();
  const bot = api;
  // Webhook mode: the service's notifications would go to PUBLIC_URL too, which nothing serves here.
  const publicUrl = delivery === 'webhook' ? { PUBLIC_URL: 'https://127.0.0.1:9' } : {};
  const config = loadConfig({
    ...(await productDatabase()),
    PORT: '0',
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    TELEGRAM_API_ROOT: bot.apiRoot,
    ...publicUrl,
  });
  const running = await startApp(config, { logger: createLogger('silent') });
  app = running;
  let updateId = 1;
  let live = 0;
  let last: Update | undefined;
  const deliver = async (update: Update) => {
    last = update;
    if (delivery === 'polling') return bot.pushUpdate(update);
    const response = await fetch(`${running.url}${WEBHOOK_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': deriveSecretToken(BOT_TOKEN) },
      body: JSON.stringify(update),
    });
    expect(response.status).toBe(200);
  };
  const screen = () =>
    bot.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText').at(-1)!.payload;
  return {
    bot,
    screen,
    /** Sends a message and waits for the bot's answer. */
    async say(text: string) {
      const sent = bot.of('sendMessage').length;
      await deliver(textUpdate(updateId++, text));
      await bot.waitForCalls('sendMessage', sent + 1);
      live = 99 + bot.of('sendMessage').length;
      return screen();
    },
    /** Waits until the bot has sent `count` messages in all (the last one on its own: a late answer), which shows the prompt. */
    async sent(count: number) {
      await bot.waitForCalls('sendMessage', count);
      live = 99 + bot.of('sendMessage').length;
      return screen();
    },
    /** Presses the button with this label on the message showing the prompt, and waits for the answer. */
    async press(label: string) {
      const buttons = (screen().reply_markup?.inline_keyboard ?? []).flat() as Array<{
        text: string;
        callback_data: string;
      }>;
      const button = buttons.find((b) => b.text === label);
      if (!button)
        throw new Error(`no button "${label}" on "${screen().text}": ${buttons.map((b) => b.text).join(', ')}`);
      const answered = bot.of('answerCallbackQuery').length;
      await deliver(pressUpdate(updateId++, live, button.callback_data));
      await bot.waitForCalls('answerCallbackQuery', answered + 1);
      return screen();
    },
    /** Telegram delivers the last update again (as far as it knows, the webhook call did not finish). */
    redeliver: () => deliver(last!),
  };
}

describe('the product on long polling', () => {
  it('pays someone and tells the user when it completes', async () => {
    const user = await startChat();
    expect(user.bot.of('setMyCommands')).toHaveLength(1);
    await user.say('/start');
    await user.press('Pay someone');
    await user.press('Mobile money');
    await user.say('+256772000001');
    await user.say('Sarah');
    await user.say('Nakato');
    await user.say('5000');
    await user.press('UGX');
    const sentBefore = user.bot.of('sendMessage').length;
    const submitted = await user.press('Confirm');
    expect(submitted.text).toMatch(/^Sent: 5,000 UGX to Sarah Nakato\. Ref MC-[A-Z0-9]+\./);
    expect(submitted.reply_markup).toBeUndefined();

    // The embedded sandbox settles the payment and notifies; the notifier tells the chat.
    await user.bot.waitForCalls('sendMessage', sentBefore + 1);
    const told = user.bot.of('sendMessage').at(-1)!;
    expect(told.chat_id).toBe(String(CHAT));
    expect(told.text).toMatch(/5,?000/);
    expect(app!.sandbox!.controls.payments()).toHaveLength(1);
  });

  it('buys an exam pin and shows it', async () => {
    const user = await startChat();
    await user.say('/pin');
    await user.press('JAMB');
    await user.press('JAMB UTME registration PIN 6,200 NGN');
    await user.press('1');
    const summary = await user.say('1234567890');
    expect(summary.text).toMatch(/ADEBAYO OLUWASEUN TUNDE/);
    const bought = await user.press('Confirm');
    const [purchase] = app!.sandbox!.controls.purchases() as Array<Record<string, any>>;
    expect(app!.sandbox!.controls.purchases()).toHaveLength(1);
    const pin = JSON.stringify(purchase).match(/"pin":"(\d+)"/)?.[1];
    expect(pin).toBeDefined();
    expect(bought.text).toContain(pin!);
    expect(bought.reply_markup).toBeUndefined();
  });

  it('shows a question the engine answered late with its keyboard, and a press on it goes on', async () => {
    const user = await startChat();
    await user.say('/pin');
    await user.press('JAMB');
    await user.press('JAMB UTME registration PIN 6,200 NGN');
    await user.press('1');
    // The check of the profile code outlasts the chat's deadline (2.5 s): "still working on it", its question told late.
    // The sandbox runs in this process: its 3.5 s timer, set after the deadline's, always fires after it.
    app!.sandbox!.controls.setFaults({ latencyMs: 3500 });
    const removed = user.bot.of('editMessageReplyMarkup').length;
    expect((await user.say('1234567890')).text).toMatch(/still working on it/);
    const waiting = 99 + user.bot.of('sendMessage').length;
    const summary = await user.sent(user.bot.of('sendMessage').length + 1);
    app!.sandbox!.controls.setFaults({ latencyMs: 0 });
    expect(summary.text).toMatch(/ADEBAYO OLUWASEUN TUNDE/);
    expect((summary.reply_markup?.inline_keyboard ?? []).flat().map((b: { text: string }) => b.text)).toContain(
      'Confirm',
    );
    // The Back / Home of "still working on it" go (after the late message is recorded as the one shown).
    await user.bot.waitForCalls('editMessageReplyMarkup', removed + 2);
    expect(user.bot.of('editMessageReplyMarkup').at(-1)).toEqual({ chat_id: String(CHAT), message_id: waiting });
    const bought = await user.press('Confirm');
    expect(app!.sandbox!.controls.purchases()).toHaveLength(1);
    expect(bought.text).not.toMatch(/expired|no longer/i);
    expect(bought.reply_markup).toBeUndefined();
  });

  it('takes updates on the webhook: a payment, and a redelivered confirmation pays nothing twice', async () => {
    const user = await startChat('webhook');
    expect(user.bot.of('setWebhook')).toEqual([
      {
        url: `https://127.0.0.1:9${WEBHOOK_PATH}`,
        secret_token: deriveSecretToken(BOT_TOKEN),
        allowed_updates: ['message', 'callback_query'],
      },
    ]);
    await user.say('/pay');
    expect((await user.press('Mobile money')).message_id).toBe(100);
    await user.say('+256772000001');
    await user.say('Sarah');
    await user.say('Nakato');
    await user.say('5000');
    await user.press('UGX');
    expect(user.screen().text).toMatch(/5,000 UGX.*Sarah Nakato.*\+256772000001/);
    expect((await user.press('Confirm')).text).toMatch(/^Sent: 5,000 UGX to Sarah Nakato\. Ref MC-[A-Z0-9]+\./);
    const payments = app!.sandbox!.controls.payments();
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ amount: '5000.00', metadata: { chat: `telegram:${CHAT}` } });

    const calls = user.bot.calls.length;
    await user.redeliver();
    expect(user.bot.calls).toHaveLength(calls);
    expect(app!.sandbox!.controls.payments()).toHaveLength(1);
  });
});
