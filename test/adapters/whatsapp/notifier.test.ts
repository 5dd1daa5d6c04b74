/**
 * Outcomes pushed into a WhatsApp chat: free text within the 24-hour window; outside it the configured
 * template (its exact wire body); without a template the outcome is held, logged and counted, and sent when
 * the user writes again; Meta's "window closed" answer falls back to the template; a refused template is
 * held; a passing failure is thrown for the notification queue to retry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Prompt } from '../../../src/conversation/types.js';
import { graphError } from './fake-graph-api.js';
import { post, delivery, textMessage, wordsOf } from './deliveries.js';
import { ScriptedEngine, startHarness, type Harness } from './harness.js';

const USER = '256772500001';
const address = { channel: 'whatsapp' as const, conversationId: USER };
const TEMPLATE = { name: 'payment_update', language: 'en_US' };
const DAY = 24 * 3600 * 1000;
const OUTCOME = 'Payment 7 of 5000.00 UGX to +256772000001 completed.\nRef: 7';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const engine = () =>
  new ScriptedEngine((): Prompt => ({
    text: 'Main menu',
    choices: [{ id: 'pay', label: 'Pay someone' }],
    final: false,
  }));

/** The user writes (the window opens) and the product answers. */
async function userWrites(h: Harness, text = 'hi'): Promise<void> {
  const before = h.graph.to(USER).length;
  await post(h.url, delivery([textMessage(USER, text)]));
  await h.graph.waitFor(USER, before + 1);
  await h.whatsapp.idle();
}

describe('the WhatsApp notifier', () => {
  it("sends the outcome as text within 24 hours of the user's last message", async () => {
    harness = await startHarness(engine(), { whatsapp: { template: TEMPLATE } });
    await userWrites(harness);
    harness.advance(DAY - 3600 * 1000);
    await harness.whatsapp.notifier.send(address, OUTCOME);
    expect(harness.graph.to(USER).at(-1)).toMatchObject({ type: 'text', text: { body: OUTCOME, preview_url: false } });
  });

  it('sends the configured template outside the window, the outcome as its body parameter', async () => {
    harness = await startHarness(engine(), { whatsapp: { template: TEMPLATE } });
    await userWrites(harness);
    harness.advance(DAY + 60_000);
    await harness.whatsapp.notifier.send(address, OUTCOME);
    const { wamid: _wamid, ...sent } = harness.graph.to(USER).at(-1)!;
    expect(sent).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: USER,
      type: 'template',
      template: {
        name: 'payment_update',
        language: { code: 'en_US' },
        components: [
          {
            type: 'body',
            parameters: [{ type: 'text', text: 'Payment 7 of 5000.00 UGX to +256772000001 completed. Ref: 7' }],
          },
        ],
      },
    });
  });

  it('sends the template to a user who never wrote here (no window known)', async () => {
    harness = await startHarness(engine(), { whatsapp: { template: TEMPLATE } });
    await harness.whatsapp.notifier.send(address, OUTCOME);
    expect(harness.graph.to(USER).map((m) => m.type)).toEqual(['template']);
  });

  it('without a template, holds the outcome (logged, counted) and sends it when the user writes again, once', async () => {
    harness = await startHarness(engine());
    await userWrites(harness);
    harness.advance(2 * DAY);
    await harness.whatsapp.notifier.send(address, OUTCOME);
    await harness.whatsapp.notifier.send(address, 'Payment 8 failed: insufficient funds.');
    expect(harness.graph.to(USER)).toHaveLength(1);
    expect(harness.counted.filter((c) => c === 'message text held')).toHaveLength(2);
    const held = harness.logs.filter((l) => l.includes('held for the user'));
    expect(held).toHaveLength(2);
    expect(JSON.parse(held[0]!)).toMatchObject({
      to: '25677****001',
      reason: expect.stringMatching(/WHATSAPP_TEMPLATE_OUTCOME/),
    });
    expect(harness.logs.join('\n')).not.toContain(USER);

    await userWrites(harness, 'hello again');
    const words = harness.graph.to(USER).map(wordsOf);
    expect(words.slice(1)).toEqual([OUTCOME, 'Payment 8 failed: insufficient funds.', 'Main menu']);
    await userWrites(harness, 'menu');
    expect(harness.graph.to(USER).map(wordsOf).slice(4)).toEqual(['Main menu']);
  });

  it('falls back to the template when Meta says the window has closed', async () => {
    harness = await startHarness(engine(), { whatsapp: { template: TEMPLATE } });
    await userWrites(harness);
    harness.graph.failNext(400, graphError(131047, 'Re-engagement message'));
    await harness.whatsapp.notifier.send(address, OUTCOME);
    expect(harness.graph.refused.map((r) => (r.body as { type: string }).type)).toEqual(['text']);
    expect(harness.graph.to(USER).at(-1)!.type).toBe('template');
  });

  it('holds the outcome when Meta refuses the template for good, and throws a passing failure for the queue to retry', async () => {
    harness = await startHarness(engine(), { whatsapp: { template: TEMPLATE } });
    harness.graph.failNext(404, graphError(132001, 'Template name does not exist in the translation'));
    await harness.whatsapp.notifier.send(address, OUTCOME);
    expect(harness.counted).toContain('message text held');
    expect(harness.logs.some((l) => l.includes('held for the user') && l.includes('132001'))).toBe(true);

    harness.graph.failNext(503, graphError(131016, 'Service unavailable'), { times: 4 });
    await expect(harness.whatsapp.notifier.send(address, OUTCOME)).rejects.toMatchObject({ status: 503 });
  });

  it('sends only to WhatsApp addresses that are wa_ids', async () => {
    harness = await startHarness(engine());
    await expect(harness.whatsapp.notifier.send({ channel: 'telegram', conversationId: '42' }, 'x')).rejects.toThrow(
      /telegram/,
    );
    await expect(
      harness.whatsapp.notifier.send({ channel: 'whatsapp', conversationId: '../../me' }, 'x'),
    ).rejects.toThrow(/wa_id/);
    expect(harness.graph.sent).toEqual([]);
  });
});
