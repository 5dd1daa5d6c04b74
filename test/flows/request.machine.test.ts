import { afterEach, describe, expect, it } from 'vitest';
import { ALREADY_SUBMITTED } from '../../flows/calls.js';
import { getSimplePaths } from 'xstate/graph';
import { requestFlow } from '../../flows/request.machine.js';
import { createActor } from 'xstate';
import { createCatalogue, currentView } from '../../src/conversation/flow/render.js';
import type { Channel } from '../../src/conversation/types.js';
import {
  failure,
  flowTest,
  held,
  type Answers,
  type FlowTest,
  type Outcome,
  type Steps,
} from '../../src/testing/flow-test.js';
import { expectWalkedOnAPhone, missingMessages, ON_A_PHONE, sampleInput, validEvents, walkFlow } from './coverage.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';
import { phoneExample } from '../../flows/input.js';

const created: Outcome = { output: { id: 'req-1', status: 'pending' } };

/** A request up to the summary, as a person makes it, and the waiting state after each step. */
const SCRIPT: Array<[(t: FlowTest) => Steps, string]> = [
  [(t) => t.send('+254 712 345 678'), 'awaitingAmount'],
  [(t) => t.send('25,000'), 'choosingCurrency'],
  [(t) => t.choose('KES'), 'awaitingReason'],
  [(t) => t.send(' Rent March '), 'choosingInstructions'],
  [(t) => t.choose('yes'), 'confirming'],
];

const tests: FlowTest[] = [];
afterEach(async () => {
  await Promise.all(tests.splice(0).map((t) => t.close()));
});

/** Request opened (Telegram's /request, a USSD dial), then the first `steps` of {@link SCRIPT}, each reaching its state. */
async function drive(steps: number, answers: Answers = {}, channel: Channel = 'telegram'): Promise<FlowTest> {
  const t = flowTest('request', { channel, answers: { createCollectionRequest: created, ...answers } });
  tests.push(t);
  await t.dial();
  for (const [act, state] of SCRIPT.slice(0, steps)) {
    await act(t);
    expect(t.flow()?.snapshot.value).toBe(state);
  }
  return t;
}
/** The flow's state and view now. */
const at = (t: FlowTest) => t.flow()?.snapshot.value;
const viewOf = (t: FlowTest) => t.flow()?.view;

