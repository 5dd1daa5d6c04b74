import { afterEach, describe, expect, it } from 'vitest';
import { GrammyError } from 'grammy';
import { createTelegram } from '../../../adapters/telegram/index.js';
import { deriveSecretToken } from '../../../adapters/telegram/webhook.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { createLogger } from '../../../src/log.js';
import { BOT_INFO, BOT_TOKEN, startFakeBotApi } from './fake-bot-api.js';
import { CHAT, ScriptedEngine, startHarness, textUpdate, type Harness } from './harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const menu = { text: 'Main menu', choices: [{ id: 'pay', label: 'Pay someone' }], final: false };
const tooMany = (seconds: number) => ({
  ok: false,
  error_code: 429,
  description: `Too Many Requests: retry after ${seconds}`,
  parameters: { retry_after: seconds },
});
const serverError = { ok: false, error_code: 500, description: 'Internal Server Error' };

describe('start() with a public URL', () => {
  it('registers the commands and sets the webhook with the derived secret', async () => {
    harness = await startHarness(new ScriptedEngine(() => menu));
    await harness.telegram.start();
    expect(harness.api.of('setMyCommands')[0]!.commands.map((c: { command: string }) => c.command)).toEqual([
      'start',
      'pay',
      'request',
      'check',
      'data',
      'pin',
      'cancel',
      'help',
    ]);
    expect(harness.api.of('setWebhook')).toEqual([
      {
        url: 'https://bot.example.org/telegram/webhook',
        secret_token: deriveSecretToken(BOT_TOKEN),
        allowed_updates: ['message', 'callback_query'],
      },
    ]);
    expect(deriveSecretToken(BOT_TOKEN)).toMatch(/^[0-9a-f]{32}$/);
    expect(harness.api.calls.every((c) => c.token === BOT_TOKEN)).toBe(true);
  });

  it('uses a given secret token instead of the derived one', async () => {
    const engine = new ScriptedEngine(() => menu);
    harness = await startHarness(engine, { telegram: { secretToken: 'operator_chosen-secret' } });
    await harness.telegram.start();
    expect(harness.api.of('setWebhook')[0]!.secret_token).toBe('operator_chosen-secret');
    expect((await harness.post(textUpdate(1, '/start'), { secret: deriveSecretToken(BOT_TOKEN) })).status).toBe(401);
    expect((await harness.post(textUpdate(2, '/start'))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(1);
  });

  it('refuses a secret token Telegram would refuse', () => {
    const options = {
      token: BOT_TOKEN,
      engine: new ScriptedEngine(() => menu),
      store: new MemoryStore(),
      logger: createLogger('silent'),
    };
    expect(() => createTelegram({ ...options, secretToken: 'has spaces' })).toThrow(/secret/);
  });
});

describe('start() without a public URL', () => {
  it('long-polls: fetches the bot, drops the webhook, handles polled updates, and stops', async () => {
    const api = await startFakeBotApi();
    const engine = new ScriptedEngine(() => menu);
    const telegram = createTelegram({
      token: BOT_TOKEN,
      engine,
      store: new MemoryStore(),
      apiRoot: `${api.apiRoot}/`,
      logger: createLogger('silent'),
    });
    try {
      expect(telegram.router.stack).toHaveLength(0);
      await telegram.start();
      expect(api.of('getMe')).toHaveLength(1);
      expect(api.of('deleteWebhook')).toHaveLength(1);
      expect(api.of('setWebhook')).toEqual([]);
      api.pushUpdate(textUpdate(900, '/start'));
      await api.waitForCalls('sendMessage', 1);
      expect(engine.inbounds).toEqual([
        { channel: 'telegram', conversationId: String(CHAT), userId: '7', messageId: '900', nav: 'home' },
      ]);
      expect(api.of('sendMessage')[0]).toMatchObject({ chat_id: CHAT, text: 'Main menu' });
    } finally {
      await telegram.stop();
      await api.close();
    }
    // The update was confirmed (offset past it) when polling stopped, so it is not fetched again.
    expect(api.of('getUpdates').at(-1)!.offset).toBe(901);
  });
});

describe('long polling with several chats', () => {
  it('answers one chat while another waits for its engine call', async () => {
    const api = await startFakeBotApi();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const engine = new ScriptedEngine(async (inbound) => {
      if (inbound.conversationId === '1001') await held;
      return { text: `menu for ${inbound.conversationId}`, final: false };
    });
    const telegram = createTelegram({
      token: BOT_TOKEN,
      engine,
      store: new MemoryStore(),
      apiRoot: api.apiRoot,
      logger: createLogger('silent'),
      botInfo: BOT_INFO,
    });
    try {
      await telegram.start();
      api.pushUpdate(textUpdate(1, '/start', 1001));
      api.pushUpdate(textUpdate(2, '/start', 2002));
      await api.waitForCalls('sendMessage', 1);
      expect(api.of('sendMessage').map((m) => m.text)).toEqual(['menu for 2002']);
      release();
      await api.waitForCalls('sendMessage', 2);
      expect(api.of('sendMessage').map((m) => m.text)).toEqual(['menu for 2002', 'menu for 1001']);
    } finally {
      release();
      await telegram.stop();
      await api.close();
    }
  });
});

describe('notifier', () => {
  it('waits retry_after on a 429 and delivers', async () => {
    harness = await startHarness(new ScriptedEngine(() => menu));
    harness.api.failNext('sendMessage', 429, tooMany(3));
    await harness.telegram.notifier.send(
      { channel: 'telegram', conversationId: String(CHAT) },
      'Payment received: UGX 5,000',
    );
    expect(harness.sleeps).toEqual([3000]);
    expect(harness.api.of('sendMessage')).toEqual([
      { chat_id: String(CHAT), text: 'Payment received: UGX 5,000' },
      { chat_id: String(CHAT), text: 'Payment received: UGX 5,000' },
    ]);
  });

  it('backs off on 5xx a few times, then throws', async () => {
    harness = await startHarness(new ScriptedEngine(() => menu));
    harness.api.failNext('sendMessage', 500, serverError, 4);
    const sending = harness.telegram.notifier.send({ channel: 'telegram', conversationId: String(CHAT) }, 'hello');
    await expect(sending).rejects.toBeInstanceOf(GrammyError);
    expect(harness.sleeps).toEqual([500, 1000, 2000]);
    expect(harness.api.of('sendMessage')).toHaveLength(4);
  });

  it('does not retry a refusal (the user blocked the bot)', async () => {
    harness = await startHarness(new ScriptedEngine(() => menu));
    harness.api.failNext('sendMessage', 403, {
      ok: false,
      error_code: 403,
      description: 'Forbidden: bot was blocked by the user',
    });
    await expect(harness.telegram.notifier.send({ channel: 'telegram', conversationId: '5' }, 'hi')).rejects.toThrow(
      /blocked/,
    );
    expect(harness.sleeps).toEqual([]);
    expect(harness.api.of('sendMessage')).toHaveLength(1);
  });

  it('refuses an address of another channel', async () => {
    harness = await startHarness(new ScriptedEngine(() => menu));
    await expect(harness.telegram.notifier.send({ channel: 'slack', conversationId: 'T1:U1' }, 'hi')).rejects.toThrow(
      /slack/,
    );
    expect(harness.api.calls).toEqual([]);
  });

  it('a 429 during a conversation is waited out too', async () => {
    const engine = new ScriptedEngine(() => menu);
    harness = await startHarness(engine);
    harness.api.failNext('sendMessage', 429, tooMany(1));
    expect((await harness.post(textUpdate(5, '/start'))).status).toBe(200);
    expect(harness.sleeps).toEqual([1000]);
    expect(harness.api.of('sendMessage').map((m) => m.text)).toEqual(['Main menu', 'Main menu']);
  });
});
