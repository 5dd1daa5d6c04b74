import { describe, expect, it } from 'vitest';
import { getSimplePaths } from 'xstate/graph';
import { checkFlow, checkMachine } from '../../flows/check.machine.js';
import type { CollectionSummary } from '../../flows/services.js';
import type { FlowEvent } from '../../flows/types.js';
import { currentView } from '../../src/conversation/flow/render.js';
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

const collection = (id: string, changes: Partial<CollectionSummary> = {}): CollectionSummary => ({
  id,
  amount: '1500',
  currency: 'UGX',
  phonenumber: '+256772123456',
  status: 'successful',
  reference: `ref-${id}`,
  remoteTransactionId: `TX-${id}`,
  paymentDate: '2026-01-01T10:00:00Z',
  senderName: 'JANE DOE',
  ...changes,
});

/** Finding a payment, up to the claim, and the state after each step. */
const FIND: Array<[FlowEvent, string]> = [
  [chosen('find'), 'awaitingAmount'],
  [answered('1,500'), 'awaitingTransactionId'],
  [answered(' TX-c1 '), 'awaitingPhone'],
  [answered('0772 123 456'), 'done'],
];

async function drive(script: Array<[FlowEvent, string]>, options: LiveOptions = {}) {
  const flow = live(checkMachine, options);
  for (const [event] of script) await flow.send(event);
  return flow;
}

describe('check machine: the model', () => {
  it('visits every state, with only catalogued words that fit a USSD screen', () => {
    const walk = walkFlow(checkFlow, { answers: { awaitingTransactionId: ['', 'TX123'] } });
    expect(walk.missing).toEqual([]);
    expect(missingMessages(checkFlow, walk.keys)).toEqual([]);
    expectCatalogueComplete(checkFlow);
    expectScreensFit(checkFlow, walk);
  });

  it('every simple path to a claim gives the service all three of amount, transaction id and full number', () => {
    const paths = getSimplePaths(checkFlow.machine, {
      input: sampleInput(),
      events: validEvents,
      toState: (s) => s.matches('claiming'),
    });
    expect(paths.length).toBeGreaterThan(0);
    for (const path of paths) {
      const child = Object.values(path.state.children as Record<string, { options?: { input?: unknown } }>)[0];
      expect(child?.options?.input).toEqual({
        amount: '1500',
        remoteTransactionId: 'TX123',
        phonenumber: '+256772123456',
        channel: 'telegram',
        userId: 'user-1',
      });
    }
  });

  it('the live machine with fake services follows every shortest path of the model', async () => {
    await expectReplaysFollow(
      checkMachine,
      walkFlow(checkFlow, { answers: { awaitingTransactionId: ['', 'TX123'] }, print: false }).paths,
    );
  });
});

describe('check machine: latest collections', () => {
  const listed: Outcome = {
    output: [
      collection('c1'),
      collection('c2', { amount: '250.5', currency: 'KES', paymentDate: '2026-01-02T08:30:00Z' }),
    ],
  };

  it('lists the latest five as choices and shows the details of the one picked', async () => {
    const flow = await drive([[chosen('latest'), 'choosingCollection']], { answers: { latestCollections: listed } });
    let s = flow.snapshot();
    expect(flow.calls).toEqual([
      { service: 'latestCollections', input: { limit: 5, channel: 'telegram', userId: 'user-1' } },
    ]);
    expect(currentView(s)?.choices).toEqual([
      {
        id: 'c1',
        text: { key: 'check.collectionLine', params: { amount: '1500', currency: 'UGX', date: '2026-01-01 10:00' } },
      },
      {
        id: 'c2',
        text: { key: 'check.collectionLine', params: { amount: '250.5', currency: 'KES', date: '2026-01-02 08:30' } },
      },
    ]);
    s = await flow.send(chosen('c9'));
    expect([s.value, currentView(s)?.error]).toEqual(['choosingCollection', { key: 'common.pickOne' }]);
    s = await flow.send(chosen('c2'));
    expect(currentView(s)).toEqual({
      text: {
        key: 'check.details',
        params: {
          status: 'successful',
          sender: 'JANE DOE +256772123456',
          amount: '250.5',
          currency: 'KES',
          date: '2026-01-02 08:30',
          reference: 'ref-c2',
          transactionId: 'TX-c2',
        },
      },
      final: true,
    });
  });

  it('BACK from the list returns to the first screen as it was', async () => {
    const flow = await drive([], { answers: { latestCollections: listed } });
    const first = flow.snapshot().context;
    await flow.send(chosen('latest'));
    const s = await flow.send(BACK);
    expect([s.value, s.context]).toEqual(['choosingMode', first]);
  });

  it('says when there are none yet, and gives the reason when the list fails', async () => {
    const none = await drive([[chosen('latest'), 'done']], { answers: { latestCollections: { output: [] } } });
    expect(currentView(none.snapshot())).toEqual({ text: { key: 'check.noneYet' }, final: true });
    const limited = await drive([[chosen('latest'), 'done']], {
      answers: { latestCollections: failure('rate_limited') },
    });
    expect(currentView(limited.snapshot())).toEqual({ text: { key: 'failure.rate_limited' }, final: true });
  });
});

