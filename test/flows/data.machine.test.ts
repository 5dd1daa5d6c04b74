import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { getSimplePaths, getStateNodes } from 'xstate/graph';
import { dataFlow, dataMachine } from '../../flows/data.machine.js';
import { ALREADY_SUBMITTED, type DataBundle } from '../../flows/calls.js';
import type { FlowEvent, FlowInput, ServiceFailure } from '../../flows/types.js';
import { currentView } from '../../src/conversation/flow/render.js';
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
import { phoneExample } from '../../flows/input.js';

const bundles: DataBundle[] = [
  { datacode: '101', name: 'MTN 1GB', allowance: '1GB', price: '1000', validity: '30 days' },
  { datacode: '102', name: 'MTN 2GB', allowance: '2GB', price: '1800.50', validity: '30 days' },
];
const purchased = { reference: 'ref-d1', status: 'successful' };

/** A live data flow at the summary: MTN, the second bundle, the user's own number. */
async function atSummary(input: Partial<FlowInput> = {}): Promise<Live> {
  const flow = live(dataMachine, { input });
  await flow.send(chosen('mtn'));
  await flow.settle('listDataBundles', { output: bundles });
  await flow.send(chosen('102'));
  if (flow.snapshot().matches('choosingPhone')) await flow.send(chosen('own'));
  else await flow.send(answered('0772000001'));
  expect(flow.snapshot().value).toBe('confirming');
  return flow;
}

/** A live data flow whose purchase call is waiting. */
async function atPurchase(input: Partial<FlowInput> = {}): Promise<Live> {
  const flow = await atSummary(input);
  await flow.send(chosen('confirm'));
  await flow.settle('reserveSpend', { output: undefined });
  expect(flow.snapshot().value).toBe('purchasing');
  return flow;
}

