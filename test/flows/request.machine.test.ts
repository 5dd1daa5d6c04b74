import { describe, expect, it } from 'vitest';
import { ALREADY_SUBMITTED } from '../../flows/calls.js';
import { getSimplePaths } from 'xstate/graph';
import { requestFlow, requestMachine } from '../../flows/request.machine.js';
import type { FlowEvent } from '../../flows/types.js';
import { createCatalogue, currentView } from '../../src/conversation/flow/render.js';
import { missingMessages, sampleInput, walkFlow } from './coverage.js';
import {
  answered,
  BACK,
  chosen,
  expectBackToEachStep,
  expectReplaysFollow,
  failure,
  live,
  validEvents,
  type LiveOptions,
  type Outcome,
} from './driver.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';
import { phoneExample } from '../../flows/input.js';

const created: Outcome = { output: { id: 'req-1', status: 'pending' } };

/** A request up to the summary, and the waiting state after each step. */
const SCRIPT: Array<[FlowEvent, string]> = [
  [answered('+254 712 345 678'), 'awaitingAmount'],
  [answered('25,000'), 'choosingCurrency'],
  [chosen('KES'), 'awaitingReason'],
  [answered(' Rent March '), 'choosingInstructions'],
  [chosen('yes'), 'confirming'],
];

async function drive(script: Array<[FlowEvent, string]>, options: LiveOptions = {}) {
  const flow = live(requestMachine, { ...options, answers: { createCollectionRequest: created, ...options.answers } });
  for (const [event] of script) await flow.send(event);
  return flow;
}

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

  it('the live machine with fake services follows every shortest path of the model', async () => {
    await expectReplaysFollow(requestMachine, walkFlow(requestFlow, { print: false }).paths);
  });
});

describe('request machine: answers and back', () => {
  it('re-asks invalid answers with their reason; a reason past 19 characters is taken with a warning', async () => {
    const flow = await drive([]);
    let s = await flow.send(answered('0772'));
    expect([s.value, currentView(s)?.error]).toEqual([
      'awaitingPhone',
      { key: 'input.phoneInvalid', params: phoneExample('UG') },
    ]);
    await flow.send(answered('+256772123456'));
    s = await flow.send(answered('-100'));
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingAmount', { key: 'input.amountInvalid' }]);
    await flow.send(answered('100'));
    await flow.send(chosen('UGX'));
    s = await flow.send(answered('x'.repeat(256)));
    expect([s.value, currentView(s)?.error]).toEqual([
      'awaitingReason',
      { key: 'input.textTooLong', params: { max: 255 } },
    ]);
    s = await flow.send(answered('x'.repeat(19)));
    expect([s.value, currentView(s)?.error]).toEqual(['choosingInstructions', undefined]);
    s = await flow.send(answered('yes'));
    expect([s.value, currentView(s)?.error]).toEqual(['choosingInstructions', { key: 'common.pickOne' }]);
    s = await flow.send(chosen('no'));
    expect(currentView(s)?.text).toEqual({
      key: 'request.summary',
      params: { phone: '+256772123456', amount: '100', currency: 'UGX', reason: 'x'.repeat(19) },
    });
  });

  it('warns from 20 characters on what networks may show, and forgets the warning when the reason is changed', async () => {
    const long = 'School fees for Term 2 of 2026';
    const flow = await drive(SCRIPT.slice(0, 3));
    let s = await flow.send(answered(long));
    expect(s.value).toBe('choosingInstructions');
    const warning = currentView(s)?.error;
    expect(warning).toEqual({ key: 'request.reasonLong', params: { max: 19, shown: 'School fees for Ter' } });
    for (const lang of ['en', 'sw'] as const) {
      const screen = createCatalogue([requestFlow]).renderView(currentView(s)!, lang);
      const text = [screen.text, ...(screen.choices ?? []).map((c, i) => `${i + 1}. ${c.label}`)].join('\n');
      expect(text).toContain('"School fees for Ter"');
      expect(text.length).toBeLessThanOrEqual(182);
    }
    s = await flow.send(chosen('yes'));
    expect(currentView(s)?.text.params).toMatchObject({ reason: long });
    await flow.send(BACK);
    s = await flow.send(BACK);
    expect(s.value).toBe('awaitingReason');
    s = await flow.send(answered('Fees T2'));
    expect([s.value, currentView(s)?.error]).toEqual(['choosingInstructions', undefined]);
    s = await flow.send(answered('x'.repeat(20)));
    expect(currentView(s)?.error).toEqual({ key: 'common.pickOne' });
  });

  it('BACK from every step returns to the previous one as it was first reached', async () => {
    await expectBackToEachStep(drive, SCRIPT);
  });

  it('a caller offered no currency is told so in one line at once: no number asked, nothing sent', () => {
    const flow = live(requestMachine, { input: { userPhone: '+2348031400001', defaultCountry: 'NG', currencies: [] } });
    expect(flow.snapshot().status).toBe('done');
    expect(currentView(flow.snapshot())).toEqual({ text: { key: 'request.noCurrency' }, final: true });
    expect(flow.calls).toEqual([]);
    const { messages } = createCatalogue([requestFlow]);
    for (const lang of ['en', 'sw', 'fr'] as const) expect(messages[lang]['request.noCurrency']).toMatch(/^[^\n]+\.$/);
  });

  it('BACK from the first step leaves for the menu', async () => {
    const s = await (await drive([])).send(BACK);
    expect([s.status, s.output]).toEqual(['done', { next: 'menu' }]);
  });
});

