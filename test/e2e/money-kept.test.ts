/**
 * Money kept for good, proved from outside the process (issue 32, item 8): the product runs as a process of its
 * own (`node dist/src/main.js`, production settings, PostgreSQL and Redis), people pay over USSD (Africa's Talking)
 * and Slack (signed requests over real HTTP, a local Slack Web API), Redis is restarted empty (a server of this
 * file's own on a free port, keeping nothing on disk) and the product restarted: `/ops/payments.json` (with the
 * OPS_TOKEN) still lists each payment with its final state and who made it, and `npm run reconcile` (a process
 * too) finds no difference; and paying the same payee the same amount again (Redis forgot that conversation, the
 * journal did not) asks whether it is a second payment.
 */
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import {
  FakeSlack,
  SlackSender,
  USER as SLACK_USER,
  buttonLabelled,
  buttonOf,
  textOf,
} from '../adapters/slack/harness.js';
import { serverDatabase, type ServerDatabase } from '../journal/server-database.js';
import { freePort } from '../ports.js';
import { startOwnRedis, stopAll, type Server as RedisServer } from '../redis/servers.js';
import { startProductProcess, startService, type ProductProcess, type Service } from '../shutdown/product.js';
import { reading, until } from '../until.js';
import { AtSession } from './helpers.js';
import { productArgs } from '../product.js';

const API_KEY = 'money-kept-key';
const USSD_USER = '+256701999011';
const CALLBACK_TOKEN = 'money-kept-callback-token-0123';
const GATEWAY = `/ussd/africastalking/${CALLBACK_TOKEN}`;
const OPS_TOKEN = 'money-kept-ops-token-0123456789';
const WEBHOOK = { user: 'momo-service', password: 'money-kept-webhook-password' };
const POLICY = JSON.stringify({
  roles: { payer: { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '100000' } } },
  users: {
    telegram: {},
    slack: { [SLACK_USER]: { role: 'payer' } },
    ussd: { [USSD_USER]: { role: 'payer', pin: hashPin('1234') } },
  },
});

let service: Service;
let database: ServerDatabase;
let redisServer: RedisServer;
let redisUrl: string;
let slack: FakeSlack;
let port: number;
const products: ProductProcess[] = [];

const env = (): Record<string, string> => ({
  LOG_LEVEL: 'warn',
  PORT: String(port),
  PUBLIC_URL: `http://127.0.0.1:${port}`,
  MOMO_BASE_URL: service.url,
  MOMO_API_KEY: API_KEY,
  MOMO_WEBHOOK_USER: WEBHOOK.user,
  MOMO_WEBHOOK_PASSWORD: WEBHOOK.password,
  REDIS_URL: redisUrl,
  DATABASE_URL: database.url,
  ACCESS_POLICY: POLICY,
  USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
  SLACK_SIGNING_SECRET: 'test-signing-secret',
  SLACK_BOT_TOKEN: 'xoxb-test-token',
  SLACK_API_URL: slack.apiUrl,
  OPS_USER: 'operator',
  OPS_PASSWORD: 'money-kept-ops-password',
  OPS_TOKEN,
});

async function start(): Promise<ProductProcess> {
  const product = await startProductProcess(env());
  products.push(product);
  return product;
}

async function stop(product: ProductProcess): Promise<void> {
  product.child.kill('SIGTERM');
  expect(await product.exit).toBe(0);
}

interface Item {
  ref: string;
  id: string | null;
  kind: string;
  amount: string;
  currency: string;
  payee: string;
  state: string;
  channel: string;
  user: string;
}

async function payments(product: ProductProcess): Promise<Item[]> {
  const res = await fetch(`${product.url}/ops/payments.json`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: Item[] }).items;
}

/** The number of the choice labelled `label` on a USSD screen (`2. Mobile money`). */
function choice(screen: string, label: RegExp): string {
  for (const line of screen.split('\n')) {
    const m = /^(?:CON |END )?(\d+)[.)]?\s+(.*)$/.exec(line.trim());
    if (m && label.test(m[2]!)) return m[1]!;
  }
  throw new Error(`no choice ${label} on the screen: ${screen}`);
}