describe('check machine: finding a payment received', () => {
  it('claims with the amount, the transaction id and the full number, and shows status and sender', async () => {
    const flow = await drive(FIND, {
      answers: { claimCollection: { output: [collection('c1', { senderName: undefined, status: 'pending' })] } },
    });
    expect(flow.calls).toEqual([
      {
        service: 'claimCollection',
        input: {
          amount: '1500',
          remoteTransactionId: 'TX-c1',
          phonenumber: '+256772123456',
          channel: 'telegram',
          userId: 'user-1',
        },
      },
    ]);
    expect(currentView(flow.snapshot())?.text).toMatchObject({
      key: 'check.details',
      params: { status: 'pending', sender: '+256772123456', amount: '1500', currency: 'UGX' },
    });
    expect(flow.snapshot().output).toEqual({});
  });

  it('re-asks invalid answers with their reason; a partial number is refused before any claim', async () => {
    const flow = await drive([[chosen('find'), 'awaitingAmount']]);
    let s = await flow.send(answered('1500.123'));
    expect(currentView(s)?.error).toEqual({ key: 'input.amountDecimals' });
    await flow.send(answered('1500'));
    s = await flow.send(answered('  '));
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingTransactionId', { key: 'input.textEmpty' }]);
    await flow.send(answered('TX1'));
    s = await flow.send(answered('123456'));
    expect([s.value, currentView(s)?.error]).toEqual([
      'awaitingPhone',
      { key: 'input.phoneInvalid', params: phoneExample('UG') },
    ]);
    expect(flow.calls).toEqual([]);
  });

  const cases: Array<[string, Outcome, unknown]> = [
    ['an empty list', { output: [] }, { key: 'check.noMatch' }],
    ['not_found', failure('not_found'), { key: 'check.noMatch' }],
    [
      'validation (several matches, missing fields)',
      failure('validation', { fields: { claim: ['More than one match'] } }),
      { key: 'check.refused', params: { fields: 'claim' } },
    ],
    ['connection', failure('connection'), { key: 'failure.connection' }],
    ['rate_limited', failure('rate_limited'), { key: 'failure.rate_limited' }],
  ];
  for (const [name, outcome, text] of cases) {
    it(`a claim answered with ${name} ends with ${JSON.stringify(text)}`, async () => {
      const flow = await drive(FIND, { answers: { claimCollection: outcome } });
      expect(currentView(flow.snapshot())).toEqual({ text, final: true });
    });
  }

  it('BACK from every step returns to the previous one as it was first reached', async () => {
    await expectBackToEachStep(drive, FIND.slice(0, -1), () =>
      drive([], { answers: { claimCollection: { output: [] } } }),
    );
  });

  it('BACK from the first step leaves for the menu', async () => {
    const s = await (await drive([])).send(BACK);
    expect([s.status, s.output]).toEqual(['done', { next: 'menu' }]);
  });
});
