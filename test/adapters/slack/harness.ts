/**
 * Test doubles around the real Bolt app: a Web API server and a response_url capture (one local express
 * server on port 0), requests signed the way Slack signs them, a scripted engine and an in-memory store.
 */
import { createHmac } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { createLogger, type Logger } from '../../../src/log.js';
import type { Engine, Inbound, Prompt, SessionStore } from '../../../src/conversation/types.js';
import { MemoryStore } from '../../../src/conversation/memory-store.js';
import { createSlack, type Slack, type SlackOptions } from '../../../adapters/slack/index.js';

export const SIGNING_SECRET = 'test-signing-secret';
export const BOT_TOKEN = 'xoxb-test-token';
export const TEAM = 'T0001';
export const USER = 'U0001';

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export function listen(app: express.Express): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const server: Server = app.listen(0, '127.0.0.1');
    server.once('error', reject);
    server.once('listening', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

/** One call the fake Slack received: a Web API method, or `respond` for a response_url post. */
export interface Call {
  kind: string;
  /** Form fields with blocks/view JSON-decoded (Web API), or the JSON body (response_url). */
  body: Record<string, any>;
  /** The `:id` of the response_url, for `respond`. */
  id?: string;
  /** The Authorization header (the token a Web API call used). */
  authorization?: string;
}

interface Scripted {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

const DEFAULT_ANSWERS: Record<string, unknown> = {
  'auth.test': { ok: true, user_id: 'UBOT', bot_id: 'BBOT', team_id: TEAM, url: 'https://example.slack.com/' },
  'views.open': { ok: true, view: { id: 'V0001' } },
  'chat.postMessage': { ok: true, channel: 'D0001', ts: '1700000000.000100' },
  'chat.postEphemeral': { ok: true, message_ts: '1700000000.000200' },
  'conversations.open': { ok: true, channel: { id: 'D0001' } },
};

/** The Web API at `${url}/api/` and response_urls at `${url}/respond/<id>`, recording every call. */
export class FakeSlack {
  readonly calls: Call[] = [];
  private readonly seen = new Map<string, number>();
  private readonly waiters: Array<() => void> = [];
  private readonly scripted = new Map<string, Scripted[]>();
  private listening?: Listening;
  private posted = 0;

  get apiUrl(): string {
    return `${this.url}/api/`;
  }

  get url(): string {
    if (!this.listening) throw new Error('FakeSlack not started');
    return this.listening.url;
  }

  responseUrl(id: string): string {
    return `${this.url}/respond/${id}`;
  }

  /** The next answers of `kind` (a Web API method or `respond`), before the default ones. */
  script(kind: string, ...answers: Scripted[]): void {
    this.scripted.set(kind, [...(this.scripted.get(kind) ?? []), ...answers]);
  }

  /** Calls of one kind so far. */
  of(kind: string): Call[] {
    return this.calls.filter((c) => c.kind === kind);
  }

  /** The next call of `kind` not yet returned by next() (waits for it). */
  async next(kind: string): Promise<Call> {
    for (;;) {
      const index = this.seen.get(kind) ?? 0;
      const call = this.of(kind)[index];
      if (call) {
        this.seen.set(kind, index + 1);
        return call;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** The first call of `kind` (so far or to come) that `match` accepts; next() is not moved. */
  async find(kind: string, match: (call: Call) => boolean): Promise<Call> {
    for (;;) {
      const found = this.of(kind).find(match);
      if (found) return found;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async start(): Promise<void> {
    const app = express();
    app.post('/api/:method', express.urlencoded({ extended: false }), (req, res) => {
      const body: Record<string, any> = { ...req.body };
      for (const key of ['blocks', 'view']) if (typeof body[key] === 'string') body[key] = JSON.parse(body[key]);
      this.answer({ kind: String(req.params.method), body, authorization: req.get('authorization') }, res);
    });
    app.post('/respond/:id', express.json(), (req, res) => {
      this.answer({ kind: 'respond', id: String(req.params.id), body: req.body }, res);
    });
    this.listening = await listen(app);
  }

  private answer(call: Call, res: express.Response): void {
    this.calls.push(call);
    for (const wake of this.waiters.splice(0)) wake();
    const scripted = this.scripted.get(call.kind)?.shift();
    if (scripted) {
      res.status(scripted.status).set(scripted.headers ?? {});
      res.send(typeof scripted.body === 'string' ? scripted.body : JSON.stringify(scripted.body));
      return;
    }
    if (call.kind === 'respond') res.type('text/plain').send('ok');
    else if (call.kind === 'chat.postMessage' && /^[CG]/.test(String(call.body.channel))) {
      // Posted in a channel: Slack answers that channel and the message's own ts (chat.update names it).
      this.posted += 1;
      res.json({ ok: true, channel: call.body.channel, ts: `1700000100.${String(this.posted).padStart(6, '0')}` });
    } else res.json(DEFAULT_ANSWERS[call.kind] ?? { ok: true });
  }

  async close(): Promise<void> {
    await this.listening?.close();
  }
}

/** Headers Slack sends with a request: `v0=` HMAC-SHA256 of `v0:<ts>:<body>` with the signing secret. */
export function signedHeaders(body: string, options: { secret?: string; timestamp?: number } = {}): Record<string, string> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', options.secret ?? SIGNING_SECRET).update(`v0:${timestamp}:${body}`).digest('hex');
  return { 'x-slack-request-timestamp': String(timestamp), 'x-slack-signature': `v0=${signature}` };
}

let triggers = 0;
/** A fresh trigger_id, as Slack gives every command and interaction. */
export function triggerId(): string {
  triggers += 1;
  return `13345224609.738474920.${triggers}`;
}

/** Posts to our app what Slack posts: slash commands, interactions (form `payload=`), events (JSON). */
export class SlackSender {
  constructor(
    private readonly appUrl: string,
    private readonly fake: FakeSlack,
  ) {}

  post(body: string, contentType: string, headers: Record<string, string> = {}): Promise<globalThis.Response> {
    return fetch(`${this.appUrl}/slack/events`, {
      method: 'POST',
      headers: { 'content-type': contentType, ...signedHeaders(body), ...headers },
      body,
    });
  }

  /** `/momo <text>`; its response_url is `${fake}/respond/<responseId>`. */
  command(text: string, options: { responseId?: string; trigger?: string; user?: string } = {}): Promise<globalThis.Response> {
    const body = new URLSearchParams({
      token: 'legacy-verification-token',
      team_id: TEAM,
      team_domain: 'example',
      channel_id: 'C0001',
      channel_name: 'general',
      user_id: options.user ?? USER,
      user_name: 'amina',
      command: '/momo',
      text,
      api_app_id: 'A0001',
      response_url: this.fake.responseUrl(options.responseId ?? 'command'),
      trigger_id: options.trigger ?? triggerId(),
    }).toString();
    return this.post(body, 'application/x-www-form-urlencoded');
  }

  interaction(payload: object): Promise<globalThis.Response> {
    const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
    return this.post(body, 'application/x-www-form-urlencoded');
  }

  /** A click on a button of a message we rendered; its response_url is `${fake}/respond/<responseId>`. */
  click(button: { action_id: string; value?: string }, responseId: string, trigger = triggerId(), user = USER): Promise<globalThis.Response> {
    return this.interaction({
      type: 'block_actions',
      team: { id: TEAM, domain: 'example' },
      user: { id: user, username: user === USER ? 'amina' : user.toLowerCase(), team_id: TEAM },
      api_app_id: 'A0001',
      token: 'legacy-verification-token',
      container: { type: 'message', message_ts: '1700000000.000100', channel_id: 'C0001', is_ephemeral: true },
      trigger_id: trigger,
      channel: { id: 'C0001', name: 'general' },
      response_url: this.fake.responseUrl(responseId),
      actions: [{ type: 'button', block_id: 'b', action_ts: '1700000001.000', text: { type: 'plain_text', text: 'x' }, ...button }],
    });
  }

  /** Submits a modal we opened (the view as views.open received it) with `text` typed in its input. */
  submit(view: { callback_id: string; private_metadata: string; blocks: Array<{ block_id: string; element: { action_id: string } }> }, text: string, user = USER) {
    const input = view.blocks[0]!;
    return this.interaction({
      type: 'view_submission',
      team: { id: TEAM, domain: 'example' },
      user: { id: user, name: user === USER ? 'amina' : user.toLowerCase(), team_id: TEAM },
      api_app_id: 'A0001',
      token: 'legacy-verification-token',
      trigger_id: triggerId(),
      view: {
        id: 'V0001',
        type: 'modal',
        callback_id: view.callback_id,
        private_metadata: view.private_metadata,
        state: { values: { [input.block_id]: { [input.element.action_id]: { type: 'plain_text_input', value: text } } } },
      },
    });
  }

  /** A message the user typed in the app's DM, delivered as an Events API callback. */
  dm(text: string, eventId: string, headers: Record<string, string> = {}): Promise<globalThis.Response> {
    const body = JSON.stringify({
      token: 'legacy-verification-token',
      team_id: TEAM,
      api_app_id: 'A0001',
      type: 'event_callback',
      event_id: eventId,
      event_time: 1700000000,
      event: { type: 'message', channel: 'D0001', channel_type: 'im', user: USER, text, ts: '1700000000.000300' },
      authorizations: [{ team_id: TEAM, user_id: 'UBOT', is_bot: true }],
    });
    return this.post(body, 'application/json', headers);
  }
}

/** The button of a rendered message with the given action_id. */
export function buttonOf(blocks: Array<Record<string, any>>, actionId: string): { action_id: string; value: string } {
  for (const block of blocks) {
    for (const element of block.elements ?? []) if (element.action_id === actionId) return element;
  }
  throw new Error(`no button ${actionId} in ${JSON.stringify(blocks)}`);
}

/** The button of a rendered message whose label is `label`. */
export function buttonLabelled(blocks: Array<Record<string, any>>, label: string): { action_id: string; value: string } {
  for (const block of blocks) {
    for (const element of block.elements ?? []) if (element.text?.text === label) return element;
  }
  throw new Error(`no button labelled ${label} in ${JSON.stringify(blocks)}`);
}

/** The plain text of a rendered message's first section. */
export function textOf(blocks: Array<Record<string, any>>): string {
  return blocks[0]?.text?.text ?? '';
}

/** An engine that records what it is given and answers with `script`. */
export class ScriptedEngine implements Engine {
  readonly inbounds: Inbound[] = [];
  constructor(private readonly script: (inbound: Inbound, index: number) => Prompt | Promise<Prompt>) {}
  async handle(inbound: Inbound): Promise<Prompt> {
    this.inbounds.push(inbound);
    return this.script(inbound, this.inbounds.length - 1);
  }
}

/** A logger whose lines are kept (parsed) for assertions. */
export function memoryLogger(level = 'info'): { logger: Logger; lines: Array<Record<string, any>>; next(msg: string): Promise<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const waiters: Array<() => void> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      for (const wake of waiters.splice(0)) wake();
      done();
    },
  });
  const next = async (msg: string) => {
    for (;;) {
      const found = lines.find((l) => l.msg === msg);
      if (found) return found;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { logger: createLogger(level, stream), lines, next };
}

export interface Rig {
  fake: FakeSlack;
  sender: SlackSender;
  slack: Slack;
  store: SessionStore;
  appUrl: string;
  /** Closes the app, and the fake Slack and store unless they were passed in. */
  close(): Promise<void>;
}

export interface RigSetup {
  /** Share one fake Slack between rigs (two instances of the product). Default: a new one. */
  fake?: FakeSlack;
  /** Runs once the fake listens, before start() (e.g. to script apps.connections.open). */
  beforeStart?: (fake: FakeSlack) => void;
}

/**
 * The adapter as the product mounts it: at the root of an express app that also has routes with their own
 * body parsers (JSON and form), started against the fake Web API. `options.store` shares a store; default
 * a new MemoryStore.
 */
export async function startRig(engine: Engine, options: Partial<SlackOptions> = {}, setup: RigSetup = {}): Promise<Rig> {
  const fake = setup.fake ?? new FakeSlack();
  if (!setup.fake) await fake.start();
  setup.beforeStart?.(fake);
  const store = options.store ?? new MemoryStore();
  const slack = createSlack({
    signingSecret: SIGNING_SECRET,
    botToken: BOT_TOKEN,
    apiUrl: fake.apiUrl,
    engine,
    store,
    logger: createLogger('silent'),
    retryConfig: { retries: 2, minTimeout: 0, maxTimeout: 0 },
    ...options,
  });
  const app = express();
  app.post('/echo', express.json(), (req, res) => {
    res.json({ echoed: req.body });
  });
  app.post('/form', express.urlencoded({ extended: false }), (req, res) => {
    res.json({ echoed: req.body });
  });
  app.use(slack.router);
  await slack.start();
  const listening = await listen(app);
  return {
    fake,
    sender: new SlackSender(listening.url, fake),
    slack,
    store,
    appUrl: listening.url,
    async close() {
      await listening.close();
      await slack.stop();
      if (!setup.fake) await fake.close();
      if (!options.store) await store.close();
    },
  };
}
