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
import type { Engine, Inbound, Prompt } from '../../../src/conversation/types.js';
import type { Store } from '../../../src/store/types.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { createSlack, type Slack, type SlackOptions } from '../../../adapters/slack/index.js';
import { loadConfig } from '../../../src/config.js';
import { startApp, type AppOptions, type RunningApp } from '../../../src/app.js';
import { productDatabase } from '../../journal/server-database.js';

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

/**
 * One call the fake Slack received: a Web API method, `respond` for a response_url post, `download` for a
 * file's url_private_download, `upload` for bytes posted to an upload URL.
 */
export interface Call {
  kind: string;
  /** Form fields with blocks/view JSON-decoded (Web API), or the JSON body (response_url). */
  body: Record<string, any>;
  /** The `:id` of the response_url, for `respond`. */
  id?: string;
  /** The Authorization header (the token a Web API call used). */
  authorization?: string;
}

/** A file shared in the fake workspace (files.list, files.info and its download speak of it). */
export interface SharedFile {
  id: string;
  name: string;
  filetype: string;
  mimetype: string;
  /** The size files.info reports (default: the content's bytes). */
  size: number;
  channels: string[];
  created: number;
  content: Buffer;
  /** The download never answers (a hung file server). */
  hang?: boolean;
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
  /** Files shared in the workspace, newest last; uploads through files.getUploadURLExternal land here too. */
  readonly files = new Map<string, SharedFile>();
  private fileIds = 0;

  /** Shares a file in `channel` as a user would (drag and drop); answers it as files.info would describe it. */
  share(
    channel: string,
    name: string,
    content: string | Buffer,
    options: Partial<Pick<SharedFile, 'filetype' | 'mimetype' | 'size' | 'hang'>> = {},
  ): SharedFile {
    this.fileIds += 1;
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    const csv = /\.csv$/i.test(name);
    const file: SharedFile = {
      id: `F0TEST${String(this.fileIds).padStart(4, '0')}`,
      name,
      filetype: options.filetype ?? (csv ? 'csv' : 'text'),
      mimetype: options.mimetype ?? (csv ? 'text/csv' : 'text/plain'),
      size: options.size ?? bytes.length,
      channels: [channel],
      created: 1700000000 + this.fileIds,
      content: bytes,
      hang: options.hang,
    };
    this.files.set(file.id, file);
    return file;
  }

