/**
 * Link a chat app, the machine and as a person on a phone uses it (src/testing/flow-test.ts): the code made by the service is shown on a final screen tagged `secret`
 * (the engine shows it once and never stores it), with the three ways to send it; a refusal says why.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { linkFlow } from '../../flows/link.machine.js';
import { currentView, render } from '../../src/conversation/flow/render.js';
import { missingMessages, walkFlow } from './coverage.js';
import { demoPolicy, hashPin } from '../../src/conversation/calls/access-policy.js';
import { flowTest, type Answers, type FlowTest } from '../../src/testing/flow-test.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';

describe('link machine', () => {
  it('visits every state, with only catalogued words that fit a USSD screen', () => {
    const walk = walkFlow(linkFlow, { input: { channel: 'ussd', requirePin: true } });
    expect(walk.missing).toEqual([]);
    expect(missingMessages(linkFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(linkFlow);
    expectScreensFit(linkFlow, walk);
  });

  /** Link opened on a phone by a person of the directory (a `*` rule's caller is not offered it). */
  function linking(answers: Answers): FlowTest {
    const policy = demoPolicy();
    policy.users.ussd = { ...policy.users.ussd, '+256772123456': { role: 'demo', pin: hashPin('1234') } };
    const t = flowTest('link', { policy, answers });
    tests.push(t);
    return t;
  }
  const tests: FlowTest[] = [];
  afterEach(async () => {
    await Promise.all(tests.splice(0).map((t) => t.close()));
  });

  it('shows the code on a secret final screen, with how to send it on each chat', async () => {
    const t = linking({ makeLinkCode: { output: 'ABCD2345EF' } });
    await t.dial().sees('/link ABCD2345EF').sees('WhatsApp link ABCD2345EF').sees('/momo link ABCD2345EF');
    expect(t.calls).toEqual([{ name: 'makeLinkCode', input: { channel: 'ussd', userId: '+256772123456' } }]);
    // Done, and secret: shown once, kept nowhere, the flow's snapshot included.
    expect(t.prompt?.final).toBe(true);
    expect(JSON.stringify(t.stored())).not.toContain('ABCD2345EF');
    expect(t.flow()).toBeUndefined();
    // The next dial (of the bare service code, not into the flow again) shows the menu, not the code.
    await t.dial('*384*123#').sees('What would you like to do?').doesNotSee('ABCD2345EF');
    expect(t.calls).toHaveLength(1);
  });

  it('says why no code was made', async () => {
    const t = linking({ makeLinkCode: { error: { code: 'too_many_codes' } } });
    await t.dial().sees(/Too many codes/);
    // Not secret: the answer is kept with the conversation, as any screen is.
    expect(JSON.stringify(t.stored())).toMatch(/Too many codes/);
    expect(render(currentView(t.flow()!.snapshot)!.text, 'en')).toMatch(/Too many codes/);
  });
});
