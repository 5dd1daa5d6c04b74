/**
 * Pay someone: mobile money, airtime or a bank transfer. Asks who and how much, checks a new number on
 * its network (mobile money only), shows a summary, confirms (with a PIN when the channel wants one),
 * reserves the amount in the user's limits and creates the payment once, under an idempotency key made
 * from the run id when the flow starts.
 */
import { and, assign, setup } from 'xstate';
import { serviceActors } from './actors.js';
import { chosenId } from './events.js';
import { createFailureText, failureText, type FailureKeys } from './failure.js';
import { countryOf, namesWithin, parseAmount, parseName, parsePhone, parseText, type Invalid } from './input.js';
import { payMessages } from './messages/pay.js';
import { outcomeOfText } from './outcome.js';
import { answered, ask, backIn, chosen, isValid, store } from './steps.js';
import {
  isAlreadySubmitted,
  isHeld,
  refParams,
  shownRef,
  type BankChoice,
  type ContactCheck,
  type Created,
  type Held,
  type PaymentResult,
  type RecentPayee,
  type RecentPayment,
  type ShortRef,
} from './calls.js';
import {
  contextFromInput,
  isServiceFailure,
  type FlowEvent,
  type FlowInput,
  type FlowModule,
  type FlowOutcome,
  type FlowOutput,
  type Text,
  type View,
} from './types.js';

/** What is paid: mobile money, airtime, or a transfer to a bank account. */
export type PayKind = 'money' | 'airtime' | 'bank';
const KINDS: readonly PayKind[] = ['money', 'airtime', 'bank'];

/** Everything the pay flow has learnt so far. JSON only: amounts are decimal strings. */
export interface PayContext {
  input: FlowInput;
  /** Duplicate-Check-Key and metadata ref of the payment: `${runId}:pay`, made at start, never changed. */
  key: string;
  kind?: PayKind;
  /** The people this user paid lately, listed first (read once when the flow starts). */
  recent?: RecentPayee[];
  /** Set when the payee was picked from {@link recent}: Back from the amount returns to that list. */
  picked?: boolean;
  /**
   * Set when the currency is known before the amount (a recent payee's, with a choice of currencies): the amount
   * screen names it and offers another, so no currency screen follows.
   */
  currencyFirst?: boolean;
  banks?: BankChoice[];
  bankId?: string;
  /** The bank's name as listed (the summary names it). */
  bankName?: string;
  accountNumber?: string;
  accountName?: string;
  email?: string;
  /** The payee's number, international `+` format. */
  phone?: string;
  /** What this product already knew of the number (the local lookup). */
  contact?: ContactCheck;
  /** What instant verification said of a new number (mobile money only). */
  verified?: ContactCheck;
  firstName?: string;
  lastName?: string;
  amount?: string;
  currency?: string;
  /** What the recipient is told; {@link DEFAULT_DESCRIPTION} of the kind unless a note was added at the summary. */
  description?: string;
  /** The same payment made a moment ago (the journal's), when the user is asked whether they mean a second one. */
  repeat?: RecentPayment;
  /** Why the last answer was refused (catalogue text: some reasons carry parameters). */
  error?: Text;
  /** The last screen's words: the result, a failure, or a cancellation. */
  outcome?: Text;
  /** Set when the user backs out of the first step: the flow ends and the menu starts. */
  next?: 'menu';
}

/** Longest description: the service sends it to the recipient and keeps it to about 140 characters. */
export const DESCRIPTION_MAX = 140;
/**
 * The description a payment carries when the payer adds no note (the service requires one): no screen asks for
 * it, the summary offers "Add a note".
 */
export const DEFAULT_DESCRIPTION: Record<PayKind, string> = {
  money: 'Mobile money payment',
  airtime: 'Airtime',
  bank: 'Bank transfer',
};
/**
 * The currencies this payment may be made in: the caller's (FlowInput.currencies), and the test currencies when
 * the payee is one of the service's test numbers (a bank account never is).
 */
function currenciesFor(context: PayContext, phone = context.phone, kind = context.kind): string[] {
  const { currencies, testCurrencies, testNumbers } = context.input;
  const test = testCurrencies && kind !== 'bank' && phone !== undefined && testNumbers?.includes(phone);
  return test ? [...currencies, ...testCurrencies] : currencies;
}
/**
 * The summary with, when the payee's number is of another country than the caller's, a notice saying so (a bank
 * account's country is its bank's, listed for the caller's country: never abroad). A payment across a border is
 * never made by accident. The notice takes the place of a refused choice's line: both would not fit one screen.
 */
function withAbroad(context: PayContext, view: View): View {
  const country = context.kind === 'bank' ? undefined : countryOf(context.phone);
  if (!country || country === context.input.defaultCountry.toUpperCase()) return view;
  const { error: _refused, ...summary } = view;
  return { ...summary, notice: { key: 'pay.abroad', params: { country } } };
}

/** The choice id of recent payee `i` (its place in {@link PayContext.recent}). */
const recentId = (i: number): string => `recent${i}`;
const NAME_MAX = 50;
const ACCOUNT_MAX = 34;
const EMAIL_MAX = 254;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The free-text answers of the flow, each named for the context field it fills. */
type Field = 'accountNumber' | 'accountName' | 'email' | 'phone' | 'firstName' | 'lastName' | 'amount' | 'description';

