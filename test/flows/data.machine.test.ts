import { afterEach, describe, expect, it } from 'vitest';
import { transition, type AnyMachineSnapshot } from 'xstate';
import { getSimplePaths, getStateNodes } from 'xstate/graph';
import { dataFlow, dataMachine } from '../../flows/data.machine.js';
import { ALREADY_SUBMITTED, type DataBundle } from '../../flows/calls.js';
import type { ServiceFailure } from '../../flows/types.js';
import { currentView } from '../../src/conversation/flow/render.js';
import type { Channel } from '../../src/conversation/types.js';
import { flowTest, held, type Answers, type FlowTest, type Steps } from '../../src/testing/flow-test.js';
import {
  expectWalkedOnAPhone,
  missingMessages,
  NIGERIAN,
  onAPhone,
  sampleInput,
  SERVICE_FAILURE_CODES,
  walkFlow,
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
import { phoneExample } from '../../flows/input.js';

const bundles: DataBundle[] = [
  { datacode: '101', name: 'MTN 1GB', allowance: '1GB', price: '1000', validity: '30 days' },
  { datacode: '102', name: 'MTN 2GB', allowance: '2GB', price: '1800.50', validity: '30 days' },
];
const purchased = { reference: 'ref-d1', status: 'successful' };

/**
 * The people who buy: on Telegram (no number, no PIN), on WhatsApp with a Nigerian number (their own number
 * offered, no PIN), on a phone with that number (the PIN asked at the summary).
 */
type Who = 'telegram' | 'whatsapp' | 'ussd';
const PEOPLE: Record<Who, { channel: Channel; user?: string }> = {
  telegram: { channel: 'telegram' },
  whatsapp: { channel: 'whatsapp', user: NIGERIAN },
  ussd: { channel: 'ussd', user: NIGERIAN },
};

const tests: FlowTest[] = [];
afterEach(async () => {
  await Promise.all(tests.splice(0).map((t) => t.close()));
});

/** Buy data opened by `who`, the service answering every call well unless `answers` says otherwise. */
async function opened(who: Who = 'telegram', answers: Answers = {}): Promise<FlowTest> {
  const t = flowTest('data', {
    ...PEOPLE[who],
    answers: {
      listDataBundles: { output: bundles },
      verifyPin: { output: undefined },
      reserveSpend: { output: undefined },
      purchaseData: { output: purchased },
      ...answers,
    },
  });
  tests.push(t);
  await t.dial();
  return t;
}

/** At the summary: MTN, the second bundle, their own number (typed on Telegram, which knows none). */
async function atSummary(who: Who = 'telegram', answers: Answers = {}): Promise<FlowTest> {
  const t = await opened(who, answers);
  await t.press('MTN').choose('102');
  if (t.flow()?.snapshot.value === 'choosingPhone') await t.choose('own');
  else await t.send('0772000001');
  expect(t.flow()?.snapshot.value).toBe('confirming');
  return t;
}
const toSummary = (answers?: Answers) => atSummary('telegram', answers);

const at = (t: FlowTest) => t.flow()?.snapshot.value;
const viewOf = (t: FlowTest) => t.flow()?.view;

describe('data machine: the model', () => {
  const input = { requirePin: true };
  const walkOutcomes = {
    listDataBundles: [{ output: bundles }, { output: [] }, { error: { code: 'not_found' as const } }],
    purchaseData: [
      { output: purchased },
      { output: ALREADY_SUBMITTED },
      { error: { code: 'connection' as const } },
      { error: { code: 'validation' as const, fields: { phonenumber: ['bad'] } } },
    ],
  };
  const walk = walkFlow(dataFlow, { input, answers: { awaitingAccount: ['', '0123456789'] }, outcomes: walkOutcomes });

  it('visits every state, with words for every key in both languages', () => {
    expect(walk.line).toBe(`data: states visited ${walk.states.length}/${walk.states.length}`);
    expect(walk.missing).toEqual([]);
    expect(missingMessages(dataFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(dataFlow);
  });

  // A Nigerian person on a phone (the vending flows are offered there), typing a number of their country.
  const onPhone = walkFlow(dataFlow, {
    input: onAPhone(NIGERIAN),
    answers: { awaitingAccount: ['', '0123456789'], awaitingPhone: ['12', '08031234568'] },
    outcomes: walkOutcomes,
    print: false,
  });
  it.each(leafGroups(onPhone.paths))(
    'a person on a phone, the service answering as the model settles it, follows every shortest path ($group)',
    async ({ paths }) => {
      await expectWalkedOnAPhone('data', paths, { user: NIGERIAN });
    },
  );

  it('fits every screen reached on a USSD page (182 characters with numbered choices), in both languages', () => {
    expectScreensFit(dataFlow, walk);
  });

  it('every simple path to a purchase passes a confirmation and reserves before buying', () => {
    const paths = getSimplePaths(dataMachine, {
      input: sampleInput({ userPhone: undefined }),
      events: (snapshot: AnyMachineSnapshot) => {
        const children = Object.entries(snapshot.children as Record<string, { src: string }>);
        if (children.length > 0) {
          const [id, child] = children[0]!;
          return [
            {
              type: `xstate.done.actor.${id}`,
              actorId: id,
              output: child.src === 'listDataBundles' ? bundles.slice(0, 1) : purchased,
            },
          ] as never;
        }
        return offeredEvents(snapshot, [chosen('glo'), chosen('101'), chosen('confirm'), answered('0772000001'), BACK]);
      },
      toState: (s) => s.matches('done'),
    });
    expect(paths.length).toBeGreaterThan(0);
    for (const path of paths) {
      const order = path.steps.map((s) => s.state.value);
      expect(order.indexOf('confirming')).toBeGreaterThan(-1);
      expect(order.indexOf('reserving')).toBeGreaterThan(order.indexOf('confirming'));
      expect(order.indexOf('purchasing')).toBeGreaterThan(order.indexOf('reserving'));
    }
  });
});

describe('data machine: buying', () => {
  it('offers every bundle as a choice labelled with allowance, validity and price', async () => {
    const t = await opened();
    await t.press('Airtel').sees('1GB 30 days 1,000 NGN').sees('2GB 30 days 1,800.50 NGN');
    expect(t.calls.at(-1)).toEqual({ name: 'listDataBundles', input: { network: 'airtel' } });
    expect(viewOf(t)?.choices).toEqual([
      { id: '101', text: { key: 'data.bundleLine', params: { name: '1GB 30 days', price: '1000', currency: 'NGN' } } },
      {
        id: '102',
        text: { key: 'data.bundleLine', params: { name: '2GB 30 days', price: '1800.50', currency: 'NGN' } },
      },
    ]);
  });

  it('buys with the key made at start, the bundle price reserved in naira under that key, and metadata naming the chat', async () => {
    // On WhatsApp, whose person has a number: their own, offered.
    const t = await atSummary('whatsapp');
    await t.choose('confirm').sees('Bought 2GB 30 days for +2348031234567. Ref: ref-d1');
    const who = { channel: 'whatsapp', userId: '2348031234567' };
    expect(t.calls.find((c) => c.name === 'reserveSpend')?.input).toEqual({
      ...who,
      flow: 'data',
      amount: '1800.50',
      currency: 'NGN',
      duplicateCheckKey: 'run-2:data',
    });
    expect(t.calls.at(-1)?.input).toEqual({
      ...who,
      duplicateCheckKey: 'run-2:data',
      network: 'mtn',
      datacode: '102',
      phonenumber: '+2348031234567',
      amount: '1800.50',
      metadata: { chat: 'whatsapp:2348031234567', ref: 'run-2:data' },
    });
    const done = t.flow()!.snapshot;
    expect(done.status).toBe('done');
    expect(done.output).toEqual({});
    expect(viewOf(t)?.text).toEqual({
      key: 'data.done',
      params: {
        bundle: '2GB 30 days',
        network: 'MTN',
        phone: '+2348031234567',
        price: '1800.50',
        currency: 'NGN',
        reference: 'ref-d1',
      },
    });
  });

  it('reads a purchase the service already held under our key as sent, not as bought', async () => {
    await expectSubmittedBefore(toSummary, 'data', 'purchaseData');
  });

  it('asks the Spectranet account number, lists and buys with it', async () => {
    // On Telegram, which knows no number of theirs: the number is asked.
    const t = await opened();
    await t.press('Spectranet').send(' 0123456789 ');
    expect(t.calls.at(-1)?.input).toEqual({ network: 'spectranet', accountNumber: '0123456789' });
    await t.choose('101');
    expect(at(t)).toBe('awaitingPhone');
    await t.send('0772 000 001').choose('confirm');
    expect(t.calls.at(-1)?.input).toMatchObject({
      network: 'spectranet',
      accountNumber: '0123456789',
      phonenumber: '+256772000001',
    });
  });

  it('keeps the idempotency key in the stored flow while the purchase is out: the key its call carries', async () => {
    await expectKeyKeptWhileOut(toSummary, 'purchaseData', 'run-1:data', purchased);
  });

  it('a purchase out when the process restarts is made by the new one under the same key: one purchase', async () => {
    const t = await toSummary({ purchaseData: held });
    await t.choose('confirm');
    await expectKeyKeptAcrossRestart(t, 'purchaseData', { output: purchased });
  });

  it('confirms with the PIN on USSD, never keeping it, and re-asks with the attempts left', async () => {
    let tries = 0;
    const t = await atSummary('ussd', {
      verifyPin: () =>
        ++tries === 1 ? { error: { code: 'pin_wrong', message: '2 attempts left' } } : { output: undefined },
    });
    expect(viewOf(t)).toMatchObject({ input: 'pin', text: { key: 'data.summaryPin' } });
    await t.send('9999');
    expect(t.calls.at(-1)).toEqual({ name: 'verifyPin', input: { channel: 'ussd', userId: NIGERIAN, pin: '9999' } });
    expect(at(t)).toBe('confirming');
    expect(viewOf(t)?.error).toEqual({ key: 'failure.pin_wrongLeft', params: { left: 2 } });
    expect(JSON.stringify(t.flow()!.snapshot.context)).not.toContain('9999');
    expect(JSON.stringify(t.stored())).not.toContain('9999');
    await t.send('1234');
    expect(t.calls.map((c) => c.name)).toEqual([
      'listDataBundles',
      'verifyPin',
      'verifyPin',
      'reserveSpend',
      'purchaseData',
    ]);
  });

  it('stops when the PIN is locked, with nothing bought', async () => {
    const t = await atSummary('ussd', { verifyPin: { error: { code: 'pin_locked' } } });
    await t.send('1234');
    expect(at(t)).toBe('failed');
    expect(viewOf(t)).toEqual({
      text: { key: 'data.notBought' },
      error: { key: 'failure.pin_locked' },
      final: true,
    });
    expect(t.calls.map((c) => c.name)).not.toContain('purchaseData');
  });
});

describe('data machine: answers refused and re-asked with the reason', () => {
  it('an unreadable phone number, then a good one', async () => {
    const t = await atSummary('whatsapp');
    await t.back().choose('other').send('12');
    expect(at(t)).toBe('awaitingPhone');
    expect(viewOf(t)).toEqual({
      text: { key: 'data.askPhone' },
      error: { key: 'input.phoneInvalid', params: phoneExample('NG') },
      input: 'phone',
    });
    await t.send('+256 772 000 001');
    expect(at(t)).toBe('confirming');
    expect(t.flow()!.snapshot.context.phone).toBe('+256772000001');
    expect(viewOf(t)?.error).toBeUndefined();
  });

  it('an empty account number, a choice not offered, an empty bundle list', async () => {
    const t = await opened('ussd', { listDataBundles: { output: [] } });
    // A number the list does not have and a word, typed; a choice no screen offered (a forged press).
    for (const typed of ['9', 'mtn']) {
      await t.send(typed);
      expect([at(t), viewOf(t)?.error]).toEqual(['choosingNetwork', { key: 'common.pickOne' }]);
    }
    for (const id of ['vodafone', 'toString', '']) {
      const [refused] = transition(dataMachine, t.flow()!.snapshot, chosen(id));
      expect([refused.value, currentView(refused)?.error]).toEqual(['choosingNetwork', { key: 'common.pickOne' }]);
    }
    await t.press('Spectranet').send('   ');
    expect(viewOf(t)?.error).toEqual({ key: 'input.textEmpty' });
    await t.send('42');
    expect(at(t)).toBe('awaitingAccount');
    expect(viewOf(t)?.error).toEqual({ key: 'data.noBundles', params: { network: 'Spectranet' } });
  });
});

describe('data machine: back from every step', () => {
  /** How a person reaches a waiting state (the bundle list answered at once) and where Back leads from there. */
  const cases: Array<{ from: string; to: string; steps: (t: FlowTest) => Steps | Promise<void>; who?: Who }> = [
    { from: 'choosingNetwork', to: 'left', steps: async () => {} },
    { from: 'awaitingAccount', to: 'choosingNetwork', steps: (t) => t.press('Spectranet') },
    { from: 'choosingBundle', to: 'choosingNetwork', steps: (t) => t.press('MTN') },
    { from: 'choosingBundle', to: 'awaitingAccount', steps: (t) => t.press('Spectranet').send('42') },
    { from: 'choosingPhone', to: 'choosingBundle', steps: (t) => t.press('MTN').choose('101') },
    { from: 'awaitingPhone', to: 'choosingPhone', steps: (t) => t.press('MTN').choose('101').choose('other') },
    { from: 'awaitingPhone', to: 'choosingBundle', steps: (t) => t.press('MTN').choose('101'), who: 'telegram' },
    { from: 'confirming', to: 'choosingPhone', steps: (t) => t.press('MTN').choose('101').choose('own') },
    {
      from: 'confirming',
      to: 'awaitingPhone',
      steps: (t) => t.press('MTN').choose('101').send('0772000001'),
      who: 'telegram',
    },
  ];

  it('covers every waiting state', () => {
    const waiting = getStateNodes(dataMachine.root)
      .filter((n) => n.meta?.view && n.type !== 'final')
      .map((n) => n.key);
    expect(new Set(cases.map((c) => c.from))).toEqual(new Set(waiting));
  });

  it.each(cases)('$from -> $to', async ({ from, to, steps, who }) => {
    // A person with a number of their own (WhatsApp), unless the case is one's without (Telegram).
    const t = await opened(who ?? 'whatsapp');
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

describe('data machine: every service failure in words', () => {
  it('a purchase whose answer was lost names our short ref on its screen', async () => {
    await expectPurchaseFailing(toSummary, 'data', 'purchaseData', { code: 'connection', shortRef: 'MC-7KQ4X' });
  });

  it.each(SERVICE_FAILURE_CODES)('purchase failing with %s', async (code) => {
    const failure: ServiceFailure = code === 'validation' ? { code, fields: { phonenumber: ['bad'] } } : { code };
    await expectPurchaseFailing(toSummary, 'data', 'purchaseData', failure);
  });

  it.each(SERVICE_FAILURE_CODES)(
    'bundle listing failing with %s: back to the network with the reason',
    async (code) => {
      const t = await opened('telegram', { listDataBundles: { error: { code } } });
      await t.press('Glo');
      expect(at(t)).toBe('choosingNetwork');
      expect(viewOf(t)?.error?.key).toBe(`failure.${code}`);
    },
  );

  it('a Spectranet account the service does not know', async () => {
    const t = await opened('telegram', { listDataBundles: { error: { code: 'not_found' } } });
    await t.press('Spectranet').send('999');
    expect(at(t)).toBe('awaitingAccount');
    expect(viewOf(t)?.error).toEqual({ key: 'data.accountNotFound' });
  });

  it.each(['limit_exceeded', 'not_allowed', 'connection'] as const)(
    'reserving failing with %s: nothing bought',
    async (code) => {
      await expectReservingFailing(toSummary, code, 'purchaseData');
    },
  );
});
