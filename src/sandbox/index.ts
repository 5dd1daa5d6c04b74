/**
 * The sandbox: a stateful, in-memory implementation of the mobile-money service contract
 * (../shared/spec/mobile-money-api.md) for development, demos and tests.
 *
 * `createSandbox()` returns an express app meant to be mounted at the root of another app (as `npm start`
 * does) or served alone (`npm run sandbox`). It adds no global middleware: parsers, auth and error
 * handlers live inside the routers at /api (main API), /vending (vending group) and /sandbox (controls);
 * any other path falls through untouched to the next handler.
 */
import express from 'express';
import type { Logger } from 'pino';
import { logger as defaultLogger } from '../log.js';
import { apiRouter } from './api.js';
import { SandboxClock } from './clock.js';
import type { SandboxContext } from './context.js';
import { controlsRouter, createControls, type SandboxControls } from './controls.js';
import { DuplicateKeys } from './duplicates.js';
import { SPEC_LIMITS, type Limits } from './limits.js';
import { Notifications } from './notifications.js';
import { Renderer } from './render.js';
import { SandboxState } from './state.js';
import { vendingRouter, type VendingPurchase } from './vending.js';

export { TEST_NUMBERS, type TestNumber, type TestBehaviour } from './directory.js';
export { CANDIDATES, DATA_BUNDLES, PIN_PRODUCTS } from './vending-catalog.js';
export type { SandboxControls } from './controls.js';
export type { Faults } from './faults.js';
export type { DeliveryRecord } from './notifications.js';
export type { OrganizationSettings, Sms } from './state.js';
export type { Limits } from './limits.js';

export interface SandboxOptions {
  /** API key of the seeded organization. Default SANDBOX_API_KEY, else `sandbox-key`. */
  apiKey?: string;
  /** Vending group key of the seeded organization. Default SANDBOX_VENDING_API_KEY, else `sandbox-vending-key`. */
  vendingApiKey?: string;
  /**
   * Requests per minute per organization. Default the spec's: 30 reads, 3000 writes, so a client learns
   * to live with them. Raise them for demos and benchmarks (e.g. `{ readsPerMinute: 1e6 }`).
   */
  limits?: Partial<Limits>;
  /**
   * Also accept `http://` webhook targets on loopback hosts (localhost, 127.0.0.1, ::1). Default false, as
   * the service (https only). For development: a bot on a laptop receives notifications without a
   * certificate. The other way is an https listener with a self-signed certificate and a target ending in
   * `?skip-cert-verify`, which works with this option off.
   */
  allowHttpWebhooks?: boolean;
  /**
   * Time runs on its own. Default true: the sandbox clock follows the wall clock, so a payment reaches
   * `processed` about a second after it is created and webhook retries happen in real time. False: a
   * virtual clock that stands still until controls.advanceClock() moves it (deterministic tests).
   */
  autoAdvance?: boolean;
  /** Logger. Default the product's logger (src/log.ts). */
  logger?: Logger;
  /** Name of the seeded organization (the default collection request reason). Default `Sandbox Pay`. */
  organizationName?: string;
}

export interface Sandbox {
  app: express.Express;
  controls: SandboxControls;
  /** Stops timers and waits for outbound calls in flight. */
  close(): Promise<void>;
}

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const log = (options.logger ?? defaultLogger).child({ component: 'sandbox' });
  const state = new SandboxState();
  const clock = new SandboxClock(options.autoAdvance ?? true, log);
  const render = new Renderer(state);
  const ctx: SandboxContext = {
    state,
    clock,
    render,
    notifications: new Notifications(state, clock, render, log),
    log,
    allowHttpWebhooks: options.allowHttpWebhooks ?? false,
    faults: { maintenance: false, latencyMs: 0 },
  };
  const org = state.addOrganization({
    name: options.organizationName ?? 'Sandbox Pay',
    apiKey: options.apiKey ?? process.env.SANDBOX_API_KEY ?? 'sandbox-key',
    vendingApiKey: options.vendingApiKey ?? process.env.SANDBOX_VENDING_API_KEY ?? 'sandbox-vending-key',
    now: clock.now(),
  });
  const duplicates = new DuplicateKeys(clock);
  const purchases: VendingPurchase[] = [];

  const app = express();
  app.disable('x-powered-by');
  app.use('/api', apiRouter(ctx, { ...SPEC_LIMITS, ...options.limits }, duplicates));
  app.use('/vending', vendingRouter(ctx, duplicates, purchases));
  app.use('/sandbox', controlsRouter(ctx, purchases));

  return { app, controls: createControls(ctx, org, purchases), close: () => clock.close() };
}
