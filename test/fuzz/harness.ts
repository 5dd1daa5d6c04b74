/**
 * The whole product for fuzzing: startApp with the embedded sandbox, every channel on (Telegram webhook
 * against a local Bot API server, Slack over HTTP against a local Web API, WhatsApp against a local Graph
 * API server, Basic auth on the notification receiver), driven over real HTTP. Every request carries an AbortSignal timeout, so a hang fails the run
 * instead of stalling it; the process's unhandledRejection / uncaughtException are recorded meanwhile.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, vi } from 'vitest';
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/log.js';
import { BOT_TOKEN, startFakeBotApi, type FakeBotApi } from '../adapters/telegram/fake-bot-api.js';
import { BOT_TOKEN as SLACK_BOT_TOKEN, FakeSlack, SIGNING_SECRET, signedHeaders } from '../adapters/slack/harness.js';
import { startFakeGraphApi, type FakeGraphApi } from '../adapters/whatsapp/fake-graph-api.js';
import { whatsappEnv } from '../adapters/whatsapp/deliveries.js';
import { freePort } from '../ports.js';
import { productDatabase } from '../journal/server-database.js';

export { SIGNING_SECRET, signedHeaders };
export const TELEGRAM_SECRET = 'fuzz-telegram-secret-0123456789';
export const WEBHOOK_USER = 'momo-service';
export const WEBHOOK_PASSWORD = 'fuzz-webhook-password';
export const BASIC_AUTH = `Basic ${Buffer.from(`${WEBHOOK_USER}:${WEBHOOK_PASSWORD}`).toString('base64')}`;
export const SANDBOX_KEY = 'sandbox-key';
export const VENDING_KEY = 'sandbox-vending-key';

/**
 * Longest a request may take before it counts as a hang. The product answers within seconds (Slack acks
 * by 2.8 s and Bolt answers requests no listener took after 3 s; USSD by 4 s), but the whole suite runs
 * beside Chromium and other servers on two cores, where 10 s was seen to pass: a hang is anything that
 * never answers, so the bound leaves room for a loaded machine.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

export interface Product {
  app: RunningApp;
  url: string;
  bot: FakeBotApi;
  slack: FakeSlack;
  graph: FakeGraphApi;
  stop(): Promise<void>;
}

/** FUZZ_LOG=warn (or any level) shows the product's own log while fuzzing, to find what a failure was. */
const defaultLogger = (): Logger => createLogger(process.env.FUZZ_LOG ?? 'silent');

export async function startFuzzProduct(
  env: Record<string, string> = {},
  logger: Logger = defaultLogger(),
): Promise<Product> {
  const bot = await startFakeBotApi();
  const slack = new FakeSlack();
  await slack.start();
  const graph = await startFakeGraphApi();
  // Chosen before the start, so PUBLIC_URL can name the product's own address (webhooks stay on loopback).
  const port = await freePort();
  const app = await startApp(
    loadConfig({
      ...(await productDatabase()),
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_API_ROOT: bot.apiRoot,
      TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_BOT_TOKEN: SLACK_BOT_TOKEN,
      SLACK_API_URL: slack.apiUrl,
      MOMO_WEBHOOK_USER: WEBHOOK_USER,
      MOMO_WEBHOOK_PASSWORD: WEBHOOK_PASSWORD,
      ...whatsappEnv(graph),
      // The fuzzer is one very busy user from one address; the limits have their own security tests.
      RATE_LIMIT_MESSAGES: '1000000',
      SOURCE_RATE_LIMIT_REQUESTS: '1000000',
      ...env,
    }),
    { logger },
  );
  return {
    app,
    url: app.url,
    bot,
    slack,
    graph,
    async stop() {
      await app.stop();
      await bot.close();
      await slack.close();
      await graph.close();
    },
  };
}

/** Records the process-wide failures a request might cause; `failures` is checked at the end of a suite. */
export function watchProcess(): { failures: string[]; stop(): void } {
  const failures: string[] = [];
  const onRejection = (reason: unknown) => failures.push(`unhandledRejection: ${String(reason)}`);
  const onException = (error: unknown) => failures.push(`uncaughtException: ${String(error)}`);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return {
    failures,
    stop() {
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
    },
  };
}

export type Body = string | Uint8Array | undefined;

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Body;
}

export interface FuzzResponse {
  status: number;
  text: string;
}