describe('request machine: creating the request', () => {
  it('creates it once with the key, the metadata and the instructions choice, and says what happens next', async () => {
    const flow = await drive([...SCRIPT, [chosen('confirm'), 'done']], {
      answers: { createCollectionRequest: { output: { id: 'req-1', status: 'pending', mfscode: '4821' } } },
    });
    expect(flow.calls).toEqual([
      {
        service: 'createCollectionRequest',
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
    expect(currentView(flow.snapshot())).toEqual({
      text: {
        key: 'request.createdWithCode',
        params: { ref: 'req-1', phone: '+254712345678', amount: '25000', currency: 'KES', mfscode: '4821' },
      },
      final: true,
    });
    expect(flow.snapshot().output).toEqual({});
  });

  it('without a payment code says who was asked for how much; without instructions sends false', async () => {
    const flow = await drive([...SCRIPT.slice(0, -1), [chosen('no'), 'confirming'], [chosen('confirm'), 'done']]);
    expect(flow.calls[0]?.input).toMatchObject({ sendInstructions: false });
    expect(currentView(flow.snapshot())?.text).toEqual({
      key: 'request.created',
      params: { ref: 'req-1', phone: '+254712345678', amount: '25000', currency: 'KES' },
    });
  });

  it('a snapshot persisted while creating restores to the same key: one request', async () => {
    const first = await drive([...SCRIPT, [chosen('confirm'), 'submitting']], {
      answers: { createCollectionRequest: undefined },
    });
    expect(first.snapshot().hasTag('busy')).toBe(true);
    const persisted = first.persisted();
    first.stop();
    // The service holds the request of the first call: the repeat under our key is AlreadySubmitted.
    const restored = live(requestMachine, {
      snapshot: persisted,
      answers: { createCollectionRequest: { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4X' } } },
    });
    const s = await restored.send(answered('ignored while busy'));
    expect(restored.calls.map((c) => c.input)).toEqual(first.calls.map((c) => c.input));
    expect(restored.calls[0]?.input).toMatchObject({ duplicateCheckKey: 'run-1:request' });
    expect(currentView(s)).toEqual({
      text: { key: 'request.submittedBefore', params: { hasRef: 'yes', ref: 'MC-7KQ4X' } },
      final: true,
    });
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
      const flow = await drive([...SCRIPT, [chosen('confirm'), 'done']], {
        answers: { createCollectionRequest: outcome },
      });
      expect(currentView(flow.snapshot())).toEqual({ text, final: true });
      expect(flow.calls).toHaveLength(1);
    });
  }

  it('cancelling the summary sends nothing', async () => {
    const flow = await drive(SCRIPT);
    const s = await flow.send(chosen('cancel'));
    expect(currentView(s)).toEqual({ text: { key: 'request.cancelled' }, final: true });
    expect(flow.calls).toEqual([]);
  });
});
