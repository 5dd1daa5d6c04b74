import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { getSimplePaths, getStateNodes } from 'xstate/graph';
import { pinFlow, pinMachine, REMEMBERED_MAX } from '../../flows/pin.machine.js';
import { ALREADY_SUBMITTED, type Candidate, type PinBundle } from '../../flows/calls.js';
import type { FlowEvent, FlowInput, RememberedCandidate, ServiceFailure } from '../../flows/types.js';
import { createCatalogue, currentView, render } from '../../src/conversation/flow/render.js';
import { missingMessages, sampleInput, walkFlow } from './coverage.js';
import { leafGroups, offeredEvents } from './data-pin-paths.js';
import { answered, BACK, chosen, expectReplaysFollow, live, SERVICE_FAILURE_CODES, type Live } from './driver.js';
import {
  expectKeyKeptAcrossRestore,
  expectPurchaseFailing,
  expectReservingFailing,
  expectSubmittedBefore,
} from './purchase.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';

const bundles: PinBundle[] = [
  { amount: '6200', available: 0, description: 'JAMB DE PIN', productCode: 'de' },
  { amount: '6200', available: 500, description: 'JAMB UTME PIN', productCode: 'utme' },
  { amount: '3900.50', available: 1, description: 'Last checker', productCode: 'checker' },
];
const validated: Candidate = { name: 'ADEBAYO TUNDE', gsmNo: '08031234567' };
const remembered: RememberedCandidate = {
  serviceType: 'jamb',
  productCode: 'de',
  accountNumber: '1234567890',
  name: 'ADEBAYO TUNDE',
  gsmNo: '08000000000',
};
const otherService: RememberedCandidate = {
  ...remembered,
  serviceType: 'waec',
  accountNumber: '4250123456',
  name: 'IBRAHIM BELLO',
};
const purchased = { reference: 'ref-p1', status: 'successful', pins: ['1111-2222', '3333-4444'] };
const withCandidates = (candidates: RememberedCandidate[]): Partial<FlowInput> => ({
  profile: { lang: 'en', candidates },
});

/** A live pin flow at the summary: JAMB, 2 UTME pins, a typed code. */
async function atSummary(input: Partial<FlowInput> = {}, candidate: Candidate = validated): Promise<Live> {
  const flow = live(pinMachine, { input });
  await flow.send(chosen('jamb'));
  await flow.settle('listPinBundles', { output: bundles });
  await flow.send(chosen('0'));
  await flow.send(chosen('2'));
  if (flow.snapshot().matches('choosingCandidate')) await flow.send(chosen('another'));
  await flow.send(answered('1234567890'));
  await flow.settle('validateCandidate', { output: candidate });
  expect(flow.snapshot().value).toBe('confirming');
  return flow;
}

/** A live pin flow whose purchase call is waiting. */
async function atPurchase(input: Partial<FlowInput> = {}, candidate: Candidate = validated): Promise<Live> {
  const flow = await atSummary(input, candidate);
  await flow.send(chosen('confirm'));
  await flow.settle('reserveSpend', { output: undefined });
  expect(flow.snapshot().value).toBe('purchasing');
  return flow;
}

