/**
 * Who may call the product's webhooks: a forged Telegram secret, a forged, tampered, stale or replayed
 * Slack signature, a forged or missing WhatsApp X-Hub-Signature-256 (and a wrong verify token), and wrong
 * Basic auth on the notification receiver are refused and reach nothing behind them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BASIC_AUTH,
  SIGNING_SECRET,
  TELEGRAM_SECRET,
  WEBHOOK_USER,
  signedHeaders,
  startFuzzProduct,
  type Product,
} from '../fuzz/harness.js';
import { TelegramUser } from './drivers.js';
import {
  VERIFY_TOKEN,
  delivery,
  post as postWhatsApp,
  signature,
  textMessage,
  wordsOf,
  WhatsAppUser,
} from '../adapters/whatsapp/deliveries.js';

let product: Product;
beforeAll(async () => {
  product = await startFuzzProduct();
});
afterAll(async () => {
  await product?.stop();
});

const botMessages = () =>
  product.bot.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText').length;

describe('Telegram webhook secret', () => {
  it('refuses a forged or missing secret with 401, and the bot says nothing', async () => {
    const user = new TelegramUser(product, 9001);
    const before = botMessages();
    for (const secret of [null, '', 'forged', TELEGRAM_SECRET.toUpperCase(), `${TELEGRAM_SECRET} `.trim() + 'x']) {
      const res = await user.post(
        {
          message: {
            message_id: 1,
            date: 1,
            chat: { id: 9001, type: 'private', first_name: 'E' },
            from: { id: 9001, is_bot: false, first_name: 'E' },
            text: '/pay',
          } as never,
        },
        secret,
      );
      expect(res.status).toBe(401);
      expect(res.text.length).toBeGreaterThan(0);
    }
    expect(botMessages()).toBe(before);
    // The same update with the right secret is served.
    expect(await user.say('/pay')).toMatch(/What do you want to send/);
  });
});

describe('Slack signatures', () => {
  const command = (trigger: string) =>
    new URLSearchParams({
      team_id: 'T0001',
      user_id: 'U0SIG',
      command: '/momo',
      text: '',
      response_url: `${product.slack.url}/respond/sig`,
      trigger_id: trigger,
    }).toString();
  const post = async (body: string, headers: Record<string, string>) => {
    const res = await fetch(`${product.url}/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  };
  const refused = { status: 401, text: 'Invalid or expired Slack request signature' };

  it('refuses a forged signature, a tampered body, a missing signature and a stale timestamp with 401', async () => {
    const body = command('sig.1');
    const before = product.slack.calls.length;
    expect(await post(body, signedHeaders(body, { secret: `${SIGNING_SECRET}-forged` }))).toEqual(refused);
    expect(await post(body.replace('U0SIG', 'U0OTHER'), signedHeaders(body))).toEqual(refused);
    expect(await post(body, {})).toEqual(refused);
    expect(
      await post(body, { 'x-slack-request-timestamp': signedHeaders(body)['x-slack-request-timestamp']! }),
    ).toEqual(refused);
    const stale = Math.floor(Date.now() / 1000) - 6 * 60;
    expect(await post(body, signedHeaders(body, { timestamp: stale }))).toEqual(refused);
    expect(product.slack.calls.length).toBe(before);
  });

  it('a captured request replayed after the 5-minute window is refused; replayed within it, it changes nothing', async () => {
    const body = command('sig.2');
    const captured = signedHeaders(body);
    const first = await post(body, captured);
    expect(first.status).toBe(200);
    expect(first.text).toMatch(/What would you like to do/);
    // Replayed at once: the same delivery (trigger_id), answered the same, nothing done twice.
    const replay = await post(body, captured);
    expect(replay.status).toBe(200);
    expect(JSON.parse(replay.text)).toEqual(JSON.parse(first.text));
    // The same bytes re-signed with a timestamp 6 minutes old (what a capture replayed later carries).
    expect(
      await post(body, signedHeaders(body, { timestamp: Number(captured['x-slack-request-timestamp']) - 6 * 60 })),
    ).toEqual(refused);
  });
});

describe('WhatsApp X-Hub-Signature-256', () => {
  it('refuses a forged, missing or replayed-onto-another-body signature with 401, and no message is sent', async () => {
    const user = '256772800001';
    const body = JSON.stringify(delivery([textMessage(user, '/pay')]));
    const before = product.graph.sent.length;
    for (const header of [
      null,
      '',
      signature(body, 'guessed-secret'),
      signature(JSON.stringify(delivery([textMessage(user, 'hi')]))),
      `sha256=${'0'.repeat(64)}`,
    ]) {
      const res = await postWhatsApp(product.url, body, header);
      expect(res.status).toBe(401);
      expect(res.text).toMatch(/X-Hub-Signature-256/);
    }
    expect(product.graph.sent.length).toBe(before);
    // Signed with the app secret, the same message is served.
    expect(wordsOf(await new WhatsAppUser(product.url, product.graph, user).say('/pay'))).toMatch(
      /What do you want to send/,
    );
  });

  it("answers Meta's verification only with the verify token", async () => {
    const verify = (token: string) =>
      fetch(
        `${product.url}/whatsapp/webhook?hub.mode=subscribe&hub.challenge=7&hub.verify_token=${encodeURIComponent(token)}`,
      );
    expect((await verify('guess')).status).toBe(403);
    expect(await (await verify(VERIFY_TOKEN)).text()).toBe('7');
  });
});

describe('notification receiver Basic auth', () => {
  const notification = JSON.stringify({
    hook: { event: 'payment.status.changed' },
    data: { id: 1, state: 'processed', amount: '1.00', currency: 'UGX', metadata: { chat: 'telegram:9001' } },
  });
  const post = async (path: string, authorization?: string) => {
    const res = await fetch(`${product.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: notification,
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.text(), challenge: res.headers.get('www-authenticate') };
  };

  it('refuses wrong or missing credentials with 401 on the receiver and on verify', async () => {
    const wrong = [
      undefined,
      `Basic ${Buffer.from(`${WEBHOOK_USER}:wrong`).toString('base64')}`,
      `Basic ${Buffer.from(`other:fuzz-webhook-password`).toString('base64')}`,
      `Basic ${Buffer.from(`${WEBHOOK_USER}`).toString('base64')}`,
      `Bearer ${BASIC_AUTH.slice(6)}`,
      BASIC_AUTH.slice(0, -2),
    ];
    for (const path of ['/notifications/momo', '/notifications/momo/verify']) {
      for (const authorization of wrong) {
        const res = await post(path, authorization);
        expect(res.status).toBe(401);
        expect(res.body).toMatch(/credentials/);
        expect(res.challenge).toMatch(/^Basic /);
      }
    }
    // The right credentials are let in.
    expect((await post('/notifications/momo', BASIC_AUTH)).status).toBe(200);
  });
});