/** What a person answers to each USSD screen of a payment of 2500 UGX to Sarah (a sandbox number that is paid). */
const USSD_STEPS: Array<[RegExp, (screen: string) => string]> = [
  [/Enter your PIN/, () => '1234'],
  [/second payment/i, (s) => choice(s, /send again/i)],
  [/2,?500(\.00)? UGX/, (s) => choice(s, /Confirm/)],
  [/What do you want to send/, (s) => choice(s, /Mobile money/)],
  [/Pay whom\?/, (s) => choice(s, /Sarah Nakato/)],
  [/phone number/i, () => '0772000001'],
  [/first name/i, () => 'Sarah'],
  [/last name/i, () => 'Nakato'],
  [/currency/i, (s) => choice(s, /UGX/)],
  [/amount/i, () => '2500'],
  [/Pay someone/i, (s) => choice(s, /Pay someone/i)],
];

/** Pays by USSD; `second` answers the question about a second payment of the same (default: send again). */
async function payByUssd(
  product: ProductProcess,
  second: RegExp = /send again/i,
): Promise<{ screen: string; screens: string[] }> {
  const ussd = new AtSession(product.url, USSD_USER, undefined, GATEWAY);
  let screen = await ussd.dial();
  for (let step = 0; step < 20 && screen.startsWith('CON '); step++) {
    if (/second payment/i.test(screen)) {
      screen = await ussd.answer(choice(screen, second));
      continue;
    }
    const found = USSD_STEPS.find(([pattern]) => pattern.test(screen));
    if (!found) throw new Error(`no step for the screen: ${screen}`);
    screen = await ussd.answer(found[1](screen));
  }
  return { screen, screens: ussd.screens };
}

type Blocks = Array<Record<string, any>>;

/** What a person does on each Slack screen of a payment of 4000 UGX to Sarah: press a button, or type in the modal. */
const SLACK_STEPS: Array<[RegExp, { press: RegExp } | { type: string }]> = [
  [/second payment/i, { press: /send again/i }],
  [/4,?000(\.00)? UGX/, { press: /^Confirm$/ }],
  [/What do you want to send/, { press: /^Mobile money$/ }],
  [/Pay whom\?/, { press: /^Sarah Nakato$/ }],
  [/phone number of the person/, { type: '0772000001' }],
  // Verified before (by the USSD payer): the network's name is offered, no names typed.
  [/The network knows \+256772000001 as/, { press: /^Pay Sarah Nakato$/i }],
  [/first name/, { type: 'Sarah' }],
  [/last name/, { type: 'Nakato' }],
  [/Choose the currency/, { press: /^UGX$/ }],
  [/Enter the amount/, { type: '4000' }],
];

/** The label of the button whose text matches. */
function labelled(blocks: Blocks, label: RegExp): string {
  for (const block of blocks) {
    for (const element of (block.elements ?? []) as Array<{ type?: string; text?: { text?: string } }>) {
      if (element.type === 'button' && element.text?.text && label.test(element.text.text)) return element.text.text;
    }
  }
  throw new Error(`no button ${label} in ${textOf(blocks)}`);
}

async function payBySlack(product: ProductProcess): Promise<string> {
  const sender = new SlackSender(product.url, slack);
  const menu = (await (await sender.command('')).json()) as { blocks: Blocks };
  let click = 0;
  await sender.click(buttonLabelled(menu.blocks, 'Pay someone'), `kept-${click}`);
  let blocks: Blocks = (await slack.next('respond')).body.blocks;
  for (
    let screen = 0;
    screen < 20 && !/submitted|being confirmed|We will tell you when it arrives/i.test(textOf(blocks));
    screen++
  ) {
    const text = textOf(blocks);
    const step = SLACK_STEPS.find(([pattern]) => pattern.test(text));
    if (!step) throw new Error(`no step for the Slack screen: ${text}`);
    click += 1;
    const action = step[1];
    if ('press' in action) {
      await sender.click(buttonLabelled(blocks, labelled(blocks, action.press)), `kept-${click}`);
    } else {
      await sender.click(buttonOf(blocks, 'momo_answer'), `kept-${click}`);
      await sender.submit((await slack.next('views.open')).body.view, action.type);
    }
    blocks = (await slack.next('respond')).body.blocks;
  }
  return textOf(blocks);
}