/** Reads the answer typed for `field`: the context update, or why it is refused. */
function readAnswer(
  field: Field,
  context: PayContext,
  event: FlowEvent,
): { ok: true; update: Partial<PayContext> } | Invalid {
  const value = event.type === 'ANSWERED' ? event.value : '';
  switch (field) {
    case 'phone': {
      const phone = parsePhone(value, context.input.defaultCountry);
      return phone.ok ? { ok: true, update: { phone: phone.e164 } } : phone;
    }
    case 'amount': {
      const amount = parseAmount(value);
      if (!amount.ok) return amount;
      // With one currency there is nothing to choose: it comes with the amount (a currency named first stays).
      const [only, ...others] = currenciesFor(context);
      if (context.currencyFirst) return { ok: true, update: { amount: amount.amount } };
      return { ok: true, update: { amount: amount.amount, ...(others.length === 0 ? { currency: only } : {}) } };
    }
    case 'email': {
      const email = parseText(value, EMAIL_MAX);
      if (!email.ok) return email;
      return EMAIL.test(email.text)
        ? { ok: true, update: { email: email.text } }
        : { ok: false, reason: { key: 'pay.emailInvalid' } };
    }
    case 'firstName':
    case 'lastName': {
      const name = parseName(value, NAME_MAX);
      return name.ok ? { ok: true, update: { [field]: name.text } } : name;
    }
    default: {
      const max = field === 'description' ? DESCRIPTION_MAX : field === 'accountNumber' ? ACCOUNT_MAX : NAME_MAX;
      const text = parseText(value, max);
      return text.ok ? { ok: true, update: { [field]: text.text } } : text;
    }
  }
}

/** The payee as summaries name them: the name we have, else the number. */
function payeeName(context: PayContext): string {
  const known = context.contact?.known === true;
  const name = [
    known ? context.contact?.firstName : context.firstName,
    known ? context.contact?.lastName : context.lastName,
  ];
  return name.filter(Boolean).join(' ') || (context.phone ?? '');
}

/**
 * True when the network holds a name and the given one is not part of it. Words are compared without
 * case or order, so `Okello John` matches `JOHN OKELLO` and `John Peter Okello`.
 */
function hasDifferentName(context: PayContext, check: ContactCheck): boolean {
  if (!check.nameOnNetwork) return false;
  const typed = `${context.firstName ?? ''} ${context.lastName ?? ''}`.trim();
  return typed !== '' && !namesWithin(typed, check.nameOnNetwork);
}

/**
 * True when the names to pay are the network's, as an earlier instant verification of this number told them
 * (kept for everyone by verifyContact: the network's facts, never names someone typed): nothing to verify
 * again, as the service's name check will pass.
 */
function namedByNetwork(context: PayContext): boolean {
  const check = context.contact;
  return check?.registered === true && !!check.nameOnNetwork && !hasDifferentName(context, check);
}

/**
 * True when the first-name screen offers the network's name: a mobile-money number new to this user that the
 * network named when it was verified here before (by anyone: the network's facts, kept by verifyContact).
 */
function offersNetworkName(context: PayContext): boolean {
  const check = context.contact;
  return context.kind === 'money' && check?.known !== true && check?.registered === true && !!check.nameOnNetwork;
}

/**
 * The first name of a new number's owner. When the network named the number before, the screen says that name
 * and offers to pay it (one key, no names typed); typing names goes on as for any new number.
 */
function firstNameView(context: PayContext): View {
  if (!offersNetworkName(context)) return ask('pay.askFirstName', 'text')(context);
  const networkName = context.contact?.nameOnNetwork ?? '';
  return {
    text: { key: 'pay.askFirstNameOrNetwork', params: { phone: context.phone ?? '', networkName } },
    error: context.error,
    input: 'text',
    choices: [{ id: 'payNetworkName', text: { key: 'pay.payNetworkName', params: { networkName } } }],
  };
}

/**
 * The bank receipt's email, typed on a keypad: asked, and skippable when the organization's address stands in
 * for it (FlowInput.bankEmailOptional); the contract requires one.
 */
function emailView(context: PayContext): View {
  if (context.input.bankEmailOptional !== true) return ask('pay.askEmail', 'text')(context);
  return {
    text: { key: 'pay.askEmailOrSkip' },
    error: context.error,
    input: 'text',
    choices: [{ id: 'skipEmail', text: { key: 'pay.skipEmail' } }],
  };
}

/** The summary's choices: confirm, cancel, and a note for the recipient (none is asked otherwise). */
const SUMMARY_CHOICES: NonNullable<View['choices']> = [
  { id: 'confirm', text: { key: 'pay.confirm' } },
  { id: 'cancel', text: { key: 'pay.cancel' } },
  { id: 'note', text: { key: 'pay.addNote' } },
];

/**
 * The amount screen. With the currency known first (a recent payee's, among several), it names it and offers
 * another: nothing to answer when it is the right one.
 */
function amountView(context: PayContext): View {
  if (!context.currencyFirst || !context.currency) return ask('pay.askAmount', 'amount')(context);
  return {
    text: { key: 'pay.askAmountIn', params: { currency: context.currency } },
    error: context.error,
    input: 'amount',
    choices: [{ id: 'otherCurrency', text: { key: 'pay.otherCurrency' } }],
  };
}

