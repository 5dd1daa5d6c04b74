/**
 * Wires createWhatsApp to a local Graph API server and serves its router over real HTTP, as src/app.ts
 * does, with an engine that answers from a script. Logs, counters and retry waits are kept to check them;
 * the clock can be moved (the 24-hour window).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { createWhatsApp, type WhatsApp, type WhatsAppOptions } from '../../../adapters/whatsapp/index.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { Engine } from '../../../src/conversation/types.js';
import type { Store } from '../../../src/store/types.js';
import { createLogger } from '../../../src/log.js';
import { APP_SECRET, VERIFY_TOKEN } from './deliveries.js';
import { PHONE_NUMBER_ID, startFakeGraphApi, TOKEN, type FakeGraphApi } from './fake-graph-api.js';

export { ScriptedEngine } from '../telegram/harness.js';

export interface Harness {
  graph: FakeGraphApi;
  whatsapp: WhatsApp;
  store: Store;
  url: string;
  logs: string[];
  sleeps: number[];
  /** Counter calls: `message kind outcome` and `status s`. */
  counted: string[];
  /** Moves the harness's clock forward. */
  advance(ms: number): void;
  close(): Promise<void>;
}

export interface HarnessOptions {
  store?: Store;
  whatsapp?: Partial<WhatsAppOptions>;
}

export async function startHarness(engine: Engine, options: HarnessOptions = {}): Promise<Harness> {
  const store = options.store ?? new MemoryStore();
  const graph = await startFakeGraphApi();
  const logs: string[] = [];
  const sleeps: number[] = [];
  const counted: string[] = [];
  let offset = 0;
  const whatsapp = createWhatsApp({
    token: TOKEN,
    phoneNumberId: PHONE_NUMBER_ID,
    appSecret: APP_SECRET,
    verifyToken: VERIFY_TOKEN,
    apiUrl: graph.apiUrl,
    engine,
    store,
    logger: createLogger('debug', { write: (line: string) => void logs.push(line) }),
    counters: {
      message: (kind, outcome) => void counted.push(`message ${kind} ${outcome}`),
      status: (status) => void counted.push(`status ${status}`),
    },
    retry: { sleep: async (ms) => void sleeps.push(ms), random: () => 1 },
    now: () => Date.now() + offset,
    ...options.whatsapp,
  });
  const app = express();
  app.use(whatsapp.router);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    graph,
    whatsapp,
    store,
    url: `http://127.0.0.1:${port}`,
    logs,
    sleeps,
    counted,
    advance: (ms) => void (offset += ms),
    async close() {
      await whatsapp.idle();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await graph.close();
    },
  };
}
