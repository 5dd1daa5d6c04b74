/**
 * Nobody continues or reads another person's conversation: a USSD session id reused with another phone
 * number (on the same gateway and on another one), a Slack button pressed by another user; and no flow runs
 * in a Telegram group, where every member would read its screens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtSession } from '../e2e/helpers.js';
import { startFuzzProduct, type Product } from '../fuzz/harness.js';
import { SlackUser, TelegramUser } from './drivers.js';

let product: Product;
beforeAll(async () => {
  product = await startFuzzProduct();
});
afterAll(async () => {
  await product?.stop();
});

const payments = () => product.app.sandbox!.controls.payments().length;

/** A victim's USSD session walked to the payment summary (Sarah Nakato, 7000 UGX). */
async function victimAtSummary(phone: string, sessionId: string): Promise<AtSession> {
  const victim = new AtSession(product.url, phone, sessionId);
  await victim.dial();
  for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '7000', '1']) await victim.answer(answer);
  expect(await victim.answer('school fees')).toMatch(/Sarah Nakato/);
  return victim;
}

async function hubtel(body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${product.url}/ussd/hubtel`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ServiceCode: '*384*123#', Operator: 'mtn', ...body }),
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { Message: string }).Message;
}

describe('USSD', () => {
  it("a session id reused with another phone number shows none of the victim's screens and moves none of their money", async () => {
    const before = payments();
    const victim = await victimAtSummary('+256772222001', 'shared-session-1');
    // The attacker sends, from their own number, the victim's next request: the victim's session id and
    // answers so far, then "1" to confirm the victim's payment.
    const attack = async (text: string) => {
      const res = await fetch(`${product.url}/ussd/africastalking`, {
        method: 'POST',
        body: new URLSearchParams({
          sessionId: 'shared-session-1',
          serviceCode: '*384*123#',
          phoneNumber: '+256772222999',
          text,
        }),
      });
      expect(res.status).toBe(200);
      return res.text();
    };
    const victimText = ['1', '1', '0772000001', 'Sarah', 'Nakato', '7000', '1', 'school fees'].join('*');
    // USSD state is kept per phone number: the attacker's number is at the start of a conversation of its
    // own, so the request is its dial, whose text is a dial string the attacker typed: walked in the
    // attacker's own conversation, and never past a confirmation or a PIN (those are typed in the session).
    for (const text of [`${victimText}*1`, `${victimText}*1*1234`]) {
      const screen = await attack(text);
      expect(screen).toMatch(/^CON /);
      expect(screen).not.toMatch(/PIN|submitted/);
    }
    // A new session of the attacker's: the attacker's own conversation (asked whether to continue it).
    const res = await fetch(`${product.url}/ussd/africastalking`, {
      method: 'POST',
      body: new URLSearchParams({
        sessionId: 'attacker-2',
        serviceCode: '*384*123#',
        phoneNumber: '+256772222999',
        text: '',
      }),
    });
    expect(await res.text()).toMatch(/Continue where you left off/);
    // ...and the victim's conversation is where they left it: asking to confirm, no PIN asked of anyone.
    expect(await victim.resend()).toMatch(/Sarah Nakato/);
    expect(payments()).toBe(before);
  });

  it('the same session id on another gateway is another conversation', async () => {
    const victim = await victimAtSummary('+256772222002', '700123');
    // Hubtel numbers its own sessions; one of them happens to carry the same id, for another user.
    let screen = await hubtel({
      Type: 'initiation',
      SessionId: '700123',
      Mobile: '256772222998',
      Message: '*384*123#',
      Sequence: 1,
    });
    expect(screen).toMatch(/What would you like to do/);
    // A Ugandan paying a Ugandan number is offered UGX only: no currency screen after the amount.
    for (const [i, answer] of ['1', '1', '0772345678', 'Ann', 'Other', '100', 'x'].entries()) {
      screen = await hubtel({
        Type: 'response',
        SessionId: '700123',
        Mobile: '256772222998',
        Message: answer,
        Sequence: i + 2,
      });
      expect(screen).not.toMatch(/Sarah Nakato|school fees|7000/);
    }
    expect(screen).toMatch(/Ann Other/);
    expect(await victim.resend()).toMatch(/Sarah Nakato/);
  });
});

describe('Slack', () => {
  it("a button of one user's message pressed by another user does not continue the first one's flow", async () => {
    const amina = new SlackUser(product, 'U0AMINA');
    const bob = new SlackUser(product, 'U0BOB');
    await amina.command('');
    expect(await amina.click(amina.button('Pay someone'))).toMatch(/What do you want to send/);
    const aminas = amina.button('Mobile money');
    // Bob presses Amina's button (a shared channel, a forwarded message): it is Bob's click, on Bob's
    // conversation, not a step of Amina's.
    expect(await bob.click(aminas)).not.toMatch(/phone number of the person/);
    // Amina's flow is untouched: her own press goes on from where she was.
    expect(await amina.click(aminas)).toMatch(/phone number of the person/);
  });
});

describe('Telegram group chat', () => {
  it('runs no flow in a group: a command gets a pointer to the private chat, a pressed button a toast, and nothing moves', async () => {
    const before = payments();
    const group = -100555;
    const ann = new TelegramUser(product, 8001, group);
    const ben = new TelegramUser(product, 8002, group);
    // Before, /pay in a group showed Ann's payment screens (amounts, names) to everyone in it.
    for (const command of ['/pay', '/start', '/check', '/pin', '/data', '/request']) {
      const answer = await ann.say(command);
      expect(answer).toMatch(/only in a private chat.*https:\/\/t\.me\//);
      expect(ann.screen().keyboard).toEqual([]);
    }
    // Members talking to each other are not answered.
    const sent = product.bot.calls.length;
    expect(
      (
        await ben.post({
          message: {
            message_id: 1,
            date: 1,
            chat: { id: group, type: 'group', title: 'Shop' },
            from: { id: 8002, is_bot: false, first_name: 'Ben' },
            text: '0772000001',
          } as never,
        })
      ).status,
    ).toBe(200);
    expect(product.bot.calls.length).toBe(sent);
    // A button press in the group (an old keyboard, a forged callback) is a toast, not a step.
    await ben.pressData('c:0', 1);
    expect(product.bot.calls.filter((c) => c.method === 'answerCallbackQuery').at(-1)?.payload.text).toMatch(
      /only in a private chat/,
    );
    // In the private chat the same user gets the flow.
    expect(await new TelegramUser(product, 8001).say('/pay')).toMatch(/What do you want to send/);
    expect(payments()).toBe(before);
  });
});