/** A screen of choices, with the reason the last answer was refused. */
function choose(context: PayContext, text: Text, choices: NonNullable<View['choices']>): View {
  return { text, error: context.error, choices };
}

/**
 * Failures of the create call. An answer lost after the client's retries (connection, 5xx, unreadable), or a
 * 429 that may follow an earlier attempt under the same key whose answer was lost (flows/types.ts madeNothing),
 * may hide a payment made: say so and never invite a retry. (A payment already made under our own key is
 * not a failure: it is the AlreadySubmitted result.)
 */
/**
 * The question about a payment of the same made a moment ago, saying where that one stands: "You paid" only
 * once the journal has it completed; one still open (not yet answered, submitted, or held for an approver) is
 * said to be on its way or waiting for approval, not finished, so nobody is told of money that has not moved.
 */
function repeatText(context: PayContext): Text {
  const repeat = context.repeat;
  const params = {
    amount: context.amount ?? '',
    currency: context.currency ?? '',
    phone: context.phone ?? '',
    minutes: repeat?.minutesAgo ?? 0,
  };
  if (repeat?.state === 'completed') return { key: 'pay.repeat', params };
  return {
    key: 'pay.repeatOpen',
    params: {
      ...params,
      stage: repeat?.state === 'held' ? 'held' : 'open',
      hasRef: repeat?.shortRef ? 'yes' : 'no',
      ref: repeat?.shortRef ?? '',
    },
  };
}

const PAYMENT_FAILURES: FailureKeys = {
  connection: 'pay.unconfirmed',
  service: 'pay.unconfirmed',
  unknown: 'pay.unconfirmed',
  rate_limited: 'pay.unconfirmed',
  validation: 'pay.refused',
};

/** How a run ended, by the words of its last screen (the failure texts are read by outcomeOfText). */
const PAY_OUTCOMES: Record<string, FlowOutcome> = {
  'pay.submitted': 'paid',
  'pay.unconfirmed': 'processing',
  'pay.submittedBefore': 'paid',
  'pay.held': 'processing',
  'pay.refused': 'failed',
  'pay.cancelled': 'cancelled',
  'pay.noCurrency': 'refused',
};

/** What a failed invoke hands its guards and actions. */
type Failed = { error: unknown };

const back = backIn<PayContext>();
/** "Enter another number": everything from the phone step on is asked again. */
const FROM_PHONE: Array<keyof PayContext> = [
  'picked',
  'currencyFirst',
  'phone',
  'contact',
  'verified',
  'firstName',
  'lastName',
  'amount',
  'currency',
  'description',
];

/**
 * Back from the summary (or the name check before it): the amount is asked again (the currency when there is a
 * choice of them), and what followed it (the network's check, a note) is forgotten.
 */
const AMOUNT_AGAIN = [
  { guard: 'hasOneCurrency', ...back('awaitingAmount', 'amount', 'currency', 'verified', 'description') },
  { guard: 'isCurrencyFirst', ...back('awaitingAmount', 'amount', 'verified', 'description') },
  back('choosingCurrency', 'currency', 'verified', 'description'),
] as const;

/** Back from the amount to the recent payees: all a pick filled is forgotten. */
const PICK_AGAIN: Array<keyof PayContext> = [
  'picked',
  'currencyFirst',
  'kind',
  'phone',
  'contact',
  'firstName',
  'lastName',
  'currency',
  'bankId',
  'bankName',
  'accountNumber',
  'accountName',
  'email',
];