  /** The file object of the Web API (a subset of Slack's documented fields, as files.info and files.list give it). */
  fileObject(file: SharedFile): Record<string, unknown> {
    return {
      id: file.id,
      created: file.created,
      timestamp: file.created,
      name: file.name,
      title: file.name,
      mimetype: file.mimetype,
      filetype: file.filetype,
      pretty_type: file.filetype.toUpperCase(),
      user: USER,
      mode: 'hosted',
      is_external: false,
      is_public: true,
      size: file.size,
      url_private: `${this.url}/files-pri/${TEAM}-${file.id}/${encodeURIComponent(file.name)}`,
      url_private_download: `${this.url}/files-pri/${TEAM}-${file.id}/download/${encodeURIComponent(file.name)}`,
      permalink: `https://example.slack.com/files/${USER}/${file.id}/${encodeURIComponent(file.name)}`,
      channels: file.channels.filter((c) => c.startsWith('C')),
      groups: file.channels.filter((c) => c.startsWith('G')),
      ims: file.channels.filter((c) => c.startsWith('D')),
      shares: {
        public: Object.fromEntries(
          file.channels
            .filter((c) => c.startsWith('C'))
            .map((c) => [c, [{ ts: `${file.created}.000100`, channel_name: 'general', team_id: TEAM }]]),
        ),
      },
    };
  }

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
      for (const key of ['blocks', 'view', 'files'])
        if (typeof body[key] === 'string') body[key] = JSON.parse(body[key]);
      this.answer({ kind: String(req.params.method), body, authorization: req.get('authorization') }, res);
    });
    app.post('/respond/:id', express.json(), (req, res) => {
      this.answer({ kind: 'respond', id: String(req.params.id), body: req.body }, res);
    });
    // A file's bytes at its url_private_download: only with the bot token as Bearer; without it Slack answers
    // its sign-in page (200, HTML), not the file.
    app.get('/files-pri/:teamFile/download/:name', (req, res) => {
      const id = String(req.params.teamFile).split('-')[1] ?? '';
      const file = this.files.get(id);
      this.record({ kind: 'download', body: { file: id }, authorization: req.get('authorization') });
      if (file?.hang) return;
      if (req.get('authorization') !== `Bearer ${BOT_TOKEN}`) {
        res.type('text/html').send('<!DOCTYPE html><html><body>Sign in to Slack</body></html>');
        return;
      }
      if (!file) {
        res.status(404).type('text/plain').send('Not found');
        return;
      }
      res.type(file.mimetype).send(file.content);
    });
    // The upload URL files.getUploadURLExternal gives: the bytes, raw or as multipart form data.
    app.post('/upload/v1/:fileId', express.raw({ type: () => true, limit: '5mb' }), async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const type = req.get('content-type') ?? '';
      let content = raw;
      if (type.startsWith('multipart/form-data')) {
        const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': type } }).formData();
        const parts: Array<FormDataEntryValue> = [];
        form.forEach((value) => parts.push(value));
        const part = parts.find((v): v is File => typeof v !== 'string');
        content = part ? Buffer.from(await part.arrayBuffer()) : Buffer.alloc(0);
      }
      const id = String(req.params.fileId);
      const pending = this.files.get(id);
      if (pending) pending.content = content;
      this.record({ kind: 'upload', id, body: { content: content.toString('utf8') } });
      res.status(200).type('text/plain').send(`OK - ${content.length}`);
    });
    this.listening = await listen(app);
  }

  private record(call: Call): void {
    this.calls.push(call);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** The Web API's own answer to the file methods (Slack's documented shapes), or undefined for other methods. */
  private filesAnswer(call: Call): unknown {
    const { body } = call;
    if (call.kind === 'files.info') {
      const file = this.files.get(String(body.file));
      return file
        ? { ok: true, file: this.fileObject(file), comments: [], response_metadata: { next_cursor: '' } }
        : { ok: false, error: 'file_not_found' };
    }
    if (call.kind === 'files.list') {
      const count = Math.min(Number(body.count ?? 100) || 100, 1000);
      const all = [...this.files.values()]
        .filter((f) => !body.channel || f.channels.includes(String(body.channel)))
        .reverse();
      return {
        ok: true,
        files: all.slice(0, count).map((f) => this.fileObject(f)),
        paging: { count, total: all.length, page: 1, pages: Math.max(1, Math.ceil(all.length / count)) },
      };
    }
    if (call.kind === 'files.getUploadURLExternal') {
      if (!body.filename || !body.length) return { ok: false, error: 'invalid_arguments' };
      this.fileIds += 1;
      const id = `F0UPLD${String(this.fileIds).padStart(4, '0')}`;
      this.files.set(id, {
        id,
        name: String(body.filename),
        filetype: 'csv',
        mimetype: 'text/csv',
        size: Number(body.length),
        channels: [],
        created: 1700000000 + this.fileIds,
        content: Buffer.alloc(0),
      });
      return { ok: true, upload_url: `${this.url}/upload/v1/${id}`, file_id: id };
    }
    if (call.kind === 'files.completeUploadExternal') {
      const listed = Array.isArray(body.files) ? (body.files as Array<{ id: string; title?: string }>) : [];
      const files = listed.map((f) => this.files.get(f.id));
      if (files.length === 0 || files.some((f) => !f)) return { ok: false, error: 'file_not_found' };
      for (const file of files) if (body.channel_id) file!.channels.push(String(body.channel_id));
      return { ok: true, files: listed.map((f) => ({ id: f.id, title: f.title ?? '' })) };
    }
    return undefined;
  }

  private answer(call: Call, res: express.Response): void {
    this.record(call);
    const scripted = this.scripted.get(call.kind)?.shift();
    if (scripted) {
      res.status(scripted.status).set(scripted.headers ?? {});
      res.send(typeof scripted.body === 'string' ? scripted.body : JSON.stringify(scripted.body));
      return;
    }
    const filesAnswer = this.filesAnswer(call);
    if (filesAnswer !== undefined) res.json(filesAnswer);
    else if (call.kind === 'respond') res.type('text/plain').send('ok');
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
export function signedHeaders(
  body: string,
  options: { secret?: string; timestamp?: number } = {},
): Record<string, string> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', options.secret ?? SIGNING_SECRET)
    .update(`v0:${timestamp}:${body}`)
    .digest('hex');
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
  command(
    text: string,
    options: { responseId?: string; trigger?: string; user?: string } = {},
  ): Promise<globalThis.Response> {
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
  click(
    button: { action_id: string; value?: string },
    responseId: string,
    trigger = triggerId(),
    user = USER,
  ): Promise<globalThis.Response> {
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
      actions: [
        {
          type: 'button',
          block_id: 'b',
          action_ts: '1700000001.000',
          text: { type: 'plain_text', text: 'x' },
          ...button,
        },
      ],
    });
  }

  /** Submits a modal we opened (the view as views.open received it) with `text` typed in its input. */
  submit(
    view: {
      callback_id: string;
      private_metadata: string;
      blocks: Array<{ block_id: string; element: { action_id: string } }>;
    },
    text: string,
    user = USER,
  ) {
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
        state: {
          values: { [input.block_id]: { [input.element.action_id]: { type: 'plain_text_input', value: text } } },
        },
      },
    });
  }

  /** Submits a view we opened with the given state values (Slack's view_submission payload), as `user`. */
  submitValues(
    view: { callback_id: string; private_metadata?: string },
    values: Record<string, Record<string, unknown>>,
    user = USER,
  ) {
    return this.interaction({
      type: 'view_submission',
      team: { id: TEAM, domain: 'example' },
      user: { id: user, name: user.toLowerCase(), team_id: TEAM },
      api_app_id: 'A0001',
      token: 'legacy-verification-token',
      trigger_id: triggerId(),
      view: {
        id: 'V0002',
        type: 'modal',
        callback_id: view.callback_id,
        private_metadata: view.private_metadata ?? '',
        state: { values },
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
export function buttonLabelled(
  blocks: Array<Record<string, any>>,
  label: string,
): { action_id: string; value: string } {
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
export function memoryLogger(level = 'info'): {
  logger: Logger;
  lines: Array<Record<string, any>>;
  next(msg: string): Promise<Record<string, any>>;
} {
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
  store: Store;
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
export async function startRig(
  engine: Engine,
  options: Partial<SlackOptions> = {},
  setup: RigSetup = {},
): Promise<Rig> {
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

export interface Product {
  fake: FakeSlack;
  running: RunningApp;
  sender: SlackSender;
  close(): Promise<void>;
}

/** The whole product (startApp, embedded sandbox) with Slack on against a new fake Web API; `env` adds settings. */
export async function startProduct(env: Record<string, string> = {}, options: AppOptions = {}): Promise<Product> {
  const fake = new FakeSlack();
  await fake.start();
  const running = await startApp(
    loadConfig({
      ...(await productDatabase()),
      PORT: '0',
      LOG_LEVEL: 'silent',
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_API_URL: fake.apiUrl,
      ...env,
    }),
    options,
  );
  return {
    fake,
    running,
    sender: new SlackSender(running.url, fake),
    async close() {
      await running.stop();
      await fake.close();
    },
  };
}
