/**
 * What reaches the engine: only requests Slack signed in the last 5 minutes, each delivery once, whatever
 * other routes of the product parse.
 */
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createSlack } from '../../../adapters/slack/index.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { createLogger } from '../../../src/log.js';
import type { Prompt } from '../../../src/conversation/types.js';
import {
  BOT_TOKEN,
  FakeSlack,
  SIGNING_SECRET,
  ScriptedEngine,
  TEAM,
  USER,
  listen,
  memoryLogger,
  signedHeaders,
  startRig,
  textOf,
  type Rig,
} from './harness.js';

const menu = (): Prompt => ({ text: 'Menu', choices: [{ id: 'pay', label: 'Pay someone' }], final: false });
const commandBody = new URLSearchParams({
  team_id: 'T0001',
  user_id: USER,
  command: '/momo',
  text: 'pay',
  response_url: 'http://127.0.0.1:9/respond',
  trigger_id: 't-0001',
}).toString();

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function post(body: string, headers: Record<string, string>, contentType = 'application/x-www-form-urlencoded') {
  const res = await fetch(`${rig!.appUrl}/slack/events`, {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body,
  });
  return { status: res.status, text: await res.text() };
}

describe('signatures', () => {
  it('rejects a forged signature with 401 and a reason', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const forged = await post(commandBody, signedHeaders(commandBody, { secret: 'not-the-secret' }));
    expect(forged).toEqual({ status: 401, text: 'Invalid or expired Slack request signature' });
    const tampered = await post(commandBody.replace('text=pay', 'text=pin'), signedHeaders(commandBody));
    expect(tampered.status).toBe(401);
    const unsigned = await post(commandBody, {});
    expect(unsigned.status).toBe(401);
    expect(engine.inbounds).toEqual([]);
  });

  it('rejects a correctly signed request older than 5 minutes with 401', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const stale = await post(
      commandBody,
      signedHeaders(commandBody, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 }),
    );
    expect(stale).toEqual({ status: 401, text: 'Invalid or expired Slack request signature' });
    expect(engine.inbounds).toEqual([]);
    // The same body signed now is accepted: only the age was wrong.
    expect((await post(commandBody, signedHeaders(commandBody))).status).toBe(200);
    expect(engine.inbounds).toHaveLength(1);
  });

  it('answers a signed but unreadable body with 400 and a reason', async () => {
    rig = await startRig(new ScriptedEngine(menu));
    const body = '{"type": "event_callback",';
    expect(await post(body, signedHeaders(body), 'application/json')).toEqual({
      status: 400,
      text: 'Unreadable Slack request body',
    });
  });
});

describe('setup and stray requests', () => {
  it('answers the signed url_verification challenge Slack sends when the Request URL is saved', async () => {
    rig = await startRig(new ScriptedEngine(menu));
    const body = JSON.stringify({
      token: 'legacy',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const res = await post(body, signedHeaders(body), 'application/json');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
  });

  it('acknowledges a click on a button it does not know without calling the engine', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const res = await rig.sender.click({ action_id: 'old_version_button', value: 'x' }, 'stray');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    // A known click afterwards is answered, and is the only thing the engine saw.
    await rig.sender.click({ action_id: 'momo_nav_home', value: 'home' }, 'known');
    expect((await rig.fake.next('respond')).id).toBe('known');
    expect(engine.inbounds.map((i) => i.nav)).toEqual(['home']);
  });

  it('does nothing with a signed command or click that lacks Slack’s ids, and says so', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const body = new URLSearchParams({
      team_id: 'T0001',
      command: '/momo',
      text: 'pay',
      response_url: 'http://127.0.0.1:9/r',
    }).toString();
    const res = await post(body, signedHeaders(body));
    expect(res.status).toBe(200);
    expect(textOf((JSON.parse(res.text) as { blocks: any[] }).blocks)).toMatch(/missing its team, user or trigger id/);
    const click = await rig.sender.interaction({
      type: 'block_actions',
      team: null,
      user: { id: USER },
      response_url: rig.fake.responseUrl('no-team'),
      trigger_id: 't-0002',
      actions: [{ type: 'button', action_id: 'momo_choice_0', value: 'pay' }],
    });
    expect(click.status).toBe(200);
    // A valid click afterwards is the only thing the engine saw.
    await rig.sender.click({ action_id: 'momo_nav_home', value: 'home' }, 'valid');
    expect((await rig.fake.next('respond')).id).toBe('valid');
    expect(engine.inbounds.map((i) => i.nav)).toEqual(['home']);
  });

  it('reads a form body whose Content-Type carries a charset (as fetch sends it)', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const res = await post(commandBody, signedHeaders(commandBody), 'application/x-www-form-urlencoded;charset=UTF-8');
    expect(res.status).toBe(200);
    expect(textOf((JSON.parse(res.text) as { blocks: any[] }).blocks)).toBe('Menu');
    expect(engine.inbounds).toHaveLength(1);
  });

  it('treats the app’s slash command as /momo whatever the workspace named it', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const body = commandBody.replace('command=%2Fmomo', 'command=%2Fmomo-dev');
    expect(body).toContain('momo-dev');
    const res = await post(body, signedHeaders(body));
    expect(textOf((JSON.parse(res.text) as { blocks: any[] }).blocks)).toBe('Menu');
    expect(engine.inbounds[0]).toMatchObject({ start: 'pay', messageId: 't-0001' });
  });
});

