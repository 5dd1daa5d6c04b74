import { keys } from '../../../src/store/keys.js';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPIRED_TEXT, FAILURE_TEXT, MONEY_FAILURE_TEXT } from '../../../adapters/telegram/handler.js';
import { HELP_TEXT } from '../../../adapters/telegram/commands.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { Inbound, Prompt } from '../../../src/conversation/types.js';
import { BOT_TOKEN } from './fake-bot-api.js';
import { CHAT, pressUpdate, ScriptedEngine, startHarness, textUpdate, USER, type Harness } from './harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const menu: Prompt = {
  text: 'Main menu',
  choices: [
    { id: 'pay', label: 'Pay someone' },
    { id: 'request', label: 'Request money' },
  ],
  final: false,
};

/** A pay conversation keyed on what the user did, as the engine would answer it. */
function payScript(inbound: Inbound): Prompt {
  if (inbound.nav === 'home') return menu;
  if (inbound.choice === 'pay') return { text: 'Who do you pay?', input: 'phone', final: false };
  if (inbound.text === '+256772123456') return { text: 'How much?', input: 'amount', final: false };
  if (inbound.text === '5000')
    return {
      text: 'Pay UGX 5,000 to +256772123456?',
      choices: [
        { id: 'confirm', label: 'Confirm' },
        { id: 'cancel', label: 'Cancel' },
      ],
      final: false,
    };
  if (inbound.choice === 'confirm') return { text: 'Paid. Reference P-1.', final: true };
  throw new Error(`unexpected inbound ${JSON.stringify(inbound)}`);
}

const navRow = [
  { text: 'Back', callback_data: 'n:back' },
  { text: 'Home', callback_data: 'n:home' },
];

