/**
 * Change PIN, the machine alone with fake services: every state reached with only catalogued words that fit a
 * USSD screen; the current PIN (or after a reset the one-time code) first, then the new PIN twice; a weak PIN
 * refused with its reason; two different typings start the new PIN again; and no PIN or code in any snapshot
 * the engine could store.
 */
import { describe, expect, it } from 'vitest';
import { changePinFlow, changePinMachine } from '../../flows/change-pin.machine.js';
import { currentView, render } from '../../src/conversation/flow/render.js';
import { missingMessages, walkFlow } from './coverage.js';
import { answered, BACK, chosen, live } from './driver.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';

const view = (flow: ReturnType<typeof live>) => currentView(flow.snapshot());
const said = (flow: ReturnType<typeof live>, lang: 'en' | 'fr' = 'en') => {
  const v = view(flow)!;
  return [v.error ? render(v.error, lang) : '', render(v.text, lang)].join(' ');
};

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

describe('change PIN machine: live', () => {
  it('asks the current PIN, then the new one twice, each typed into a state never stored', async () => {
    const flow = live(changePinMachine, {
      answers: {
        startPinChange: { output: undefined },
        draftPin: { output: undefined },
        savePin: { output: undefined },
      },
    });
    expect(said(flow)).toMatch(/current PIN/);
    expect(view(flow)?.input).toBe('pin');
    await flow.send(answered(' 4821 '));
    expect(said(flow)).toMatch(/new PIN/);
    await flow.send(answered('5930'));
    expect(said(flow)).toMatch(/again/);
    await flow.send(answered('5930'));
    expect(flow.snapshot().status).toBe('done');
    expect(said(flow)).toMatch(/PIN is changed/);
    expect(flow.calls.map((c) => [c.service, c.input])).toEqual([
      ['startPinChange', { channel: 'telegram', userId: 'user-1', via: 'pin', secret: '4821' }],
      ['draftPin', { channel: 'telegram', userId: 'user-1', pin: '5930' }],
      ['savePin', { channel: 'telegram', userId: 'user-1', pin: '5930' }],
    ]);
    expect(JSON.stringify(flow.persisted())).not.toMatch(/4821|5930/);
  });

  it('after a reset asks the one-time code first, and a wrong code asks it again', async () => {
    let tries = 0;
    const flow = live(changePinMachine, {
      input: { pinReset: true },
      answers: {
        startPinChange: () => (++tries === 1 ? { error: { code: 'code_wrong' } } : { output: undefined }),
      },
    });
    expect(said(flow)).toMatch(/was reset.*one-time code/);
    await flow.send(answered('11111111'));
    expect(flow.snapshot().value).toBe('awaitingSecret');
    expect(said(flow)).toMatch(/code is not right/);
    await flow.send(answered('48213377'));
    expect(flow.calls.at(-1)?.input).toMatchObject({ via: 'code', secret: '48213377' });
    expect(flow.snapshot().value).toBe('awaitingNew');
    expect(JSON.stringify(flow.persisted())).not.toMatch(/48213377|11111111/);
  });

  it.each([
    ['length', /4 to 6 digits/],
    ['repeated', /one digit repeated/],
    ['run', /run like 1234 or 9876/],
    ['ownNumber', /end of your phone number/],
  ])('refuses a weak PIN (%s) with its reason, and asks for another', async (reason, words) => {
    const flow = live(changePinMachine, {
      answers: {
        startPinChange: { output: undefined },
        draftPin: { error: { code: 'pin_weak', message: reason } },
      },
    });
    await flow.send(answered('4821'));
    await flow.send(answered('1234'));
    expect(flow.snapshot().value).toBe('awaitingNew');
    expect(said(flow)).toMatch(words);
    expect(said(flow, 'fr')).not.toMatch(/changePin\./);
  });

  it('starts the new PIN again when the two typings differ; a lost change ends with the reason', async () => {
    const flow = live(changePinMachine, {
      answers: {
        startPinChange: { output: undefined },
        draftPin: { output: undefined },
        savePin: { error: { code: 'pin_mismatch' } },
      },
    });
    await flow.send(answered('4821'));
    await flow.send(answered('5930'));
    await flow.send(answered('5931'));
    expect(flow.snapshot().value).toBe('awaitingNew');
    expect(said(flow)).toMatch(/not the same/);
    const expired = live(changePinMachine, {
      input: { pinReset: true },
      answers: { startPinChange: { error: { code: 'code_expired' } } },
    });
    await expired.send(answered('48213377'));
    expect(expired.snapshot().status).toBe('done');
    expect(said(expired)).toMatch(/expired or was used/);
  });

  it('goes back to the menu from its first screens, and from the second typing to the first', async () => {
    const flow = live(changePinMachine, { answers: { startPinChange: { output: undefined } } });
    await flow.send(chosen('1'));
    expect(view(flow)?.error).toEqual({ key: 'common.pickOne' });
    await flow.send(answered('4821'));
    await flow.send(BACK);
    expect(flow.snapshot().output).toEqual({ next: 'menu' });
  });
});