describe('start', () => {
  it('answers 503 until start() has verified the bot token, then serves', async () => {
    const fake = new FakeSlack();
    await fake.start();
    const engine = new ScriptedEngine(menu);
    const store = new MemoryStore();
    const logger = createLogger('silent');
    const slack = createSlack({
      signingSecret: SIGNING_SECRET,
      botToken: BOT_TOKEN,
      apiUrl: fake.apiUrl,
      engine,
      store,
      logger,
    });
    const app = express();
    app.use(slack.router);
    const server = await listen(app);
    const postCommand = () =>
      fetch(`${server.url}/slack/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...signedHeaders(commandBody) },
        body: commandBody,
      });
    try {
      expect((await postCommand()).status).toBe(503);
      expect(fake.of('auth.test')).toEqual([]);
      await slack.start();
      expect(fake.of('auth.test')[0]?.authorization).toBe(`Bearer ${BOT_TOKEN}`);
      expect((await postCommand()).status).toBe(200);
      expect(engine.inbounds).toHaveLength(1);
    } finally {
      await server.close();
      await fake.close();
    }
  });

  it('fails to start when Slack refuses the bot token', async () => {
    const fake = new FakeSlack();
    await fake.start();
    fake.script('auth.test', { status: 200, body: { ok: false, error: 'invalid_auth' } });
    const slack = createSlack({
      signingSecret: SIGNING_SECRET,
      botToken: 'xoxb-bad',
      apiUrl: fake.apiUrl,
      engine: new ScriptedEngine(menu),
      store: new MemoryStore(),
      logger: createLogger('silent'),
    });
    try {
      await expect(slack.start()).rejects.toThrow(/invalid_auth/);
    } finally {
      await fake.close();
    }
  });
});

describe('size', () => {
  it('refuses a body over 1 MB with 413 and a reason', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const body = `payload=${'x'.repeat(1_100_000)}`;
    expect(await post(body, signedHeaders(body))).toEqual({ status: 413, text: 'Slack request body too large' });
    expect(engine.inbounds).toEqual([]);
  });
});

describe('retries', () => {
  it('does not process a retried event twice (X-Slack-Retry-Num)', async () => {
    const engine = new ScriptedEngine(menu);
    const { logger, next } = memoryLogger();
    rig = await startRig(engine, { logger });
    expect((await rig.sender.dm('pay', 'Ev042')).status).toBe(200);
    expect(textOf((await rig.fake.next('chat.postMessage')).body.blocks)).toBe('Menu');

    const retry = await rig.sender.dm('pay', 'Ev042', {
      'x-slack-retry-num': '1',
      'x-slack-retry-reason': 'http_timeout',
    });
    expect(retry.status).toBe(200);
    expect(await next('slack: duplicate delivery dropped')).toMatchObject({ eventId: 'Ev042', retryNum: 1 });
    expect(engine.inbounds).toHaveLength(1);
    expect(rig.fake.of('chat.postMessage')).toHaveLength(1);
  });

  it('ignores the bot’s own messages in the DM', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const body = JSON.stringify({
      team_id: 'T0001',
      type: 'event_callback',
      event_id: 'EvBot',
      event: {
        type: 'message',
        channel: 'D0001',
        channel_type: 'im',
        user: 'UBOT',
        bot_id: 'BBOT',
        text: 'Menu',
        ts: '1.2',
      },
    });
    expect((await post(body, signedHeaders(body), 'application/json')).status).toBe(200);
    // A user's message after it is answered, and is the only thing the engine saw.
    await rig.sender.dm('hello', 'EvUser');
    await rig.fake.next('chat.postMessage');
    expect(engine.inbounds.map((i) => i.messageId)).toEqual(['EvUser']);
  });
});

describe('mounted next to routes with their own parsers', () => {
  it('serves Slack and the JSON and form routes of the same app', async () => {
    const engine = new ScriptedEngine(menu);
    rig = await startRig(engine);
    const json = await fetch(`${rig.appUrl}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 1 }),
    });
    expect(await json.json()).toEqual({ echoed: { a: 1 } });
    const form = await fetch(`${rig.appUrl}/form`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'b=2',
    });
    expect(await form.json()).toEqual({ echoed: { b: '2' } });
    // A form-encoded command and a JSON event both still reach Bolt with their raw bodies intact.
    const command = await rig.sender.command('pay');
    expect(textOf(((await command.json()) as { blocks: any[] }).blocks)).toBe('Menu');
    await rig.sender.dm('pay', 'EvMixed');
    await rig.fake.next('chat.postMessage');
    expect(engine.inbounds).toHaveLength(2);
  });
});

describe('logs', () => {
  it('hold no token, signing secret, response_url or typed answer, even at trace level', async () => {
    const { logger, lines } = memoryLogger('trace');
    rig = await startRig(new ScriptedEngine(() => ({ text: 'Paying +256772123456', final: false })), { logger });
    const { sender, fake } = rig;
    // A forged request, a typed phone number, a refused response_url, a rate-limited notification.
    await post(commandBody, signedHeaders(commandBody, { secret: 'wrong' }));
    await sender.command('0772123456');
    fake.script('respond', { status: 404, body: 'expired_url' });
    await sender.click({ action_id: 'momo_choice_0', value: 'x' }, 'secret-hook-path');
    await fake.next('chat.postMessage');
    fake.script('chat.postMessage', { status: 429, headers: { 'retry-after': '0' }, body: { ok: false } });
    await rig.slack.notifier.send({ channel: 'slack', conversationId: `${TEAM}:${USER}` }, 'Paid +256772123456');

    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    expect(text).toContain('Request verification failed');
    expect(text).toContain('response_url failed');
    expect(text).toContain('rate limit');
    for (const secret of [SIGNING_SECRET, BOT_TOKEN, 'secret-hook-path', '0772123456', '256772123456']) {
      expect(text).not.toContain(secret);
    }
  });
});
