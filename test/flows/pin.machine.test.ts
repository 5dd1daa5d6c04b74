import { afterEach, describe, expect, it } from 'vitest';
import { transition, type AnyMachineSnapshot } from 'xstate';
import { getSimplePaths, getStateNodes } from 'xstate/graph';
import { pinFlow, pinMachine, REMEMBERED_MAX } from '../../flows/pin.machine.js';
import { ALREADY_SUBMITTED, type Candidate, type PinBundle } from '../../flows/calls.js';
import type { FlowInput, RememberedCandidate, ServiceFailure } from '../../flows/types.js';
import { createCatalogue, render } from '../../src/conversation/flow/render.js';
import { flowTest, held, type Answers, type FlowTest, type Steps } from '../../src/testing/flow-test.js';
import {
  expectWalkedOnAPhone,
  missingMessages,
  NIGERIAN,
  onAPhone,
  sampleInput,
  SERVICE_FAILURE_CODES,
  walkFlow,
  type Outcomes,
} from './coverage.js';
import { answered, BACK, chosen, leafGroups, offeredEvents } from './data-pin-paths.js';
import {
  expectKeyKeptAcrossRestart,
  expectKeyKeptWhileOut,
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

const tests: FlowTest[] = [];
afterEach(async () => {
  await Promise.all(tests.splice(0).map((t) => t.close()));
});

interface Buyer {
  /** The service's answers besides every call answered well. */
  answers?: Answers;
  /** The candidates the product remembers of this person (an earlier purchase's). */
  candidates?: RememberedCandidate[];
  /** On a phone with a Nigerian number, which asks the PIN; default Telegram, which asks none. */
  phone?: boolean;
}

/** Buy an exam pin opened by a person (Telegram's /pin, a dial), the service answering every call well. */
async function opened({ answers = {}, candidates, phone }: Buyer = {}): Promise<FlowTest> {
  const t = flowTest('pin', {
    ...(phone ? { channel: 'ussd', user: NIGERIAN } : { channel: 'telegram' }),
    ...(candidates ? { profile: { candidates } } : {}),
    answers: {
      listPinBundles: { output: bundles },
      validateCandidate: { output: validated },
      verifyPin: { output: undefined },
      reserveSpend: { output: undefined },
      purchasePin: { output: purchased },
      ...answers,
    },
  });
  tests.push(t);
  await t.dial();
  return t;
}

/** At the summary: JAMB, 2 UTME pins, a typed code. */
async function atSummary(buyer: Buyer = {}): Promise<FlowTest> {
  const t = await opened(buyer);
  await t.press('JAMB').choose('0').choose('2');
  if (t.flow()?.snapshot.value === 'choosingCandidate') await t.choose('another');
  await t.send('1234567890');
  expect(t.flow()?.snapshot.value).toBe('confirming');
  return t;
}
const toSummary = (answers?: Answers) => atSummary({ answers });

/** Confirmed at the summary, the purchase answered. */
async function bought(buyer: Buyer = {}): Promise<FlowTest> {
  const t = await atSummary(buyer);
  await t.choose('confirm');
  expect(t.flow()?.snapshot.value).toBe('done');
  return t;
}

const at = (t: FlowTest) => t.flow()?.snapshot.value;
const viewOf = (t: FlowTest) => t.flow()?.view;
const remembers = (t: FlowTest) =>
  (t.flow()!.snapshot.output as { remember: { candidates: RememberedCandidate[] } }).remember.candidates;

describe('pin machine: the model', () => {
  const input = { requirePin: true, ...withCandidates([otherService]) };
  const walkOutcomes: Outcomes = {
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
  };
  const walk = walkFlow(pinFlow, { input, outcomes: walkOutcomes });

  it('visits every state, with words for every key in both languages', () => {
    expect(walk.line).toBe(`pin: states visited ${walk.states.length}/${walk.states.length}`);
    expect(walk.missing).toEqual([]);
    expect(missingMessages(pinFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(pinFlow);
  });

  // A Nigerian person on a phone (the vending flows are offered there), who bought for another exam before.
  const onPhone = walkFlow(pinFlow, {
    input: { ...onAPhone(NIGERIAN), ...withCandidates([otherService]) },
    outcomes: walkOutcomes,
    print: false,
  });
  it.each(leafGroups(onPhone.paths))(
    'a person on a phone, the service answering as the model settles it, follows every shortest path ($group)',
    async ({ paths }) => {
      await expectWalkedOnAPhone('pin', paths, { user: NIGERIAN, profile: { candidates: [otherService] } });
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
    const t = await opened();
    await t.press('WAEC').sees('JAMB UTME PIN 6,200 NGN').doesNotSee('JAMB DE PIN');
    expect(t.calls.at(-1)).toEqual({ name: 'listPinBundles', input: { serviceType: 'waec' } });
    expect(viewOf(t)?.choices).toEqual([
      { id: '0', text: { key: 'pin.bundleLine', params: { name: 'JAMB UTME PIN', amount: '6200', currency: 'NGN' } } },
      {
        id: '1',
        text: { key: 'pin.bundleLine', params: { name: 'Last checker', amount: '3900.50', currency: 'NGN' } },
      },
    ]);
    await t.choose('0');
    expect(viewOf(t)?.choices?.map((c) => c.id)).toEqual(['1', '2', '3', '4', '5']);
    // A quantity no screen offered (a forged press).
    expect(transition(pinMachine, t.flow()!.snapshot, chosen('6'))[0].value).toBe('choosingQuantity');
    await t.back().choose('1');
    expect(at(t)).toBe('awaitingCode');
    expect(t.flow()!.snapshot.context.quantity).toBe(1);
  });

  it('validates the code, shows the name, and buys with the gsmNo validation returned', async () => {
    const t = await bought();
    expect(t.calls.find((c) => c.name === 'validateCandidate')?.input).toEqual({
      serviceType: 'jamb',
      productCode: 'utme',
      accountNumber: '1234567890',
    });
    expect(t.calls.find((c) => c.name === 'reserveSpend')?.input).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      flow: 'pin',
      amount: '12400',
      currency: 'NGN',
      duplicateCheckKey: 'run-1:pin',
    });
    expect(t.calls.at(-1)?.input).toEqual({
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
    await t.sees('ADEBAYO TUNDE').sees('1111-2222, 3333-4444');
    const view = viewOf(t)!;
    expect(view.text).toEqual({
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
    expect(render(view.masked!, 'en')).toBe('Bought for ADEBAYO TUNDE. 2 pins (hidden). Ref: ref-p1');
    const one = { ...view.masked!, params: { ...view.masked!.params, count: 1 } };
    expect(render(one, 'en')).toBe('Bought for ADEBAYO TUNDE. 1 pin (hidden). Ref: ref-p1');
    expect(render(one, 'fr')).toBe('Acheté pour ADEBAYO TUNDE. 1 PIN (masqué). Réf ref-p1');
    // The record's copy (the journal's telling, /ops) keeps how many pins, never the pins.
    expect(view.masked).toEqual({
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
    expect(remembers(t)).toEqual([
      {
        serviceType: 'jamb',
        productCode: 'utme',
        accountNumber: '1234567890',
        name: 'ADEBAYO TUNDE',
        gsmNo: '08031234567',
      },
    ]);
  });

  it('fits the receipt of five pins with a three-part name on a USSD screen, in both languages', async () => {
    const pins = Array.from({ length: 5 }, (_, i) => `${i}`.repeat(12));
    const t = await bought({
      answers: {
        validateCandidate: { output: { name: 'ADEBAYO OLUWASEUN TUNDE', gsmNo: '08031234567' } },
        purchasePin: { output: { reference: 'SBXV00000001', status: 'successful', pins } },
      },
    });
    const { renderView } = createCatalogue([pinFlow]);
    for (const lang of ['en', 'sw'] as const) {
      const text = renderView(viewOf(t)!, lang).text;
      expect(text).toContain('ADEBAYO OLUWASEUN TUNDE');
      expect(text).toContain('444444444444');
      expect(text.length, text).toBeLessThanOrEqual(182);
    }
  });

  it('reads a purchase the service already held under our key as sent, not as bought', async () => {
    await expectSubmittedBefore(toSummary, 'pin', 'purchasePin');
  });

  it('shows the summary with the name and total', async () => {
    const t = await atSummary();
    await t.sees('ADEBAYO TUNDE');
    expect(viewOf(t)).toEqual({
      text: {
        key: 'pin.summary',
        params: { bundle: 'JAMB UTME PIN', quantity: 2, name: 'ADEBAYO TUNDE', total: '12400', currency: 'NGN' },
      },
      error: undefined,
      choices: [{ id: 'confirm', text: { key: 'pin.confirm' } }],
    });
  });

  it('offers a remembered candidate of this service, validates it again and buys with the new gsmNo', async () => {
    const t = await opened({ candidates: [otherService, remembered] });
    await t.press('JAMB').choose('1');
    expect(viewOf(t)?.choices).toEqual([
      { id: 'remembered:0', text: { key: 'pin.useCandidate', params: { name: 'ADEBAYO TUNDE', code: '1234567890' } } },
      { id: 'another', text: { key: 'pin.anotherCode' } },
    ]);
    await t.choose('remembered:0');
    expect(t.calls.at(-1)?.input).toEqual({
      serviceType: 'jamb',
      productCode: 'checker',
      accountNumber: '1234567890',
    });
    await t.choose('confirm');
    expect(t.calls.at(-1)?.input).toMatchObject({ gsmNo: '08031234567', accountNumber: '1234567890', quantity: 1 });
    expect(remembers(t)).toEqual([{ ...remembered, productCode: 'checker', gsmNo: '08031234567' }, otherService]);
  });

  it('keeps at most three remembered candidates, the newest first', async () => {
    const older = [1, 2, 3].map((n) => ({ ...otherService, accountNumber: `old-${n}` }));
    const t = await bought({ candidates: older });
    expect(remembers(t).map((c) => c.accountNumber)).toEqual(['1234567890', 'old-1', 'old-2']);
    expect(remembers(t)).toHaveLength(REMEMBERED_MAX);
  });

  it('keeps the idempotency key in the stored flow while the purchase is out: the key its call carries', async () => {
    await expectKeyKeptWhileOut(toSummary, 'purchasePin', 'run-1:pin', purchased);
  });

  it('a purchase out when the process restarts is made by the new one under the same key: one purchase', async () => {
    const t = await toSummary({ purchasePin: held });
    await t.choose('confirm');
    await expectKeyKeptAcrossRestart(t, 'purchasePin', { output: purchased });
  });

  it('confirms with the PIN when required, and stops when it is locked', async () => {
    const t = await atSummary({ phone: true, answers: { verifyPin: { error: { code: 'pin_locked' } } } });
    expect(viewOf(t)).toMatchObject({ input: 'pin', text: { key: 'pin.summaryPin' } });
    await t.send('4321');
    expect(t.calls.at(-1)).toEqual({ name: 'verifyPin', input: { channel: 'ussd', userId: NIGERIAN, pin: '4321' } });
    expect(at(t)).toBe('failed');
    expect(viewOf(t)?.error).toEqual({ key: 'failure.pin_locked' });
    expect(t.calls.map((c) => c.name)).not.toContain('purchasePin');
  });
});

describe('pin machine: answers refused and re-asked with the reason', () => {
  it('an empty code, then a code no candidate has', async () => {
    const t = await opened({ answers: { validateCandidate: { error: { code: 'not_found' } } } });
    await t.press('JAMB').choose('1').send('  ');
    expect(at(t)).toBe('awaitingCode');
    expect(viewOf(t)?.error).toEqual({ key: 'input.textEmpty' });
    await t.send('000');
    expect(at(t)).toBe('awaitingCode');
    expect(viewOf(t)).toEqual({
      text: { key: 'pin.askCode', params: { service: 'JAMB' } },
      error: { key: 'pin.codeNotFound' },
      input: 'code',
    });
    expect(t.flow()!.snapshot.context.candidate).toBeUndefined();
  });

  it('choices not offered', async () => {
    // Choices no screen offered (a forged press), tried on each screen the person reaches.
    const refused = (t: FlowTest, ids: string[]) =>
      ids.map((id) => transition(pinMachine, t.flow()!.snapshot, chosen(id))[0].value);
    const t = await opened();
    expect(refused(t, ['neco', 'toString', ''])).toEqual(Array(3).fill('choosingService'));
    await t.press('JAMB');
    expect(refused(t, ['', '2', '-1', '0.5'])).toEqual(Array(4).fill('choosingBundle'));
    await t.choose('0');
    expect(refused(t, ['0', '6', ' 2', ''])).toEqual(Array(4).fill('choosingQuantity'));
    await t.send('2');
    expect(viewOf(t)?.error).toEqual({ key: 'common.pickOne' });
    await t.choose('5');
    const { quantity, error } = t.flow()!.snapshot.context;
    expect([quantity, error]).toEqual([5, undefined]);
  });

  it('a list with nothing on sale: back to the services with the reason', async () => {
    const t = await opened({ answers: { listPinBundles: { output: [bundles[0]!] } } });
    await t.press('WAEC');
    expect(at(t)).toBe('choosingService');
    expect(viewOf(t)?.error).toEqual({ key: 'pin.noBundles', params: { service: 'WAEC' } });
  });
});

describe('pin machine: back from every step', () => {
  /** How a person reaches a waiting state (the bundles and the code's check answered at once) and where Back leads. */
  const mine = [remembered];
  const cases: Array<{
    from: string;
    to: string;
    steps: (t: FlowTest) => Steps | Promise<void>;
    candidates?: RememberedCandidate[];
  }> = [
    { from: 'choosingService', to: 'left', steps: async () => {} },
    { from: 'choosingBundle', to: 'choosingService', steps: (t) => t.press('JAMB') },
    { from: 'choosingQuantity', to: 'choosingBundle', steps: (t) => t.press('JAMB').choose('0') },
    {
      from: 'choosingCandidate',
      to: 'choosingQuantity',
      steps: (t) => t.press('JAMB').choose('0').choose('1'),
      candidates: mine,
    },
    { from: 'choosingCandidate', to: 'choosingBundle', steps: (t) => t.press('JAMB').choose('1'), candidates: mine },
    {
      from: 'awaitingCode',
      to: 'choosingCandidate',
      steps: (t) => t.press('JAMB').choose('1').choose('another'),
      candidates: mine,
    },
    { from: 'awaitingCode', to: 'choosingQuantity', steps: (t) => t.press('JAMB').choose('0').choose('3') },
    { from: 'awaitingCode', to: 'choosingBundle', steps: (t) => t.press('JAMB').choose('1') },
    { from: 'confirming', to: 'awaitingCode', steps: (t) => t.press('JAMB').choose('1').send('1234567890') },
    {
      from: 'confirming',
      to: 'choosingCandidate',
      steps: (t) => t.press('JAMB').choose('1').choose('remembered:0'),
      candidates: mine,
    },
  ];

  it('covers every waiting state', () => {
    const waiting = getStateNodes(pinMachine.root)
      .filter((n) => n.meta?.view && n.type !== 'final')
      .map((n) => n.key);
    expect(new Set(cases.map((c) => c.from))).toEqual(new Set(waiting));
  });

  it.each(cases)('$from -> $to', async ({ from, to, steps, candidates }) => {
    const t = await opened({ candidates });
    await steps(t);
    expect(at(t)).toBe(from);
    await t.back();
    if (to === 'left') {
      expect(t.flow()?.id).toBe('menu');
      return;
    }
    expect(at(t)).toBe(to);
    expect(t.flow()!.snapshot.context.error).toBeUndefined();
  });
});

describe('pin machine: every service failure in words', () => {
  it('a purchase whose answer was lost names our short ref on its screen', async () => {
    await expectPurchaseFailing(toSummary, 'pin', 'purchasePin', { code: 'connection', shortRef: 'MC-7KQ4X' });
  });

  it.each(SERVICE_FAILURE_CODES)('purchase failing with %s', async (code) => {
    const failure: ServiceFailure = code === 'validation' ? { code, fields: { gsmNo: ['bad'] } } : { code };
    const end = await expectPurchaseFailing(toSummary, 'pin', 'purchasePin', failure);
    // The validated candidate is remembered whatever became of the purchase.
    expect(end.output).toMatchObject({ remember: { candidates: [{ accountNumber: '1234567890' }] } });
  });

  it.each(SERVICE_FAILURE_CODES)('validation failing with %s: the code asked again with the reason', async (code) => {
    const t = await opened({ answers: { validateCandidate: { error: { code } } } });
    await t.press('JAMB').choose('1').send('1234567890');
    expect(at(t)).toBe('awaitingCode');
    expect(viewOf(t)?.error?.key).toBe(code === 'not_found' ? 'pin.codeNotFound' : `failure.${code}`);
  });

  it.each(['rate_limited', 'service', 'connection'] as const)(
    'bundle listing failing with %s: back to the services',
    async (code) => {
      const t = await opened({ answers: { listPinBundles: { error: { code } } } });
      await t.press('JAMB');
      expect(at(t)).toBe('choosingService');
      expect(viewOf(t)?.error).toEqual({ key: `failure.${code}` });
    },
  );

  it.each(['limit_exceeded', 'not_allowed', 'connection'] as const)(
    'reserving failing with %s: nothing bought',
    async (code) => {
      await expectReservingFailing(toSummary, code, 'purchasePin');
    },
  );
});
