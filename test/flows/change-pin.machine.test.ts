/**
 * Change PIN, the machine and as a person on a phone uses it (src/testing/flow-test.ts): every state reached with
 * only catalogued words that fit a USSD screen; the current PIN (or after a reset the one-time code) first, then
 * the new PIN twice; a weak PIN refused with its reason; two different typings start the new PIN again; and no
 * PIN or code in anything the engine stored.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { transition } from 'xstate';
import { changePinFlow, changePinMachine } from '../../flows/change-pin.machine.js';
import type { View } from '../../flows/types.js';
import { currentView, render } from '../../src/conversation/flow/render.js';
import { demoPolicy, hashPin } from '../../src/conversation/calls/access-policy.js';
import { flowTest, type Answers, type FlowTest } from '../../src/testing/flow-test.js';
import { missingMessages, walkFlow } from './coverage.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';

/** The View's error line and words, in `lang`. */
const said = (view: View | undefined, lang: 'en' | 'fr' = 'en') =>
  [view?.error ? render(view.error, lang) : '', view ? render(view.text, lang) : ''].join(' ');

const tests: FlowTest[] = [];
afterEach(async () => {
  await Promise.all(tests.splice(0).map((t) => t.close()));
});

/** Change PIN opened on a phone by a person of the directory with a PIN (a `*` rule's caller is not offered it). */
async function changing(answers: Answers, pinReset = false): Promise<FlowTest> {
  const policy = demoPolicy();
  policy.users.ussd = { ...policy.users.ussd, '+256772123456': { role: 'demo', pin: hashPin('1234') } };
  const t = flowTest('changePin', { policy, answers, pinReset });
  tests.push(t);
  await t.dial();
  return t;
}
const at = (t: FlowTest) => t.flow()?.snapshot.value;
const user = { channel: 'ussd', userId: '+256772123456' };

describe('change PIN machine: the model', () => {
  it.each([
    ['with the current PIN', false],
    ['from a one-time code', true],
  ])('visits every state %s, with only catalogued words that fit a USSD screen', (_how, pinReset) => {
    const walk = walkFlow(changePinFlow, { input: { requirePin: true, pinReset } });
    expect(walk.missing).toEqual([]);
    expect(missingMessages(changePinFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(changePinFlow);
    expectScreensFit(changePinFlow, walk);
  });
});

describe('change PIN as a person uses it', () => {
  it('asks the current PIN, then the new one twice, each typed into a state never stored', async () => {
    const t = await changing({
      startPinChange: { output: undefined },
      draftPin: { output: undefined },
      savePin: { output: undefined },
    });
    await t.sees(/current PIN/);
    expect(t.flow()?.view?.input).toBe('pin');
    await t.send(' 4821 ').sees(/new PIN/);
    await t.send('5930').sees(/again/);
    await t.send('5930').sees(/PIN is changed/);
    expect(t.prompt?.final).toBe(true);
    expect(t.calls.map((c) => [c.name, c.input])).toEqual([
      ['startPinChange', { ...user, via: 'pin', secret: '4821' }],
      ['draftPin', { ...user, pin: '5930' }],
      ['savePin', { ...user, pin: '5930' }],
    ]);
    expect(JSON.stringify(t.stored())).not.toMatch(/4821|5930/);
  });

  it('after a reset asks the one-time code first, and a wrong code asks it again', async () => {
    let tries = 0;
    const t = await changing(
      { startPinChange: () => (++tries === 1 ? { error: { code: 'code_wrong' } } : { output: undefined }) },
      true,
    );
    expect(said(t.flow()?.view)).toMatch(/was reset.*one-time code/);
    await t.send('11111111').sees(/code is not right/);
    expect(at(t)).toBe('awaitingSecret');
    await t.send('48213377');
    expect(t.calls.at(-1)?.input).toMatchObject({ via: 'code', secret: '48213377' });
    expect(at(t)).toBe('awaitingNew');
    expect(JSON.stringify(t.stored())).not.toMatch(/48213377|11111111/);
  });

  it.each([
    ['length', /4 to 6 digits/],
    ['repeated', /one digit repeated/],
    ['run', /run like 1234 or 9876/],
    ['ownNumber', /end of your phone number/],
  ])('refuses a weak PIN (%s) with its reason, and asks for another', async (reason, words) => {
    const t = await changing({
      startPinChange: { output: undefined },
      draftPin: { error: { code: 'pin_weak', message: reason } },
    });
    await t.send('4821').send('1234');
    expect(at(t)).toBe('awaitingNew');
    expect(said(t.flow()?.view)).toMatch(words);
    expect(said(t.flow()?.view, 'fr')).not.toMatch(/changePin\./);
  });

  it('starts the new PIN again when the two typings differ; a lost change ends with the reason', async () => {
    const t = await changing({
      startPinChange: { output: undefined },
      draftPin: { output: undefined },
      savePin: { error: { code: 'pin_mismatch' } },
    });
    await t
      .send('4821')
      .send('5930')
      .send('5931')
      .sees(/not the same/);
    expect(at(t)).toBe('awaitingNew');
    const expired = await changing({ startPinChange: { error: { code: 'code_expired' } } }, true);
    await expired.send('48213377').sees(/expired or was used/);
    expect(expired.prompt?.final).toBe(true);
  });

  it('goes back to the menu from its first screens, and from the second typing to the first', async () => {
    const t = await changing({ startPinChange: { output: undefined } });
    // A choice where a PIN is asked (no person can send one on a PIN screen): the machine says pick one.
    const [picked] = transition(changePinMachine, t.flow()!.snapshot, { type: 'CHOSEN', id: '1' });
    expect(currentView(picked)?.error).toEqual({ key: 'common.pickOne' });
    await t.send('4821').back().sees('What would you like to do?');
    expect(t.flow()?.id).toBe('menu');
  });
});