describe('data machine: the model', () => {
  const input = { requirePin: true };
  const walk = walkFlow(dataFlow, {
    input,
    answers: { awaitingAccount: ['', '0123456789'] },
    outcomes: {
      listDataBundles: [{ output: bundles }, { output: [] }, { error: { code: 'not_found' } }],
      purchaseData: [
        { output: purchased },
        { output: ALREADY_SUBMITTED },
        { error: { code: 'connection' } },
        { error: { code: 'validation', fields: { phonenumber: ['bad'] } } },
      ],
    },
  });

  it('visits every state, with words for every key in both languages', () => {
    expect(walk.line).toBe(`data: states visited ${walk.states.length}/${walk.states.length}`);
    expect(walk.missing).toEqual([]);
    expect(missingMessages(dataFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(dataFlow);
  });

  it.each(leafGroups(walk.paths))(
    'runs shortest paths live with fake services to the same states and context ($group)',
    async ({ paths }) => {
      await expectReplaysFollow(dataMachine, paths, input);
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
    const flow = live(dataMachine);
    await flow.send(chosen('airtel'));
    expect(flow.calls.at(-1)).toEqual({ service: 'listDataBundles', input: { network: 'airtel' } });
    const snapshot = await flow.settle('listDataBundles', { output: bundles });
    expect(currentView(snapshot)?.choices).toEqual([
      { id: '101', text: { key: 'data.bundleLine', params: { name: '1GB 30 days', price: '1000', currency: 'NGN' } } },
      {
        id: '102',
        text: { key: 'data.bundleLine', params: { name: '2GB 30 days', price: '1800.50', currency: 'NGN' } },
      },
    ]);
  });

  it('buys with the key made at start, the bundle price reserved in naira under that key, and metadata naming the chat', async () => {
    const flow = await atPurchase();
    expect(flow.calls.find((c) => c.service === 'reserveSpend')?.input).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      flow: 'data',
      amount: '1800.50',
      currency: 'NGN',
      duplicateCheckKey: 'run-1:data',
    });
    expect(flow.calls.at(-1)?.input).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      duplicateCheckKey: 'run-1:data',
      network: 'mtn',
      datacode: '102',
      phonenumber: '+256772123456',
      amount: '1800.50',
      metadata: { chat: 'telegram:chat-1', ref: 'run-1:data' },
    });
    const done = await flow.settle('purchaseData', { output: purchased });
    expect(done.status).toBe('done');
    expect(done.output).toEqual({});
    expect(currentView(done)?.text).toEqual({
      key: 'data.done',
      params: {
        bundle: '2GB 30 days',
        network: 'MTN',
        phone: '+256772123456',
        price: '1800.50',
        currency: 'NGN',
        reference: 'ref-d1',
      },
    });
  });

  it('reads a purchase the service already held under our key as sent, not as bought', async () => {
    await expectSubmittedBefore(await atPurchase(), 'data', 'purchaseData');
  });

  it('asks the Spectranet account number, lists and buys with it', async () => {
    const flow = live(dataMachine, { input: { userPhone: undefined } });
    await flow.send(chosen('spectranet'));
    await flow.send(answered(' 0123456789 '));
    expect(flow.calls.at(-1)?.input).toEqual({ network: 'spectranet', accountNumber: '0123456789' });
    await flow.settle('listDataBundles', { output: bundles });
    await flow.send(chosen('101'));
    expect(flow.snapshot().value).toBe('awaitingPhone');
    await flow.send(answered('0772 000 001'));
    await flow.send(chosen('confirm'));
    await flow.settle('reserveSpend', { output: undefined });
    expect(flow.calls.at(-1)?.input).toMatchObject({
      network: 'spectranet',
      accountNumber: '0123456789',
      phonenumber: '+256772000001',
    });
  });

  it('keeps the idempotency key across a JSON round trip of the busy snapshot: the purchase sees it twice', async () => {
    await expectKeyKeptAcrossRestore(await atPurchase(), dataMachine, 'purchaseData', 'run-1:data', purchased);
  });

  it('confirms with the PIN on USSD, never keeping it, and re-asks with the attempts left', async () => {
    const flow = await atSummary({ requirePin: true, channel: 'ussd' });
    expect(currentView(flow.snapshot())).toMatchObject({ input: 'pin', text: { key: 'data.summaryPin' } });
    await flow.send(answered('9999'));
    expect(flow.calls.at(-1)?.input).toEqual({ channel: 'ussd', userId: 'user-1', pin: '9999' });
    const wrong = await flow.settle('verifyPin', { error: { code: 'pin_wrong', message: '2 attempts left' } });
    expect(wrong.value).toBe('confirming');
    expect(currentView(wrong)?.error).toEqual({ key: 'failure.pin_wrongLeft', params: { left: 2 } });
    expect(JSON.stringify(wrong.context)).not.toContain('9999');
    await flow.send(answered('1234'));
    await flow.settle('verifyPin', { output: undefined });
    expect(flow.snapshot().value).toBe('reserving');
  });

  it('stops when the PIN is locked, with nothing bought', async () => {
    const flow = await atSummary({ requirePin: true });
    await flow.send(answered('1234'));
    const locked = await flow.settle('verifyPin', { error: { code: 'pin_locked' } });
    expect(locked.value).toBe('failed');
    expect(currentView(locked)).toEqual({
      text: { key: 'data.notBought' },
      error: { key: 'failure.pin_locked' },
      final: true,
    });
    expect(flow.calls.map((c) => c.service)).not.toContain('purchaseData');
  });
});

describe('data machine: answers refused and re-asked with the reason', () => {
  it('an unreadable phone number, then a good one', async () => {
    const flow = await atSummary();
    await flow.send(BACK);
    await flow.send(chosen('other'));
    await flow.send(answered('12'));
    expect(flow.snapshot().value).toBe('awaitingPhone');
    expect(currentView(flow.snapshot())).toEqual({
      text: { key: 'data.askPhone' },
      error: { key: 'input.phoneInvalid', params: phoneExample('UG') },
      input: 'phone',
    });
    await flow.send(answered('+256 772 000 001'));
    expect(flow.snapshot().value).toBe('confirming');
    expect(flow.snapshot().context.phone).toBe('+256772000001');
    expect(currentView(flow.snapshot())?.error).toBeUndefined();
  });

  it('an empty account number, a choice not offered, an empty bundle list', async () => {
    const flow = live(dataMachine);
    for (const event of [chosen('vodafone'), chosen('toString'), chosen(''), answered('mtn')]) {
      const refused = await flow.send(event);
      expect(refused.value).toBe('choosingNetwork');
      expect(currentView(refused)?.error).toEqual({ key: 'common.pickOne' });
    }
    await flow.send(chosen('spectranet'));
    await flow.send(answered('   '));
    expect(currentView(flow.snapshot())?.error).toEqual({ key: 'input.textEmpty' });
    await flow.send(answered('42'));
    const empty = await flow.settle('listDataBundles', { output: [] });
    expect(empty.value).toBe('awaitingAccount');
    expect(currentView(empty)?.error).toEqual({ key: 'data.noBundles', params: { network: 'Spectranet' } });
  });
});