/** `npm run reconcile` as an operator runs it, against the same service and database. */
function reconcile(day: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...productArgs('src/reconciliation/cli'), '--from', day, '--to', day], {
      cwd: new URL('../../', import.meta.url).pathname,
      env: {
        PATH: process.env.PATH,
        MOMO_BASE_URL: service.url,
        MOMO_API_KEY: API_KEY,
        DATABASE_URL: database.url,
        REDIS_URL: redisUrl,
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  redisServer = await startOwnRedis();
  redisUrl = `redis://127.0.0.1:${redisServer.port}`;
  slack = new FakeSlack();
  await slack.start();
  service = await startService(API_KEY, async () => {});
  service.sandbox.controls.setOrganization({ webhookAuth: { username: WEBHOOK.user, password: WEBHOOK.password } });
  database = await serverDatabase('money_kept');
  // Chosen before the start, so PUBLIC_URL (where the service sends its notifications) can name it.
  port = await freePort();
});

afterAll(async () => {
  for (const product of products) if (product.child.exitCode === null) product.child.kill('SIGKILL');
  await service?.close();
  await slack?.close();
  await database?.drop();
  await stopAll();
});

describe('payments kept after Redis restarts empty and the product restarts', () => {
  it('lists each payment with its final state and who made it, a reconciliation finds no difference, and the same again is asked about', async () => {
    const first = await start();
    expect((await payByUssd(first)).screen).toMatch(/^END /);
    expect(await payBySlack(first)).toMatch(/submitted|We will tell you when it arrives/);
    const sandboxPayments = service.sandbox.controls.payments();
    expect(sandboxPayments).toHaveLength(2);

    // Both reach their final state, told by the service's notifications.
    const before = await until(
      'both payments completed',
      reading(
        () => payments(first),
        (items) => items.length === 2 && items.every((i) => i.state === 'completed'),
      ),
      { timeoutMs: 30_000, everyMs: 100 },
    );

    // Redis restarts empty (every conversation, record and mark gone), and the product restarts on it.
    await stop(first);
    redisServer = await redisServer.restart();
    const redis = new Redis(redisUrl);
    expect(await redis.dbsize()).toBe(0);
    await redis.quit();
    const second = await start();

    const after = await payments(second);
    const made = (channel: string, user: string, amount: string) =>
      expect.objectContaining({
        channel,
        user,
        amount: expect.stringMatching(new RegExp(`^${amount}(\\.0+)?$`)),
        currency: 'UGX',
        payee: '+256772000001',
        state: 'completed',
        kind: 'payment',
      });
    expect(after).toEqual(expect.arrayContaining([made('ussd', USSD_USER, '2500'), made('slack', SLACK_USER, '4000')]));
    expect(after).toHaveLength(2);
    expect(after.map((i) => i.id).sort()).toEqual(sandboxPayments.map((p) => String((p as { id: number }).id)).sort());
    expect(after.map((i) => i.ref).sort()).toEqual(before.map((i) => i.ref).sort());
    expect(after.find((i) => i.channel === 'slack')?.user).toBe(SLACK_USER);

    // The operator's reconciliation of the day: every payment matched, nothing differs (exit 0).
    const day = new Date().toISOString().slice(0, 10);
    const run = await reconcile(day);
    expect(run.stdout.trim().split('\n'), run.stderr).toEqual([
      'matched 2',
      'unknown_to_service 0',
      'not_ours 0',
      'state_differs 0',
      'detail_differs 0',
    ]);
    expect(run.code, run.stderr).toBe(0);

    // Redis forgot the USSD conversation; the journal did not: paying Sarah the same again, the person is
    // asked whether they mean a second payment, and "Cancel" sends nothing.
    const again = await payByUssd(second, /Cancel/);
    expect(again.screens.find((screen) => /second payment/i.test(screen))).toMatch(
      /You paid 2,?500(\.00)? UGX to \+256772000001 (just now|\d+ minutes? ago)/,
    );
    expect(again.screen).toMatch(/^END .*cancelled/is);
    expect(service.sandbox.controls.payments()).toHaveLength(2);
    await stop(second);
  }, 180_000);
});
