/**
 * A chat's webhook while its process drains. Two products (`node dist/src/main.js`) over one Redis and one
 * PostgreSQL database, Telegram (webhook, on a local Bot API server) and WhatsApp (on a local Graph API
 * server) on in both. A USSD payment's creation is held at the service, so its hop stays in flight and the
 * first process, SIGTERMed, keeps draining. A real Telegram update (with its secret token header) and a signed
 * WhatsApp delivery posted to it then get 503 with Retry-After and change nothing (no record of the chat);
 * posted to the second, ready process (the provider's redelivery) each is answered once, and delivered there
 * again it is not handled twice (update_id, wamid). Slack's event and slash command routes answer 503 too.
 */
import type { Update } from 'grammy/types';
import http from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { keys } from '../../src/store/keys.js';
import { BOT_TOKEN, startFakeBotApi, type FakeBotApi } from '../adapters/telegram/fake-bot-api.js';
import { textUpdate } from '../adapters/telegram/harness.js';
import { BOT_TOKEN as SLACK_TOKEN, FakeSlack, SIGNING_SECRET, SlackSender } from '../adapters/slack/harness.js';
import { startFakeGraphApi, type FakeGraphApi } from '../adapters/whatsapp/fake-graph-api.js';
import {
  delivery,
  post as postWhatsApp,
  signature,
  textMessage,
  whatsappEnv,
} from '../adapters/whatsapp/deliveries.js';
import { AtSession } from '../e2e/helpers.js';
import { freePort } from '../ports.js';
import { TEST_REDIS_URL } from '../services.js';
import { until } from '../until.js';
import {
  cleanProductKeys,
  dropSharedDatabase,
  productKeyPrefix,
  startProductProcess,
  startService,
  type ProductProcess,
  type Service,
} from './product.js';

const PREFIX = productKeyPrefix('chats-drain');
const API_KEY = 'chats-drain-key';
const CALLBACK_TOKEN = 'chats-drain-callback-token-0123';
const SECRET = 'chats-drain-telegram-secret';
const PHONE = '+256701887001';
const CHAT = 4242;
const TELEGRAM_USER = 7;
const WA_ID = '256772887001';
const POLICY = JSON.stringify({
  roles: { payer: { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '100000' } } },
  users: {
    telegram: { [String(TELEGRAM_USER)]: { role: 'payer' } },
    slack: {},
    ussd: { [PHONE]: { role: 'payer', pin: hashPin('1234') } },
    whatsapp: { [WA_ID]: { role: 'payer' } },
  },
});

let service: Service;
let redis: Redis;
let bot: FakeBotApi;
let graph: FakeGraphApi;
let slack: FakeSlack;
const children: ProductProcess[] = [];
let letThrough!: () => void;
const letGo = new Promise<void>((resolve) => (letThrough = resolve));
let arrived!: () => void;
const held = new Promise<void>((resolve) => (arrived = resolve));

beforeAll(async () => {
  redis = new Redis(TEST_REDIS_URL);
  await cleanProductKeys(redis, PREFIX);
  service = await startService(API_KEY, async () => {
    arrived();
    await letGo;
  });
  bot = await startFakeBotApi();
  graph = await startFakeGraphApi();
  slack = new FakeSlack();
  await slack.start();
});

afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null) child.child.kill('SIGKILL');
  letThrough();
  await service?.close();
  await bot?.close();
  await graph?.close();
  await slack?.close();
  await cleanProductKeys(redis, PREFIX);
  await redis?.quit();
  await dropSharedDatabase();
});

async function startProduct(publicUrl: string): Promise<ProductProcess> {
  const product = await startProductProcess({
    LOG_LEVEL: 'warn',
    MOMO_BASE_URL: service.url,
    MOMO_API_KEY: API_KEY,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: PREFIX,
    ACCESS_POLICY: POLICY,
    USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
    SHUTDOWN_GRACE_SECONDS: '30',
    // The held payment's hop must stay in flight (the drain lasting) while the test posts to the process.
    USSD_DEADLINE_MS: '15000',
    // Telegram by webhook (its route is served only with a public address; nobody need listen there).
    PUBLIC_URL: publicUrl,
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    TELEGRAM_API_ROOT: bot.apiRoot,
    TELEGRAM_WEBHOOK_SECRET: SECRET,
    ...whatsappEnv(graph),
    // A read receipt per message worked: what shows a wamid handled once.
    WHATSAPP_READ_RECEIPTS: 'true',
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_BOT_TOKEN: SLACK_TOKEN,
    SLACK_API_URL: slack.apiUrl,
  });
  children.push(product);
  return product;
}

