import { describe, expect, it } from 'vitest';
import { getSimplePaths } from 'xstate/graph';
import { payFlow, payMachine } from '../../flows/pay.machine.js';
import { ALREADY_SUBMITTED, type ContactCheck } from '../../flows/calls.js';
import { LANGS, type FlowEvent, type ServiceFailure } from '../../flows/types.js';
import { currentView, render, renderView } from '../../src/conversation/flow/render.js';
import { missingMessages, sampleInput, validEvents, walkFlow } from './coverage.js';
import {
  answered,
  BACK,
  chosen,
  expectReplaysFollow,
  failure,
  live,
  type LiveOptions,
  type Outcome,
} from './driver.js';
import { expectCatalogueComplete, expectScreensFit, ussdSize } from './screens.js';
import { phoneExample } from '../../flows/input.js';

const answers = { awaitingEmail: ['x', 'a@b.co'], awaitingFirstName: ['', 'Jane'], awaitingLastName: ['', 'Doe'] };

const unknownNumber: Outcome = { output: { known: false, registered: false } satisfies ContactCheck };
const knownNumber: Outcome = {
  output: { known: true, registered: true, firstName: 'Mary', lastName: 'Akello' } satisfies ContactCheck,
};
const verified = (nameOnNetwork: string, registered = true): Outcome => ({
  output: { known: true, registered, nameOnNetwork, networkName: 'MTN' } satisfies ContactCheck,
});
const created: Outcome = { output: { id: 'pay-1', state: 'new' } };

/** Every service answering with success: a new number whose network name matches. */
const happy: LiveOptions['answers'] = {
  listBanks: { output: [{ id: 'bank-1', name: 'Stanbic' }] },
  lookupContact: unknownNumber,
  verifyContact: verified('JANE DOE'),
  verifyPin: { output: undefined },
  checkSpend: { output: undefined },
  reserveSpend: { output: undefined },
  createPayment: created,
  recentPayment: { output: null },
  recentPayees: { output: [] },
};

/** Mobile money to a new number, up to the summary, and the waiting state after each step. */
const MONEY: Array<[FlowEvent, string]> = [
  [chosen('money'), 'awaitingPhone'],
  [answered('0772 123-456'), 'awaitingFirstName'],
  [answered('Jane'), 'awaitingLastName'],
  [answered('Doe'), 'awaitingAmount'],
  [answered('1,500'), 'choosingCurrency'],
  [chosen('UGX'), 'confirming'],
];

/** The same with a note for the recipient, added at the summary (no screen asks for one otherwise). */
const MONEY_NOTED: Array<[FlowEvent, string]> = [
  ...MONEY,
  [chosen('note'), 'awaitingDescription'],
  [answered('School fees'), 'confirming'],
];

/** A bank transfer to a known number, up to the summary. */
const BANK: Array<[FlowEvent, string]> = [
  [chosen('bank'), 'choosingBank'],
  [chosen('bank-1'), 'awaitingAccountNumber'],
  [answered('0123456789'), 'awaitingAccountName'],
  [answered('Mary Akello'), 'awaitingEmail'],
  [answered('mary@example.com'), 'awaitingPhone'],
  [answered('+256772123456'), 'awaitingAmount'],
  [answered('20000'), 'choosingCurrency'],
  [chosen('UGX'), 'confirming'],
];

async function drive(script: Array<[FlowEvent, string]>, options: LiveOptions = {}) {
  const flow = live(payMachine, { ...options, answers: { ...happy, ...options.answers } });
  for (const [event] of script) await flow.send(event);
  return flow;
}

describe('pay machine: the model', () => {
  it('visits every state, with only catalogued words', () => {
    const walk = walkFlow(payFlow, { input: { requirePin: true }, answers });
    expect(walk.missing).toEqual([]);
    expect(missingMessages(payFlow, walk.keys)).toEqual([]);
  });

  it('without a PIN never asks for one; with one currency never asks for it', () => {
    expect(walkFlow(payFlow, { answers, print: false }).missing).toEqual(['awaitingPin', 'verifyingPin']);
    expect(walkFlow(payFlow, { input: { currencies: ['UGX'] }, answers, print: false }).missing).toEqual([
      'choosingCurrency',
      'awaitingPin',
      'verifyingPin',
    ]);
  });

  it('every screen it can show fits a USSD screen in both languages', () => {
    expectCatalogueComplete(payFlow);
    expectScreensFit(payFlow, walkFlow(payFlow, { input: { requirePin: true }, answers, print: false }));
    // With the email skippable (BANK_TRANSFER_EMAIL set), its screen offers Skip.
    expectScreensFit(
      payFlow,
      walkFlow(payFlow, { input: { requirePin: true, bankEmailOptional: true }, answers, print: false }),
    );
  });

  it('the live machine with fake services follows every shortest path of the model', async () => {
    const walk = walkFlow(payFlow, { input: { requirePin: true }, answers, print: false });
    await expectReplaysFollow(payMachine, walk.paths, { requirePin: true });
  }, 120_000);

  it('no path creates a payment without the summary confirmed and the PIN verified, and each creates it with the run key', () => {
    const paths = getSimplePaths(payFlow.machine, {
      input: sampleInput({ requirePin: true, currencies: ['UGX'] }),
      // Without BACK: every way back and forth multiplies the simple paths past what a test can walk, and
      // BACK never leads forward (the shortest-path replay above walks it).
      // Nor the lookup of a number the network named before: it only shortens the way to the amount (tested
      // above), and every path it adds doubles those behind it.
      events: (s) =>
        validEvents(s).filter(
          (e) =>
            e.type !== 'BACK' &&
            !((e.output as ContactCheck | undefined)?.known === false && (e.output as ContactCheck).nameOnNetwork),
        ),
      toState: (s) => s.matches('submitting'),
    });
    expect(paths.length).toBeGreaterThan(0);
    for (const path of paths) {
      const at = (i: number) => path.steps[i]!;
      const confirmed = path.steps.findIndex(
        (s, i) => i > 0 && at(i - 1).state.matches('confirming') && s.event.type === 'CHOSEN',
      );
      const pinChecked = path.steps.findIndex(
        (s, i) => i > confirmed && at(i - 1).state.matches('verifyingPin') && s.state.matches('reserving'),
      );
      expect(confirmed).toBeGreaterThan(0);
      expect(pinChecked).toBeGreaterThan(confirmed);
      const child = Object.values(
        path.state.children as Record<string, { options?: { input?: Record<string, unknown> } }>,
      )[0];
      expect(child?.options?.input).toMatchObject({
        duplicateCheckKey: 'run-1:pay',
        metadata: { chat: 'telegram:chat-1', ref: 'run-1:pay' },
      });
    }
  }, 120_000);
});