describe('pin machine: the model', () => {
  const input = { requirePin: true, ...withCandidates([otherService]) };
  const walk = walkFlow(pinFlow, {
    input,
    outcomes: {
      // At most two of a bundle: each quantity offered multiplies the states the walk explores.
      listPinBundles: [
        { output: bundles.map((b) => ({ ...b, available: Math.min(b.available, 2) })) },
        { output: [bundles[0]!] },
        { error: { code: 'service' } },
      ],
      validateCandidate: [{ output: validated }, { error: { code: 'not_found' } }],
      purchasePin: [
        { output: purchased },
        { output: ALREADY_SUBMITTED },
        { error: { code: 'connection' } },
        { error: { code: 'validation', fields: { gsmNo: ['bad'] } } },
      ],
    },
  });

  it('visits every state, with words for every key in both languages', () => {
    expect(walk.line).toBe(`pin: states visited ${walk.states.length}/${walk.states.length}`);
    expect(walk.missing).toEqual([]);
    expect(missingMessages(pinFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(pinFlow);
  });

  it.each(leafGroups(walk.paths))(
    'runs shortest paths live with fake services to the same states and context ($group)',
    async ({ paths }) => {
      await expectReplaysFollow(pinMachine, paths, input);
    },
  );

  it('fits every screen reached on a USSD page (182 characters with numbered choices), in both languages', () => {
    expectScreensFit(pinFlow, walk);
  });

  it('every simple path to a purchase validates the code, then confirms, then reserves', () => {
    const paths = getSimplePaths(pinMachine, {
      input: sampleInput(withCandidates([remembered])),
      events: (snapshot: AnyMachineSnapshot) => {
        const children = Object.entries(snapshot.children as Record<string, { src: string }>);
        if (children.length > 0) {
          const [id, child] = children[0]!;
          const output = { listPinBundles: bundles, validateCandidate: validated, purchasePin: purchased }[child.src];
          return [{ type: `xstate.done.actor.${id}`, actorId: id, output }] as never;
        }
        return offeredEvents(snapshot, [
          chosen('jamb'),
          chosen('1'),
          chosen('remembered:0'),
          chosen('another'),
          answered('777'),
          chosen('confirm'),
          BACK,
        ]);
      },
      toState: (s) => s.matches('done'),
    });
    expect(paths.length).toBeGreaterThan(1);
    for (const path of paths) {
      const order = path.steps.map((s) => s.state.value);
      // The code was validated last before the confirmation that led to the purchase.
      expect(order.lastIndexOf('validating')).toBeLessThan(order.lastIndexOf('confirming'));
      expect(order.indexOf('reserving')).toBeGreaterThan(order.lastIndexOf('confirming'));
      expect(order.indexOf('purchasing')).toBeGreaterThan(order.indexOf('reserving'));
      const newest = (path.state.output as { remember: { candidates: RememberedCandidate[] } }).remember.candidates[0];
      expect(['1234567890', '777']).toContain(newest?.accountNumber);
      expect(newest).toEqual({
        serviceType: 'jamb',
        productCode: 'checker',
        accountNumber: newest?.accountNumber,
        ...validated,
      });
    }
  });
});

describe('pin machine: buying', () => {
  it('offers only the bundles on sale, and a quantity up to 5 only when more than one is available', async () => {
    const flow = live(pinMachine);
    await flow.send(chosen('waec'));
    expect(flow.calls.at(-1)).toEqual({ service: 'listPinBundles', input: { serviceType: 'waec' } });
    const list = await flow.settle('listPinBundles', { output: bundles });
    expect(currentView(list)?.choices).toEqual([
      { id: '0', text: { key: 'pin.bundleLine', params: { name: 'JAMB UTME PIN', amount: '6200', currency: 'NGN' } } },
      {
        id: '1',
        text: { key: 'pin.bundleLine', params: { name: 'Last checker', amount: '3900.50', currency: 'NGN' } },
      },
    ]);
    await flow.send(chosen('0'));
    expect(currentView(flow.snapshot())?.choices?.map((c) => c.id)).toEqual(['1', '2', '3', '4', '5']);
    await flow.send(chosen('6'));
    expect(flow.snapshot().value).toBe('choosingQuantity');
    await flow.send(BACK);
    await flow.send(chosen('1'));
    expect(flow.snapshot().value).toBe('awaitingCode');
    expect(flow.snapshot().context.quantity).toBe(1);
  });

  it('validates the code, shows the name, and buys with the gsmNo validation returned', async () => {
    const flow = await atPurchase();
    expect(flow.calls.find((c) => c.service === 'validateCandidate')?.input).toEqual({
      serviceType: 'jamb',
      productCode: 'utme',
      accountNumber: '1234567890',
    });
    expect(flow.calls.find((c) => c.service === 'reserveSpend')?.input).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      flow: 'pin',
      amount: '12400',
      currency: 'NGN',
      duplicateCheckKey: 'run-1:pin',
    });
    expect(flow.calls.at(-1)?.input).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      duplicateCheckKey: 'run-1:pin',
      serviceType: 'jamb',
      productCode: 'utme',
      accountNumber: '1234567890',
      gsmNo: '08031234567',
      amount: '6200',
      quantity: 2,
      metadata: { chat: 'telegram:chat-1', ref: 'run-1:pin' },
    });
    const done = await flow.settle('purchasePin', { output: purchased });
    expect(currentView(done)?.text).toEqual({
      key: 'pin.done',
      params: {
        bundle: 'JAMB UTME PIN',
        quantity: 2,
        name: 'ADEBAYO TUNDE',
        total: '12400',
        currency: 'NGN',
        pins: '1111-2222, 3333-4444',
        reference: 'ref-p1',
      },
    });
    // The record's copy (the journal's telling, /ops) keeps how many pins, never the pins, in words that count.
    expect(render(currentView(done)!.masked!, 'en')).toBe('Bought for ADEBAYO TUNDE. 2 pins (hidden). Ref: ref-p1');
    const one = { ...currentView(done)!.masked!, params: { ...currentView(done)!.masked!.params, count: 1 } };
    expect(render(one, 'en')).toBe('Bought for ADEBAYO TUNDE. 1 pin (hidden). Ref: ref-p1');
    expect(render(one, 'fr')).toBe('Acheté pour ADEBAYO TUNDE. 1 PIN (masqué). Réf ref-p1');
    // The record's copy (the journal's telling, /ops) keeps how many pins, never the pins.
    expect(currentView(done)?.masked).toEqual({
      key: 'pin.doneMasked',
      params: {
        bundle: 'JAMB UTME PIN',
        quantity: 2,
        name: 'ADEBAYO TUNDE',
        total: '12400',
        currency: 'NGN',
        count: 2,
        reference: 'ref-p1',
      },
    });
    expect(done.output).toEqual({
      remember: {
        candidates: [
          {
            serviceType: 'jamb',
            productCode: 'utme',
            accountNumber: '1234567890',
            name: 'ADEBAYO TUNDE',
            gsmNo: '08031234567',
          },
        ],
      },
    });
  });

  it('fits the receipt of five pins with a three-part name on a USSD screen, in both languages', async () => {
    const flow = await atPurchase({}, { name: 'ADEBAYO OLUWASEUN TUNDE', gsmNo: '08031234567' });
    const pins = Array.from({ length: 5 }, (_, i) => `${i}`.repeat(12));
    const done = await flow.settle('purchasePin', {
      output: { reference: 'SBXV00000001', status: 'successful', pins },
    });
    const { renderView } = createCatalogue([pinFlow]);
    for (const lang of ['en', 'sw'] as const) {
      const text = renderView(currentView(done)!, lang).text;
      expect(text).toContain('ADEBAYO OLUWASEUN TUNDE');
      expect(text).toContain('444444444444');
      expect(text.length, text).toBeLessThanOrEqual(182);
    }
  });

  it('reads a purchase the service already held under our key as sent, not as bought', async () => {
    await expectSubmittedBefore(await atPurchase(), 'pin', 'purchasePin');
  });

  it('shows the summary with the name and total', async () => {
    const flow = await atSummary();
    expect(currentView(flow.snapshot())).toEqual({
      text: {
        key: 'pin.summary',
        params: { bundle: 'JAMB UTME PIN', quantity: 2, name: 'ADEBAYO TUNDE', total: '12400', currency: 'NGN' },
      },
      error: undefined,
      choices: [{ id: 'confirm', text: { key: 'pin.confirm' } }],
    });
  });

  it('offers a remembered candidate of this service, validates it again and buys with the new gsmNo', async () => {
    const flow = live(pinMachine, { input: withCandidates([otherService, remembered]) });
    await flow.send(chosen('jamb'));
    await flow.settle('listPinBundles', { output: bundles });
    await flow.send(chosen('1'));
    expect(currentView(flow.snapshot())?.choices).toEqual([
      { id: 'remembered:0', text: { key: 'pin.useCandidate', params: { name: 'ADEBAYO TUNDE', code: '1234567890' } } },
      { id: 'another', text: { key: 'pin.anotherCode' } },
    ]);
    await flow.send(chosen('remembered:0'));
    expect(flow.calls.at(-1)?.input).toEqual({
      serviceType: 'jamb',
      productCode: 'checker',
      accountNumber: '1234567890',
    });
    await flow.settle('validateCandidate', { output: validated });
    await flow.send(chosen('confirm'));
    await flow.settle('reserveSpend', { output: undefined });
    expect(flow.calls.at(-1)?.input).toMatchObject({ gsmNo: '08031234567', accountNumber: '1234567890', quantity: 1 });
    const done = await flow.settle('purchasePin', { output: purchased });
    expect(done.output).toEqual({
      remember: { candidates: [{ ...remembered, productCode: 'checker', gsmNo: '08031234567' }, otherService] },
    });
  });

  it('keeps at most three remembered candidates, the newest first', async () => {
    const older = [1, 2, 3].map((n) => ({ ...otherService, accountNumber: `old-${n}` }));
    const flow = await atPurchase(withCandidates(older));
    const done = await flow.settle('purchasePin', { output: purchased });
    const candidates = (done.output as { remember: { candidates: RememberedCandidate[] } }).remember.candidates;
    expect(candidates.map((c) => c.accountNumber)).toEqual(['1234567890', 'old-1', 'old-2']);
    expect(candidates).toHaveLength(REMEMBERED_MAX);
  });

  it('keeps the idempotency key across a JSON round trip of the busy snapshot: the purchase sees it twice', async () => {
    await expectKeyKeptAcrossRestore(await atPurchase(), pinMachine, 'purchasePin', 'run-1:pin', purchased);
  });

  it('confirms with the PIN when required, and stops when it is locked', async () => {
    const flow = await atSummary({ requirePin: true });
    expect(currentView(flow.snapshot())).toMatchObject({ input: 'pin', text: { key: 'pin.summaryPin' } });
    await flow.send(answered('4321'));
    expect(flow.calls.at(-1)?.input).toEqual({ channel: 'telegram', userId: 'user-1', pin: '4321' });
    const locked = await flow.settle('verifyPin', { error: { code: 'pin_locked' } });
    expect(locked.value).toBe('failed');
    expect(currentView(locked)?.error).toEqual({ key: 'failure.pin_locked' });
    expect(flow.calls.map((c) => c.service)).not.toContain('purchasePin');
  });
});

