/**
 * Issue item 4 with the real engine and sandbox: when the service is slower than the USSD deadline, the
 * user gets an END saying the request is being processed; the work completes, and the outcome is shown at
 * the next dial. The service is made slow by a fetch that holds payment creation back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import { createSandbox, type Sandbox } from '../../../src/sandbox/index.js';
import { MomoClient } from '../../../src/momo/index.js';
import { MemoryStore, createEngine, createServices, loadAccessPolicy, type ConversationEngine } from '../../../src/conversation/index.js';
import { createUssdRouter } from '../../../adapters/ussd/index.js';
import { captureLogger, listen, postAt, type TestApp } from './helpers.js';

const DEADLINE_MS = 200;
/** Longer than the deadline, shorter than the router's guard (deadline + 1 s). */
const SLOW_CREATE_MS = 600;
const PHONE = '+256772140001';

let served: TestApp;
let sandbox: Sandbox;
let engine: ConversationEngine;
let held = 0;

beforeAll(async () => {
  const app = express();
  served = await listen(app);
  const { logger } = captureLogger();
  sandbox = createSandbox({ logger });
  app.use(sandbox.app);
  const slowFetch: typeof fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (init?.method === 'POST' && /\/api\/payments\/?$/.test(new URL(url).pathname)) {
      held += 1;
      await new Promise((resolve) => setTimeout(resolve, SLOW_CREATE_MS));
    }
    return fetch(input, init);
  };
  const client = new MomoClient({ baseUrl: served.url, apiKey: 'sandbox-key', version: 'v5', fetch: slowFetch });
  const store = new MemoryStore();
  const policy = loadAccessPolicy();
  engine = createEngine({
    store,
    services: createServices({ client, policy, store, logger }),
    policy,
    defaultCountry: 'UG',
    currencies: ['UGX'],
    sessionTtlSeconds: 600,
    deadlineMs: { ussd: DEADLINE_MS, telegram: DEADLINE_MS, slack: DEADLINE_MS },
    logger,
  });
  app.use(createUssdRouter({ engine, store, serviceCode: '*384*123#', deadlineMs: DEADLINE_MS, logger }));
});
afterAll(async () => {
  await engine?.drain();
  await served?.close();
  await sandbox?.close();
});

describe('a service slower than the USSD deadline', () => {
  it('ends with "processing", completes the payment, and shows the outcome at the next dial', async () => {
    const answers: string[] = [];
    const hop = async (sessionId: string, answer?: string) => {
      if (answer !== undefined) answers.push(answer);
      const fields = { sessionId, serviceCode: '*384*123#', phoneNumber: PHONE, networkCode: '63902', text: answers.join('*') };
      return (await postAt(served.url, fields)).body;
    };
    await hop('SLOW-1');
    // Pay, mobile money, recipient, names, amount (one currency: no currency screen), description, confirm, PIN.
    for (const answer of ['1', '1', '0772000001', 'Sarah', 'Nakato', '9000', 'rent', '1']) {
      expect(await hop('SLOW-1', answer)).toMatch(/^CON /);
    }
    const last = await hop('SLOW-1', '1234');
    expect(last).toBe('END We are still working on it. You will be notified of the result.');

    await engine.drain();
    expect(held).toBe(1);
    const payments = sandbox.controls.payments().filter((p) => (p.metadata as { chat?: string } | null)?.chat === `ussd:${PHONE}`);
    expect(payments).toHaveLength(1);

    answers.length = 0;
    const next = await hop('SLOW-2');
    expect(next).toMatch(/^CON /);
    expect(next).toContain(`Payment ${String(payments[0]?.id)}`);
    expect(next.length - 4).toBeLessThanOrEqual(182);
  });
});
