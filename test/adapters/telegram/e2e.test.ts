/**
 * The real engine, flows, services and client against the sandbox, behind the Telegram adapter: a user pays
 * someone by sending messages and pressing buttons, posted to the webhook over HTTP like Telegram would.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type ConversationEngine } from '../../../src/conversation/engine.js';
import { MemoryStore } from '../../../src/conversation/memory-store.js';
import { AccessPolicy, demoPolicy } from '../../../src/conversation/policy.js';
import { createServices } from '../../../src/conversation/services.js';
import type { Notifier } from '../../../src/conversation/types.js';
import { createLogger } from '../../../src/log.js';
import { MomoClient } from '../../../src/momo/index.js';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { CHAT, pressUpdate, startHarness, textUpdate, type Harness } from './harness.js';

let harness: Harness | undefined;
let sandbox: Sandbox | undefined;
let server: Server | undefined;
let engine: ConversationEngine | undefined;
afterEach(async () => {
  await engine?.drain();
  await harness?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await sandbox?.close();
  harness = sandbox = server = engine = undefined;
});

async function startProduct(): Promise<{ harness: Harness; sandbox: Sandbox }> {
  const logger = createLogger('silent');
  sandbox = createSandbox({ logger, autoAdvance: false });
  const app = express().use(sandbox.app);
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new MomoClient({ baseUrl: url, apiKey: 'sandbox-key', vendingUrl: `${url}/vending`, vendingApiKey: 'sandbox-vending-key', version: 'v5' });
  const store = new MemoryStore();
  const policy = new AccessPolicy(demoPolicy());
  let notifier: Notifier | undefined;
  engine = createEngine({
    store,
    services: createServices({ client, policy, store, logger }),
    policy,
    defaultCountry: 'UG',
    currencies: ['UGX', 'KES'],
    sessionTtlSeconds: 600,
    // Generous: the test checks the conversation, not the "you will be notified" path of a slow service.
    deadlineMs: { ussd: 3000, telegram: 15_000, slack: 2500 },
    onLateOutcome: (address, prompt) => notifier?.send(address, prompt.text),
    logger,
  });
  harness = await startHarness(engine, { store });
  notifier = harness.telegram.notifier;
  return { harness, sandbox };
}

/** A user in the chat: types, and presses buttons by their label on the message showing the prompt. */
function user(h: Harness) {
  let updateId = 1000;
  let live = 0;
  let last: unknown;
  const post = async (update: unknown) => {
    last = update;
    expect((await h.post(update)).status).toBe(200);
  };
  const screens = () => h.api.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText').map((c) => c.payload);
  const screen = () => screens().at(-1)!;
  return {
    screen,
    async say(text: string) {
      await post(textUpdate(updateId++, text));
      live = 99 + h.api.of('sendMessage').length;
      return screen();
    },
    async press(label: string) {
      const buttons = (screen().reply_markup?.inline_keyboard ?? []).flat() as Array<{ text: string; callback_data: string }>;
      const button = buttons.find((b) => b.text === label);
      if (!button) throw new Error(`no button "${label}" on "${screen().text}": ${buttons.map((b) => b.text).join(', ')}`);
      const answered = h.api.of('answerCallbackQuery').length;
      await post(pressUpdate(updateId++, live, button.callback_data));
      expect(h.api.of('answerCallbackQuery')).toHaveLength(answered + 1);
      return screen();
    },
    /** Telegram delivers the last update again (its webhook call did not finish, as far as it knows). */
    redeliver: () => post(last),
  };
}

describe('Telegram with the real engine and the sandbox', () => {
  it('pays someone through messages and buttons, once, editing the button messages in place', async () => {
    const { harness: h, sandbox: s } = await startProduct();
    const ann = user(h);

    expect((await ann.say('/pay')).text).toMatch(/send/i);
    expect((await ann.press('Mobile money')).message_id).toBe(100);
    await ann.say('+256772000001');
    // A number new to us: the flow asks for its owner's name.
    expect(ann.screen().text).toMatch(/first name/i);
    await ann.say('Sarah');
    await ann.say('Nakato');
    await ann.say('5000');
    await ann.press('UGX');
    await ann.say('Lunch');
    expect(ann.screen().text).toMatch(/5000 UGX.*Sarah Nakato.*\+256772000001/);
    const done = await ann.press('Confirm');
    expect(done.text).toMatch(/submitted/i);
    expect(done.reply_markup).toBeUndefined();

    const payments = s.controls.payments() as Array<Record<string, any>>;
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ amount: '5000.00', metadata: { chat: `telegram:${CHAT}` } });
    expect(JSON.stringify(payments[0])).toContain('+256772000001');

    // Telegram redelivers the confirming press: it is ignored, so nothing is paid twice or said again.
    const calls = h.api.calls.length;
    await ann.redeliver();
    expect(h.api.calls).toHaveLength(calls);
    expect(s.controls.payments()).toHaveLength(1);
  });
});
