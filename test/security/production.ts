/**
 * The product in production mode for the security tests: `startApp` with MOMO_BASE_URL pointing at a
 * standalone sandbox on its own port (so the embedded sandbox, its open routes, the simulator and the
 * sandbox controls are off), an access policy listing its users with their own PINs, and a callback token.
 * Its log lines are kept, to read what the start said.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startApp, type RunningApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { createLogger } from '../../src/log.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { serverDatabase } from '../journal/server-database.js';
import { embedded } from '../journal/templates.js';

export const API_KEY = 'production-test-key';
export const CALLBACK_TOKEN = 'cb-0123456789abcdef0123456789';
export const PIN = '4821';
/** USSD users of the policy, each with their own PIN. */
export const TELLER = '+256772555001';
export const VICTIM = '+256772555002';
/** Telegram users: two tellers and an auditor who sees every collection. */
export const TELEGRAM_TELLERS = [6101, 6102] as const;
export const TELEGRAM_AUDITOR = 6109;

const teller = {
  flows: ['pay', 'request', 'check'],
  perPaymentLimit: { UGX: '500000' },
  dailyLimit: { UGX: '2000000' },
};
export const POLICY = {
  roles: {
    teller,
    auditor: { flows: ['check'], perPaymentLimit: {}, dailyLimit: {}, seeAllCollections: true },
  },
  users: {
    telegram: {
      [TELEGRAM_TELLERS[0]]: { role: 'teller' },
      [TELEGRAM_TELLERS[1]]: { role: 'teller' },
      [TELEGRAM_AUDITOR]: { role: 'auditor' },
    },
    slack: {},
    ussd: { [TELLER]: { role: 'teller', pin: hashPin(PIN) }, [VICTIM]: { role: 'teller', pin: hashPin(PIN) } },
  },
};

export interface ProductionProduct {
  app: RunningApp;
  url: string;
  sandbox: Sandbox;
  /** The product's log lines (JSON), from its start on. */
  logs: string[];
  stop(): Promise<void>;
}

/**
 * Starts a standalone sandbox and the product in production mode against it, its journal in a PostgreSQL
 * database of its own (dropped at stop; a production start refuses PGlite); `env` adds or overrides settings.
 */
export async function startProductionProduct(env: Record<string, string | undefined> = {}): Promise<ProductionProduct> {
  const sandbox = createSandbox({
    apiKey: API_KEY,
    allowHttpWebhooks: true,
    limits: { readsPerMinute: 100_000, writesPerMinute: 100_000 },
    logger: createLogger('silent'),
  });
  const sandboxServer: Server = await new Promise((resolve) => {
    const s = sandbox.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const database = await serverDatabase('production');
  const logs: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void logs.push(line) });
  const settings = Object.fromEntries(
    Object.entries({
      PORT: '0',
      MOMO_BASE_URL: `http://127.0.0.1:${(sandboxServer.address() as AddressInfo).port}`,
      MOMO_API_KEY: API_KEY,
      ACCESS_POLICY: JSON.stringify(POLICY),
      USSD_CALLBACK_TOKEN: CALLBACK_TOKEN,
      RATE_LIMIT_MESSAGES: '100000',
      DATABASE_URL: database.url,
      ...env,
    }).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  const app = await startApp(loadConfig({ ...embedded(), ...settings }), { logger }).catch(async (err: unknown) => {
    sandboxServer.closeAllConnections();
    await new Promise((resolve) => sandboxServer.close(resolve));
    await sandbox.close();
    await database.drop();
    throw err;
  });
  return {
    app,
    url: app.url,
    sandbox,
    logs,
    async stop() {
      await app.stop();
      sandboxServer.closeAllConnections();
      await new Promise((resolve) => sandboxServer.close(resolve));
      await sandbox.close();
      await database.drop();
    },
  };
}

/** A POST of an Africa's Talking form to `path` of the product: status and text. */
export async function postForm(
  url: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers,
    body: new URLSearchParams(fields),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, text: await res.text() };
}
