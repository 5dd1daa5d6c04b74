/**
 * Test harness: a sandbox served on a real local port (0), raw HTTP helpers, and a recording HTTP
 * receiver for webhooks and verification calls.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../src/log.js';
import { createSandbox, type SandboxControls, type SandboxOptions } from '../../src/sandbox/index.js';

export const API_KEY = 'test-key';
export const VENDING_KEY = 'test-vending-key';
export const silent = createLogger('silent');

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

export interface RunningSandbox {
  base: string;
  controls: SandboxControls;
  /** JSON request to the main API (path after `/api`), with the test key unless `key` is given. */
  api(
    method: string,
    path: string,
    init?: { json?: unknown; form?: Record<string, string>; headers?: Record<string, string>; key?: string | null },
  ): Promise<Answer>;
  /** Any request to the sandbox's server. */
  raw(path: string, init?: RequestInit): Promise<Answer>;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function read(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, headers: res.headers, body };
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const sandbox = createSandbox({
    apiKey: API_KEY,
    vendingApiKey: VENDING_KEY,
    autoAdvance: false,
    limits: { readsPerMinute: 1_000_000, writesPerMinute: 1_000_000 },
    logger: silent,
    ...options,
  });
  const server = createServer(sandbox.app);
  const base = await listen(server);
  const raw = async (path: string, init?: RequestInit) => read(await fetch(`${base}${path}`, init));
  return {
    base,
    controls: sandbox.controls,
    raw,
    api: (method, path, init = {}) => {
      const headers: Record<string, string> = { ...init.headers };
      if (init.key !== null) headers.authorization = `Token ${init.key ?? API_KEY}`;
      let body: string | undefined;
      if (init.json !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(init.json);
      } else if (init.form) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        body = new URLSearchParams(init.form).toString();
      }
      return raw(`/api${path}`, { method, headers, body });
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await sandbox.close();
    },
  };
}

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

/**
 * A local HTTP server that records each POST and answers with the next scripted status (then `fallback`).
 * `reply` may compute the text answer from the body (verification).
 */
export async function startReceiver(
  options: { statuses?: number[]; fallback?: number; reply?: (body: any) => string } = {},
) {
  const received: Received[] = [];
  const statuses = [...(options.statuses ?? [])];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = text ? JSON.parse(text) : undefined;
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.statusCode = statuses.shift() ?? options.fallback ?? 200;
      res.end(options.reply ? options.reply(body) : 'ok');
    });
  });
  const url = await listen(server);
  return {
    url,
    received,
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
