/**
 * The product as it is run: startApp with TELEGRAM_BOT_TOKEN and TELEGRAM_API_ROOT (no PUBLIC_URL, so long
 * polling) against a local Bot API server, with the embedded sandbox. A user pays someone and buys an exam
 * pin by sending messages and pressing buttons.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { BOT_TOKEN, startFakeBotApi, type FakeBotApi } from './fake-bot-api.js';
import { CHAT, pressUpdate, textUpdate } from './harness.js';

let app: RunningApp | undefined;
let api: FakeBotApi | undefined;
afterEach(async () => {
  await app?.stop();
  await api?.close();
  app = api = undefined;
});

/** Starts the product polling a fresh local Bot API server; returns a user of one chat. */
async function startChat() {
  api = await startFakeBotApi();
  const bot = api;
  app = await startApp(loadConfig({ PORT: '0', TELEGRAM_BOT_TOKEN: BOT_TOKEN, TELEGRAM_API_ROOT: bot.apiRoot }), { logger: createLogger('silent') });
  let updateId = 1;
  let live = 0;
  const screen = () => bot.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText').at(-1)!.payload;
  return {
    bot,
    screen,
    /** Sends a message and waits for the bot's answer. */
    async say(text: string) {
      const sent = bot.of('sendMessage').length;
      bot.pushUpdate(textUpdate(updateId++, text));
      await bot.waitForCalls('sendMessage', sent + 1);
      live = 99 + bot.of('sendMessage').length;
      return screen();
    },
    /** Presses the button with this label on the message showing the prompt, and waits for the answer. */
    async press(label: string) {
      const buttons = (screen().reply_markup?.inline_keyboard ?? []).flat() as Array<{ text: string; callback_data: string }>;
      const button = buttons.find((b) => b.text === label);
      if (!button) throw new Error(`no button "${label}" on "${screen().text}": ${buttons.map((b) => b.text).join(', ')}`);
      const answered = bot.of('answerCallbackQuery').length;
      bot.pushUpdate(pressUpdate(updateId++, live, button.callback_data));
      await bot.waitForCalls('answerCallbackQuery', answered + 1);
      return screen();
    },
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
    await user.say('Lunch');
    const sentBefore = user.bot.of('sendMessage').length;
    const submitted = await user.press('Confirm');
    expect(submitted.text).toMatch(/submitted/i);
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
    await user.press('JAMB UTME registration PIN 6200');
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
});