describe('pay machine: answers', () => {
  it('re-asks an invalid answer with its reason, and clears the reason once answered well', async () => {
    const flow = await drive(MONEY.slice(0, 1));
    let s = await flow.send(answered('12'));
    expect(s.value).toBe('awaitingPhone');
    expect(currentView(s)?.error).toEqual({ key: 'input.phoneInvalid', params: phoneExample('UG') });
    s = await flow.send(answered('0414 123456'));
    expect(currentView(s)?.error).toEqual({ key: 'input.phoneNotMobile' });
    s = await flow.send(answered('0772123456'));
    expect(s.value).toBe('awaitingFirstName');
    expect(s.context.phone).toBe('+256772123456');
    expect(currentView(s)?.error).toBeUndefined();
    s = await flow.send(answered('   '));
    expect(currentView(s)?.error).toEqual({ key: 'input.textEmpty' });
    // A menu key pressed on a name screen is no name: asked again, never sent to the name check.
    s = await flow.send(answered('1'));
    expect([s.value, s.context.firstName, currentView(s)?.error]).toEqual([
      'awaitingFirstName',
      undefined,
      { key: 'input.nameInvalid' },
    ]);
    await flow.send(answered('Jane'));
    s = await flow.send(answered('Doe2'));
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingLastName', { key: 'input.nameInvalid' }]);
    await flow.send(answered('Doe'));
    for (const [amount, key] of [
      ['0', 'input.amountNotPositive'],
      ['1e3', 'input.amountInvalid'],
      ['10.555', 'input.amountDecimals'],
    ]) {
      s = await flow.send(answered(amount!));
      expect([s.value, currentView(s)?.error]).toEqual(['awaitingAmount', { key }]);
    }
    s = await flow.send(answered('1,000.50'));
    expect(s.context.amount).toBe('1000.5');
    s = await flow.send(answered('UGX'));
    expect([s.value, currentView(s)?.error]).toEqual(['choosingCurrency', { key: 'common.pickOne' }]);
    s = await flow.send(chosen('XOF'));
    expect([s.value, currentView(s)?.error]).toEqual(['choosingCurrency', { key: 'common.pickOne' }]);
    await flow.send(chosen('KES'));
    await flow.send(chosen('note'));
    s = await flow.send(answered('x'.repeat(141)));
    expect(currentView(s)?.error).toEqual({ key: 'input.textTooLong', params: { max: 140 } });
    s = await flow.send(answered('x'.repeat(140)));
    expect(s.value).toBe('confirming');
    expect(s.context.currency).toBe('KES');
  });

  it("a bank transfer may skip the email when the organization's stands in, and sends none of its own", async () => {
    const flow = await drive(BANK.slice(0, 4), { input: { bankEmailOptional: true } });
    expect(currentView(flow.snapshot())?.choices).toEqual([{ id: 'skipEmail', text: { key: 'pay.skipEmail' } }]);
    let s = await flow.send(chosen('skipEmail'));
    expect([s.value, s.context.email]).toEqual(['awaitingPhone', undefined]);
    for (const [event] of [...BANK.slice(5), [chosen('confirm'), 'done'] as [FlowEvent, string]])
      await flow.send(event);
    expect(flow.snapshot().value).toBe('done');
    const bank = (flow.calls.find((c) => c.service === 'createPayment')?.input as { bank?: object }).bank;
    expect(bank).toEqual({ bank: 'bank-1', name: 'Stanbic', accountNumber: '0123456789', accountName: 'Mary Akello' });
    // An address typed beside the Skip is still checked.
    const typed = await drive(BANK.slice(0, 4), { input: { bankEmailOptional: true } });
    s = await typed.send(answered('mary@example'));
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingEmail', { key: 'pay.emailInvalid' }]);
  });

  it("without the organization's address the email is required: no Skip, and a skip is refused", async () => {
    const flow = await drive(BANK.slice(0, 4));
    expect(currentView(flow.snapshot())?.choices).toBeUndefined();
    const s = await flow.send(chosen('skipEmail'));
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingEmail', { key: 'common.pickOne' }]);
  });

  it('refuses a malformed email for a bank transfer', async () => {
    const flow = await drive(BANK.slice(0, 4));
    const s = await flow.send(answered('mary@example'));
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingEmail', { key: 'pay.emailInvalid' }]);
  });

  it('takes the currency with the amount when there is only one', async () => {
    const flow = await drive(MONEY.slice(0, 4), { input: { currencies: ['KES'] } });
    const s = await flow.send(answered('250'));
    expect(s.value).toBe('confirming');
    expect(s.context.currency).toBe('KES');
    const back = await flow.send(BACK);
    expect(back.value).toBe('awaitingAmount');
    expect(back.context.currency).toBeUndefined();
  });
});