/** A fresh connection's status (no keep-alive socket reused). */
function freshStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const postTelegram = (url: string, update: Update) =>
  fetch(`${url}/telegram/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': SECRET },
    body: JSON.stringify(update),
    signal: AbortSignal.timeout(15_000),
  });

/** Every key of the products that names the chat (its conversation, its claims, its channel record). */
async function keysNaming(...names: string[]): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    found.push(...batch.filter((key) => names.some((name) => key.includes(name))));
    cursor = next;
  } while (cursor !== '0');
  return found;
}

const telegramAnswers = () =>
  bot.calls.filter((c) => c.method === 'sendMessage' && Number(c.payload.chat_id) === CHAT).length;
const readReceipts = (wamid: string) => graph.sent.filter((m) => m.status === 'read' && m.message_id === wamid).length;

describe('a chat webhook while its process drains', () => {
  it('answers 503 with Retry-After and changes nothing; the redelivery to a ready process is handled once', async () => {
    const publicUrl = `http://127.0.0.1:${await freePort()}`;
    const [draining, ready] = await Promise.all([startProduct(publicUrl), startProduct(publicUrl)]);

    // A USSD payment whose creation is held at the service: its hop is in flight when SIGTERM arrives.
    const ussd = new AtSession(draining.url, PHONE, undefined, `/ussd/africastalking/${CALLBACK_TOKEN}`);
    await ussd.dial();
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '2500', '1', '1']) await ussd.answer(answer);
    const inFlight = ussd.answer('1234');
    inFlight.catch(() => undefined);
    await held;
    draining.child.kill('SIGTERM');
    await until('/readyz answers 503', async () => (await freshStatus(`${draining.url}/readyz`)) === 503);

    const update = textUpdate(910_001, '/start', CHAT) as Update;
    update.message!.from!.id = TELEGRAM_USER;
    const message = textMessage(WA_ID, 'hi');
    const refusedTelegram = await postTelegram(draining.url, update);
    const body = JSON.stringify(delivery([message]));
    const refusedWhatsApp = await fetch(`${draining.url}/whatsapp/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature(body) },
      body,
    });
    // Slack's routes answer the same; Slack retries the event, not the command (docs/running.md).
    const slackSender = new SlackSender(draining.url, slack);
    const refusedEvent = await slackSender.dm('pay', 'Ev0CHATSDRAIN1');
    const refusedCommand = await slackSender.command('pay');
    for (const refused of [refusedTelegram, refusedWhatsApp, refusedEvent, refusedCommand]) {
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
    }
    // Still draining (the held hop is in flight): nothing of either was taken.
    expect(draining.child.exitCode).toBeNull();
    expect(await keysNaming(String(CHAT), WA_ID, message.id, 'Ev0CHATSDRAIN1')).toEqual([]);
    expect(slack.calls.filter((c) => c.kind !== 'auth.test')).toEqual([]);
    expect(telegramAnswers()).toBe(0);
    expect(graph.to(WA_ID)).toEqual([]);

    // The providers deliver again, to the ready process: each answered once.
    expect((await postTelegram(ready.url, update)).status).toBe(200);
    const told = telegramAnswers();
    expect(told).toBeGreaterThan(0);
    expect((await postWhatsApp(ready.url, delivery([message]))).status).toBe(200);
    await graph.waitFor(WA_ID, 1);
    expect(
      await redis.exists(`${PREFIX}${keys.conversation({ channel: 'telegram', conversationId: String(CHAT) })}`),
    ).toBe(1);
    await until(
      'the WhatsApp conversation recorded',
      async () =>
        (await redis.exists(`${PREFIX}${keys.conversation({ channel: 'whatsapp', conversationId: WA_ID })}`)) === 1,
    );

    // And again (the provider did not see the first answer): not handled twice.
    expect((await postTelegram(ready.url, update)).status).toBe(200);
    expect(telegramAnswers()).toBe(told);
    expect((await postWhatsApp(ready.url, delivery([message]))).status).toBe(200);
    // The user's messages are worked in order: once the next one is read, the repeat was worked before it.
    const next = textMessage(WA_ID, 'hi');
    expect((await postWhatsApp(ready.url, delivery([next]))).status).toBe(200);
    await until('the next message read', () => readReceipts(next.id) === 1);
    expect(readReceipts(message.id)).toBe(1);

    letThrough();
    expect(await inFlight).toMatch(/^END /);
    expect(await draining.exit).toBe(0);
    ready.child.kill('SIGTERM');
    expect(await ready.exit).toBe(0);
  }, 90_000);
});
