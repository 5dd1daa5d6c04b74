import { afterEach, describe, expect, it } from 'vitest';
import { getSimplePaths } from 'xstate/graph';
import { checkFlow } from '../../flows/check.machine.js';
import type { CollectionSummary } from '../../flows/calls.js';
import { phoneExample } from '../../flows/input.js';
import type { Channel } from '../../src/conversation/types.js';
import {
  failure,
  flowTest,
  type Answers,
  type FlowTest,
  type Outcome,
  type Steps,
} from '../../src/testing/flow-test.js';
import { expectWalkedOnAPhone, missingMessages, ON_A_PHONE, sampleInput, validEvents, walkFlow } from './coverage.js';
import { expectCatalogueComplete, expectScreensFit } from './screens.js';

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

/** Finding a payment as a person does it, up to the claim, and the state after each step. */
const FIND: Array<[(t: FlowTest) => Steps, string]> = [
  [(t) => t.press('Find a payment I received'), 'awaitingAmount'],
  [(t) => t.send('1,500'), 'awaitingTransactionId'],
  [(t) => t.send(' TX-c1 '), 'awaitingPhone'],
  [(t) => t.send('0772 123 456'), 'done'],
];

const tests: FlowTest[] = [];
afterEach(async () => {
  await Promise.all(tests.splice(0).map((t) => t.close()));
});

/** The check flow opened as a person opens it (Telegram's /check, a USSD dial), the service answering `answers`. */
async function opened(answers: Answers = {}, channel: Channel = 'telegram'): Promise<FlowTest> {
  const t = flowTest('check', { channel, answers });
  tests.push(t);
  await t.dial();
  return t;
}

/** Opened, then the first `steps` of {@link FIND}, each reaching its state. */
async function find(steps: number, answers: Answers = {}, channel: Channel = 'telegram'): Promise<FlowTest> {
  const t = await opened(answers, channel);
  for (const [act, state] of FIND.slice(0, steps)) {
    await act(t);
    expect(t.flow()?.snapshot.value).toBe(state);
  }
  return t;
}

/** The flow's state and view now. */
const at = (t: FlowTest) => t.flow()!.snapshot.value;
const viewOf = (t: FlowTest) => t.flow()!.view;

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

  it('a person on a phone, the service answering as the model settles it, follows every shortest path', async () => {
    const walk = walkFlow(checkFlow, {
      input: ON_A_PHONE,
      answers: { awaitingTransactionId: ['', 'TX123'] },
      print: false,
    });
    await expectWalkedOnAPhone('check', walk.paths);
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
    const t = await opened({ latestCollections: listed });
    await t.press('Latest payments received').sees('1,500 UGX 2026-01-01 10:00').sees('250.50 KES 2026-01-02 08:30');
    expect(at(t)).toBe('choosingCollection');
    expect(t.calls).toEqual([
      { name: 'latestCollections', input: { limit: 5, channel: 'telegram', userId: 'user-1' } },
    ]);
    expect(viewOf(t)?.choices).toEqual([
      {
        id: 'c1',
        text: { key: 'check.collectionLine', params: { amount: '1500', currency: 'UGX', date: '2026-01-01 10:00' } },
      },
      {
        id: 'c2',
        text: { key: 'check.collectionLine', params: { amount: '250.5', currency: 'KES', date: '2026-01-02 08:30' } },
      },
    ]);
    // A number the list does not have, typed on a phone.
    const phone = await opened({ latestCollections: listed }, 'ussd');
    await phone.press('Latest payments received').send('9');
    expect([at(phone), viewOf(phone)?.error]).toEqual(['choosingCollection', { key: 'common.pickOne' }]);
    await t.press('250.50 KES').sees('JANE DOE').sees('TX-c2').doesNotSee('TX-c1');
    expect(viewOf(t)).toEqual({
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

  it('Back from the list returns to the first screen as it was', async () => {
    const t = await opened({ latestCollections: listed });
    const first = t.flow()!.snapshot.context;
    await t.press('Latest payments received').press('Back').sees('Check a payment received');
    expect([at(t), t.flow()!.snapshot.context]).toEqual(['choosingMode', first]);
  });

  it('says when there are none yet, and gives the reason when the list fails', async () => {
    const none = await opened({ latestCollections: { output: [] } });
    await none.press('Latest payments received').sees('No payments received yet.');
    expect(at(none)).toBe('done');
    expect(viewOf(none)).toEqual({ text: { key: 'check.noneYet' }, final: true });
    const limited = await opened({ latestCollections: failure('rate_limited') });
    await limited.press('Latest payments received');
    expect(at(limited)).toBe('done');
    expect(viewOf(limited)).toEqual({ text: { key: 'failure.rate_limited' }, final: true });
  });
});

describe('check machine: finding a payment received', () => {
  it('claims with the amount, the transaction id and the full number, and shows status and sender', async () => {
    const t = await find(FIND.length, {
      claimCollection: { output: [collection('c1', { senderName: undefined, status: 'pending' })] },
    });
    await t.sees('Waiting: 1,500 UGX from +256772123456');
    expect(t.calls).toEqual([
      {
        name: 'claimCollection',
        input: {
          amount: '1500',
          remoteTransactionId: 'TX-c1',
          phonenumber: '+256772123456',
          channel: 'telegram',
          userId: 'user-1',
        },
      },
    ]);
    expect(viewOf(t)?.text).toMatchObject({
      key: 'check.details',
      params: { status: 'pending', sender: '+256772123456', amount: '1500', currency: 'UGX' },
    });
    expect(t.flow()!.snapshot.output).toEqual({});
  });

  it('re-asks invalid answers with their reason; a partial number is refused before any claim', async () => {
    const t = await find(1);
    await t.send('1500.123');
    expect(viewOf(t)?.error).toEqual({ key: 'input.amountDecimals' });
    await t.send('1500').send('  ');
    expect([at(t), viewOf(t)?.error]).toEqual(['awaitingTransactionId', { key: 'input.textEmpty' }]);
    await t.send('TX1').send('123456');
    expect([at(t), viewOf(t)?.error]).toEqual([
      'awaitingPhone',
      { key: 'input.phoneInvalid', params: phoneExample('UG') },
    ]);
    expect(t.calls).toEqual([]);
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
      const t = await find(FIND.length, { claimCollection: outcome });
      expect(viewOf(t)).toEqual({ text, final: true });
    });
  }

  it('Back from every step returns to the previous one as it was first reached, after an empty answer', async () => {
    // On a phone, where an answer can be empty and 0 is Back.
    const reached = [];
    for (let steps = 0; steps < FIND.length; steps++) {
      const t = await find(steps, { claimCollection: { output: [] } }, 'ussd');
      reached.push({ value: at(t), context: t.flow()!.snapshot.context });
    }
    for (let steps = 1; steps < FIND.length; steps++) {
      const t = await find(steps, {}, 'ussd');
      await t.send('');
      expect(t.prompt?.refused).toBe(true);
      await t.send('0');
      expect({ value: at(t), context: t.flow()!.snapshot.context }).toEqual(reached[steps - 1]);
    }
  });

  it('Back from the first step leaves for the menu', async () => {
    const t = await opened();
    await t.press('Back').sees('What would you like to do?');
    expect(t.flow()?.id).toBe('menu');
    expect(t.calls).toEqual([]);
  });
});