/** The pay flow: FlowInput in, FlowOutput out (`next: 'menu'` when the user backs out of it). */
export const payMachine = setup({
  types: {
    context: {} as PayContext,
    events: {} as FlowEvent,
    input: {} as FlowInput,
    output: {} as FlowOutput,
  },
  actors: {
    listBanks: serviceActors.listBanks,
    lookupContact: serviceActors.lookupContact,
    verifyContact: serviceActors.verifyContact,
    verifyPin: serviceActors.verifyPin,
    checkSpend: serviceActors.checkSpend,
    reserveSpend: serviceActors.reserveSpend,
    createPayment: serviceActors.createPayment,
    recentPayment: serviceActors.recentPayment,
    recentPayees: serviceActors.recentPayees,
  },
  guards: {
    isValidAnswer: ({ context, event }, params: { field: Field }) => readAnswer(params.field, context, event).ok,
    isChosen: ({ event }, params: { id: string }) => event.type === 'CHOSEN' && event.id === params.id,
    isKind: ({ event }) => event.type === 'CHOSEN' && KINDS.some((kind) => kind === event.id),
    isRecentPayee: ({ context, event }) =>
      event.type === 'CHOSEN' && (context.recent ?? []).some((_, i) => recentId(i) === event.id),
    isPicked: ({ context }) => context.picked === true,
    isCurrencyFirst: ({ context }) => context.currencyFirst === true,
    /** The first-name screen offers the network's name for the number (firstNameView). */
    isOfferedNetworkName: ({ context }) => offersNetworkName(context),
    /** The names paid are the network's (offered on the first-name screen, or typed the same), not verified again. */
    isNamedByNetwork: ({ context }) =>
      context.contact?.known !== true && namedByNetwork(context) && context.kind === 'money',
    hasAmount: ({ context }) => context.amount !== undefined,
    hasBanks: (_, banks: BankChoice[]) => banks.length > 0,
    isListedBank: ({ context, event }) =>
      event.type === 'CHOSEN' && (context.banks ?? []).some((b) => b.id === event.id),
    isCurrency: ({ context, event }) => event.type === 'CHOSEN' && currenciesFor(context).includes(event.id),
    isBank: ({ context }) => context.kind === 'bank',
    isEmailOptional: ({ context }) => context.input.bankEmailOptional === true,
    isKnownContact: ({ context }) => context.contact?.known === true,
    isKnown: (_, check: ContactCheck) => check.known,
    isUnregistered: (_, check: ContactCheck) => !check.registered,
    hasNameMismatch: ({ context }, check: ContactCheck) => hasDifferentName(context, check),
    hasOneCurrency: ({ context }) => currenciesFor(context).length === 1,
    hasNoCurrency: ({ context }) => context.input.currencies.length === 0,
    /** The organization's name check is off at the service: a name differing from the network's is not refused. */
    mayPayMismatch: ({ context }) => context.input.nameMatchAffectsPayment === false,
    /**
     * Instant verification is about mobile money: airtime and bank payments skip it, known numbers too, and a
     * number paid the name the network gave for it when it was verified before.
     */
    hasToVerify: ({ context }) =>
      context.kind === 'money' && context.contact?.known !== true && !namedByNetwork(context),

    hasPin: ({ context }) => context.input.requirePin,
    isPinWrong: (_, { error }: Failed) => isServiceFailure(error) && error.code === 'pin_wrong',
    isPolicyRefusal: (_, { error }: Failed) =>
      isServiceFailure(error) &&
      (error.code === 'limit_exceeded' || error.code === 'not_allowed' || error.code === 'pin_locked'),
    isAlreadySubmitted: (_, result: Created<PaymentResult> | Held) => isAlreadySubmitted(result),
    isHeld: (_, result: Created<PaymentResult> | Held) => isHeld(result),
    isRecent: (_, recent: RecentPayment | null) => recent !== null,
  },
  actions: {
    storeAnswer: assign(({ context, event }, params: { field: Field }) => {
      const read = readAnswer(params.field, context, event);
      return read.ok ? { ...read.update, error: undefined } : { error: read.reason };
    }),
    storeKind: assign({ kind: ({ event }) => chosenId(event) as PayKind, error: undefined }),
    storeRecent: assign((_, recent: RecentPayee[]) => ({ recent })),
    /**
     * A recent payee picked: their kind, number and bank account, as if typed, and the currency they were last
     * paid in when the role may still pay in it (with a choice of currencies, the amount screen names it); their
     * names come from the lookup that follows.
     */
    storePicked: assign(({ context, event }) => {
      const payee = (context.recent ?? []).find((_, i) => recentId(i) === chosenId(event));
      const currencies = currenciesFor(context, payee?.phone, payee?.kind);
      const currency = payee?.currency && currencies.includes(payee.currency) ? payee.currency : undefined;
      const bank = payee?.kind === 'bank' ? payee.bank : undefined;
      return {
        kind: payee?.kind,
        phone: payee?.phone,
        picked: true,
        ...(currency && currencies.length > 1 ? { currency, currencyFirst: true } : {}),
        ...(bank
          ? {
              bankId: bank.id,
              bankName: bank.name,
              accountNumber: bank.accountNumber,
              accountName: bank.accountName,
              email: bank.email,
            }
          : {}),
        error: undefined,
      };
    }),
    storeBank: assign(({ context, event }) => ({
      bankId: chosenId(event),
      bankName: context.banks?.find((b) => b.id === chosenId(event))?.name,
      error: undefined,
    })),
    storeCurrency: assign({ currency: ({ event }) => chosenId(event), error: undefined }),
    storeBanks: assign((_, banks: PayContext['banks']) => ({ banks })),
    storeContact: assign((_, contact: ContactCheck) => ({ contact })),
    storeVerified: assign((_, verified: ContactCheck) => ({ verified })),
    storeRepeat: assign((_, repeat: RecentPayment | null) => ({ repeat: repeat ?? undefined })),
    forget: assign((_, { fields }: { fields: Array<keyof PayContext> }) =>
      Object.fromEntries([...fields, 'error'].map((field) => [field, undefined])),
    ),
    /** The payment in people's words: how much went to whom, and its reference (never the service's state). */
    notePayment: assign(({ context }, result: PaymentResult) => ({
      outcome: {
        key: 'pay.submitted',
        params: {
          ref: shownRef(result, result.id),
          amount: context.amount ?? '',
          currency: context.currency ?? '',
          name: payeeName(context),
        },
      },
    })),
    /**
     * Made earlier under our key, by a call whose answer was lost: the service's duplicate answer names no payment
     * (our short ref does).
     */
    noteSubmittedBefore: assign((_, result: ShortRef) => ({
      outcome: { key: 'pay.submittedBefore', params: refParams(result) },
    })),
    /** Held for an approver: nothing was sent yet. */
    noteHeld: assign(({ context }, result: ShortRef) => ({
      outcome: {
        key: 'pay.held',
        params: { amount: context.amount ?? '', currency: context.currency ?? '', ...refParams(result) },
      },
    })),
    refuseChoice: assign({ error: { key: 'common.pickOne' } }),
    refuseNoBanks: assign({ kind: undefined, banks: undefined, error: { key: 'pay.noBanks' } }),
    /**
     * The amount is asked again with the reason (the figure the limits allow); the amount is forgotten, and the
     * currency unless the amount screen names it.
     */
    refuseAmount: assign(({ context }, { error }: Failed) => ({
      error: failureText(error),
      amount: undefined,
      ...(context.currencyFirst ? {} : { currency: undefined }),
    })),
    rejectPin: assign((_, { error }: Failed) => ({ error: failureText(error, { pin_wrong: 'pay.pinWrong' }) })),
    clearError: assign({ error: undefined }),
    /**
     * A bank transfer to a number new to us: the contact the payment makes is named by the account name typed
     * (its first word the first name, the rest the last name; one word is both), never asked again.
     */
    useAccountName: assign(({ context }) => {
      const [first = '', ...rest] = (context.accountName ?? '').trim().split(/\s+/);
      return { firstName: first, lastName: rest.join(' ') || first, error: undefined };
    }),
    /**
     * Pay the name the network holds for the number, not the one typed: its first word as first name, the rest
     * as last name (one word: both), so the summary names who is paid and the payment's names match the network.
     */
    useNetworkName: assign(({ context }) => {
      const name = context.verified?.nameOnNetwork ?? context.contact?.nameOnNetwork ?? '';
      const [first = '', ...rest] = name.trim().split(/\s+/);
      return { firstName: first, lastName: rest.length > 0 ? rest.join(' ') : first, error: undefined };
    }),
    noteCancelled: assign({ outcome: { key: 'pay.cancelled' } }),
    noteNoCurrency: assign({ outcome: { key: 'pay.noCurrency' } }),
    /** Before the create call nothing was sent, whatever went wrong. */
    noteFailure: assign((_, { error }: Failed) => ({ outcome: failureText(error) })),
    notePaymentFailure: assign((_, { error }: Failed) => ({
      outcome: createFailureText(error, PAYMENT_FAILURES, 'pay.unconfirmed'),
    })),
    leaveToMenu: assign({ next: 'menu' as const }),
  },
}).createMachine({
  id: 'pay',
  context: contextFromInput((input) => ({
    input,
    key: `${input.runId}:pay`,
  })),
  initial: 'loadingPayees',
  states: {
    // The people this user paid lately are listed first, so paying one again is: pick, amount, confirm, PIN.
    // One read of the store; without an answer the kinds alone are offered.
    loadingPayees: {
      tags: ['busy'],
      invoke: {
        src: 'recentPayees',
        input: ({ context }) => ({ channel: context.input.channel, userId: context.input.userId }),
        // A caller offered no currency (their country has none the organization allows) is told so, not shown
        // another country's.
        onDone: [
          { guard: 'hasNoCurrency', actions: 'noteNoCurrency', target: 'done' },
          { actions: { type: 'storeRecent', params: ({ event }) => event.output }, target: 'choosingKind' },
        ],
        onError: [{ guard: 'hasNoCurrency', actions: 'noteNoCurrency', target: 'done' }, { target: 'choosingKind' }],
      },
    },
    choosingKind: {
      meta: {
        view: (context: PayContext): View =>
          choose(context, { key: (context.recent ?? []).length > 0 ? 'pay.chooseWho' : 'pay.chooseKind' }, [
            ...(context.recent ?? []).map((payee, i) => ({
              id: recentId(i),
              text: {
                key: `pay.recent.${payee.kind}`,
                params: { name: (payee.kind === 'bank' ? payee.bank?.accountName : payee.name) ?? payee.phone },
              },
            })),
            ...KINDS.map((id) => ({
              id,
              text: { key: (context.recent ?? []).length > 0 ? `pay.kind.new.${id}` : `pay.kind.${id}` },
            })),
          ]),
      },
      on: {
        CHOSEN: [
          { guard: 'isRecentPayee', actions: 'storePicked', target: 'lookingUpContact' },
          { guard: chosen('bank'), actions: 'storeKind', target: 'loadingBanks' },
          { guard: 'isKind', actions: 'storeKind', target: 'awaitingPhone' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: { actions: 'leaveToMenu', target: 'done' },
      },
    },
    loadingBanks: {
      tags: ['busy'],
      invoke: {
        src: 'listBanks',
        // The banks of the caller's country (their number's, else their channel's, else the default's).
        input: ({ context }) => ({ country: context.input.defaultCountry }),
        onDone: [
          {
            guard: { type: 'hasBanks', params: ({ event }) => event.output },
            actions: { type: 'storeBanks', params: ({ event }) => event.output },
            target: 'choosingBank',
          },
          { actions: 'refuseNoBanks', target: 'choosingKind' },
        ],
        onError: { actions: { type: 'noteFailure', params: ({ event }) => ({ error: event.error }) }, target: 'done' },
      },
    },
    choosingBank: {
      meta: {
        view: (context: PayContext): View =>
          choose(
            context,
            { key: 'pay.chooseBank' },
            (context.banks ?? []).map((b) => ({ id: b.id, label: b.name })),
          ),
      },
      on: {
        CHOSEN: [
          { guard: 'isListedBank', actions: 'storeBank', target: 'awaitingAccountNumber' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: back('choosingKind', 'kind', 'banks'),
      },
    },
    awaitingAccountNumber: {
      meta: { view: ask('pay.askAccountNumber', 'text') },
      on: {
        ANSWERED: answered('accountNumber', 'awaitingAccountName'),
        BACK: back('choosingBank', 'bankId', 'bankName'),
      },
    },
    awaitingAccountName: {
      meta: { view: ask('pay.askAccountName', 'text') },
      on: {
        ANSWERED: answered('accountName', 'awaitingEmail'),
        BACK: back('awaitingAccountNumber', 'accountNumber'),
      },
    },
    awaitingEmail: {
      meta: { view: emailView },
      on: {
        ANSWERED: answered('email', 'awaitingPhone'),
        // Offered only when the organization's address stands in (FlowInput.bankEmailOptional): none typed.
        CHOSEN: [
          { guard: and([chosen('skipEmail'), 'isEmailOptional']), actions: 'clearError', target: 'awaitingPhone' },
          { actions: 'refuseChoice' },
        ],
        BACK: back('awaitingAccountName', 'accountName'),
      },
    },
    awaitingPhone: {
      meta: { view: ask('pay.askPhone', 'phone') },
      on: {
        ANSWERED: answered('phone', 'lookingUpContact'),
        BACK: [{ guard: 'isBank', ...back('awaitingEmail', 'email') }, back('choosingKind', 'kind')],
      },
    },
    lookingUpContact: {
      tags: ['busy'],
      invoke: {
        src: 'lookupContact',
        input: ({ context }) => ({
          phonenumber: context.phone!,
          channel: context.input.channel,
          userId: context.input.userId,
        }),
        onDone: [
          {
            guard: { type: 'isKnown', params: ({ event }) => event.output },
            actions: { type: 'storeContact', params: ({ event }) => event.output },
            target: 'awaitingAmount',
          },
          // A bank transfer's payee is named by the account name just typed: no names asked again.
          {
            guard: 'isBank',
            actions: [{ type: 'storeContact', params: ({ event }) => event.output }, 'useAccountName'],
            target: 'awaitingAmount',
          },
          { actions: { type: 'storeContact', params: ({ event }) => event.output }, target: 'awaitingFirstName' },
        ],
        // The lookup is only a shortcut: without it, ask the names as for a new number (a bank's: its account name).
        onError: [
          { guard: 'isBank', actions: 'useAccountName', target: 'awaitingAmount' },
          { target: 'awaitingFirstName' },
        ],
      },
    },
    awaitingFirstName: {
      meta: { view: firstNameView },
      on: {
        ANSWERED: answered('firstName', 'awaitingLastName'),
        // Offered only when the network named the number before (firstNameView): its name, no names typed.
        CHOSEN: [
          {
            guard: and([chosen('payNetworkName'), 'isOfferedNetworkName']),
            actions: 'useNetworkName',
            target: 'awaitingAmount',
          },
          { actions: 'refuseChoice' },
        ],
        BACK: [
          { guard: 'isPicked', ...back('choosingKind', ...PICK_AGAIN) },
          back('awaitingPhone', 'phone', 'contact'),
        ],
      },
    },
    awaitingLastName: {
      meta: { view: ask('pay.askLastName', 'text') },
      on: {
        ANSWERED: answered('lastName', 'awaitingAmount'),
        BACK: back('awaitingFirstName', 'firstName'),
      },
    },
    awaitingAmount: {
      meta: { view: amountView },
      on: {
        ANSWERED: [
          { guard: and([isValid('amount'), 'hasOneCurrency']), actions: store('amount'), target: 'checkingAmount' },
          { guard: and([isValid('amount'), 'isCurrencyFirst']), actions: store('amount'), target: 'checkingAmount' },
          { guard: isValid('amount'), actions: store('amount'), target: 'choosingCurrency' },
          { actions: store('amount') },
        ],
        // "Another currency": offered only when the screen names one (a recent payee's, among several).
        CHOSEN: [
          {
            guard: and([chosen('otherCurrency'), 'isCurrencyFirst']),
            actions: 'clearError',
            target: 'choosingCurrency',
          },
          { actions: 'refuseChoice' },
        ],
        BACK: [
          { guard: 'isPicked', ...back('choosingKind', ...PICK_AGAIN) },
          { guard: 'isKnownContact', ...back('awaitingPhone', 'phone', 'contact') },
          { guard: 'isBank', ...back('awaitingPhone', 'phone', 'contact', 'firstName', 'lastName') },
          { guard: 'isNamedByNetwork', ...back('awaitingFirstName', 'firstName', 'lastName') },
          back('awaitingLastName', 'lastName'),
        ],
      },
    },
    choosingCurrency: {
      meta: {
        view: (context: PayContext): View =>
          choose(
            context,
            { key: 'pay.chooseCurrency' },
            currenciesFor(context).map((c) => ({ id: c, label: c })),
          ),
      },
      on: {
        CHOSEN: [
          { guard: and(['isCurrency', 'hasAmount']), actions: 'storeCurrency', target: 'checkingAmount' },
          // Chosen from the amount screen that named another: the amount is asked in this one.
          { guard: 'isCurrency', actions: 'storeCurrency', target: 'awaitingAmount' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: [{ guard: 'isCurrencyFirst', ...back('awaitingAmount') }, back('awaitingAmount', 'amount')],
      },
    },
    /**
     * Refuse early, with the figure: the role and the limits (per payment, what is left of today) are checked as
     * soon as amount and currency are known, so nothing that can be known before the PIN is told after it. A
     * refusal asks the amount again, saying how much may be sent; a check that could not be made lets the flow
     * go on (the reservation after the confirmation checks again, atomically).
     */
    checkingAmount: {
      tags: ['busy'],
      invoke: {
        src: 'checkSpend',
        input: ({ context }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          flow: 'pay',
          amount: context.amount!,
          currency: context.currency!,
          pin: context.input.requirePin,
        }),
        onDone: [{ guard: 'hasToVerify', target: 'verifyingContact' }, { target: 'confirming' }],
        onError: [
          {
            guard: { type: 'isPolicyRefusal', params: ({ event }) => ({ error: event.error }) },
            actions: { type: 'refuseAmount', params: ({ event }) => ({ error: event.error }) },
            target: 'awaitingAmount',
          },
          { guard: 'hasToVerify', target: 'verifyingContact' },
          { target: 'confirming' },
        ],
      },
    },
    // Reached only from the summary's "Add a note": a payment without one carries DEFAULT_DESCRIPTION.
    awaitingDescription: {
      meta: { view: ask('pay.askDescription', 'text') },
      on: {
        ANSWERED: answered('description', 'confirming'),
        BACK: back('confirming', 'description'),
      },
    },
    verifyingContact: {
      tags: ['busy'],
      invoke: {
        src: 'verifyContact',
        input: ({ context }) => ({
          phonenumber: context.phone!,
          firstName: context.firstName!,
          lastName: context.lastName!,
          channel: context.input.channel,
          userId: context.input.userId,
        }),
        onDone: [
          {
            guard: { type: 'isUnregistered', params: ({ event }) => event.output },
            actions: { type: 'storeVerified', params: ({ event }) => event.output },
            target: 'notRegistered',
          },
          {
            guard: { type: 'hasNameMismatch', params: ({ event }) => event.output },
            actions: { type: 'storeVerified', params: ({ event }) => event.output },
            target: 'confirmingName',
          },
          { actions: { type: 'storeVerified', params: ({ event }) => event.output }, target: 'confirming' },
        ],
        onError: { actions: { type: 'noteFailure', params: ({ event }) => ({ error: event.error }) }, target: 'done' },
      },
    },
    notRegistered: {
      meta: {
        view: (context: PayContext): View =>
          choose(context, { key: 'pay.notRegistered', params: { phone: context.phone ?? '' } }, [
            { id: 'otherNumber', text: { key: 'pay.otherNumber' } },
            { id: 'stop', text: { key: 'pay.stop' } },
          ]),
      },
      on: {
        CHOSEN: [
          { guard: chosen('otherNumber'), ...back('awaitingPhone', ...FROM_PHONE) },
          { guard: chosen('stop'), actions: 'noteCancelled', target: 'done' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: AMOUNT_AGAIN,
      },
    },
    confirmingName: {
      meta: {
        view: (context: PayContext): View =>
          choose(
            context,
            {
              key: 'pay.confirmName',
              params: {
                networkName: context.verified?.nameOnNetwork ?? '',
                name: `${context.firstName} ${context.lastName}`,
              },
            },
            [
              {
                id: 'payNetworkName',
                text: { key: 'pay.payNetworkName', params: { networkName: context.verified?.nameOnNetwork ?? '' } },
              },
              // The service checks names only when the organization's setting is on: with it off, the typed name may be paid.
              ...(context.input.nameMatchAffectsPayment === false
                ? [
                    {
                      id: 'payTypedName',
                      text: { key: 'pay.payTypedName', params: { name: `${context.firstName} ${context.lastName}` } },
                    },
                  ]
                : []),
              { id: 'otherNumber', text: { key: 'pay.otherNumber' } },
              { id: 'stop', text: { key: 'pay.stop' } },
            ],
          ),
      },
      on: {
        CHOSEN: [
          // The name the network holds is the one paid and shown: the service's name check then passes.
          { guard: chosen('payNetworkName'), actions: 'useNetworkName', target: 'confirming' },
          { guard: and([chosen('payTypedName'), 'mayPayMismatch']), actions: 'clearError', target: 'confirming' },
          { guard: chosen('otherNumber'), ...back('awaitingPhone', ...FROM_PHONE) },
          { guard: chosen('stop'), actions: 'noteCancelled', target: 'done' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: AMOUNT_AGAIN,
      },
    },
    confirming: {
      meta: {
        view: (context: PayContext): View =>
          withAbroad(
            context,
            choose(
              context,
              {
                key: `pay.summary.${context.kind}`,
                params: {
                  amount: context.amount ?? '',
                  currency: context.currency ?? '',
                  name: payeeName(context),
                  phone: context.phone ?? '',
                  bank: context.bankName ?? '',
                  account: context.accountNumber ?? '',
                  // A note added at the summary is shown on it; without one the payment carries the default.
                  hasNote: context.description === undefined ? 'no' : 'yes',
                  note: context.description ?? '',
                },
              },
              SUMMARY_CHOICES,
            ),
          ),
      },
      on: {
        CHOSEN: [
          { guard: chosen('cancel'), actions: 'noteCancelled', target: 'done' },
          { guard: chosen('confirm'), actions: 'clearError', target: 'checkingRepeat' },
          { guard: chosen('note'), actions: 'clearError', target: 'awaitingDescription' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: AMOUNT_AGAIN,
      },
    },
    // The same payee, amount and currency paid by this user a moment ago (the journal knows, even when a
    // Redis loss erased that conversation): asked whether this is a second payment. Without an answer from
    // the journal the payment goes on as confirmed (its intent is journalled before the create anyway).
    checkingRepeat: {
      tags: ['busy'],
      invoke: {
        src: 'recentPayment',
        input: ({ context }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          payee: context.phone!,
          amount: context.amount!,
          currency: context.currency!,
        }),
        onDone: [
          {
            guard: { type: 'isRecent', params: ({ event }) => event.output },
            actions: { type: 'storeRepeat', params: ({ event }) => event.output },
            target: 'confirmingRepeat',
          },
          { guard: 'hasPin', target: 'awaitingPin' },
          { target: 'reserving' },
        ],
        onError: [{ guard: 'hasPin', target: 'awaitingPin' }, { target: 'reserving' }],
      },
    },
    confirmingRepeat: {
      meta: {
        view: (context: PayContext): View =>
          choose(context, repeatText(context), [
            { id: 'payAgain', text: { key: 'pay.payAgain' } },
            { id: 'cancel', text: { key: 'pay.cancel' } },
          ]),
      },
      on: {
        CHOSEN: [
          { guard: chosen('cancel'), actions: 'noteCancelled', target: 'done' },
          { guard: and([chosen('payAgain'), 'hasPin']), actions: 'clearError', target: 'awaitingPin' },
          { guard: chosen('payAgain'), actions: 'clearError', target: 'reserving' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: back('confirming', 'repeat'),
      },
    },
    awaitingPin: {
      meta: { view: ask('pay.askPin', 'pin') },
      on: {
        ANSWERED: { actions: 'clearError', target: 'verifyingPin' },
        BACK: back('confirming', 'repeat'),
      },
    },
    verifyingPin: {
      tags: ['busy', 'secret'],
      invoke: {
        src: 'verifyPin',
        // The PIN goes from the event to the check and is never kept in context.
        input: ({ context, event }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          pin: event.type === 'ANSWERED' ? event.value.trim() : '',
        }),
        onDone: 'reserving',
        onError: [
          {
            guard: { type: 'isPinWrong', params: ({ event }) => ({ error: event.error }) },
            actions: { type: 'rejectPin', params: ({ event }) => ({ error: event.error }) },
            target: 'awaitingPin',
          },
          { actions: { type: 'noteFailure', params: ({ event }) => ({ error: event.error }) }, target: 'done' },
        ],
      },
    },
    reserving: {
      tags: ['busy'],
      invoke: {
        src: 'reserveSpend',
        input: ({ context }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          flow: 'pay',
          amount: context.amount!,
          currency: context.currency!,
          duplicateCheckKey: context.key,
        }),
        onDone: 'submitting',
        onError: { actions: { type: 'noteFailure', params: ({ event }) => ({ error: event.error }) }, target: 'done' },
      },
    },
    submitting: {
      tags: ['busy', 'money'],
      invoke: {
        src: 'createPayment',
        input: ({ context }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          duplicateCheckKey: context.key,
          paymentType: context.kind!,
          phonenumber: context.phone!,
          amount: context.amount!,
          currency: context.currency!,
          description: context.description ?? DEFAULT_DESCRIPTION[context.kind!],
          payeeName: payeeName(context),
          ...(context.contact?.known ? {} : { firstName: context.firstName, lastName: context.lastName }),
          ...(context.kind === 'bank'
            ? {
                bank: {
                  bank: context.bankId!,
                  ...(context.bankName ? { name: context.bankName } : {}),
                  accountNumber: context.accountNumber!,
                  accountName: context.accountName!,
                  // None when skipped: the services send the organization's address.
                  ...(context.email ? { email: context.email } : {}),
                },
              }
            : {}),
          metadata: { chat: context.input.chat, ref: context.key },
        }),
        onDone: [
          {
            guard: { type: 'isAlreadySubmitted', params: ({ event }) => event.output },
            actions: { type: 'noteSubmittedBefore', params: ({ event }) => event.output as ShortRef },
            target: 'done',
          },
          {
            guard: { type: 'isHeld', params: ({ event }) => event.output },
            actions: { type: 'noteHeld', params: ({ event }) => event.output as ShortRef },
            target: 'done',
          },
          { actions: { type: 'notePayment', params: ({ event }) => event.output as PaymentResult }, target: 'done' },
        ],
        onError: {
          actions: { type: 'notePaymentFailure', params: ({ event }) => ({ error: event.error }) },
          target: 'done',
        },
      },
    },
    done: {
      type: 'final',
      meta: {
        view: (context: PayContext): View => ({ text: context.outcome ?? { key: 'pay.cancelled' }, final: true }),
        outcome: (context: PayContext): FlowOutcome =>
          context.next ? 'left' : outcomeOfText(context.outcome ?? { key: 'pay.cancelled' }, PAY_OUTCOMES),
      },
    },
  },
  output: ({ context }): FlowOutput => (context.next ? { next: context.next } : {}),
});

/** The pay flow as the registry lists it. */
export const payFlow: FlowModule = { id: 'pay', machine: payMachine, messages: payMessages };