/** One request, bounded by REQUEST_TIMEOUT_MS: a hang rejects with a TimeoutError naming the request. */
export async function send(base: string, req: FuzzRequest): Promise<FuzzResponse> {
  const noBody = req.method === 'GET' || req.method === 'HEAD';
  const started = Date.now();
  try {
    const res = await fetch(`${base}${req.path}`, {
      method: req.method,
      headers: req.headers,
      body: noBody ? undefined : (req.body as BodyInit | undefined),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      redirect: 'manual',
    });
    const text = await res.text();
    if (process.env.FUZZ_DEBUG && Date.now() - started > 1000)
      console.log(`slow ${Date.now() - started} ms: ${req.method} ${req.path} ${String(req.body).slice(0, 300)}`);
    return { status: res.status, text };
  } catch (error) {
    throw new Error(`${req.method} ${req.path} did not answer: ${String(error)}`, { cause: error });
  }
}

/**
 * The properties every answer keeps: never 5xx; a rejection (4xx) says why in its body (HEAD has none).
 * Returns a description of the breach, or null.
 */
export function breach(req: FuzzRequest, res: FuzzResponse): string | null {
  if (res.status >= 500)
    return `${req.method} ${req.path} answered ${res.status}: ${res.text.slice(0, 200)} to ${typeof req.body === 'string' ? req.body.slice(0, 400) : 'bytes'}`;
  if (res.status >= 400 && req.method !== 'HEAD' && res.text.trim() === '') {
    return `${req.method} ${req.path} answered ${res.status} with no reason`;
  }
  return null;
}

/** Sends a batch at once (the product sees concurrent requests) and throws on the first breach. */
export async function sendAll(base: string, requests: FuzzRequest[], check = breach): Promise<FuzzResponse[]> {
  const answers = await Promise.all(requests.map((r) => send(base, r)));
  requests.forEach((req, i) => {
    const problem = check(req, answers[i]!);
    if (problem) throw new Error(problem);
  });
  return answers;
}

// ---- arbitraries ------------------------------------------------------------------------------------

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/** A value of any JSON type, small: the "wrong type" for any field. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(''),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

/** JSON nested `depth` deep, arrays or objects. */
export const deepJson: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 50, max: 5000 }), fc.boolean())
  .map(([depth, arrays]) =>
    arrays ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth),
  );

/** A big body: past the usual body limits (16 kb USSD, 100 kb JSON, 256 kb notifications, 1 mb Slack). */
export const hugeBody: fc.Arbitrary<string> = fc
  .constantFrom(17 * 1024, 120 * 1024, 300 * 1024, 1100 * 1024)
  .chain((size) => fc.constantFrom('x', '{"a":"', '1', '%').map((unit) => unit.repeat(Math.ceil(size / unit.length))));

export const garbageBytes: fc.Arbitrary<Uint8Array> = fc.uint8Array({ maxLength: 600 });

export const formBody: fc.Arbitrary<string> = fc
  .dictionary(fc.string({ maxLength: 12 }), fc.string({ maxLength: 30 }), { maxKeys: 6 })
  .map((d) => new URLSearchParams(d).toString());

export const CONTENT_TYPES = [
  'application/json',
  'application/x-www-form-urlencoded',
  'text/plain',
  'application/octet-stream',
  'multipart/form-data; boundary=xyz',
  'application/json; charset=utf-16',
  'application/json; charset=koi8-r',
  'application/x-www-form-urlencoded; charset=nonsense',
  'application/vnd.api+json',
  '*/*',
] as const;

export const contentType: fc.Arbitrary<string | undefined> = fc.option(fc.constantFrom(...CONTENT_TYPES), {
  nil: undefined,
});

/** Extra headers with names and values fetch accepts; sometimes an encoding the body does not have. */
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      custom: fc.dictionary(
        fc.stringMatching(/^x-[a-z0-9-]{1,12}$/),
        fc.stringMatching(/^[\x20-\x7e]{0,40}$/).map((v) => v.trim()),
        { maxKeys: 3 },
      ),
      encoding: fc.option(fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'bogus'), { nil: undefined }),
      accept: fc.option(fc.constantFrom('application/json', 'text/html', '*/*', 'image/png'), { nil: undefined }),
    },
    { requiredKeys: [] },
  )
  .map(({ custom, encoding, accept }) => ({
    ...(custom ?? {}),
    ...(encoding ? { 'content-encoding': encoding } : {}),
    ...(accept ? { accept } : {}),
  }));

/** Any body at all: JSON of any shape, forms, garbage bytes, deep nesting, huge (rarely). */
export const anyBody: fc.Arbitrary<Body> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: formBody },
  { weight: 2, arbitrary: garbageBytes },
  { weight: 2, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: deepJson },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: hugeBody },
);