describe('request machine: the model', () => {
  it('visits every state, with only catalogued words that fit a USSD screen', () => {
    const walk = walkFlow(requestFlow);
    expect(walk.missing).toEqual([]);
    expect(missingMessages(requestFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(requestFlow);
    expectScreensFit(requestFlow, walk);
  });

  it('with one currency never asks for it', () => {
    expect(walkFlow(requestFlow, { input: { currencies: ['UGX'] }, print: false }).missing).toEqual([
      'choosingCurrency',
    ]);
  });

  it('every simple path to the create call confirmed the summary and carries the run key and the chat', () => {
    const paths = getSimplePaths(requestFlow.machine, {
      input: sampleInput(),
      events: validEvents,
      toState: (s) => s.matches('submitting'),
    });
    expect(paths.length).toBeGreaterThan(1);
    for (const path of paths) {
      const last = path.steps.at(-1)!;
      expect(path.steps.at(-2)?.state.value).toBe('confirming');
      expect(last.event).toEqual({ type: 'CHOSEN', id: 'confirm' });
      const child = Object.values(path.state.children as Record<string, { options?: { input?: unknown } }>)[0];
      expect(child?.options?.input).toMatchObject({
        duplicateCheckKey: 'run-1:request',
        phonenumber: '+256772123456',
        amount: '1500',
        metadata: { chat: 'telegram:chat-1', ref: 'run-1:request' },
      });
    }
  });

  it('a person on a phone, the service answering as the model settles it, follows every shortest path', async () => {
    await expectWalkedOnAPhone('request', walkFlow(requestFlow, { input: ON_A_PHONE, print: false }).paths);
  });
});

describe('request machine: answers and back', () => {
  it('re-asks invalid answers with their reason; a reason past 19 characters is taken with a warning', async () => {
    const t = await drive(0);
    await t.send('0772');
    expect([at(t), viewOf(t)?.error]).toEqual([
      'awaitingPhone',
      { key: 'input.phoneInvalid', params: phoneExample('UG') },
    ]);
    await t.send('+256772123456').send('-100');
    expect([at(t), viewOf(t)?.error]).toEqual(['awaitingAmount', { key: 'input.amountInvalid' }]);
    await t.send('100').choose('UGX').send('x'.repeat(256));
    expect([at(t), viewOf(t)?.error]).toEqual(['awaitingReason', { key: 'input.textTooLong', params: { max: 255 } }]);
    await t.send('x'.repeat(19));
    expect([at(t), viewOf(t)?.error]).toEqual(['choosingInstructions', undefined]);
    await t.send('yes');
    expect([at(t), viewOf(t)?.error]).toEqual(['choosingInstructions', { key: 'common.pickOne' }]);
    await t.choose('no');
    expect(viewOf(t)?.text).toEqual({
      key: 'request.summary',
      params: { phone: '+256772123456', amount: '100', currency: 'UGX', reason: 'x'.repeat(19) },
    });
  });

  it('warns from 20 characters on what networks may show, and forgets the warning when the reason is changed', async () => {
    const long = 'School fees for Term 2 of 2026';
    const t = await drive(3);
    await t.send(long);
    expect(at(t)).toBe('choosingInstructions');
    const warning = viewOf(t)?.error;
    expect(warning).toEqual({ key: 'request.reasonLong', params: { max: 19, shown: 'School fees for Ter' } });
    for (const lang of ['en', 'sw'] as const) {
      const screen = createCatalogue([requestFlow]).renderView(viewOf(t)!, lang);
      const text = [screen.text, ...(screen.choices ?? []).map((c, i) => `${i + 1}. ${c.label}`)].join('\n');
      expect(text).toContain('"School fees for Ter"');
      expect(text.length).toBeLessThanOrEqual(182);
    }
    await t.choose('yes');
    expect(viewOf(t)?.text.params).toMatchObject({ reason: long });
    await t.back().back();
    expect(at(t)).toBe('awaitingReason');
    await t.send('Fees T2');
    expect([at(t), viewOf(t)?.error]).toEqual(['choosingInstructions', undefined]);
    await t.send('x'.repeat(20));
    expect(viewOf(t)?.error).toEqual({ key: 'common.pickOne' });
  });

  it('Back from every step returns to the previous one as it was first reached, after an empty answer', async () => {
    // On a phone, where an answer can be empty and 0 is Back.
    const reached = [];
    for (let steps = 0; steps < SCRIPT.length; steps++) {
      const t = await drive(steps, {}, 'ussd');
      reached.push({ value: at(t), context: t.flow()!.snapshot.context });
    }
    for (let steps = 1; steps <= SCRIPT.length; steps++) {
      const t = await drive(steps, {}, 'ussd');
      await t.send('').back();
      expect({ value: at(t), context: t.flow()!.snapshot.context }).toEqual(reached[steps - 1]);
    }
  });

  it('a caller offered no currency is told so in one line at once: no number asked, nothing sent', () => {
    // The engine never offers a caller none (it falls back to the country's currencies): the machine alone.
    const actor = createActor(requestFlow.machine, {
      input: sampleInput({ userPhone: '+2348031400001', defaultCountry: 'NG', currencies: [] }),
    }).start();
    const s = actor.getSnapshot();
    actor.stop();
    expect(s.status).toBe('done');
    expect(currentView(s)).toEqual({ text: { key: 'request.noCurrency' }, final: true });
    expect(s.children).toEqual({});
    const { messages } = createCatalogue([requestFlow]);
    for (const lang of ['en', 'sw', 'fr'] as const) expect(messages[lang]['request.noCurrency']).toMatch(/^[^\n]+\.$/);
  });

  it('Back from the first step leaves for the menu', async () => {
    const t = await drive(0);
    await t.back().sees('What would you like to do?');
    expect(t.flow()?.id).toBe('menu');
  });
});

describe('request machine: creating the request', () => {
  it('creates it once with the key, the metadata and the instructions choice, and says what happens next', async () => {
    const t = await drive(SCRIPT.length, {
      createCollectionRequest: { output: { id: 'req-1', status: 'pending', mfscode: '4821' } },
    });
    await t.choose('confirm');
    expect(at(t)).toBe('done');
    expect(t.calls).toEqual([
      {
        name: 'createCollectionRequest',
        input: {
          channel: 'telegram',
          userId: 'user-1',
          duplicateCheckKey: 'run-1:request',
          phonenumber: '+254712345678',
          amount: '25000',
          currency: 'KES',
          reason: 'Rent March',
          sendInstructions: true,
          metadata: { chat: 'telegram:chat-1', ref: 'run-1:request' },
        },
      },
    ]);
    expect(viewOf(t)).toEqual({
      text: {
        key: 'request.createdWithCode',
        params: { ref: 'req-1', phone: '+254712345678', amount: '25000', currency: 'KES', mfscode: '4821' },
      },
      final: true,
    });
    expect(t.flow()!.snapshot.output).toEqual({});
  });

  it('without a payment code says who was asked for how much; without instructions sends false', async () => {
    const t = await drive(SCRIPT.length - 1);
    await t.choose('no');
    expect(at(t)).toBe('confirming');
    await t.choose('confirm');
    expect(at(t)).toBe('done');
    expect(t.calls[0]?.input).toMatchObject({ sendInstructions: false });
    expect(viewOf(t)?.text).toEqual({
      key: 'request.created',
      params: { ref: 'req-1', phone: '+254712345678', amount: '25000', currency: 'KES' },
    });
  });

  it('the snapshot stored while creating keeps the key the call carries; an AlreadySubmitted answer says so', async () => {
    const t = await drive(SCRIPT.length, { createCollectionRequest: held });
    await t.choose('confirm');
    // Stored busy (through JSON), with the key a repeat of the call would carry.
    expect(t.flow()!.snapshot.hasTag('busy')).toBe(true);
    expect(t.flow()!.snapshot.context).toMatchObject({ key: 'run-1:request' });
    expect(t.calls.map((c) => c.input.duplicateCheckKey)).toEqual(['run-1:request']);
    // The service holds the request of a first call: the repeat under our key is AlreadySubmitted.
    await t.release('createCollectionRequest', { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4X' } });
    expect(viewOf(t)).toEqual({
      text: { key: 'request.submittedBefore', params: { hasRef: 'yes', ref: 'MC-7KQ4X' } },
      final: true,
    });
    expect(t.calls).toHaveLength(1);
  });

  const cases: Array<[string, Outcome, unknown]> = [
    [
      'validation',
      failure('validation', { fields: { phonenumber: ['Invalid'] } }),
      { key: 'request.refused', params: { fields: 'phonenumber' } },
    ],
    ['duplicate', failure('duplicate'), { key: 'failure.duplicate' }],
    ['connection', failure('connection'), { key: 'request.unconfirmed', params: { hasRef: 'no' } }],
    ['service', failure('service'), { key: 'request.unconfirmed', params: { hasRef: 'no' } }],
    ['unknown', failure('unknown'), { key: 'request.unconfirmed', params: { hasRef: 'no' } }],
    ['rate_limited', failure('rate_limited'), { key: 'request.unconfirmed', params: { hasRef: 'no' } }],
    [
      'connection, with our short ref',
      failure('connection', { shortRef: 'MC-7KQ4X' }),
      { key: 'request.unconfirmed', params: { hasRef: 'yes', ref: 'MC-7KQ4X' } },
    ],
    ['forbidden', failure('forbidden'), { key: 'failure.forbidden' }],
    ['unauthenticated', failure('unauthenticated'), { key: 'failure.unauthenticated' }],
  ];
  for (const [name, outcome, text] of cases) {
    it(`create failing with ${name} ends with ${JSON.stringify(text)}`, async () => {
      const t = await drive(SCRIPT.length, { createCollectionRequest: outcome });
      await t.choose('confirm');
      expect(at(t)).toBe('done');
      expect(viewOf(t)).toEqual({ text, final: true });
      expect(t.calls).toHaveLength(1);
    });
  }

  it('cancelling the summary sends nothing', async () => {
    const t = await drive(SCRIPT.length);
    await t.choose('cancel');
    expect(viewOf(t)).toEqual({ text: { key: 'request.cancelled' }, final: true });
    expect(t.calls).toEqual([]);
  });
});
