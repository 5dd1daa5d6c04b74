/**
 * The USSD router over the real engine, flows, policy and services, talking to an in-process sandbox,
 * with the store and fetch a test chooses (startApp picks those from the environment).
 */
import express from 'express';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { MomoClient } from '../../../src/momo/index.js';
import {
  createEngine,
  createFlowCalls,
  loadAccessPolicy,
  type ConversationEngine,
  type EngineOptions,
} from '../../../src/conversation/index.js';
import type { Store } from '../../../src/store/types.js';
import { addUssdRoutes } from '../../../adapters/ussd/index.js';
import { DirectRoutes } from '../../../src/http/direct-routes.js';
import { Redis } from 'ioredis';
import { RedisStore } from '../../../src/store/index.js';
import { REDIS_URL } from '../../conversation/redis-helper.js';
import { captureLogger, listen } from './helpers.js';
import { channelCapabilities } from '../../../adapters/capabilities.js';

export interface StackOptions {
  store: Store;
  /** USSD deadline of the engine and the router. */
  deadlineMs: number;
  /** The client's fetch (to slow the service down). Default globalThis.fetch. */
  fetch?: typeof fetch;
  /**
   * Another stack's sandbox and address, for a second "process" of the same deployment (one service, one
   * store). Default: a sandbox of its own, served with the USSD routes.
   */
  service?: { sandbox: Sandbox; url: string };
  /** The engine's run lease and sweep (EngineOptions). Default the engine's. */
  engine?: Pick<EngineOptions, 'runLeaseMs' | 'sweepEveryMs'>;
}

export interface Stack {
  url: string;
  sandbox: Sandbox;
  engine: ConversationEngine;
  logs: string[];
  /** Waits for late runs, then closes the server and the sandbox (not the store). */
  close(): Promise<void>;
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const app = express();
  const direct = new DirectRoutes();
  const served = await listen(direct.serve(app));
  const { logger, lines } = captureLogger();
  const sandbox = options.service?.sandbox ?? createSandbox({ logger });
  if (!options.service) app.use(sandbox.app);
  const client = new MomoClient({
    baseUrl: options.service?.url ?? served.url,
    apiKey: 'sandbox-key',
    version: 'v5',
    fetch: options.fetch ?? fetch,
  });
  const policy = loadAccessPolicy();
  const { store, deadlineMs } = options;
  const engine = createEngine({
    store,
    channels: channelCapabilities,
    services: createFlowCalls({ client, policy, store, logger }),
    policy,
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: deadlineMs, telegram: deadlineMs, slack: deadlineMs },
    ...options.engine,
    logger,
  });
  addUssdRoutes(app, direct, {
    engine,
    serviceCode: '*384*123#',
    deadlineMs,
    logger,
    access: { open: true },
    digestKey: 'test-digest-key',
  });
  return {
    url: served.url,
    sandbox,
    engine,
    logs: lines,
    async close() {
      await engine.stop();
      await served.close();
      if (!options.service) await sandbox.close();
    },
  };
}

/** The ussd conversation's payments the sandbox holds (read through its controls, not the rate-limited API). */
export function paymentsOf(sandbox: Sandbox, phone: string) {
  return sandbox.controls.payments().filter((p) => (p.metadata as { chat?: string } | null)?.chat === `ussd:${phone}`);
}

/** Answers of a payment from the main menu when only one currency is offered (no currency screen). */
export const ONE_CURRENCY_PAYMENT = ['1', '1', '0772000001', 'Sarah', 'Nakato', '9000', '1', '1234'];

/** A stack on the Redis store under a key prefix of its own (TEST_REDIS_URL); close() also removes its keys. */
export async function startRedisStack(name: string, deadlineMs = 3000): Promise<Stack & { store: RedisStore }> {
  const prefix = `test:${name}:${process.pid}:${Date.now()}:`;
  const store = new RedisStore({ url: REDIS_URL, keyPrefix: prefix });
  const stack = await startStack({ store, deadlineMs });
  return {
    ...stack,
    store,
    async close() {
      await stack.close();
      await store.close();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    },
  };
}
