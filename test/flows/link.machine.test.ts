/**
 * Link a chat app, the machine alone: the code made by the service is shown on a final screen tagged `secret`
 * (the engine shows it once and never stores it), with the three ways to send it; a refusal says why.
 */
import { describe, expect, it } from 'vitest';
import { linkFlow, linkMachine } from '../../flows/link.machine.js';
import { currentView, render } from '../../src/conversation/flow/render.js';
import { missingMessages, walkFlow } from './coverage.js';
import { live } from './driver.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';

describe('link machine', () => {
  it('visits every state, with only catalogued words that fit a USSD screen', () => {
    const walk = walkFlow(linkFlow, { input: { channel: 'ussd', requirePin: true } });
    expect(walk.missing).toEqual([]);
    expect(missingMessages(linkFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(linkFlow);
    expectScreensFit(linkFlow, walk);
  });

  it('shows the code on a secret final screen, with how to send it on each chat', async () => {
    const flow = live(linkMachine, { answers: { makeLinkCode: { output: 'ABCD2345EF' } } });
    await flow.send({ type: 'BACK' }).catch(() => undefined);
    const snapshot = flow.snapshot();
    expect(snapshot.status).toBe('done');
    expect(snapshot.hasTag('secret')).toBe(true);
    const text = render(currentView(snapshot)!.text, 'en');
    expect(text).toContain('/link ABCD2345EF');
    expect(text).toContain('WhatsApp link ABCD2345EF');
    expect(text).toContain('/momo link ABCD2345EF');
  });

  it('says why no code was made', async () => {
    const flow = live(linkMachine, { answers: { makeLinkCode: { error: { code: 'too_many_codes' } } } });
    await flow.send({ type: 'BACK' }).catch(() => undefined);
    expect(flow.snapshot().hasTag('secret')).toBe(false);
    expect(render(currentView(flow.snapshot())!.text, 'en')).toMatch(/Too many codes/);
  });
});
