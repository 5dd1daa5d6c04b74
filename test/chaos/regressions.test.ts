/**
 * Bugs the chaos run found, each pinned by a small test of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { appendPending } from '../../src/conversation/records.js';
import { AtSession, startProduct } from '../e2e/helpers.js';

let app: RunningApp;
beforeAll(async () => {
  app = await startProduct();
});
afterAll(async () => {
  await app.stop();
});

describe('USSD outcomes kept for the next dial', () => {
  it('shows the newest first, so the payment outcome is not cut off the 182-character screen', async () => {
    const me = '+256701999001';
    const address = { channel: 'ussd' as const, conversationId: me };
    // A late run's answer, then the service's webhook outcome, as the chaos run produced them.
    await appendPending(app.store, address, 'We could not confirm the payment: it may or may not have been made. Do not pay again; you will be notified of the result.');
    await appendPending(app.store, address, 'Done: 3700.00 UGX reached +256772000001 (payment 9).');
    const screen = await new AtSession(app.url, me).dial();
    expect(screen.length).toBeLessThanOrEqual(182);
    expect(screen).toContain('Done: 3700.00 UGX reached +256772000001 (payment 9).');
    // Shown once.
    expect(await new AtSession(app.url, me).dial()).not.toContain('Done:');
  });
});