describe('Telegram webhook', () => {
  it('runs a conversation of messages and buttons: new messages for text, edits for presses', async () => {
    const engine = new ScriptedEngine(payScript);
    harness = await startHarness(engine);
    const { api, post } = harness;

    expect((await post(textUpdate(1, '/start'))).status).toBe(200);
    expect(api.of('sendMessage')).toEqual([
      {
        chat_id: CHAT,
        text: 'Main menu',
        reply_markup: {
          inline_keyboard: [
            [{ text: 'Pay someone', callback_data: 'c:0' }],
            [{ text: 'Request money', callback_data: 'c:1' }],
            navRow,
          ],
        },
      },
    ]);

    expect((await post(pressUpdate(2, 100, 'c:0'))).status).toBe(200);
    expect(api.of('editMessageText')).toEqual([
      { chat_id: CHAT, message_id: 100, text: 'Who do you pay?', reply_markup: { inline_keyboard: [navRow] } },
    ]);
    expect(api.of('answerCallbackQuery')).toEqual([{ callback_query_id: 'q2' }]);

    expect((await post(textUpdate(3, '+256772123456'))).status).toBe(200);
    expect((await post(textUpdate(4, '5000'))).status).toBe(200);
    // Each typed answer gets a new message; the keyboard of the one before goes, as its buttons are dead.
    expect(api.of('editMessageReplyMarkup')).toEqual([
      { chat_id: CHAT, message_id: 100 },
      { chat_id: CHAT, message_id: 101 },
    ]);
    expect(api.of('sendMessage').map((m) => [m.text, m.reply_markup.inline_keyboard.length])).toEqual([
      ['Main menu', 3],
      ['How much?', 1],
      ['Pay UGX 5,000 to +256772123456?', 3],
    ]);

    // Confirm on the confirmation message (id 102): the final answer replaces it, keyboard gone.
    expect((await post(pressUpdate(5, 102, 'c:0'))).status).toBe(200);
    expect(api.of('editMessageText')[1]).toEqual({ chat_id: CHAT, message_id: 102, text: 'Paid. Reference P-1.' });

    const origin = { channel: 'telegram', conversationId: String(CHAT), userId: String(USER) };
    expect(engine.inbounds).toEqual([
      { ...origin, messageId: '1', nav: 'home' },
      { ...origin, messageId: '2', choice: 'pay' },
      { ...origin, messageId: '3', text: '+256772123456' },
      { ...origin, messageId: '4', text: '5000' },
      { ...origin, messageId: '5', choice: 'confirm' },
    ]);

    // A button of an earlier message no longer means anything: the press is answered, the engine not asked.
    expect((await post(pressUpdate(6, 100, 'c:1'))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(5);
    expect(api.of('answerCallbackQuery').at(-1)).toEqual({ callback_query_id: 'q6', text: EXPIRED_TEXT });
  });

  it('shows a question told late with its keyboard: a press on it reaches the engine, the earlier keyboard goes', async () => {
    const processing: Prompt = {
      text: 'We are still working on it. You will be notified of the result.',
      final: false,
    };
    const confirm = payScript({ channel: 'telegram', conversationId: '', userId: '', messageId: '', text: '5000' });
    // The Confirm is answered "processing" (its run taken over); the question comes back late, saying nothing was sent.
    let pressed = 0;
    const engine = new ScriptedEngine((inbound) =>
      inbound.choice === 'confirm' && pressed++ === 0 ? processing : payScript(inbound),
    );
    harness = await startHarness(engine);
    const { api, post, telegram } = harness;
    await post(textUpdate(1, '5000'));
    expect((await post(pressUpdate(2, 100, 'c:0'))).status).toBe(200);
    expect(api.of('editMessageText')).toEqual([
      { chat_id: CHAT, message_id: 100, text: processing.text, reply_markup: { inline_keyboard: [navRow] } },
    ]);

    const late: Prompt = {
      ...confirm,
      text: `Nothing was sent: something went wrong on our side. Please answer again.\n${confirm.text}`,
    };
    await telegram.showLate({ channel: 'telegram', conversationId: String(CHAT) }, late);
    expect(api.of('sendMessage').at(-1)).toEqual({
      chat_id: String(CHAT),
      text: late.text,
      reply_markup: {
        inline_keyboard: [
          [{ text: 'Confirm', callback_data: 'c:0' }],
          [{ text: 'Cancel', callback_data: 'c:1' }],
          navRow,
        ],
      },
    });
    // The "processing" message's Back / Home no longer work: its keyboard is removed.
    expect(api.of('editMessageReplyMarkup')).toEqual([{ chat_id: String(CHAT), message_id: 100 }]);

    // Confirm on the late message (101) is the engine's, not a stale press; the answer replaces it.
    expect((await post(pressUpdate(3, 101, 'c:0'))).status).toBe(200);
    expect(engine.inbounds.at(-1)).toMatchObject({ messageId: '3', choice: 'confirm' });
    expect(api.of('answerCallbackQuery').at(-1)).toEqual({ callback_query_id: 'q3' });
    expect(api.of('editMessageText').at(-1)).toEqual({ chat_id: CHAT, message_id: 101, text: 'Paid. Reference P-1.' });
  });

  it("tells a final outcome late as plain text, and a group member's to the group", async () => {
    const engine = new ScriptedEngine(payScript);
    harness = await startHarness(engine);
    const outcome: Prompt = { text: 'Paid. Reference P-1.', final: true };
    await harness.telegram.showLate({ channel: 'telegram', conversationId: String(CHAT) }, outcome);
    await harness.telegram.showLate({ channel: 'telegram', conversationId: `-100${CHAT}:${USER}` }, outcome);
    expect(harness.api.of('sendMessage')).toEqual([
      { chat_id: String(CHAT), text: outcome.text },
      { chat_id: `-100${CHAT}`, text: outcome.text },
    ]);
    // Nothing showed before: no keyboard to remove.
    expect(harness.api.of('editMessageReplyMarkup')).toEqual([]);
  });

  it('ignores a repeated update_id: the engine is asked once', async () => {
    const engine = new ScriptedEngine(() => menu);
    harness = await startHarness(engine);
    const first = await harness.post(textUpdate(10, '/start'));
    const again = await harness.post(textUpdate(10, '/start'));
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(engine.inbounds).toHaveLength(1);
    expect(harness.api.of('sendMessage')).toHaveLength(1);
  });

  it('handles again a redelivered update whose first handling never ended (its process died): the chat is shown the answer', async () => {
    const engine = new ScriptedEngine(() => menu);
    harness = await startHarness(engine);
    // The first delivery was claimed by a process that died before it answered or showed anything.
    expect(await harness.store.claim(keys.telegramUpdate(11), 60)).toBe(true);
    expect((await harness.post(textUpdate(11, '/start'))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(1);
    expect(harness.api.of('sendMessage')).toHaveLength(1);
    // Handled to its end now: a further redelivery is ignored.
    expect((await harness.post(textUpdate(11, '/start'))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(1);
    expect(harness.api.of('sendMessage')).toHaveLength(1);
  });

  it('rejects a forged call with 401 and bad bodies with 400, never reaching the engine', async () => {
    const engine = new ScriptedEngine(() => menu);
    harness = await startHarness(engine);
    const forged = await harness.post(textUpdate(20, '/pay'), { secret: 'not-the-secret' });
    expect(forged.status).toBe(401);
    const anonymous = await harness.post(textUpdate(21, '/pay'), { secret: null });
    expect(anonymous.status).toBe(401);

    const notJson = await harness.post('{"update_id": 1,', {});
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error).toMatch(/bad request body/);
    const notUpdate = await harness.post({ hello: 'world' });
    expect(notUpdate.status).toBe(400);
    expect((await notUpdate.json()).error).toMatch(/update_id/);
    const plain = await harness.post('update_id=1', { contentType: 'text/plain' });
    expect(plain.status).toBe(400);

    expect(engine.inbounds).toEqual([]);
    expect(harness.api.calls).toEqual([]);
  });

  it('pages a long list by editing the message in place, and a pick on page 2 names the right choice', async () => {
    const bundles: Prompt = {
      text: 'Pick a bundle',
      choices: Array.from({ length: 20 }, (_, i) => ({
        id: `bundle-${i}-${'long-product-code-'.repeat(4)}`,
        label: `Bundle ${i}`,
      })),
      final: false,
    };
    const engine = new ScriptedEngine((inbound) =>
      inbound.start === 'data' ? bundles : { text: 'Bundle chosen', final: true },
    );
    harness = await startHarness(engine);
    const { api, post } = harness;

    await post(textUpdate(30, '/data'));
    const first = api.of('sendMessage')[0]!;
    expect(first.reply_markup.inline_keyboard).toHaveLength(8 + 2);
    expect(first.reply_markup.inline_keyboard[8]).toEqual([{ text: 'More >', callback_data: 'p:1' }]);

    await post(pressUpdate(31, 100, 'p:1'));
    const paged = api.of('editMessageText');
    expect(paged).toHaveLength(1);
    expect(paged[0]).toMatchObject({ chat_id: CHAT, message_id: 100, text: 'Pick a bundle' });
    const rows = paged[0]!.reply_markup.inline_keyboard;
    expect(rows[0]).toEqual([{ text: 'Bundle 8', callback_data: 'c:8' }]);
    expect(rows[8]).toEqual([
      { text: '< Prev', callback_data: 'p:0' },
      { text: 'More >', callback_data: 'p:2' },
    ]);
    expect(api.of('sendMessage')).toHaveLength(1);
    expect(engine.inbounds).toHaveLength(1);

    await post(pressUpdate(32, 100, 'c:9'));
    expect(engine.inbounds[1]!.choice).toBe(bundles.choices![9]!.id);
    expect(api.of('editMessageText')[1]).toEqual({ chat_id: CHAT, message_id: 100, text: 'Bundle chosen' });
    expect(api.of('answerCallbackQuery')).toEqual([{ callback_query_id: 'q31' }, { callback_query_id: 'q32' }]);
  });

  it('answers /help without the engine', async () => {
    const engine = new ScriptedEngine(() => menu);
    harness = await startHarness(engine);
    await harness.post(textUpdate(40, '/help'));
    expect(harness.api.of('sendMessage')).toEqual([{ chat_id: CHAT, text: HELP_TEXT }]);
    expect(HELP_TEXT).toContain('/pay');
    expect(engine.inbounds).toEqual([]);
  });

  it('answers /help and an expired menu in the language of the menu shown', async () => {
    const engine = new ScriptedEngine(() => ({ ...menu, lang: 'sw' }));
    harness = await startHarness(engine);
    await harness.post(textUpdate(41, '/start'));
    await harness.post(textUpdate(42, '/help'));
    const help = harness.api.of('sendMessage').at(-1) as { text: string };
    expect(help.text).toMatch(/^Ninahamisha pesa za simu/);
    expect(help.text).toContain('/pay - Lipa mtu');
    await harness.post(pressUpdate(43, 99_999, 'c:0'));
    expect(harness.api.of('answerCallbackQuery').at(-1)).toEqual({
      callback_query_id: 'q43',
      text: 'Menyu hii imepitwa na wakati. Tuma /start kupata menyu kuu.',
    });
  });

  it('tells the user when handling fails, answers 200, answers the press, and logs no token or text', async () => {
    const engine = new ScriptedEngine((inbound) => {
      if (inbound.nav === 'home') return menu;
      throw new Error('engine exploded');
    });
    harness = await startHarness(engine);
    await harness.post(textUpdate(50, '/start'));
    const failed = await harness.post(pressUpdate(51, 100, 'c:0'));
    expect(failed.status).toBe(200);
    expect(harness.api.of('sendMessage').at(-1)).toEqual({ chat_id: CHAT, text: FAILURE_TEXT });
    expect(harness.api.of('answerCallbackQuery')).toEqual([{ callback_query_id: 'q51' }]);
    const failures = harness.logs.filter((l) => l.includes('telegram: update failed'));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain('engine exploded');
    expect(harness.logs.join('\n')).not.toContain(BOT_TOKEN);

    // The secret text of a message the Bot API refuses is not logged either (GrammyError carries the payload).
    const secretText = 'my-pin-is-4321';
    const refused = new ScriptedEngine(() => ({ text: secretText, final: true }));
    await harness.close();
    harness = await startHarness(refused);
    harness.api.failNext('sendMessage', 400, {
      ok: false,
      error_code: 400,
      description: 'Bad Request: chat not found',
    });
    expect((await harness.post(textUpdate(52, 'hi'))).status).toBe(200);
    const log = harness.logs.join('\n');
    expect(log).toContain('chat not found');
    expect(log).not.toContain(secretText);
  });

  it('cannot show an answer that followed a money-moving call: says it is being processed, never to try again', async () => {
    const engine = new ScriptedEngine(() => ({ text: 'Payment P-1 submitted.', final: true, money: true }));
    harness = await startHarness(engine);
    harness.api.failNext('sendMessage', 400, {
      ok: false,
      error_code: 400,
      description: 'Bad Request: chat not found',
    });
    expect((await harness.post(textUpdate(53, 'confirm'))).status).toBe(200);
    expect(harness.api.of('sendMessage').at(-1)).toEqual({ chat_id: CHAT, text: MONEY_FAILURE_TEXT });
    expect(MONEY_FAILURE_TEXT).toMatch(/do not send it again/);
    expect(MONEY_FAILURE_TEXT).not.toMatch(/try again/i);
  });

  it('answers 503 (Telegram retries later) while the bot cannot initialise, and takes the update once it can', async () => {
    const engine = new ScriptedEngine(() => menu);
    harness = await startHarness(engine, { telegram: { botInfo: undefined } });
    // grammY retries 5xx of getMe itself; a refusal (here 401) reaches the route.
    harness.api.failNext('getMe', 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const refused = await harness.post(textUpdate(80, '/start'));
    expect(refused.status).toBe(503);
    expect((await refused.json()).error).toMatch(/retry later/);
    expect(engine.inbounds).toEqual([]);
    expect(harness.logs.some((l) => l.includes('webhook could not take an update'))).toBe(true);

    expect((await harness.post(textUpdate(80, '/start'))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(1);
  });

  it('refuses an update it cannot take (the store is down) with 503, so Telegram delivers it again; takes it once the store is back', async () => {
    const engine = new ScriptedEngine(() => menu);
    const store = new MemoryStore();
    const claim = store.claim.bind(store);
    let down = true;
    store.claim = async (...args) => {
      if (down) throw new Error('store unreachable');
      return claim(...args);
    };
    harness = await startHarness(engine, { store });
    const refused = await harness.post(pressUpdate(55, 100, 'c:0'));
    expect(refused.status).toBe(503);
    // Nothing was done, and nothing said: no "try again" that could repeat a confirmed payment.
    expect(harness.api.of('sendMessage')).toEqual([]);
    expect(engine.inbounds).toEqual([]);
    down = false;
    expect((await harness.post(textUpdate(56, '/start'))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(1);
  });

  it.each([
    [400, "Bad Request: message can't be edited"],
    [404, 'Not Found: method not found'],
  ])('sends a new message when the Bot API refuses the edit (%i)', async (status, description) => {
    const engine = new ScriptedEngine((inbound) =>
      inbound.nav === 'home' ? menu : { text: 'Who do you pay?', final: false },
    );
    harness = await startHarness(engine);
    await harness.post(textUpdate(60, '/start'));
    harness.api.failNext('editMessageText', status, { ok: false, error_code: status, description });
    await harness.post(pressUpdate(61, 100, 'c:0'));
    expect(harness.api.of('sendMessage').map((m) => m.text)).toEqual(['Main menu', 'Who do you pay?']);
    // The new message (101) is now the live one: its Home works, the old message's buttons have expired.
    await harness.post(pressUpdate(62, 100, 'n:home'));
    expect(engine.inbounds).toHaveLength(2);
    await harness.post(pressUpdate(63, 101, 'n:home'));
    expect(engine.inbounds.at(-1)).toMatchObject({ nav: 'home', messageId: '63' });
  });

  it("handles a chat's updates in order while other chats go on", async () => {
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const events: string[] = [];
    const engine = new ScriptedEngine(async (inbound) => {
      events.push(`start ${inbound.text}`);
      if (inbound.text === 'A1') {
        firstStarted();
        await firstHeld;
      }
      events.push(`end ${inbound.text}`);
      return { text: `got ${inbound.text}`, final: false };
    });
    const store = new MemoryStore();
    let secondClaimed!: () => void;
    const secondArrived = new Promise<void>((resolve) => (secondClaimed = resolve));
    const claim = store.claim.bind(store);
    store.claim = (key, ttl, value) => {
      if (key === keys.telegramUpdate(72)) secondClaimed();
      return claim(key, ttl, value);
    };
    harness = await startHarness(engine, { store });

    const a1 = harness.post(textUpdate(71, 'A1', 1001));
    await started;
    const a2 = harness.post(textUpdate(72, 'A2', 1001));
    await secondArrived; // A2 is queued behind A1 (claimed on arrival, then queued in the same turn)
    const b1 = await harness.post(textUpdate(73, 'B1', 2002));
    expect(b1.status).toBe(200);
    expect(events).toEqual(['start A1', 'start B1', 'end B1']);

    releaseFirst();
    expect((await a1).status).toBe(200);
    expect((await a2).status).toBe(200);
    expect(events).toEqual(['start A1', 'start B1', 'end B1', 'end A1', 'start A2', 'end A2']);
    expect(harness.api.of('sendMessage').map((m) => `${m.chat_id}:${m.text}`)).toEqual([
      '2002:got B1',
      '1001:got A1',
      '1001:got A2',
    ]);
  });
});