describe('pin machine: answers refused and re-asked with the reason', () => {
  it('an empty code, then a code no candidate has', async () => {
    const flow = live(pinMachine);
    await flow.send(chosen('jamb'));
    await flow.settle('listPinBundles', { output: bundles });
    await flow.send(chosen('1'));
    await flow.send(answered('  '));
    expect(flow.snapshot().value).toBe('awaitingCode');
    expect(currentView(flow.snapshot())?.error).toEqual({ key: 'input.textEmpty' });
    await flow.send(answered('000'));
    const refused = await flow.settle('validateCandidate', { error: { code: 'not_found' } });
    expect(refused.value).toBe('awaitingCode');
    expect(currentView(refused)).toEqual({
      text: { key: 'pin.askCode', params: { service: 'JAMB' } },
      error: { key: 'pin.codeNotFound' },
      input: 'code',
    });
    expect(refused.context.candidate).toBeUndefined();
  });

  it('choices not offered', async () => {
    const flow = live(pinMachine);
    for (const id of ['neco', 'toString', '']) expect((await flow.send(chosen(id))).value).toBe('choosingService');
    await flow.send(chosen('jamb'));
    await flow.settle('listPinBundles', { output: bundles });
    for (const id of ['', '2', '-1', '0.5']) expect((await flow.send(chosen(id))).value).toBe('choosingBundle');
    await flow.send(chosen('0'));
    for (const id of ['0', '6', ' 2', '']) expect((await flow.send(chosen(id))).value).toBe('choosingQuantity');
    const typed = await flow.send(answered('2'));
    expect(currentView(typed)?.error).toEqual({ key: 'common.pickOne' });
    const picked = await flow.send(chosen('5'));
    expect(picked.context).toMatchObject({ quantity: 5, error: undefined });
  });

  it('a list with nothing on sale: back to the services with the reason', async () => {
    const flow = live(pinMachine);
    await flow.send(chosen('waec'));
    const empty = await flow.settle('listPinBundles', { output: [bundles[0]!] });
    expect(empty.value).toBe('choosingService');
    expect(currentView(empty)?.error).toEqual({ key: 'pin.noBundles', params: { service: 'WAEC' } });
  });
});