/**
 * An object with the given fields: each present or not, holding a plausible value or a value of the
 * wrong type, plus the odd unknown field.
 */
export function shaped(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const entries = Object.fromEntries(
    Object.entries(fields).map(([name, plausible]) => [
      name,
      fc.oneof({ weight: 4, arbitrary: plausible }, { weight: 1, arbitrary: anyValue }),
    ]),
  );
  return fc
    .tuple(
      fc.record(entries, { requiredKeys: [] }),
      fc.dictionary(fc.string({ maxLength: 8 }), anyValue, { maxKeys: 2 }),
    )
    .map(([known, extra]) => ({ ...extra, ...known }));
}

/** A request to `path` with any method, content type, headers and body. */
export function anyRequestTo(
  paths: fc.Arbitrary<string>,
  fixedHeaders: Record<string, string> = {},
): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: fc.constantFrom(...METHODS),
      path: paths,
      type: contentType,
      headers: extraHeaders,
      body: anyBody,
    })
    .map(({ method, path, type, headers, body }) => ({
      method,
      path,
      headers: { ...headers, ...(type ? { 'content-type': type } : {}), ...fixedHeaders },
      body,
    }));
}

/** Paths under a prefix: known routes, random segments, odd characters, trailing slashes. */
export function pathsUnder(prefix: string, known: string[]): fc.Arbitrary<string> {
  const segment = fc.oneof(
    fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/),
    fc.integer({ min: -5, max: 1_000_000 }).map(String),
    fc.constantFrom(
      '..',
      '%2e%2e',
      '%00',
      '%ff',
      'a%20b',
      '~',
      '{id}',
      '💸'.replace(/./gu, (c) => encodeURIComponent(c)),
    ),
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...known).map((p) => `${prefix}${p}`) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...known), segment).map(([p, s]) => `${prefix}${p}/${s}`) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.array(segment, { minLength: 1, maxLength: 4 }), fc.boolean())
        .map(([segs, slash]) => `${prefix}/${segs.join('/')}${slash ? '/' : ''}`),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...known), fc.string({ maxLength: 10 }))
        .map(([p, q]) => `${prefix}${p}?${encodeURIComponent(q)}=${encodeURIComponent(q)}&limit=-1&offset=abc`),
    },
  );
}

/** FUZZ_SCALE multiplies every suite's runs (default 1, sized for the normal test run on two cores). */
export const FUZZ_SCALE = Number(process.env.FUZZ_SCALE ?? '1') || 1;
// Longer runs get proportionally longer per test (the suite's default is 30 s).
/**
 * FUZZ_SEED fixes fast-check's seed to replay a run (the seed a failure prints); unset, every run explores
 * new cases.
 */
const FUZZ_SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

// Room for a few slow batches within one property, beyond the default 30 s of other tests.
vi.setConfig({ testTimeout: 120_000 * FUZZ_SCALE });

/**
 * One fuzz suite file's product and process watch: started before its tests, stopped after them, and the
 * requests sent per route printed (the report's figures). Fields are set once the suite has started.
 */
export function fuzzSuite(name: string): { product: Product; watch: ReturnType<typeof watchProcess> } {
  const suite = {} as { product: Product; watch: ReturnType<typeof watchProcess> };
  beforeAll(async () => {
    suite.watch = watchProcess();
    suite.product = await startFuzzProduct();
  });
  afterAll(async () => {
    await suite.product?.stop();
    suite.watch?.stop();
    console.log(`fuzz ${name} requests: ${JSON.stringify(counts)}`);
  });
  return suite;
}

/** Runs a property of batches; returns how many requests were sent. */
export async function fuzz(
  requests: fc.Arbitrary<FuzzRequest[]>,
  run: (batch: FuzzRequest[]) => Promise<void>,
  numRuns: number,
): Promise<number> {
  let sent = 0;
  await fc.assert(
    fc.asyncProperty(requests, async (batch) => {
      sent += batch.length;
      await run(batch);
    }),
    {
      numRuns: Math.max(1, Math.round(numRuns * FUZZ_SCALE)),
      endOnFailure: true,
      ...(FUZZ_SEED === undefined ? {} : { seed: FUZZ_SEED }),
    },
  );
  return sent;
}

/** Count of requests per route, printed at the end of a suite (the report's figures). */
export const counts: Record<string, number> = {};
export function count(route: string, n: number): void {
  counts[route] = (counts[route] ?? 0) + n;
}