describe('pay machine: recent payees first', () => {
  const recent: Outcome = {
    output: [
      { kind: 'money', phone: '+256772000001', name: 'Sarah Nakato' },
      { kind: 'airtime', phone: '+256772000002' },
    ],
  };

  it('lists them before the kinds; paying one again is: pick, amount, summary, PIN', async () => {
    const flow = live(payMachine, {
      input: { requirePin: true, currencies: ['UGX'] },
      answers: { ...happy, recentPayees: recent, lookupContact: knownNumber },
    });
    // An answer that is no choice: the list is shown again (with the reason), once the payees were read.
    let s = await flow.send(answered('x'));
    const list = currentView(s);
    expect(list?.text).toEqual({ key: 'pay.chooseWho' });
    expect(list?.choices?.map((c) => c.id)).toEqual(['recent0', 'recent1', 'money', 'airtime', 'bank']);
    expect(list?.choices?.[0]?.text).toEqual({ key: 'pay.recent.money', params: { name: 'Sarah Nakato' } });
    expect(list?.choices?.[1]?.text).toEqual({ key: 'pay.recent.airtime', params: { name: '+256772000002' } });
    const waits: string[] = [];
    for (const event of [chosen('recent0'), answered('5000'), chosen('confirm'), answered('1234')]) {
      s = await flow.send(event);
      waits.push(String(s.value));
    }
    expect(waits).toEqual(['awaitingAmount', 'confirming', 'awaitingPin', 'done']);
    expect(flow.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({
      paymentType: 'money',
      phonenumber: '+256772000001',
      description: 'Mobile money payment',
      payeeName: 'Mary Akello',
    });
    expect(flow.calls.map((c) => c.service)).not.toContain('verifyContact');
  });

  it('BACK from the amount of a picked payee returns to the list as it was', async () => {
    const flow = live(payMachine, { answers: { ...happy, recentPayees: recent, lookupContact: knownNumber } });
    await flow.send(answered('')); // refused: the list again, with the reason
    await flow.send(answered(''));
    const first = flow.snapshot();
    let s = await flow.send(chosen('recent1'));
    expect([s.value, s.context.kind, s.context.phone]).toEqual(['awaitingAmount', 'airtime', '+256772000002']);
    s = await flow.send(BACK);
    expect(s.value).toBe('choosingKind');
    expect({ ...s.context, error: first.context.error }).toEqual(first.context);
  });

  it('among several currencies, the one they were last paid in is named on the amount screen: 5 screens', async () => {
    const flow = live(payMachine, {
      input: { requirePin: true, currencies: ['UGX', 'KES', 'BXC'] },
      answers: {
        ...happy,
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', name: 'Sarah Nakato', currency: 'KES' }] },
        lookupContact: knownNumber,
      },
    });
    let s = await flow.send(chosen('recent0'));
    expect(s.value).toBe('awaitingAmount');
    expect(currentView(s)).toMatchObject({
      text: { key: 'pay.askAmountIn', params: { currency: 'KES' } },
      input: 'amount',
      choices: [{ id: 'otherCurrency', text: { key: 'pay.otherCurrency' } }],
    });
    const waits: string[] = [];
    for (const event of [answered('700'), chosen('confirm'), answered('1234')]) {
      s = await flow.send(event);
      waits.push(String(s.value));
    }
    // pick, amount, confirm, PIN: with the menu's "Pay someone", 5 answers after the dial.
    expect(waits).toEqual(['confirming', 'awaitingPin', 'done']);
    expect(flow.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({
      amount: '700',
      currency: 'KES',
    });
  });

  it('"Another currency" on the amount screen: the currencies, then the amount in the one chosen; BACK keeps it', async () => {
    const flow = live(payMachine, {
      input: { currencies: ['UGX', 'KES'] },
      answers: {
        ...happy,
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', name: 'Sarah Nakato', currency: 'KES' }] },
        lookupContact: knownNumber,
      },
    });
    await flow.send(chosen('recent0'));
    let s = await flow.send(chosen('otherCurrency'));
    expect(s.value).toBe('choosingCurrency');
    s = await flow.send(BACK);
    expect([s.value, s.context.currency]).toEqual(['awaitingAmount', 'KES']);
    await flow.send(chosen('otherCurrency'));
    s = await flow.send(chosen('UGX'));
    expect(currentView(s)?.text).toEqual({ key: 'pay.askAmountIn', params: { currency: 'UGX' } });
    s = await flow.send(answered('5000'));
    expect([s.value, s.context.amount, s.context.currency]).toEqual(['confirming', '5000', 'UGX']);
    // Back from the summary: the amount screen, still naming the currency.
    s = await flow.send(BACK);
    expect([s.value, s.context.amount, s.context.currency]).toEqual(['awaitingAmount', undefined, 'UGX']);
  });

  it('a currency the role may no longer pay in is not proposed: the amount, then the currency, as for anyone', async () => {
    const flow = live(payMachine, {
      input: { currencies: ['UGX', 'BXC'] },
      answers: {
        ...happy,
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', currency: 'KES' }] },
        lookupContact: knownNumber,
      },
    });
    let s = await flow.send(chosen('recent0'));
    expect(currentView(s)?.text).toEqual({ key: 'pay.askAmount' });
    s = await flow.send(answered('5000'));
    expect(s.value).toBe('choosingCurrency');
  });

  it("the test currency is offered only to pay one of the service's test numbers, and never to a bank", async () => {
    const input = { currencies: ['UGX'], testCurrencies: ['BXC'], testNumbers: ['+256772000001'] };
    const test = live(payMachine, { input, answers: happy });
    for (const event of [chosen('money'), answered('0772000001'), answered('Jane'), answered('Doe')])
      await test.send(event);
    let s = await test.send(answered('5000'));
    expect([s.value, currentView(s)?.choices?.map((c) => c.label)]).toEqual(['choosingCurrency', ['UGX', 'BXC']]);
    s = await test.send(chosen('BXC'));
    expect([s.value, s.context.currency]).toEqual(['confirming', 'BXC']);

    const anyone = live(payMachine, { input, answers: happy });
    for (const event of [chosen('money'), answered('0772123456'), answered('Jane'), answered('Doe')])
      await anyone.send(event);
    s = await anyone.send(answered('5000'));
    expect([s.value, s.context.currency]).toEqual(['confirming', 'UGX']);
    expect((await anyone.send(chosen('BXC'))).context.currency).toBe('UGX');

    const bank = live(payMachine, { input, answers: { ...happy, lookupContact: knownNumber } });
    for (const [event] of BANK.slice(0, 5)) await bank.send(event);
    await bank.send(answered('+256772000001'));
    s = await bank.send(answered('20000'));
    expect([s.value, s.context.currency]).toEqual(['confirming', 'UGX']);
  });

  it("a number of another country than the caller's says so on the summary, in every language", async () => {
    const kenyan = live(payMachine, {
      input: { userPhone: '+254712345680', defaultCountry: 'KE', currencies: ['KES'] },
      answers: happy,
    });
    for (const event of [chosen('money'), answered('0712000001'), answered('Jane'), answered('Doe')])
      await kenyan.send(event);
    let s = await kenyan.send(answered('700'));
    expect([s.value, s.context.phone, s.context.currency]).toEqual(['confirming', '+254712000001', 'KES']);
    expect(currentView(s)?.notice).toBeUndefined();

    const abroad = live(payMachine, {
      input: { userPhone: '+254712345680', defaultCountry: 'KE', currencies: ['KES'] },
      answers: happy,
    });
    for (const event of [chosen('money'), answered('+256712000001'), answered('Jane'), answered('Doe')])
      await abroad.send(event);
    s = await abroad.send(answered('700'));
    const view = currentView(s)!;
    expect(view.notice).toEqual({ key: 'pay.abroad', params: { country: 'UG' } });
    expect(renderView(view, 'en').text).toMatch(/^This number is abroad \(Uganda\)\.\nSend 700 KES/);
    expect(renderView(view, 'sw').text).toMatch(/^Nje ya nchi: Uganda\.\nTuma 700 KES/);
    expect(renderView(view, 'fr').text).toMatch(/^Étranger : Ouganda\.\nEnvoyer 700 KES/);
    expect(renderView({ ...view, notice: { key: 'pay.abroad', params: { country: 'ZA' } } }, 'en').text).toMatch(
      /^This number is abroad \(ZA\)\./,
    );
  });

  it('the abroad notice keeps every summary within a USSD screen', () => {
    // Recent payees are Ugandan numbers: a Kenyan caller picking one sees the notice on the summary.
    const walk = walkFlow(payFlow, { input: { requirePin: true, defaultCountry: 'KE' }, answers, print: false });
    expect(walk.keys).toContain('pay.abroad');
    expectScreensFit(payFlow, walk);
    // The same summaries abroad in each country the words name: the longest name still fits.
    const summaries = walk.paths.flatMap(({ state }) => {
      const view = currentView(state);
      return view?.notice ? [view] : [];
    });
    expect(summaries.length).toBeGreaterThan(0);
    for (const view of summaries)
      for (const country of ['KE', 'TZ', 'RW', 'BI', 'CD', 'NG', 'GH', 'ZM', 'ZA'])
        for (const lang of LANGS) {
          const prompt = renderView({ ...view, notice: { key: 'pay.abroad', params: { country } } }, lang);
          const nav = `0 ${render({ key: 'common.back' }, lang)} 00 ${render({ key: 'common.home' }, lang)}`;
          const screen = [prompt.text, ...(prompt.choices ?? []).map((c, i) => `${i + 1}. ${c.label}`), nav].join('\n');
          const { size, limit } = ussdSize(screen);
          expect(size, screen).toBeLessThanOrEqual(limit);
        }
  });

  it('an over-limit amount in the named currency is asked again in it, with the figure', async () => {
    const limit = failure('limit_exceeded', { limit: { per: 'payment', max: '100', currency: 'KES' } });
    const flow = live(payMachine, {
      input: { currencies: ['UGX', 'KES'] },
      answers: {
        ...happy,
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', currency: 'KES' }] },
        lookupContact: knownNumber,
        checkSpend: limit,
      },
    });
    await flow.send(chosen('recent0'));
    const s = await flow.send(answered('700'));
    expect([s.value, s.context.amount, s.context.currency]).toEqual(['awaitingAmount', undefined, 'KES']);
    expect(currentView(s)?.error?.key).toBeDefined();
    expect(currentView(s)?.text).toEqual({ key: 'pay.askAmountIn', params: { currency: 'KES' } });
  });

  it('a bank payee paid before: listed, and paid again with its account remembered (no account screens)', async () => {
    const account = {
      id: 'bank-1',
      name: 'Stanbic',
      accountNumber: '0123456789',
      accountName: 'Mary Akello',
      email: 'mary@example.com',
    };
    const flow = live(payMachine, {
      input: { requirePin: true, currencies: ['UGX'] },
      answers: {
        ...happy,
        recentPayees: { output: [{ kind: 'bank', phone: '+256772123456', currency: 'UGX', bank: account }] },
        lookupContact: knownNumber,
      },
    });
    let s = await flow.send(answered('x'));
    expect(currentView(s)?.choices?.[0]?.text).toEqual({ key: 'pay.recent.bank', params: { name: 'Mary Akello' } });
    const waits: string[] = [];
    for (const event of [chosen('recent0'), answered('20000'), chosen('confirm'), answered('1234')]) {
      s = await flow.send(event);
      waits.push(String(s.value));
    }
    expect(waits).toEqual(['awaitingAmount', 'confirming', 'awaitingPin', 'done']);
    expect(flow.calls.map((c) => c.service)).not.toContain('listBanks');
    expect(flow.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({
      paymentType: 'bank',
      bank: { bank: 'bank-1', name: 'Stanbic', accountNumber: '0123456789', accountName: 'Mary Akello' },
    });
  });

  it('none known, or the store not answering: the kinds alone, as before', async () => {
    for (const answer of [{ output: [] }, failure('connection')]) {
      const flow = live(payMachine, { answers: { ...happy, recentPayees: answer } });
      await flow.send(answered(''));
      const view = currentView(flow.snapshot());
      expect(view?.text.key).toBe('pay.chooseKind');
      expect(view?.choices?.map((c) => c.id)).toEqual(['money', 'airtime', 'bank']);
    }
  });
});

describe('pay machine: back', () => {
  for (const [name, script, options] of [
    [
      'money to a new number, with a PIN',
      [...MONEY, [chosen('confirm'), 'awaitingPin']],
      { input: { requirePin: true } },
    ],
    ['bank transfer to a known number', BANK, { answers: { lookupContact: knownNumber } }],
  ] as Array<[string, Array<[FlowEvent, string]>, LiveOptions]>) {
    it(`${name}: BACK from every step returns to the previous one as it was first reached`, async () => {
      const flow = await drive([], options);
      const reached = [{ value: flow.snapshot().value, context: flow.snapshot().context }];
      for (const [event, expected] of script) {
        const s = await flow.send(event);
        expect(s.value).toBe(expected);
        reached.push({ value: s.value, context: s.context });
      }
      flow.stop();
      for (let i = 1; i < reached.length; i++) {
        const again = await drive(script.slice(0, i), options);
        // An error on screen is cleared by going back (a PIN answer goes to the check instead).
        if (reached[i]!.value !== 'awaitingPin') await again.send(answered(''));
        const s = await again.send(BACK);
        expect({ value: s.value, context: s.context }).toEqual(reached[i - 1]);
        again.stop();
      }
    });
  }

  it('BACK from the first step leaves for the menu without sending anything', async () => {
    const flow = await drive([]);
    const s = await flow.send(BACK);
    expect(s.status).toBe('done');
    expect(s.output).toEqual({ next: 'menu' });
    expect(flow.calls.map((c) => c.service)).toEqual(['recentPayees']);
  });

  it('BACK after the network check returns to the currency, forgetting the check', async () => {
    const flow = await drive(MONEY.slice(0, -1), { answers: { verifyContact: verified('JOHN OKELLO') } });
    const atCurrency = flow.snapshot().context;
    let s = await flow.send(MONEY.at(-1)![0]);
    expect(s.value).toBe('confirmingName');
    s = await flow.send(BACK);
    expect([s.value, s.context]).toEqual(['choosingCurrency', atCurrency]);
  });

  it('a note added at the summary goes back to the summary; BACK from it adds none', async () => {
    const flow = await drive([...MONEY, [chosen('note'), 'awaitingDescription']]);
    let s = await flow.send(BACK);
    expect([s.value, s.context.description]).toEqual(['confirming', undefined]);
    await flow.send(chosen('note'));
    s = await flow.send(answered('School fees'));
    expect([s.value, s.context.description]).toEqual(['confirming', 'School fees']);
  });
});

describe('pay machine: a new number the network named before', () => {
  const namedBefore: Outcome = {
    output: {
      known: false,
      registered: true,
      nameOnNetwork: 'SARAH NAKATO',
      networkName: 'MTN',
    } satisfies ContactCheck,
  };

  it("the first-name screen offers the network's name; paying it verifies nothing again", async () => {
    const flow = live(payMachine, {
      input: { currencies: ['UGX'] },
      answers: { ...happy, lookupContact: namedBefore },
    });
    await flow.send(chosen('money'));
    let s = await flow.send(answered('0772000001'));
    expect(s.value).toBe('awaitingFirstName');
    expect(currentView(s)).toMatchObject({
      text: { key: 'pay.askFirstNameOrNetwork', params: { phone: '+256772000001', networkName: 'SARAH NAKATO' } },
      input: 'text',
      choices: [{ id: 'payNetworkName', text: { key: 'pay.payNetworkName', params: { networkName: 'SARAH NAKATO' } } }],
    });
    s = await flow.send(chosen('payNetworkName'));
    expect([s.value, s.context.firstName, s.context.lastName]).toEqual(['awaitingAmount', 'SARAH', 'NAKATO']);
    s = await flow.send(answered('5000'));
    expect(s.value).toBe('confirming');
    expect(currentView(s)?.text.params).toMatchObject({ name: 'SARAH NAKATO' });
    // BACK from the summary: the amount; from the amount: the name offered again.
    s = await flow.send(BACK);
    expect(s.value).toBe('awaitingAmount');
    s = await flow.send(BACK);
    expect([s.value, s.context.firstName]).toEqual(['awaitingFirstName', undefined]);
    await flow.send(chosen('payNetworkName'));
    await flow.send(answered('5000'));
    await flow.send(chosen('confirm'));
    expect(flow.calls.map((c) => c.service)).not.toContain('verifyContact');
    expect(flow.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({
      firstName: 'SARAH',
      lastName: 'NAKATO',
      payeeName: 'SARAH NAKATO',
    });
  });

  it('typing names goes on as before; airtime, or a number never verified, offers no name', async () => {
    const flow = live(payMachine, {
      input: { currencies: ['UGX'] },
      answers: { ...happy, lookupContact: namedBefore },
    });
    await flow.send(chosen('money'));
    await flow.send(answered('0772000001'));
    let s = await flow.send(answered('Sarah'));
    expect(s.value).toBe('awaitingLastName');
    await flow.send(answered('Nakato'));
    s = await flow.send(answered('5000'));
    // Typed the network's name (any case and order): nothing to verify again.
    expect(s.value).toBe('confirming');
    expect(flow.calls.map((c) => c.service)).not.toContain('verifyContact');

    const airtime = live(payMachine, { answers: { ...happy, lookupContact: namedBefore } });
    await airtime.send(chosen('airtime'));
    s = await airtime.send(answered('0772000001'));
    expect(currentView(s)?.text).toEqual({ key: 'pay.askFirstName' });
    expect((await airtime.send(chosen('payNetworkName'))).context.error).toEqual({ key: 'common.pickOne' });
    const unverified = live(payMachine, { answers: { ...happy, lookupContact: unknownNumber } });
    await unverified.send(chosen('money'));
    s = await unverified.send(answered('0772000001'));
    expect(currentView(s)?.text).toEqual({ key: 'pay.askFirstName' });
  });
});

describe('pay machine: the network check', () => {
  it('skips verification for a known number, airtime and bank transfers', async () => {
    const known = await drive(MONEY.slice(0, 2), { answers: { lookupContact: knownNumber } });
    expect(known.snapshot().value).toBe('awaitingAmount');
    await known.send(answered('100'));
    await known.send(chosen('UGX'));
    expect((await known.send(answered('Lunch'))).value).toBe('confirming');
    const airtime = await drive([[chosen('airtime'), ''], ...MONEY.slice(1)]);
    expect(airtime.snapshot().value).toBe('confirming');
    for (const flow of [known, airtime]) expect(flow.calls.map((c) => c.service)).not.toContain('verifyContact');
  });

  it('a matching name in another case and order goes straight to the summary', async () => {
    const flow = await drive(MONEY, { answers: { verifyContact: verified('DOE JANE') } });
    expect(flow.snapshot().value).toBe('confirming');
    expect(flow.calls.find((c) => c.service === 'verifyContact')?.input).toEqual({
      phonenumber: '+256772123456',
      firstName: 'Jane',
      lastName: 'Doe',
      channel: 'telegram',
      userId: 'user-1',
    });
  });

  it("a different name shows the network's name; paying it pays that name, another number starts again", async () => {
    const flow = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    const s = flow.snapshot();
    expect(s.value).toBe('confirmingName');
    expect(currentView(s)?.text).toEqual({
      key: 'pay.confirmName',
      params: { networkName: 'JOHN OKELLO', name: 'Jane Doe' },
    });
    expect(currentView(s)?.choices?.map((c) => c.id)).toEqual(['payNetworkName', 'otherNumber', 'stop']);
    // Paying the network's name: the summary and the payment carry it, so the service's name check passes.
    const summary = await flow.send(chosen('payNetworkName'));
    expect(summary.value).toBe('confirming');
    expect(currentView(summary)?.text.params).toMatchObject({ name: 'JOHN OKELLO' });
    expect(summary.context).toMatchObject({ firstName: 'JOHN', lastName: 'OKELLO' });
    await flow.send(chosen('confirm'));
    expect(flow.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({
      firstName: 'JOHN',
      lastName: 'OKELLO',
    });
    const again = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    const other = await again.send(chosen('otherNumber'));
    expect(other.value).toBe('awaitingPhone');
    expect(other.context).toMatchObject({ kind: 'money' });
    for (const field of ['phone', 'firstName', 'lastName', 'amount', 'currency', 'description', 'verified'])
      expect(other.context[field]).toBeUndefined();
  });

  it("paying the typed name against a mismatch is offered only when the organization's name check is off", async () => {
    const strict = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    expect(currentView(strict.snapshot())?.choices?.map((c) => c.id)).not.toContain('payTypedName');
    // A forged or stale choice is refused there.
    expect(currentView(await strict.send(chosen('payTypedName')))?.error).toEqual({ key: 'common.pickOne' });
    const lenient = await drive(MONEY, {
      input: { nameMatchAffectsPayment: false },
      answers: { verifyContact: verified('JOHN OKELLO') },
    });
    expect(currentView(lenient.snapshot())?.choices?.map((c) => c.id)).toEqual([
      'payNetworkName',
      'payTypedName',
      'otherNumber',
      'stop',
    ]);
    const summary = await lenient.send(chosen('payTypedName'));
    expect(currentView(summary)?.text.params).toMatchObject({ name: 'Jane Doe' });
    await lenient.send(chosen('confirm'));
    expect(lenient.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({
      firstName: 'Jane',
      lastName: 'Doe',
    });
  });

  it('stopping at a name mismatch sends nothing', async () => {
    const flow = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    expect(currentView(await flow.send(chosen('stop')))).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(flow.calls.map((c) => c.service)).not.toContain('createPayment');
  });

  it('a number not registered for mobile money is explained; stopping sends nothing', async () => {
    const flow = await drive(MONEY, { answers: { verifyContact: verified('JANE DOE', false) } });
    const s = flow.snapshot();
    expect(s.value).toBe('notRegistered');
    expect(currentView(s)?.text).toEqual({ key: 'pay.notRegistered', params: { phone: '+256772123456' } });
    const stopped = await flow.send(chosen('stop'));
    expect(currentView(stopped)).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(flow.calls.map((c) => c.service)).not.toContain('createPayment');
  });
});

describe('pay machine: PIN', () => {
  const atPin = () =>
    drive([...MONEY, [chosen('confirm'), 'awaitingPin']], {
      input: { requirePin: true },
      answers: { verifyPin: undefined },
    });

  it('a wrong PIN is re-asked with the attempts left; the right one pays; the PIN is never kept in context', async () => {
    const flow = await atPin();
    await flow.send(answered('8080'));
    let s = await flow.settle('verifyPin', failure('pin_wrong', { message: '2 attempts left' }));
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingPin', { key: 'pay.pinWrongLeft', params: { left: 2 } }]);
    await flow.send(answered('9191'));
    s = await flow.settle('verifyPin', failure('pin_wrong'));
    expect(currentView(s)?.error).toEqual({ key: 'pay.pinWrong' });
    await flow.send(answered('4646'));
    s = await flow.settle('verifyPin', { output: undefined });
    expect(s.value).toBe('done');
    expect(flow.calls.filter((c) => c.service === 'verifyPin').map((c) => c.input)).toEqual(
      ['8080', '9191', '4646'].map((pin) => ({ channel: 'telegram', userId: 'user-1', pin })),
    );
    expect(flow.calls.filter((c) => c.service === 'createPayment')).toHaveLength(1);
    expect(JSON.stringify(s.context)).not.toMatch(/8080|9191|4646/);
  });

  it('a locked PIN stops with the reason and sends nothing', async () => {
    const flow = await atPin();
    await flow.send(answered('8080'));
    const s = await flow.settle('verifyPin', failure('pin_locked'));
    expect(currentView(s)).toEqual({ text: { key: 'failure.pin_locked' }, final: true });
    expect(flow.calls.map((c) => c.service)).not.toContain('reserveSpend');
    expect(flow.calls.map((c) => c.service)).not.toContain('createPayment');
  });
});

describe('pay machine: refusing early, with the figure', () => {
  const overDay: ServiceFailure = {
    code: 'limit_exceeded',
    limit: { per: 'day', max: '500000', spent: '1500000', currency: 'UGX' },
  };

  it('checks role and limits when the amount is known, before the description, the summary and the PIN', async () => {
    const flow = await drive(MONEY.slice(0, 5), {
      answers: { checkSpend: failure('limit_exceeded', { limit: overDay.limit }) },
    });
    const s = await flow.send(chosen('UGX'));
    expect(flow.calls.at(-1)).toEqual({
      service: 'checkSpend',
      input: { channel: 'telegram', userId: 'user-1', flow: 'pay', amount: '1500', currency: 'UGX', pin: false },
    });
    // The amount is asked again, saying how much may still be sent today; nothing else was asked or reserved.
    expect(s.value).toBe('awaitingAmount');
    expect(currentView(s)?.error).toEqual({
      key: 'failure.limit_exceeded.day',
      params: { max: '500000', spent: '1500000', currency: 'UGX' },
    });
    expect(s.context.amount).toBeUndefined();
    expect(flow.calls.map((c) => c.service)).not.toContain('reserveSpend');
  });

  it('a smaller amount then goes on; a role refusal is said at once too', async () => {
    let calls = 0;
    const flow = await drive(MONEY.slice(0, 5), {
      answers: {
        checkSpend: () =>
          calls++ === 0
            ? failure('limit_exceeded', { limit: { per: 'payment', max: '1000', currency: 'UGX' } })
            : { output: undefined },
      },
    });
    let s = await flow.send(chosen('UGX'));
    expect(currentView(s)?.error).toEqual({
      key: 'failure.limit_exceeded.payment',
      params: { max: '1000', currency: 'UGX' },
    });
    await flow.send(answered('900'));
    s = await flow.send(chosen('UGX'));
    expect([s.value, s.context.amount, currentView(s)?.error]).toEqual(['confirming', '900', undefined]);
    const refused = await drive(MONEY.slice(0, 5), { answers: { checkSpend: failure('not_allowed') } });
    expect(currentView(await refused.send(chosen('UGX')))?.error).toEqual({ key: 'failure.not_allowed' });
    // A locked PIN is told at the amount too, not after the summary and the PIN.
    const locked = await drive(MONEY.slice(0, 5), { answers: { checkSpend: failure('pin_locked') } });
    const l = await locked.send(chosen('UGX'));
    expect([l.value, currentView(l)?.error]).toEqual(['awaitingAmount', { key: 'failure.pin_locked' }]);
  });

  it('a check that could not be made does not stop the payment: the reservation checks again', async () => {
    const flow = await drive(MONEY.slice(0, 5), { answers: { checkSpend: failure('connection') } });
    expect((await flow.send(chosen('UGX'))).value).toBe('confirming');
  });
});

describe('pay machine: creating the payment', () => {
  it('creates it once with the key, the metadata, the names of a new number and the bank details', async () => {
    const money = await drive([...MONEY_NOTED, [chosen('confirm'), 'done']]);
    expect(money.calls.filter((c) => c.service === 'reserveSpend').map((c) => c.input)).toEqual([
      {
        channel: 'telegram',
        userId: 'user-1',
        flow: 'pay',
        amount: '1500',
        currency: 'UGX',
        duplicateCheckKey: 'run-1:pay',
      },
    ]);
    expect(money.calls.filter((c) => c.service === 'createPayment').map((c) => c.input)).toEqual([
      {
        channel: 'telegram',
        userId: 'user-1',
        duplicateCheckKey: 'run-1:pay',
        paymentType: 'money',
        phonenumber: '+256772123456',
        amount: '1500',
        currency: 'UGX',
        description: 'School fees',
        firstName: 'Jane',
        lastName: 'Doe',
        payeeName: 'Jane Doe',
        metadata: { chat: 'telegram:chat-1', ref: 'run-1:pay' },
      },
    ]);
    expect(currentView(money.snapshot())).toEqual({
      text: { key: 'pay.submitted', params: { ref: 'pay-1', amount: '1500', currency: 'UGX', name: 'Jane Doe' } },
      final: true,
    });
    expect(money.snapshot().output).toEqual({});

    const bank = await drive([...BANK, [chosen('confirm'), 'done']], { answers: { lookupContact: knownNumber } });
    expect(bank.calls.find((c) => c.service === 'createPayment')?.input).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      duplicateCheckKey: 'run-1:pay',
      paymentType: 'bank',
      phonenumber: '+256772123456',
      amount: '20000',
      currency: 'UGX',
      description: 'Bank transfer',
      payeeName: 'Mary Akello',
      bank: {
        bank: 'bank-1',
        name: 'Stanbic',
        accountNumber: '0123456789',
        accountName: 'Mary Akello',
        email: 'mary@example.com',
      },
      metadata: { chat: 'telegram:chat-1', ref: 'run-1:pay' },
    });
    expect(currentView(bank.snapshot())?.text.key).toBe('pay.submitted');
  });

  it('a bank transfer to a new number asks no names after the account name, and names the contact by it', async () => {
    const bank = await drive([...BANK, [chosen('confirm'), 'done']]);
    expect(bank.calls.map((c) => c.service)).toContain('lookupContact');
    expect(bank.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({
      paymentType: 'bank',
      firstName: 'Mary',
      lastName: 'Akello',
      payeeName: 'Mary Akello',
    });
    // Back from the amount goes to the number, not to a names screen.
    const back = await drive(BANK.slice(0, 6));
    expect((await back.send(BACK)).value).toBe('awaitingPhone');
    const failed = await drive(BANK.slice(0, 6), { answers: { lookupContact: { error: new Error('down') } } });
    expect(failed.snapshot().value).toBe('awaitingAmount');
  });

  it('the summary names a known payee by the name on record', async () => {
    const flow = await drive(BANK, { answers: { lookupContact: knownNumber } });
    expect(currentView(flow.snapshot())?.text).toEqual({
      key: 'pay.summary.bank',
      params: {
        amount: '20000',
        currency: 'UGX',
        name: 'Mary Akello',
        phone: '+256772123456',
        bank: 'Stanbic',
        account: '0123456789',
        hasNote: 'no',
        note: '',
      },
    });
  });

  it('a note added at the summary is shown on it, and sent', async () => {
    const flow = await drive(MONEY_NOTED);
    expect(currentView(flow.snapshot())?.text.params).toMatchObject({ hasNote: 'yes', note: 'School fees' });
    await flow.send(chosen('confirm'));
    expect(flow.calls.find((c) => c.service === 'createPayment')?.input).toMatchObject({ description: 'School fees' });
  });

  it('a snapshot persisted while creating restores to the same key and metadata: one payment', async () => {
    const first = await drive([...MONEY, [chosen('confirm'), 'submitting']], { answers: { createPayment: undefined } });
    expect(first.snapshot().value).toBe('submitting');
    expect(first.snapshot().hasTag('busy')).toBe(true);
    const persisted = first.persisted();
    first.stop();

    // The service holds the payment of the first call: the repeat under our key is AlreadySubmitted.
    const restored = live(payMachine, {
      snapshot: persisted,
      answers: { createPayment: { output: ALREADY_SUBMITTED } },
    });
    const s = await restored.send(answered('ignored while busy'));
    const [before, after] = [first, restored].map((f) => f.calls.filter((c) => c.service === 'createPayment'));
    expect(before).toHaveLength(1);
    expect(after).toHaveLength(1);
    expect(after![0]!.input).toEqual(before![0]!.input);
    expect(after![0]!.input).toMatchObject({ duplicateCheckKey: 'run-1:pay', metadata: { ref: 'run-1:pay' } });
    expect(restored.calls.map((c) => c.service)).toEqual(['createPayment']);
    expect(currentView(s)).toEqual({ text: { key: 'pay.submittedBefore', params: { hasRef: 'no' } }, final: true });
  });

  it('a payment whose state is `submitted` is one the service made now, not one made earlier', async () => {
    const flow = await drive([...MONEY, [chosen('confirm'), 'done']], {
      answers: { createPayment: { output: { id: 'pay-7', state: 'submitted', shortRef: 'MC-7KQ4X' } } },
    });
    // The reference people read is our short ref, not the service's id.
    expect(currentView(flow.snapshot())?.text).toMatchObject({ key: 'pay.submitted', params: { ref: 'MC-7KQ4X' } });
  });

  const cases: Array<[string, Outcome, unknown]> = [
    [
      'validation',
      failure('validation', { fields: { amount: ['Insufficient balance'], phonenumber: ['x'] } }),
      { key: 'pay.refused', params: { fields: 'amount, phonenumber' } },
    ],
    ['duplicate', failure('duplicate'), { key: 'failure.duplicate' }],
    // A 429 may follow an earlier attempt under the same key whose answer was lost: not "try again".
    ['rate_limited', failure('rate_limited'), { key: 'pay.unconfirmed', params: { hasRef: 'no' } }],
    ['connection', failure('connection'), { key: 'pay.unconfirmed', params: { hasRef: 'no' } }],
    ['service', failure('service'), { key: 'pay.unconfirmed', params: { hasRef: 'no' } }],
    ['unknown', failure('unknown'), { key: 'pay.unconfirmed', params: { hasRef: 'no' } }],
    ['a thrown Error', { error: new Error('boom') }, { key: 'pay.unconfirmed', params: { hasRef: 'no' } }],
    // Its answer lost, the payment may have been made: the screen names our short ref to ask about it by.
    [
      'connection, with our short ref',
      failure('connection', { shortRef: 'MC-7KQ4X' }),
      { key: 'pay.unconfirmed', params: { hasRef: 'yes', ref: 'MC-7KQ4X' } },
    ],
    // A refusal made nothing: no ref to ask about.
    [
      'validation, with our short ref',
      failure('validation', { fields: { amount: ['x'] }, shortRef: 'MC-7KQ4X' }),
      { key: 'pay.refused', params: { fields: 'amount' } },
    ],
    ['unauthenticated', failure('unauthenticated'), { key: 'failure.unauthenticated' }],
    ['forbidden', failure('forbidden'), { key: 'failure.forbidden' }],
    ['not_found', failure('not_found'), { key: 'failure.not_found' }],
    // The approvals desk could not post a payment that needs approval: nothing was sent, and the words say so.
    ['approvals_unavailable', failure('approvals_unavailable'), { key: 'failure.approvals_unavailable' }],
  ];
  for (const [name, outcome, text] of cases) {
    it(`create failing with ${name} ends with ${JSON.stringify(text)}, never offering a retry`, async () => {
      const flow = await drive([...MONEY, [chosen('confirm'), 'done']], { answers: { createPayment: outcome } });
      expect(currentView(flow.snapshot())).toEqual({ text, final: true });
      expect(flow.calls.filter((c) => c.service === 'createPayment')).toHaveLength(1);
    });
  }

  for (const code of ['limit_exceeded', 'not_allowed'] as Array<ServiceFailure['code']>) {
    it(`a spend refused with ${code} is explained and nothing is created`, async () => {
      const flow = await drive([...MONEY, [chosen('confirm'), 'done']], { answers: { reserveSpend: failure(code) } });
      expect(currentView(flow.snapshot())).toEqual({ text: { key: `failure.${code}` }, final: true });
      expect(flow.calls.map((c) => c.service)).not.toContain('createPayment');
    });
  }

  it('cancelling the summary sends nothing', async () => {
    const flow = await drive(MONEY);
    const s = await flow.send(chosen('cancel'));
    expect(currentView(s)).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(flow.calls.map((c) => c.service)).toEqual(['recentPayees', 'lookupContact', 'checkSpend', 'verifyContact']);
  });

  it("lists the banks of the caller's country (the engine's: their number's, else the channel's); none: said", async () => {
    const ugandan = live(payMachine, { input: { userPhone: '+256772123456', defaultCountry: 'UG' }, answers: happy });
    await ugandan.send(chosen('bank'));
    expect(ugandan.calls.find((c) => c.service === 'listBanks')?.input).toEqual({ country: 'UG' });
    const kenyan = live(payMachine, { input: { userPhone: '+254712345678', defaultCountry: 'KE' }, answers: happy });
    await kenyan.send(chosen('bank'));
    expect(kenyan.calls.find((c) => c.service === 'listBanks')?.input).toEqual({ country: 'KE' });
    const chat = live(payMachine, { input: { userPhone: undefined, defaultCountry: 'KE' }, answers: happy });
    await chat.send(chosen('bank'));
    expect(chat.calls.find((c) => c.service === 'listBanks')?.input).toEqual({ country: 'KE' });

    const none = live(payMachine, {
      input: { userPhone: '+2348031400001' },
      answers: { ...happy, listBanks: { output: [] } },
    });
    const s = await none.send(chosen('bank'));
    expect(s.value).toBe('choosingKind');
    expect(currentView(s)?.error).toEqual({ key: 'pay.noBanks' });
    expect(s.context.kind).toBeUndefined();
  });

  it('a caller offered no currency (their country has none allowed) is told so in one line, nothing offered', async () => {
    for (const recent of [{ output: [] }, failure('unknown')] as Outcome[]) {
      const { recentPayees: _, ...others } = happy;
      const nigerian = live(payMachine, {
        input: { userPhone: '+2348031400001', defaultCountry: 'NG', currencies: [], testCurrencies: ['BXC'] },
        answers: others,
      });
      const s = await nigerian.settle('recentPayees', recent);
      expect(s.status).toBe('done');
      expect(currentView(s)).toEqual({ text: { key: 'pay.noCurrency' }, final: true });
      expect(nigerian.calls.map((c) => c.service)).toEqual(['recentPayees']);
    }
    for (const lang of LANGS) expect(render({ key: 'pay.noCurrency' }, lang)).not.toMatch(/\n|UGX|KES|BXC|NGN/);
  });

  it('a failed bank list or network check ends with the reason before anything is sent', async () => {
    const banks = await drive([[chosen('bank'), 'done']], { answers: { listBanks: failure('service') } });
    expect(currentView(banks.snapshot())).toEqual({ text: { key: 'failure.service' }, final: true });
    const check = await drive(MONEY, { answers: { verifyContact: failure('rate_limited') } });
    expect(currentView(check.snapshot())).toEqual({ text: { key: 'failure.rate_limited' }, final: true });
    expect(check.calls.map((c) => c.service)).not.toContain('createPayment');
  });

  it('a failed local lookup asks the names as for a new number', async () => {
    const flow = await drive(MONEY.slice(0, 2), { answers: { lookupContact: failure('unknown') } });
    expect(flow.snapshot().value).toBe('awaitingFirstName');
  });
});

describe('pay machine: the same payment again (the journal knows it)', () => {
  const recent: Outcome = { output: { ref: 'run-0:pay', minutesAgo: 4, state: 'completed' } };

  it('asks the journal with who pays whom how much, after the summary is confirmed', async () => {
    const flow = await drive([...MONEY, [chosen('confirm'), 'done']]);
    expect(flow.calls.find((c) => c.service === 'recentPayment')?.input).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      payee: '+256772123456',
      amount: '1500',
      currency: 'UGX',
    });
    expect(flow.calls.map((c) => c.service).slice(-3)).toEqual(['recentPayment', 'reserveSpend', 'createPayment']);
  });

  it('the same payee, amount and currency paid a moment ago: asked, and nothing reserved or sent before the answer', async () => {
    const flow = await drive(MONEY, { answers: { recentPayment: recent } });
    const s = await flow.send(chosen('confirm'));
    expect(s.value).toBe('confirmingRepeat');
    expect(currentView(s)).toEqual({
      text: { key: 'pay.repeat', params: { amount: '1500', currency: 'UGX', phone: '+256772123456', minutes: 4 } },
      choices: [
        { id: 'payAgain', text: { key: 'pay.payAgain' } },
        { id: 'cancel', text: { key: 'pay.cancel' } },
      ],
    });
    expect(flow.calls.map((c) => c.service)).not.toContain('reserveSpend');
    expect(flow.calls.map((c) => c.service)).not.toContain('createPayment');
  });

  it('"cancel" sends nothing; "send again" makes the second payment under this run\'s own key', async () => {
    const no = await drive([...MONEY, [chosen('confirm'), 'confirmingRepeat']], { answers: { recentPayment: recent } });
    expect(currentView(await no.send(chosen('cancel')))).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(no.calls.map((c) => c.service)).not.toContain('createPayment');

    const yes = await drive([...MONEY, [chosen('confirm'), 'confirmingRepeat']], {
      answers: { recentPayment: recent },
    });
    const s = await yes.send(chosen('payAgain'));
    expect(currentView(s)?.text.key).toBe('pay.submitted');
    expect(yes.calls.filter((c) => c.service === 'createPayment').map((c) => c.input.duplicateCheckKey)).toEqual([
      'run-1:pay',
    ]);
  });

  it('with a PIN, "send again" asks the PIN; BACK returns to the summary', async () => {
    const flow = await drive([...MONEY, [chosen('confirm'), 'confirmingRepeat']], {
      answers: { recentPayment: recent },
      input: { requirePin: true },
    });
    expect((await flow.send(chosen('payAgain'))).value).toBe('awaitingPin');
    const back = await drive([...MONEY, [chosen('confirm'), 'confirmingRepeat']], {
      answers: { recentPayment: recent },
    });
    const s = await back.send(BACK);
    expect(s.value).toBe('confirming');
    expect(s.context.repeat).toBeUndefined();
  });

  // Only a completed payment is said to be paid: one still open is said to be on its way or awaiting approval.
  it.each([
    ['intended', 'open'],
    ['submitted', 'open'],
    ['held', 'held'],
    ['a state not known here', 'open'],
  ])('a payment of the same still %s is not said to be paid, and is named by its short ref', async (state, stage) => {
    const open: Outcome = { output: { ref: 'run-0:pay', minutesAgo: 2, state, shortRef: 'MP-7KQ4XZ' } };
    const flow = await drive(MONEY, { answers: { recentPayment: open } });
    const s = await flow.send(chosen('confirm'));
    expect(s.value).toBe('confirmingRepeat');
    const view = currentView(s)!;
    expect(view.text).toEqual({
      key: 'pay.repeatOpen',
      params: {
        amount: '1500',
        currency: 'UGX',
        phone: '+256772123456',
        minutes: 2,
        stage,
        hasRef: 'yes',
        ref: 'MP-7KQ4XZ',
      },
    });
    expect(view.choices?.map((c) => c.id)).toEqual(['payAgain', 'cancel']);
    const said = render(view.text, 'en');
    expect(said).not.toMatch(/paid/i);
    expect(said).toContain(stage === 'held' ? 'awaiting approval' : 'still on its way');
    expect(said).toContain('Ref MP-7KQ4XZ.');
    expect(flow.calls.map((c) => c.service)).not.toContain('createPayment');
    // The same choices as for a completed one: "send again" makes the second payment under this run's own key.
    const again = await flow.send(chosen('payAgain'));
    expect(currentView(again)?.text.key).toBe('pay.submitted');
    expect(flow.calls.filter((c) => c.service === 'createPayment').map((c) => c.input.duplicateCheckKey)).toEqual([
      'run-1:pay',
    ]);
  });

  it('an open payment of the same without a short ref (an answer stored before it was given) names none', async () => {
    const open: Outcome = { output: { ref: 'run-0:pay', minutesAgo: 0, state: 'submitted' } };
    const flow = await drive(MONEY, { answers: { recentPayment: open } });
    const text = currentView(await flow.send(chosen('confirm')))!.text;
    expect(text.params).toMatchObject({ hasRef: 'no', stage: 'open' });
    expect(render(text, 'en')).not.toContain('Ref');
  });

  it('a journal that cannot answer does not stop the payment', async () => {
    const flow = await drive([...MONEY, [chosen('confirm'), 'done']], {
      answers: { recentPayment: failure('unknown') },
    });
    expect(currentView(flow.snapshot())?.text.key).toBe('pay.submitted');
  });
});

describe('pay machine: words', () => {
  it('says how long ago the same payment was made in words, with plurals, in every language', () => {
    const said = (minutes: number, lang: 'en' | 'sw' | 'fr') =>
      render({ key: 'pay.repeat', params: { amount: '5000', currency: 'UGX', phone: '+256772000001', minutes } }, lang);
    expect(said(0, 'en')).toContain('+256772000001 just now.');
    expect(said(1, 'en')).toContain('+256772000001 1 minute ago.');
    expect(said(4, 'en')).toContain('+256772000001 4 minutes ago.');
    expect(said(1, 'sw')).toContain('dakika 1 iliyopita');
    expect(said(4, 'sw')).toContain('dakika 4 zilizopita');
    expect(said(0, 'fr')).toContain("à l'instant");
    expect(said(4, 'fr')).toContain('il y a 4 minutes');
  });

  it('says an open payment of the same is on its way or awaiting approval, never paid, in every language', () => {
    const said = (stage: 'open' | 'held', lang: 'en' | 'sw' | 'fr', hasRef = 'yes') =>
      render(
        {
          key: 'pay.repeatOpen',
          params: {
            amount: '5000',
            currency: 'UGX',
            phone: '+256772000001',
            minutes: 1,
            stage,
            hasRef,
            ref: 'MP-7KQ4XZ',
          },
        },
        lang,
      );
    expect(said('open', 'en')).toBe(
      'Your payment of 5,000 UGX to +256772000001 is still on its way. Ref MP-7KQ4XZ. Send a second one?',
    );
    expect(said('held', 'en')).toContain('is awaiting approval.');
    expect(said('open', 'en', 'no')).not.toContain('Ref');
    expect(said('open', 'sw')).toContain('bado yako njiani. Kumb MP-7KQ4XZ.');
    expect(said('held', 'sw')).toContain('yanasubiri idhini');
    expect(said('open', 'fr')).toContain('est encore en cours. Réf MP-7KQ4XZ.');
    expect(said('held', 'fr')).toContain("attend l'approbation");
    for (const lang of ['en', 'sw', 'fr'] as const) {
      for (const stage of ['open', 'held'] as const) {
        expect(said(stage, lang)).not.toMatch(/You paid|Ulilipa|Vous avez payé/);
        // Ten minutes ago, the longest amount the window allows, on a USSD page with its choices.
        const long = render(
          {
            key: 'pay.repeatOpen',
            params: {
              amount: '9999999.99',
              currency: 'UGX',
              phone: '+256772000001',
              minutes: 10,
              stage,
              hasRef: 'yes',
              ref: 'MP-7KQ4XZ',
            },
          },
          lang,
        );
        const nav = `0 ${render({ key: 'common.back' }, lang)} 00 ${render({ key: 'common.home' }, lang)}`;
        const choices = [`1. ${render({ key: 'pay.payAgain' }, lang)}`, `2. ${render({ key: 'pay.cancel' }, lang)}`];
        const screen = [long, ...choices, nav].join('\n');
        const { size, limit } = ussdSize(screen);
        expect(size, screen).toBeLessThanOrEqual(limit);
      }
    }
  });
});