describe('pin machine: back from every step', () => {
  /** How to reach a waiting state (LIST: the bundles arrive; VALID: the code is validated) and where BACK leads. */
  const LIST = 'list';
  const VALID = 'valid';
  const mine = withCandidates([remembered]);
  const cases: Array<{
    from: string;
    to: string;
    steps: Array<FlowEvent | typeof LIST | typeof VALID>;
    input?: Partial<FlowInput>;
  }> = [
    { from: 'choosingService', to: 'left', steps: [] },
    { from: 'choosingBundle', to: 'choosingService', steps: [chosen('jamb'), LIST] },
    { from: 'choosingQuantity', to: 'choosingBundle', steps: [chosen('jamb'), LIST, chosen('0')] },
    {
      from: 'choosingCandidate',
      to: 'choosingQuantity',
      steps: [chosen('jamb'), LIST, chosen('0'), chosen('1')],
      input: mine,
    },
    { from: 'choosingCandidate', to: 'choosingBundle', steps: [chosen('jamb'), LIST, chosen('1')], input: mine },
    {
      from: 'awaitingCode',
      to: 'choosingCandidate',
      steps: [chosen('jamb'), LIST, chosen('1'), chosen('another')],
      input: mine,
    },
    { from: 'awaitingCode', to: 'choosingQuantity', steps: [chosen('jamb'), LIST, chosen('0'), chosen('3')] },
    { from: 'awaitingCode', to: 'choosingBundle', steps: [chosen('jamb'), LIST, chosen('1')] },
    {
      from: 'confirming',
      to: 'awaitingCode',
      steps: [chosen('jamb'), LIST, chosen('1'), answered('1234567890'), VALID],
    },
    {
      from: 'confirming',
      to: 'choosingCandidate',
      steps: [chosen('jamb'), LIST, chosen('1'), chosen('remembered:0'), VALID],
      input: mine,
    },
  ];

  it('covers every waiting state', () => {
    const waiting = getStateNodes(pinMachine.root)
      .filter((n) => n.meta?.view && n.type !== 'final')
      .map((n) => n.key);
    expect(new Set(cases.map((c) => c.from))).toEqual(new Set(waiting));
  });

  it.each(cases)('$from -> $to', async ({ from, to, steps, input }) => {
    const flow = live(pinMachine, { input });
    for (const step of steps) {
      if (step === LIST) await flow.settle('listPinBundles', { output: bundles });
      else if (step === VALID) await flow.settle('validateCandidate', { output: validated });
      else await flow.send(step);
    }
    expect(flow.snapshot().value).toBe(from);
    await flow.send(BACK);
    expect(flow.snapshot().value).toBe(to);
    expect(flow.snapshot().context.error).toBeUndefined();
    if (to === 'left') expect(flow.snapshot().output).toEqual({ next: 'menu' });
  });
});