describe('data machine: back from every step', () => {
  /** How to reach a waiting state (LIST: the bundle list arrives) and where BACK leads from there. */
  const LIST = 'list';
  const cases: Array<{ from: string; to: string; steps: Array<FlowEvent | typeof LIST>; input?: Partial<FlowInput> }> =
    [
      { from: 'choosingNetwork', to: 'left', steps: [] },
      { from: 'awaitingAccount', to: 'choosingNetwork', steps: [chosen('spectranet')] },
      { from: 'choosingBundle', to: 'choosingNetwork', steps: [chosen('mtn'), LIST] },
      { from: 'choosingBundle', to: 'awaitingAccount', steps: [chosen('spectranet'), answered('42'), LIST] },
      { from: 'choosingPhone', to: 'choosingBundle', steps: [chosen('mtn'), LIST, chosen('101')] },
      { from: 'awaitingPhone', to: 'choosingPhone', steps: [chosen('mtn'), LIST, chosen('101'), chosen('other')] },
      {
        from: 'awaitingPhone',
        to: 'choosingBundle',
        steps: [chosen('mtn'), LIST, chosen('101')],
        input: { userPhone: undefined },
      },
      { from: 'confirming', to: 'choosingPhone', steps: [chosen('mtn'), LIST, chosen('101'), chosen('own')] },
      {
        from: 'confirming',
        to: 'awaitingPhone',
        steps: [chosen('mtn'), LIST, chosen('101'), answered('0772000001')],
        input: { userPhone: undefined },
      },
    ];

  it('covers every waiting state', () => {
    const waiting = getStateNodes(dataMachine.root)
      .filter((n) => n.meta?.view && n.type !== 'final')
      .map((n) => n.key);
    expect(new Set(cases.map((c) => c.from))).toEqual(new Set(waiting));
  });

  it.each(cases)('$from -> $to', async ({ from, to, steps, input }) => {
    const flow = live(dataMachine, { input });
    for (const step of steps) {
      if (step === LIST) await flow.settle('listDataBundles', { output: bundles });
      else await flow.send(step);
    }
    expect(flow.snapshot().value).toBe(from);
    await flow.send(BACK);
    expect(flow.snapshot().value).toBe(to);
    expect(flow.snapshot().context.error).toBeUndefined();
    if (to === 'left') expect(flow.snapshot().output).toEqual({ next: 'menu' });
  });
});

describe('data machine: every service failure in words', () => {
  it('a purchase whose answer was lost names our short ref on its screen', async () => {
    await expectPurchaseFailing(await atPurchase(), 'data', 'purchaseData', {
      code: 'connection',
      shortRef: 'MC-7KQ4X',
    });
  });

  it.each(SERVICE_FAILURE_CODES)('purchase failing with %s', async (code) => {
    const failure: ServiceFailure = code === 'validation' ? { code, fields: { phonenumber: ['bad'] } } : { code };
    await expectPurchaseFailing(await atPurchase(), 'data', 'purchaseData', failure);
  });

  it.each(SERVICE_FAILURE_CODES)(
    'bundle listing failing with %s: back to the network with the reason',
    async (code) => {
      const flow = live(dataMachine);
      await flow.send(chosen('glo'));
      const back = await flow.settle('listDataBundles', { error: { code } });
      expect(back.value).toBe('choosingNetwork');
      expect(currentView(back)?.error?.key).toBe(`failure.${code}`);
    },
  );

  it('a Spectranet account the service does not know', async () => {
    const flow = live(dataMachine);
    await flow.send(chosen('spectranet'));
    await flow.send(answered('999'));
    const back = await flow.settle('listDataBundles', { error: { code: 'not_found' } });
    expect(back.value).toBe('awaitingAccount');
    expect(currentView(back)?.error).toEqual({ key: 'data.accountNotFound' });
  });

  it.each(['limit_exceeded', 'not_allowed', 'connection'] as const)(
    'reserving failing with %s: nothing bought',
    async (code) => {
      await expectReservingFailing(await atSummary(), code, 'purchaseData');
    },
  );
});
