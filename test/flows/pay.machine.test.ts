/**
 * Pay, the machine (its model walked with xstate/graph) and as a person uses it (src/testing/flow-test.ts): on
 * Telegram unless a test says otherwise, on a phone where the PIN is asked, on WhatsApp for a chat with a number.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { transition, type AnyMachineSnapshot, type EventObject } from 'xstate';
import { getAdjacencyMap, serializeSnapshot, type AdjacencyValue } from 'xstate/graph';
import { payFlow, payMachine } from '../../flows/pay.machine.js';
import { ALREADY_SUBMITTED, type ContactCheck } from '../../flows/calls.js';
import { LANGS, type ServiceFailure } from '../../flows/types.js';
import { currentView, render, renderView } from '../../src/conversation/flow/render.js';
import {
  failure,
  flowTest,
  held,
  type Answers,
  type FlowTest,
  type FlowTestOptions,
  type Outcome,
  type Steps,
} from '../../src/testing/flow-test.js';
import {
  expectWalkedOnAPhone,
  missingMessages,
  NIGERIAN,
  ON_A_PHONE,
  sampleInput,
  validEvents,
  walkFlow,
  type Walk,
} from './coverage.js';
import { expectKeyKeptAcrossRestart } from './purchase.js';
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

/** Every call answered with success: a new number whose network name matches. */
const happy: Answers = {
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

/** What a person does, and the state the flow then waits in. */
type Script = Array<[(t: FlowTest) => Steps, string]>;

/** Mobile money to a new number, up to the summary. */
const MONEY: Script = [
  [(t) => t.choose('money'), 'awaitingPhone'],
  [(t) => t.send('0772 123-456'), 'awaitingFirstName'],
  [(t) => t.send('Jane'), 'awaitingLastName'],
  [(t) => t.send('Doe'), 'awaitingAmount'],
  [(t) => t.send('1,500'), 'choosingCurrency'],
  [(t) => t.choose('UGX'), 'confirming'],
];

/** The same with a note for the recipient, added at the summary (no screen asks for one otherwise). */
const MONEY_NOTED: Script = [
  ...MONEY,
  [(t) => t.choose('note'), 'awaitingDescription'],
  [(t) => t.send('School fees'), 'confirming'],
];

/** A bank transfer to a known number, up to the summary. */
const BANK: Script = [
  [(t) => t.choose('bank'), 'choosingBank'],
  [(t) => t.choose('bank-1'), 'awaitingAccountNumber'],
  [(t) => t.send('0123456789'), 'awaitingAccountName'],
  [(t) => t.send('Mary Akello'), 'awaitingEmail'],
  [(t) => t.send('mary@example.com'), 'awaitingPhone'],
  [(t) => t.send('+256772123456'), 'awaitingAmount'],
  [(t) => t.send('20000'), 'choosingCurrency'],
  [(t) => t.choose('UGX'), 'confirming'],
];

const confirm = (then: string): Script[number] => [(t) => t.choose('confirm'), then];

/** On a phone (flowTest's default person), where the PIN is asked. */
const PHONE: FlowTestOptions = { channel: 'ussd' };
/** Uganda's and Kenya's currencies, each offered to its own callers (COUNTRY_CURRENCIES); none for Nigeria. */
const COUNTRIES = { countryCurrencies: { UG: ['UGX'], KE: ['KES'] } };

const tests: FlowTest[] = [];
afterEach(async () => {
  await Promise.all(tests.splice(0).map((t) => t.close()));
});

/** Pay opened by a person (Telegram's /pay unless `options` says otherwise), every call answered well but `answers`'. */
async function opened(options: FlowTestOptions = {}): Promise<FlowTest> {
  const t = flowTest('pay', { channel: 'telegram', ...options, answers: { ...happy, ...options.answers } });
  tests.push(t);
  await t.dial();
  return t;
}

/** Opened, then each step of `script`. */
async function drive(script: Script, options: FlowTestOptions = {}): Promise<FlowTest> {
  const t = await opened(options);
  for (const [act] of script) await act(t);
  return t;
}

/** The flow's state, context and view now. */
const at = (t: FlowTest) => t.flow()?.snapshot.value;
const ctx = (t: FlowTest) => t.flow()!.snapshot.context as Record<string, unknown>;
const viewOf = (t: FlowTest) => t.flow()?.view;
const names = (t: FlowTest) => t.calls.map((c) => c.name);
const inputOf = (t: FlowTest, name: string) => t.calls.find((c) => c.name === name)?.input;
/** A choice no screen offers (a forged or stale press): the machine's answer from the stored flow. */
const forged = (t: FlowTest, id: string) => transition(payMachine, t.flow()!.snapshot, { type: 'CHOSEN', id })[0];
/** Each answer of `list` in turn, the last for every later call. */
const inTurn = (...list: Outcome[]) => {
  let i = 0;
  return () => list[Math.min(i++, list.length - 1)]!;
};

describe('pay machine: the model', () => {
  // The walk with a PIN, made once for the tests that read it (it prints the coverage line).
  let withPin: Walk | undefined;
  const walkWithPin = () => (withPin ??= walkFlow(payFlow, { input: { requirePin: true }, answers }));

  it('visits every state, with only catalogued words', () => {
    const walk = walkWithPin();
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
    expectScreensFit(payFlow, walkWithPin());
    // With the email skippable (BANK_TRANSFER_EMAIL set), its screen offers Skip.
    expectScreensFit(
      payFlow,
      walkFlow(payFlow, { input: { requirePin: true, bankEmailOptional: true }, answers, print: false }),
    );
  });

  it('a person on a phone, the service answering as the model settles it, follows every shortest path', async () => {
    await expectWalkedOnAPhone('pay', walkFlow(payFlow, { input: ON_A_PHONE, answers, print: false }).paths);
  }, 120_000);

  it('no way creates a payment unless the summary shown last was confirmed and the PIN verified after it, each with the run key', () => {
    // Every way to the payment, back and forth included: the model's states (each state and context once,
    // none past the payment), walked again with what the way did since the summary was last shown: 0 nothing
    // yet, 1 confirmed, 2 the PIN verified after that. A way that comes back to the summary starts over.
    const submitting = (s: AnyMachineSnapshot) => s.matches('submitting');
    const model = getAdjacencyMap(payFlow.machine, {
      input: sampleInput({ requirePin: true, currencies: ['UGX'] }),
      events: validEvents,
      toState: submitting,
    }) as Record<string, AdjacencyValue<AnyMachineSnapshot, EventObject>>;
    const next = (phase: number, from: AnyMachineSnapshot, event: EventObject, to: AnyMachineSnapshot): number => {
      if (to.matches('confirming')) return 0;
      if (from.matches('confirming') && event.type === 'CHOSEN' && (event as { id?: string }).id === 'confirm')
        return 1;
      if (phase === 1 && from.matches('verifyingPin') && to.matches('reserving')) return 2;
      return phase;
    };
    const queue: Array<[string, number]> = [[Object.keys(model)[0]!, 0]];
    const seen = new Set<string>();
    let payments = 0;
    for (let item = queue.shift(); item; item = queue.shift()) {
      const [key, phase] = item;
      if (seen.has(`${phase}${key}`)) continue;
      seen.add(`${phase}${key}`);
      const { state, transitions } = model[key]!;
      if (submitting(state)) {
        payments += 1;
        expect(phase, key).toBe(2);
        const child = Object.values(
          state.children as Record<string, { options?: { input?: Record<string, unknown> } }>,
        )[0];
        expect(child?.options?.input).toMatchObject({
          duplicateCheckKey: 'run-1:pay',
          metadata: { chat: 'telegram:chat-1', ref: 'run-1:pay' },
        });
        continue;
      }
      for (const { event, state: to } of Object.values(transitions))
        queue.push([serializeSnapshot(to), next(phase, state, event, to)]);
    }
    expect(payments).toBeGreaterThan(0);
  });
});
describe('pay machine: answers', () => {
  it('re-asks an invalid answer with its reason, and clears the reason once answered well', async () => {
    const t = await drive(MONEY.slice(0, 1));
    await t.send('12');
    expect(at(t)).toBe('awaitingPhone');
    expect(viewOf(t)?.error).toEqual({ key: 'input.phoneInvalid', params: phoneExample('UG') });
    await t.send('0414 123456');
    expect(viewOf(t)?.error).toEqual({ key: 'input.phoneNotMobile' });
    await t.send('0772123456');
    expect(at(t)).toBe('awaitingFirstName');
    expect(ctx(t).phone).toBe('+256772123456');
    expect(viewOf(t)?.error).toBeUndefined();
    await t.send('   ');
    expect(viewOf(t)?.error).toEqual({ key: 'input.textEmpty' });
    // A menu key pressed on a name screen is no name: asked again, never sent to the name check.
    await t.send('1');
    expect([at(t), ctx(t).firstName, viewOf(t)?.error]).toEqual([
      'awaitingFirstName',
      undefined,
      { key: 'input.nameInvalid' },
    ]);
    await t.send('Jane').send('Doe2');
    expect([at(t), viewOf(t)?.error]).toEqual(['awaitingLastName', { key: 'input.nameInvalid' }]);
    await t.send('Doe');
    for (const [amount, key] of [
      ['0', 'input.amountNotPositive'],
      ['1e3', 'input.amountInvalid'],
      ['10.555', 'input.amountDecimals'],
    ]) {
      await t.send(amount!);
      expect([at(t), viewOf(t)?.error]).toEqual(['awaitingAmount', { key }]);
    }
    await t.send('1,000.50');
    expect(ctx(t).amount).toBe('1000.5');
    await t.send('UGX');
    expect([at(t), viewOf(t)?.error]).toEqual(['choosingCurrency', { key: 'common.pickOne' }]);
    const xof = forged(t, 'XOF');
    expect([xof.value, currentView(xof)?.error]).toEqual(['choosingCurrency', { key: 'common.pickOne' }]);
    await t.choose('KES').choose('note').send('x'.repeat(141));
    expect(viewOf(t)?.error).toEqual({ key: 'input.textTooLong', params: { max: 140 } });
    await t.send('x'.repeat(140));
    expect(at(t)).toBe('confirming');
    expect(ctx(t).currency).toBe('KES');
  });

  it("a bank transfer may skip the email when the organization's stands in, and sends none of its own", async () => {
    const optional: FlowTestOptions = { settings: { bankEmailOptional: true } };
    const t = await drive(BANK.slice(0, 4), optional);
    expect(viewOf(t)?.choices).toEqual([{ id: 'skipEmail', text: { key: 'pay.skipEmail' } }]);
    await t.choose('skipEmail');
    expect([at(t), ctx(t).email]).toEqual(['awaitingPhone', undefined]);
    for (const [act] of [...BANK.slice(5), confirm('done')]) await act(t);
    expect(at(t)).toBe('done');
    const bank = (inputOf(t, 'createPayment') as { bank?: object }).bank;
    expect(bank).toEqual({ bank: 'bank-1', name: 'Stanbic', accountNumber: '0123456789', accountName: 'Mary Akello' });
    // An address typed beside the Skip is still checked.
    const typed = await drive(BANK.slice(0, 4), optional);
    await typed.send('mary@example');
    expect([at(typed), viewOf(typed)?.error]).toEqual(['awaitingEmail', { key: 'pay.emailInvalid' }]);
  });

  it("without the organization's address the email is required: no Skip, and a skip is refused", async () => {
    const t = await drive(BANK.slice(0, 4));
    expect(viewOf(t)?.choices).toBeUndefined();
    const s = forged(t, 'skipEmail');
    expect([s.value, currentView(s)?.error]).toEqual(['awaitingEmail', { key: 'common.pickOne' }]);
  });

  it('refuses a malformed email for a bank transfer', async () => {
    const t = await drive(BANK.slice(0, 4));
    await t.send('mary@example');
    expect([at(t), viewOf(t)?.error]).toEqual(['awaitingEmail', { key: 'pay.emailInvalid' }]);
  });

  it('takes the currency with the amount when there is only one', async () => {
    const t = await drive(MONEY.slice(0, 4), { settings: { currencies: ['KES'] } });
    await t.send('250');
    expect(at(t)).toBe('confirming');
    expect(ctx(t).currency).toBe('KES');
    await t.back();
    expect(at(t)).toBe('awaitingAmount');
    expect(ctx(t).currency).toBeUndefined();
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
    const t = await opened({
      ...PHONE,
      settings: { currencies: ['UGX'] },
      answers: { recentPayees: recent, lookupContact: knownNumber },
    });
    // An answer that is no choice: the list is shown again (with the reason), once the payees were read.
    await t.send('x');
    const list = viewOf(t);
    expect(list?.text).toEqual({ key: 'pay.chooseWho' });
    expect(list?.choices?.map((c) => c.id)).toEqual(['recent0', 'recent1', 'money', 'airtime', 'bank']);
    expect(list?.choices?.[0]?.text).toEqual({ key: 'pay.recent.money', params: { name: 'Sarah Nakato' } });
    expect(list?.choices?.[1]?.text).toEqual({ key: 'pay.recent.airtime', params: { name: '+256772000002' } });
    const waits: unknown[] = [];
    for (const act of [
      () => t.choose('recent0'),
      () => t.send('5000'),
      () => t.choose('confirm'),
      () => t.send('1234'),
    ]) {
      await act();
      waits.push(at(t));
    }
    expect(waits).toEqual(['awaitingAmount', 'confirming', 'awaitingPin', 'done']);
    expect(inputOf(t, 'createPayment')).toMatchObject({
      paymentType: 'money',
      phonenumber: '+256772000001',
      description: 'Mobile money payment',
      payeeName: 'Mary Akello',
    });
    expect(names(t)).not.toContain('verifyContact');
  });

  it('BACK from the amount of a picked payee returns to the list as it was', async () => {
    const t = await opened({ answers: { recentPayees: recent, lookupContact: knownNumber } });
    await t.send('').send(''); // refused: the list again, with the reason
    const first = ctx(t);
    await t.choose('recent1');
    expect([at(t), ctx(t).kind, ctx(t).phone]).toEqual(['awaitingAmount', 'airtime', '+256772000002']);
    await t.back();
    expect(at(t)).toBe('choosingKind');
    expect({ ...ctx(t), error: first.error }).toEqual(first);
  });

  it('among several currencies, the one they were last paid in is named on the amount screen: 5 screens', async () => {
    const t = await opened({
      ...PHONE,
      settings: { currencies: ['UGX', 'KES', 'BXC'] },
      answers: {
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', name: 'Sarah Nakato', currency: 'KES' }] },
        lookupContact: knownNumber,
      },
    });
    await t.choose('recent0');
    expect(at(t)).toBe('awaitingAmount');
    expect(viewOf(t)).toMatchObject({
      text: { key: 'pay.askAmountIn', params: { currency: 'KES' } },
      input: 'amount',
      choices: [{ id: 'otherCurrency', text: { key: 'pay.otherCurrency' } }],
    });
    const waits: unknown[] = [];
    for (const act of [() => t.send('700'), () => t.choose('confirm'), () => t.send('1234')]) {
      await act();
      waits.push(at(t));
    }
    // pick, amount, confirm, PIN: with the menu's "Pay someone", 5 answers after the dial.
    expect(waits).toEqual(['confirming', 'awaitingPin', 'done']);
    expect(inputOf(t, 'createPayment')).toMatchObject({ amount: '700', currency: 'KES' });
  });

  it('"Another currency" on the amount screen: the currencies, then the amount in the one chosen; BACK keeps it', async () => {
    const t = await opened({
      answers: {
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', name: 'Sarah Nakato', currency: 'KES' }] },
        lookupContact: knownNumber,
      },
    });
    await t.choose('recent0').choose('otherCurrency');
    expect(at(t)).toBe('choosingCurrency');
    await t.back();
    expect([at(t), ctx(t).currency]).toEqual(['awaitingAmount', 'KES']);
    await t.choose('otherCurrency').choose('UGX');
    expect(viewOf(t)?.text).toEqual({ key: 'pay.askAmountIn', params: { currency: 'UGX' } });
    await t.send('5000');
    expect([at(t), ctx(t).amount, ctx(t).currency]).toEqual(['confirming', '5000', 'UGX']);
    // Back from the summary: the amount screen, still naming the currency.
    await t.back();
    expect([at(t), ctx(t).amount, ctx(t).currency]).toEqual(['awaitingAmount', undefined, 'UGX']);
  });

  it('a currency the role may no longer pay in is not proposed: the amount, then the currency, as for anyone', async () => {
    const t = await opened({
      settings: { currencies: ['UGX', 'BXC'] },
      answers: {
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', currency: 'KES' }] },
        lookupContact: knownNumber,
      },
    });
    await t.choose('recent0');
    expect(viewOf(t)?.text).toEqual({ key: 'pay.askAmount' });
    await t.send('5000');
    expect(at(t)).toBe('choosingCurrency');
  });

  it("the test currency is offered only to pay one of the service's test numbers, and never to a bank", async () => {
    const settings = {
      currencies: ['UGX', 'BXC'],
      countryCurrencies: { UG: ['UGX'] },
      testCurrencies: ['BXC'],
      testNumbers: ['+256772000001'],
    };
    const test = await opened({ settings });
    await test.choose('money').send('0772000001').send('Jane').send('Doe').send('5000');
    expect([at(test), viewOf(test)?.choices?.map((c) => c.label)]).toEqual(['choosingCurrency', ['UGX', 'BXC']]);
    await test.choose('BXC');
    expect([at(test), ctx(test).currency]).toEqual(['confirming', 'BXC']);

    const anyone = await opened({ settings });
    await anyone.choose('money').send('0772123456').send('Jane').send('Doe').send('5000');
    expect([at(anyone), ctx(anyone).currency]).toEqual(['confirming', 'UGX']);
    expect((forged(anyone, 'BXC').context as { currency?: string }).currency).toBe('UGX');

    const bank = await drive(BANK.slice(0, 5), { settings, answers: { lookupContact: knownNumber } });
    await bank.send('+256772000001').send('20000');
    expect([at(bank), ctx(bank).currency]).toEqual(['confirming', 'UGX']);
  });

  it("a number of another country than the caller's says so on the summary, in every language", async () => {
    // A Kenyan on WhatsApp (a chat with their number), offered Kenya's currency.
    const kenyan: FlowTestOptions = { channel: 'whatsapp', user: '+254712345680', settings: COUNTRIES };
    const home = await opened(kenyan);
    await home.choose('money').send('0712000001').send('Jane').send('Doe').send('700');
    expect([at(home), ctx(home).phone, ctx(home).currency]).toEqual(['confirming', '+254712000001', 'KES']);
    expect(viewOf(home)?.notice).toBeUndefined();

    const abroad = await opened(kenyan);
    await abroad.choose('money').send('+256712000001').send('Jane').send('Doe').send('700');
    await abroad.sees('This number is abroad (Uganda).');
    const view = viewOf(abroad)!;
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
    const t = await opened({
      answers: {
        recentPayees: { output: [{ kind: 'money', phone: '+256772000001', currency: 'KES' }] },
        lookupContact: knownNumber,
        checkSpend: limit,
      },
    });
    await t.choose('recent0').send('700');
    expect([at(t), ctx(t).amount, ctx(t).currency]).toEqual(['awaitingAmount', undefined, 'KES']);
    expect(viewOf(t)?.error?.key).toBeDefined();
    expect(viewOf(t)?.text).toEqual({ key: 'pay.askAmountIn', params: { currency: 'KES' } });
  });

  it('a bank payee paid before: listed, and paid again with its account remembered (no account screens)', async () => {
    const account = {
      id: 'bank-1',
      name: 'Stanbic',
      accountNumber: '0123456789',
      accountName: 'Mary Akello',
      email: 'mary@example.com',
    };
    const t = await opened({
      ...PHONE,
      settings: { currencies: ['UGX'] },
      answers: {
        recentPayees: { output: [{ kind: 'bank', phone: '+256772123456', currency: 'UGX', bank: account }] },
        lookupContact: knownNumber,
      },
    });
    await t.send('x');
    expect(viewOf(t)?.choices?.[0]?.text).toEqual({ key: 'pay.recent.bank', params: { name: 'Mary Akello' } });
    const waits: unknown[] = [];
    for (const act of [
      () => t.choose('recent0'),
      () => t.send('20000'),
      () => t.choose('confirm'),
      () => t.send('1234'),
    ]) {
      await act();
      waits.push(at(t));
    }
    expect(waits).toEqual(['awaitingAmount', 'confirming', 'awaitingPin', 'done']);
    expect(names(t)).not.toContain('listBanks');
    expect(inputOf(t, 'createPayment')).toMatchObject({
      paymentType: 'bank',
      bank: { bank: 'bank-1', name: 'Stanbic', accountNumber: '0123456789', accountName: 'Mary Akello' },
    });
  });

  it('none known, or the store not answering: the kinds alone, as before', async () => {
    for (const answer of [{ output: [] }, failure('connection')]) {
      const t = await opened({ answers: { recentPayees: answer } });
      await t.send('');
      expect(viewOf(t)?.text.key).toBe('pay.chooseKind');
      expect(viewOf(t)?.choices?.map((c) => c.id)).toEqual(['money', 'airtime', 'bank']);
    }
  });
});

describe('pay machine: back', () => {
  for (const [name, script, options] of [
    ['money to a new number, with a PIN', [...MONEY, confirm('awaitingPin')], PHONE],
    ['bank transfer to a known number', BANK, { answers: { lookupContact: knownNumber } }],
  ] as Array<[string, Script, FlowTestOptions]>) {
    it(`${name}: BACK from every step returns to the previous one as it was first reached`, async () => {
      const t = await opened(options);
      const reached = [{ value: at(t), context: ctx(t) }];
      for (const [act, expected] of script) {
        await act(t);
        expect(at(t)).toBe(expected);
        reached.push({ value: at(t), context: ctx(t) });
      }
      for (let i = 1; i < reached.length; i++) {
        const again = await drive(script.slice(0, i), options);
        // An error on screen is cleared by going back (a PIN answer goes to the check instead).
        if (reached[i]!.value !== 'awaitingPin') await again.send('');
        await again.back();
        expect({ value: at(again), context: ctx(again) }).toEqual(reached[i - 1]);
      }
    });
  }

  it('BACK from the first step leaves for the menu without sending anything', async () => {
    const t = await opened();
    await t.back().sees('What would you like to do?');
    expect(t.flow()?.id).toBe('menu');
    expect(names(t)).toEqual(['recentPayees']);
  });

  it('BACK after the network check returns to the currency, forgetting the check', async () => {
    const t = await drive(MONEY.slice(0, -1), { answers: { verifyContact: verified('JOHN OKELLO') } });
    const atCurrency = ctx(t);
    await MONEY.at(-1)![0](t);
    expect(at(t)).toBe('confirmingName');
    await t.back();
    expect([at(t), ctx(t)]).toEqual(['choosingCurrency', atCurrency]);
  });

  it('a note added at the summary goes back to the summary; BACK from it adds none', async () => {
    const t = await drive([...MONEY, [(t) => t.choose('note'), 'awaitingDescription']]);
    await t.back();
    expect([at(t), ctx(t).description]).toEqual(['confirming', undefined]);
    await t.choose('note').send('School fees');
    expect([at(t), ctx(t).description]).toEqual(['confirming', 'School fees']);
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
  const oneCurrency: FlowTestOptions = { settings: { currencies: ['UGX'] }, answers: { lookupContact: namedBefore } };

  it("the first-name screen offers the network's name; paying it verifies nothing again", async () => {
    const t = await opened(oneCurrency);
    await t.choose('money').send('0772000001');
    expect(at(t)).toBe('awaitingFirstName');
    expect(viewOf(t)).toMatchObject({
      text: { key: 'pay.askFirstNameOrNetwork', params: { phone: '+256772000001', networkName: 'SARAH NAKATO' } },
      input: 'text',
      choices: [{ id: 'payNetworkName', text: { key: 'pay.payNetworkName', params: { networkName: 'SARAH NAKATO' } } }],
    });
    await t.choose('payNetworkName');
    expect([at(t), ctx(t).firstName, ctx(t).lastName]).toEqual(['awaitingAmount', 'SARAH', 'NAKATO']);
    await t.send('5000');
    expect(at(t)).toBe('confirming');
    expect(viewOf(t)?.text.params).toMatchObject({ name: 'SARAH NAKATO' });
    // BACK from the summary: the amount; from the amount: the name offered again.
    await t.back();
    expect(at(t)).toBe('awaitingAmount');
    await t.back();
    expect([at(t), ctx(t).firstName]).toEqual(['awaitingFirstName', undefined]);
    await t.choose('payNetworkName').send('5000').choose('confirm');
    expect(names(t)).not.toContain('verifyContact');
    expect(inputOf(t, 'createPayment')).toMatchObject({
      firstName: 'SARAH',
      lastName: 'NAKATO',
      payeeName: 'SARAH NAKATO',
    });
  });

  it('typing names goes on as before; airtime, or a number never verified, offers no name', async () => {
    const t = await opened(oneCurrency);
    await t.choose('money').send('0772000001').send('Sarah');
    expect(at(t)).toBe('awaitingLastName');
    await t.send('Nakato').send('5000');
    // Typed the network's name (any case and order): nothing to verify again.
    expect(at(t)).toBe('confirming');
    expect(names(t)).not.toContain('verifyContact');

    const airtime = await opened({ answers: { lookupContact: namedBefore } });
    await airtime.choose('airtime').send('0772000001');
    expect(viewOf(airtime)?.text).toEqual({ key: 'pay.askFirstName' });
    expect(forged(airtime, 'payNetworkName').context.error).toEqual({ key: 'common.pickOne' });
    const unverified = await opened({ answers: { lookupContact: unknownNumber } });
    await unverified.choose('money').send('0772000001');
    expect(viewOf(unverified)?.text).toEqual({ key: 'pay.askFirstName' });
  });
});

describe('pay machine: the network check', () => {
  it('skips verification for a known number, airtime and bank transfers', async () => {
    const known = await drive(MONEY.slice(0, 2), { answers: { lookupContact: knownNumber } });
    expect(at(known)).toBe('awaitingAmount');
    await known.send('100').choose('UGX').send('Lunch');
    expect(at(known)).toBe('confirming');
    const airtime = await drive([[(t) => t.choose('airtime'), 'awaitingPhone'], ...MONEY.slice(1)]);
    expect(at(airtime)).toBe('confirming');
    for (const t of [known, airtime]) expect(names(t)).not.toContain('verifyContact');
  });

  it('a matching name in another case and order goes straight to the summary', async () => {
    const t = await drive(MONEY, { answers: { verifyContact: verified('DOE JANE') } });
    expect(at(t)).toBe('confirming');
    expect(inputOf(t, 'verifyContact')).toEqual({
      phonenumber: '+256772123456',
      firstName: 'Jane',
      lastName: 'Doe',
      channel: 'telegram',
      userId: 'user-1',
    });
  });

  it("a different name shows the network's name; paying it pays that name, another number starts again", async () => {
    const t = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    expect(at(t)).toBe('confirmingName');
    expect(viewOf(t)?.text).toEqual({
      key: 'pay.confirmName',
      params: { networkName: 'JOHN OKELLO', name: 'Jane Doe' },
    });
    expect(viewOf(t)?.choices?.map((c) => c.id)).toEqual(['payNetworkName', 'otherNumber', 'stop']);
    // Paying the network's name: the summary and the payment carry it, so the service's name check passes.
    await t.choose('payNetworkName');
    expect(at(t)).toBe('confirming');
    expect(viewOf(t)?.text.params).toMatchObject({ name: 'JOHN OKELLO' });
    expect(ctx(t)).toMatchObject({ firstName: 'JOHN', lastName: 'OKELLO' });
    await t.choose('confirm');
    expect(inputOf(t, 'createPayment')).toMatchObject({ firstName: 'JOHN', lastName: 'OKELLO' });
    const again = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    await again.choose('otherNumber');
    expect(at(again)).toBe('awaitingPhone');
    expect(ctx(again)).toMatchObject({ kind: 'money' });
    for (const field of ['phone', 'firstName', 'lastName', 'amount', 'currency', 'description', 'verified'])
      expect(ctx(again)[field]).toBeUndefined();
  });

  it("paying the typed name against a mismatch is offered only when the organization's name check is off", async () => {
    const strict = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    expect(viewOf(strict)?.choices?.map((c) => c.id)).not.toContain('payTypedName');
    // A forged or stale choice is refused there.
    expect(currentView(forged(strict, 'payTypedName'))?.error).toEqual({ key: 'common.pickOne' });
    const lenient = await drive(MONEY, {
      settings: { nameMatchAffectsPayment: false },
      answers: { verifyContact: verified('JOHN OKELLO') },
    });
    expect(viewOf(lenient)?.choices?.map((c) => c.id)).toEqual([
      'payNetworkName',
      'payTypedName',
      'otherNumber',
      'stop',
    ]);
    await lenient.choose('payTypedName');
    expect(viewOf(lenient)?.text.params).toMatchObject({ name: 'Jane Doe' });
    await lenient.choose('confirm');
    expect(inputOf(lenient, 'createPayment')).toMatchObject({ firstName: 'Jane', lastName: 'Doe' });
  });

  it('stopping at a name mismatch sends nothing', async () => {
    const t = await drive(MONEY, { answers: { verifyContact: verified('JOHN OKELLO') } });
    await t.choose('stop');
    expect(viewOf(t)).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(names(t)).not.toContain('createPayment');
  });

  it('a number not registered for mobile money is explained; stopping sends nothing', async () => {
    const t = await drive(MONEY, { answers: { verifyContact: verified('JANE DOE', false) } });
    expect(at(t)).toBe('notRegistered');
    expect(viewOf(t)?.text).toEqual({ key: 'pay.notRegistered', params: { phone: '+256772123456' } });
    await t.choose('stop');
    expect(viewOf(t)).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(names(t)).not.toContain('createPayment');
  });
});

describe('pay machine: PIN', () => {
  const atPin = (verifyPin: Answers['verifyPin']) =>
    drive([...MONEY, confirm('awaitingPin')], { ...PHONE, answers: { verifyPin } });
  const phoneUser = { channel: 'ussd', userId: '+256772123456' };

  it('a wrong PIN is re-asked with the attempts left; the right one pays; the PIN is never kept in context', async () => {
    const t = await atPin(
      inTurn(failure('pin_wrong', { message: '2 attempts left' }), failure('pin_wrong'), { output: undefined }),
    );
    await t.send('8080');
    expect([at(t), viewOf(t)?.error]).toEqual(['awaitingPin', { key: 'pay.pinWrongLeft', params: { left: 2 } }]);
    await t.send('9191');
    expect(viewOf(t)?.error).toEqual({ key: 'pay.pinWrong' });
    await t.send('4646');
    expect(at(t)).toBe('done');
    expect(t.calls.filter((c) => c.name === 'verifyPin').map((c) => c.input)).toEqual(
      ['8080', '9191', '4646'].map((pin) => ({ ...phoneUser, pin })),
    );
    expect(t.calls.filter((c) => c.name === 'createPayment')).toHaveLength(1);
    expect(JSON.stringify(ctx(t))).not.toMatch(/8080|9191|4646/);
    expect(JSON.stringify(t.stored())).not.toMatch(/8080|9191|4646/);
  });

  it('a locked PIN stops with the reason and sends nothing', async () => {
    const t = await atPin(failure('pin_locked'));
    await t.send('8080');
    expect(viewOf(t)).toEqual({ text: { key: 'failure.pin_locked' }, final: true });
    expect(names(t)).not.toContain('reserveSpend');
    expect(names(t)).not.toContain('createPayment');
  });
});

describe('pay machine: refusing early, with the figure', () => {
  const overDay: ServiceFailure = {
    code: 'limit_exceeded',
    limit: { per: 'day', max: '500000', spent: '1500000', currency: 'UGX' },
  };

  it('checks role and limits when the amount is known, before the description, the summary and the PIN', async () => {
    const t = await drive(MONEY.slice(0, 5), {
      answers: { checkSpend: failure('limit_exceeded', { limit: overDay.limit }) },
    });
    await t.choose('UGX');
    expect(t.calls.at(-1)).toEqual({
      name: 'checkSpend',
      input: { channel: 'telegram', userId: 'user-1', flow: 'pay', amount: '1500', currency: 'UGX', pin: false },
    });
    // The amount is asked again, saying how much may still be sent today; nothing else was asked or reserved.
    expect(at(t)).toBe('awaitingAmount');
    expect(viewOf(t)?.error).toEqual({
      key: 'failure.limit_exceeded.day',
      params: { max: '500000', spent: '1500000', currency: 'UGX' },
    });
    expect(ctx(t).amount).toBeUndefined();
    expect(names(t)).not.toContain('reserveSpend');
  });

  it('a smaller amount then goes on; a role refusal is said at once too', async () => {
    const t = await drive(MONEY.slice(0, 5), {
      answers: {
        checkSpend: inTurn(failure('limit_exceeded', { limit: { per: 'payment', max: '1000', currency: 'UGX' } }), {
          output: undefined,
        }),
      },
    });
    await t.choose('UGX');
    expect(viewOf(t)?.error).toEqual({
      key: 'failure.limit_exceeded.payment',
      params: { max: '1000', currency: 'UGX' },
    });
    await t.send('900').choose('UGX');
    expect([at(t), ctx(t).amount, viewOf(t)?.error]).toEqual(['confirming', '900', undefined]);
    const refused = await drive(MONEY.slice(0, 5), { answers: { checkSpend: failure('not_allowed') } });
    await refused.choose('UGX');
    expect(viewOf(refused)?.error).toEqual({ key: 'failure.not_allowed' });
    // A locked PIN is told at the amount too, not after the summary and the PIN.
    const locked = await drive(MONEY.slice(0, 5), { answers: { checkSpend: failure('pin_locked') } });
    await locked.choose('UGX');
    expect([at(locked), viewOf(locked)?.error]).toEqual(['awaitingAmount', { key: 'failure.pin_locked' }]);
  });

  it('a check that could not be made does not stop the payment: the reservation checks again', async () => {
    const t = await drive(MONEY.slice(0, 5), { answers: { checkSpend: failure('connection') } });
    await t.choose('UGX');
    expect(at(t)).toBe('confirming');
  });
});

describe('pay machine: creating the payment', () => {
  it('creates it once with the key, the metadata, the names of a new number and the bank details', async () => {
    const money = await drive([...MONEY_NOTED, confirm('done')]);
    expect(money.calls.filter((c) => c.name === 'reserveSpend').map((c) => c.input)).toEqual([
      {
        channel: 'telegram',
        userId: 'user-1',
        flow: 'pay',
        amount: '1500',
        currency: 'UGX',
        duplicateCheckKey: 'run-1:pay',
      },
    ]);
    expect(money.calls.filter((c) => c.name === 'createPayment').map((c) => c.input)).toEqual([
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
    expect(viewOf(money)).toEqual({
      text: { key: 'pay.submitted', params: { ref: 'pay-1', amount: '1500', currency: 'UGX', name: 'Jane Doe' } },
      final: true,
    });
    expect(money.flow()!.snapshot.output).toEqual({});

    const bank = await drive([...BANK, confirm('done')], { answers: { lookupContact: knownNumber } });
    expect(inputOf(bank, 'createPayment')).toEqual({
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
    expect(viewOf(bank)?.text.key).toBe('pay.submitted');
  });

  it('a bank transfer to a new number asks no names after the account name, and names the contact by it', async () => {
    const bank = await drive([...BANK, confirm('done')]);
    expect(names(bank)).toContain('lookupContact');
    expect(inputOf(bank, 'createPayment')).toMatchObject({
      paymentType: 'bank',
      firstName: 'Mary',
      lastName: 'Akello',
      payeeName: 'Mary Akello',
    });
    // Back from the amount goes to the number, not to a names screen.
    const back = await drive(BANK.slice(0, 6));
    await back.back();
    expect(at(back)).toBe('awaitingPhone');
    const failed = await drive(BANK.slice(0, 6), { answers: { lookupContact: { error: new Error('down') } } });
    expect(at(failed)).toBe('awaitingAmount');
  });

  it('the summary names a known payee by the name on record', async () => {
    const t = await drive(BANK, { answers: { lookupContact: knownNumber } });
    expect(viewOf(t)?.text).toEqual({
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
    const t = await drive(MONEY_NOTED);
    expect(viewOf(t)?.text.params).toMatchObject({ hasNote: 'yes', note: 'School fees' });
    await t.choose('confirm');
    expect(inputOf(t, 'createPayment')).toMatchObject({ description: 'School fees' });
  });

  it('the flow stored while creating keeps the key and metadata its call carries: one payment', async () => {
    const t = await drive([...MONEY, confirm('submitting')], { answers: { createPayment: held } });
    // Stored busy (through JSON), with the key a repeat of the call from the stored flow would carry.
    expect(at(t)).toBe('submitting');
    expect(t.flow()!.snapshot.hasTag('busy')).toBe(true);
    expect(ctx(t)).toMatchObject({ key: 'run-1:pay' });
    const made = t.calls.filter((c) => c.name === 'createPayment');
    expect(made).toHaveLength(1);
    expect(made[0]!.input).toMatchObject({ duplicateCheckKey: 'run-1:pay', metadata: { ref: 'run-1:pay' } });
    // The service holds the payment of a first call: the repeat under our key is AlreadySubmitted.
    await t.release('createPayment', { output: ALREADY_SUBMITTED });
    expect(viewOf(t)).toEqual({ text: { key: 'pay.submittedBefore', params: { hasRef: 'no' } }, final: true });
    expect(names(t).filter((n) => n === 'createPayment')).toHaveLength(1);
  });

  it('a payment out when the process restarts is made by the new one under the same key: one payment', async () => {
    const t = await drive([...MONEY, confirm('submitting')], { answers: { createPayment: held } });
    await expectKeyKeptAcrossRestart(t, 'createPayment', created);
    expect(viewOf(t)?.text).toMatchObject({ key: 'pay.submitted', params: { ref: 'pay-1' } });
  });

  it('a payment whose state is `submitted` is one the service made now, not one made earlier', async () => {
    const t = await drive([...MONEY, confirm('done')], {
      answers: { createPayment: { output: { id: 'pay-7', state: 'submitted', shortRef: 'MC-7KQ4X' } } },
    });
    // The reference people read is our short ref, not the service's id.
    expect(viewOf(t)?.text).toMatchObject({ key: 'pay.submitted', params: { ref: 'MC-7KQ4X' } });
    await t.sees('MC-7KQ4X').doesNotSee('pay-7');
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
      const t = await drive([...MONEY, confirm('done')], { answers: { createPayment: outcome } });
      expect(viewOf(t)).toEqual({ text, final: true });
      expect(names(t).filter((n) => n === 'createPayment')).toHaveLength(1);
    });
  }

  for (const code of ['limit_exceeded', 'not_allowed'] as Array<ServiceFailure['code']>) {
    it(`a spend refused with ${code} is explained and nothing is created`, async () => {
      const t = await drive([...MONEY, confirm('done')], { answers: { reserveSpend: failure(code) } });
      expect(viewOf(t)).toEqual({ text: { key: `failure.${code}` }, final: true });
      expect(names(t)).not.toContain('createPayment');
    });
  }

  it('cancelling the summary sends nothing', async () => {
    const t = await drive(MONEY);
    await t.choose('cancel');
    expect(viewOf(t)).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(names(t)).toEqual(['recentPayees', 'lookupContact', 'checkSpend', 'verifyContact']);
  });

  it("lists the banks of the caller's country (the engine's: their number's, else the channel's); none: said", async () => {
    const ugandan = await opened(PHONE);
    await ugandan.choose('bank');
    expect(inputOf(ugandan, 'listBanks')).toEqual({ country: 'UG' });
    const kenyan = await opened({ ...PHONE, user: '+254712345678' });
    await kenyan.choose('bank');
    expect(inputOf(kenyan, 'listBanks')).toEqual({ country: 'KE' });
    const chat = await opened({ settings: { channelCountries: { telegram: 'KE' } } });
    await chat.choose('bank');
    expect(inputOf(chat, 'listBanks')).toEqual({ country: 'KE' });

    const none = await opened({ ...PHONE, user: NIGERIAN, answers: { listBanks: { output: [] } } });
    await none.choose('bank');
    expect(at(none)).toBe('choosingKind');
    expect(viewOf(none)?.error).toEqual({ key: 'pay.noBanks' });
    expect(ctx(none).kind).toBeUndefined();
  });

  it('a caller offered no currency (their country has none allowed) is told so in one line, nothing offered', async () => {
    for (const recent of [{ output: [] }, failure('unknown')] as Outcome[]) {
      // A Nigerian on WhatsApp where Uganda's and Kenya's are the currencies, and a test one for test numbers.
      const nigerian = await opened({
        channel: 'whatsapp',
        user: NIGERIAN,
        settings: { ...COUNTRIES, currencies: ['UGX', 'KES', 'BXC'], testCurrencies: ['BXC'] },
        answers: { recentPayees: recent },
      });
      expect(nigerian.flow()!.snapshot.status).toBe('done');
      expect(viewOf(nigerian)).toEqual({ text: { key: 'pay.noCurrency' }, final: true });
      expect(names(nigerian)).toEqual(['recentPayees']);
    }
    for (const lang of LANGS) expect(render({ key: 'pay.noCurrency' }, lang)).not.toMatch(/\n|UGX|KES|BXC|NGN/);
  });

  it('a failed bank list or network check ends with the reason before anything is sent', async () => {
    const banks = await drive([[(t) => t.choose('bank'), 'done']], { answers: { listBanks: failure('service') } });
    expect(viewOf(banks)).toEqual({ text: { key: 'failure.service' }, final: true });
    const check = await drive(MONEY, { answers: { verifyContact: failure('rate_limited') } });
    expect(viewOf(check)).toEqual({ text: { key: 'failure.rate_limited' }, final: true });
    expect(names(check)).not.toContain('createPayment');
  });

  it('a failed local lookup asks the names as for a new number', async () => {
    const t = await drive(MONEY.slice(0, 2), { answers: { lookupContact: failure('unknown') } });
    expect(at(t)).toBe('awaitingFirstName');
  });
});

describe('pay machine: the same payment again (the journal knows it)', () => {
  const recent: Outcome = { output: { ref: 'run-0:pay', minutesAgo: 4, state: 'completed' } };
  const toRepeat: Script = [...MONEY, confirm('confirmingRepeat')];

  it('asks the journal with who pays whom how much, after the summary is confirmed', async () => {
    const t = await drive([...MONEY, confirm('done')]);
    expect(inputOf(t, 'recentPayment')).toEqual({
      channel: 'telegram',
      userId: 'user-1',
      payee: '+256772123456',
      amount: '1500',
      currency: 'UGX',
    });
    expect(names(t).slice(-3)).toEqual(['recentPayment', 'reserveSpend', 'createPayment']);
  });

  it('the same payee, amount and currency paid a moment ago: asked, and nothing reserved or sent before the answer', async () => {
    const t = await drive(toRepeat, { answers: { recentPayment: recent } });
    expect(at(t)).toBe('confirmingRepeat');
    expect(viewOf(t)).toEqual({
      text: { key: 'pay.repeat', params: { amount: '1500', currency: 'UGX', phone: '+256772123456', minutes: 4 } },
      choices: [
        { id: 'payAgain', text: { key: 'pay.payAgain' } },
        { id: 'cancel', text: { key: 'pay.cancel' } },
      ],
    });
    expect(names(t)).not.toContain('reserveSpend');
    expect(names(t)).not.toContain('createPayment');
  });

  it('"cancel" sends nothing; "send again" makes the second payment under this run\'s own key', async () => {
    const no = await drive(toRepeat, { answers: { recentPayment: recent } });
    await no.choose('cancel');
    expect(viewOf(no)).toEqual({ text: { key: 'pay.cancelled' }, final: true });
    expect(names(no)).not.toContain('createPayment');

    const yes = await drive(toRepeat, { answers: { recentPayment: recent } });
    await yes.choose('payAgain');
    expect(viewOf(yes)?.text.key).toBe('pay.submitted');
    expect(yes.calls.filter((c) => c.name === 'createPayment').map((c) => c.input.duplicateCheckKey)).toEqual([
      'run-1:pay',
    ]);
  });

  it('with a PIN, "send again" asks the PIN; BACK returns to the summary', async () => {
    const t = await drive(toRepeat, { ...PHONE, answers: { recentPayment: recent } });
    await t.choose('payAgain');
    expect(at(t)).toBe('awaitingPin');
    const back = await drive(toRepeat, { answers: { recentPayment: recent } });
    await back.back();
    expect(at(back)).toBe('confirming');
    expect(ctx(back).repeat).toBeUndefined();
  });

  // Only a completed payment is said to be paid: one still open is said to be on its way or awaiting approval.
  it.each([
    ['intended', 'open'],
    ['submitted', 'open'],
    ['held', 'held'],
    ['a state not known here', 'open'],
  ])('a payment of the same still %s is not said to be paid, and is named by its short ref', async (state, stage) => {
    const open: Outcome = { output: { ref: 'run-0:pay', minutesAgo: 2, state, shortRef: 'MP-7KQ4XZ' } };
    const t = await drive(toRepeat, { answers: { recentPayment: open } });
    expect(at(t)).toBe('confirmingRepeat');
    const view = viewOf(t)!;
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
    await t.sees('Ref MP-7KQ4XZ.');
    expect(names(t)).not.toContain('createPayment');
    // The same choices as for a completed one: "send again" makes the second payment under this run's own key.
    await t.choose('payAgain');
    expect(viewOf(t)?.text.key).toBe('pay.submitted');
    expect(t.calls.filter((c) => c.name === 'createPayment').map((c) => c.input.duplicateCheckKey)).toEqual([
      'run-1:pay',
    ]);
  });

  it('an open payment of the same without a short ref (an answer stored before it was given) names none', async () => {
    const open: Outcome = { output: { ref: 'run-0:pay', minutesAgo: 0, state: 'submitted' } };
    const t = await drive(toRepeat, { answers: { recentPayment: open } });
    const text = viewOf(t)!.text;
    expect(text.params).toMatchObject({ hasRef: 'no', stage: 'open' });
    expect(render(text, 'en')).not.toContain('Ref');
  });

  it('a journal that cannot answer does not stop the payment', async () => {
    const t = await drive([...MONEY, confirm('done')], { answers: { recentPayment: failure('unknown') } });
    expect(viewOf(t)?.text.key).toBe('pay.submitted');
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