describe('pin machine: every service failure in words', () => {
  it('a purchase whose answer was lost names our short ref on its screen', async () => {
    await expectPurchaseFailing(await atPurchase(), 'pin', 'purchasePin', { code: 'connection', shortRef: 'MC-7KQ4X' });
  });

  it.each(SERVICE_FAILURE_CODES)('purchase failing with %s', async (code) => {
    const failure: ServiceFailure = code === 'validation' ? { code, fields: { gsmNo: ['bad'] } } : { code };
    const end = await expectPurchaseFailing(await atPurchase(), 'pin', 'purchasePin', failure);
    // The validated candidate is remembered whatever became of the purchase.
    expect(end.output).toMatchObject({ remember: { candidates: [{ accountNumber: '1234567890' }] } });
  });

  it.each(SERVICE_FAILURE_CODES)('validation failing with %s: the code asked again with the reason', async (code) => {
    const flow = live(pinMachine);
    await flow.send(chosen('jamb'));
    await flow.settle('listPinBundles', { output: bundles });
    await flow.send(chosen('1'));
    await flow.send(answered('1234567890'));
    const back = await flow.settle('validateCandidate', { error: { code } });
    expect(back.value).toBe('awaitingCode');
    expect(currentView(back)?.error?.key).toBe(code === 'not_found' ? 'pin.codeNotFound' : `failure.${code}`);
  });

  it.each(['rate_limited', 'service', 'connection'] as const)(
    'bundle listing failing with %s: back to the services',
    async (code) => {
      const flow = live(pinMachine);
      await flow.send(chosen('jamb'));
      const back = await flow.settle('listPinBundles', { error: { code } });
      expect(back.value).toBe('choosingService');
      expect(currentView(back)?.error).toEqual({ key: `failure.${code}` });
    },
  );

  it.each(['limit_exceeded', 'not_allowed', 'connection'] as const)(
    'reserving failing with %s: nothing bought',
    async (code) => {
      await expectReservingFailing(await atSummary(), code, 'purchasePin');
    },
  );
});
