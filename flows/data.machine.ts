/**
 * Buy a data bundle: network (Spectranet also asks its account number) -> the network's bundles -> one
 * bundle -> the number to top up (the user's own, when known, or another typed one) -> summary and
 * confirmation (the PIN on the same screen when the channel asks for one) -> spend reserved within the
 * user's limits -> purchase under an idempotency key -> outcome.
 *
 * Money is never sent twice: the key `${runId}:data` is fixed in context when the flow starts, so a
 * snapshot restored in `purchasing` repeats the call with the same key. A purchase the service already
 * holds under that key reads "already sent, you will be told"; an answer lost after the client's own
 * retries reads "could not confirm, you will be told"; neither is ever retried.
 *
 * Currency: a data bundle carries no currency in the service contract; the vending group's prices are in
 * naira, so the spend is reserved in {@link VENDING_CURRENCY}.
 */
import { and, assign, setup } from 'xstate';
import { serviceActors } from './actors.js';
import { answer, chosenId, errorOf, outputOf } from './events.js';
import { createFailureText, failureText } from './failure.js';
import { parsePhone, parseText } from './input.js';
import { dataMessages } from './messages/data.js';
import {
  confirmTransitions,
  confirmView,
  purchaseGuards,
  purchaseStates,
  unconfirmedKeys,
  VENDING_CURRENCY,
  type PurchaseContext,
} from './purchase.js';
import { shownRef, type DataBundle, type PurchaseResult } from './calls.js';
import {
  contextFromInput,
  type FlowEvent,
  type FlowInput,
  type FlowModule,
  type FlowOutput,
  type Text,
  type View,
} from './types.js';

/** Networks offered, by the service's `service_type`, with the name people know them by. */
export const DATA_NETWORKS = {
  mtn: 'MTN',
  airtel: 'Airtel',
  '9mobile': '9mobile',
  glo: 'Glo',
  spectranet: 'Spectranet',
} as const;

export type DataNetwork = keyof typeof DATA_NETWORKS;

/** Longest Spectranet account number taken before the service judges it. */
const ACCOUNT_MAX = 20;

/** Failures of the purchase after which it may still have happened (see flows/purchase.ts). */
const UNCONFIRMED = unconfirmedKeys('data');

/** Everything the flow knows; plain JSON (amounts are the service's decimal strings). */
export interface DataContext extends PurchaseContext {
  input: FlowInput;
  /** Duplicate-Check-Key of the purchase, `${runId}:data`, made before any call and never changed. */
  key: string;
  /** Currency the spend is reserved in: naira, {@link VENDING_CURRENCY}. */
  currency: string;
  network?: DataNetwork;
  /** Spectranet account number. */
  accountNumber?: string;
  bundles: DataBundle[];
  bundle?: DataBundle;
  /** Number to top up, international `+` format. */
  phone?: string;
  /** Why the last answer or call was refused; the next screen shows it. */
  error?: Text;
  result?: PurchaseResult;
}

/** A bundle as people read it, e.g. `1GB 30 days`. */
const bundleName = (bundle: DataBundle): string => `${bundle.allowance} ${bundle.validity}`;
const networkName = (context: DataContext): string => (context.network ? DATA_NETWORKS[context.network] : '');

/** What is bought, for whom, at what price: the summary's and the receipt's parameters. */
function purchaseParams(context: DataContext): Record<string, string> {
  return {
    bundle: context.bundle ? bundleName(context.bundle) : '',
    network: networkName(context),
    phone: context.phone ?? '',
    price: context.bundle?.price ?? '',
    currency: context.currency,
  };
}

/** Back to the step before the bundle list: the account number (Spectranet) or the network. */
const toNetworkStep = (actions: 'clearError' | 'refuseEmptyList' | 'refuseList') =>
  [
    { guard: 'isSpectranet', target: 'awaitingAccount', actions },
    { target: 'choosingNetwork', actions },
  ] as const;

/** To the phone step: own or another number when the user's number is known, else type it. */
const toPhoneStep = [
  { guard: 'hasUserPhone', target: 'choosingPhone', actions: 'clearError' },
  { target: 'awaitingPhone', actions: 'clearError' },
] as const;

/** The buy-data flow. Input: FlowInput; output: FlowOutput (`next: 'menu'` when the user backs out). */
export const dataMachine = setup({
  types: {
    context: {} as DataContext,
    events: {} as FlowEvent,
    input: {} as FlowInput,
    output: {} as FlowOutput,
    meta: {} as { view: (context: DataContext) => View },
    tags: {} as 'busy' | 'secret' | 'money',
  },
  actors: {
    listDataBundles: serviceActors.listDataBundles,
    verifyPin: serviceActors.verifyPin,
    reserveSpend: serviceActors.reserveSpend,
    purchaseData: serviceActors.purchaseData,
  },
  guards: {
    isNetworkChosen: ({ event }) => Object.hasOwn(DATA_NETWORKS, chosenId(event) ?? ''),
    isSpectranetChosen: ({ event }) => chosenId(event) === 'spectranet',
    isSpectranet: ({ context }) => context.network === 'spectranet',
    isValidAccount: ({ event }) => parseText(answer(event), ACCOUNT_MAX).ok,
    hasBundles: ({ event }) => outputOf<DataBundle[]>(event).length > 0,
    isBundleChosen: ({ context, event }) => context.bundles.some((b) => b.datacode === chosenId(event)),
    hasUserPhone: ({ context }) => context.input.userPhone !== undefined,
    isOwnNumberChosen: ({ event }) => chosenId(event) === 'own',
    isOtherNumberChosen: ({ event }) => chosenId(event) === 'other',
    isValidPhone: ({ context, event }) => parsePhone(answer(event), context.input.defaultCountry).ok,
    ...purchaseGuards('data'),
  },
  actions: {
    storeNetwork: assign({
      network: ({ event }) => chosenId(event) as DataNetwork,
      accountNumber: undefined,
      error: undefined,
    }),
    storeAccount: assign(({ event }) => {
      const parsed = parseText(answer(event), ACCOUNT_MAX);
      return parsed.ok ? { accountNumber: parsed.text, error: undefined } : { error: parsed.reason };
    }),
    storeBundles: assign({ bundles: ({ event }) => outputOf<DataBundle[]>(event), error: undefined }),
    refuseEmptyList: assign({
      error: ({ context }): Text => ({ key: 'data.noBundles', params: { network: networkName(context) } }),
    }),
    refuseList: assign({
      error: ({ context, event }) =>
        failureText(errorOf(event), context.network === 'spectranet' ? { not_found: 'data.accountNotFound' } : {}),
    }),
    storeBundle: assign({
      bundle: ({ context, event }) => context.bundles.find((b) => b.datacode === chosenId(event)),
      error: undefined,
    }),
    storeOwnNumber: assign({ phone: ({ context }) => context.input.userPhone, error: undefined }),
    storePhone: assign(({ context, event }) => {
      const parsed = parsePhone(answer(event), context.input.defaultCountry);
      return parsed.ok ? { phone: parsed.e164, error: undefined } : { error: parsed.reason };
    }),
    /** An answer that is none of the choices offered. */
    refuseChoice: assign({ error: { key: 'common.pickOne' } }),
    clearError: assign({ error: undefined }),
    /** Before the purchase: nothing was bought, whatever went wrong. */
    storeFailure: assign({ error: ({ event }) => failureText(errorOf(event)) }),
    storePurchaseFailure: assign({
      error: ({ event }) => createFailureText(errorOf(event), UNCONFIRMED, 'data.unconfirmed'),
    }),
    storeResult: assign({ result: ({ event }) => outputOf<PurchaseResult>(event), error: undefined }),
  },
}).createMachine({
  id: 'data',
  context: contextFromInput((input) => ({
    input,
    key: `${input.runId}:data`,
    currency: VENDING_CURRENCY,
    bundles: [],
  })),
  initial: 'choosingNetwork',
  output: ({ event }) => (event as { output?: FlowOutput }).output ?? {},
  states: {
    choosingNetwork: {
      meta: {
        view: (context) => ({
          text: { key: 'data.askNetwork' },
          error: context.error,
          choices: Object.entries(DATA_NETWORKS).map(([id, label]) => ({ id, label })),
        }),
      },
      on: {
        CHOSEN: [
          { guard: 'isSpectranetChosen', target: 'awaitingAccount', actions: 'storeNetwork' },
          { guard: 'isNetworkChosen', target: 'loadingBundles', actions: 'storeNetwork' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: 'left',
      },
    },
    awaitingAccount: {
      meta: { view: (context) => ({ text: { key: 'data.askAccount' }, error: context.error, input: 'text' }) },
      on: {
        ANSWERED: [
          { guard: 'isValidAccount', target: 'loadingBundles', actions: 'storeAccount' },
          { actions: 'storeAccount' },
        ],
        BACK: { target: 'choosingNetwork', actions: 'clearError' },
      },
    },
    loadingBundles: {
      tags: 'busy',
      invoke: {
        src: 'listDataBundles',
        input: ({ context }) => ({ network: context.network ?? '', accountNumber: context.accountNumber }),
        onDone: [
          { guard: 'hasBundles', target: 'choosingBundle', actions: 'storeBundles' },
          ...toNetworkStep('refuseEmptyList'),
        ],
        // A listing moves no money: back to the question before it, with the reason, to try again.
        onError: toNetworkStep('refuseList'),
      },
    },
    choosingBundle: {
      meta: {
        view: (context) => ({
          text: { key: 'data.askBundle', params: { network: networkName(context) } },
          error: context.error,
          // Every bundle: the channel adapters page long lists.
          choices: context.bundles.map((b) => ({
            id: b.datacode,
            text: {
              key: 'data.bundleLine',
              params: { name: bundleName(b), price: b.price, currency: context.currency },
            },
          })),
        }),
      },
      on: {
        CHOSEN: [
          { guard: and(['isBundleChosen', 'hasUserPhone']), target: 'choosingPhone', actions: 'storeBundle' },
          { guard: 'isBundleChosen', target: 'awaitingPhone', actions: 'storeBundle' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: toNetworkStep('clearError'),
      },
    },
    choosingPhone: {
      meta: {
        view: (context) => ({
          text: { key: 'data.askWhichPhone' },
          error: context.error,
          choices: [
            { id: 'own', text: { key: 'data.myNumber' } },
            { id: 'other', text: { key: 'data.otherNumber' } },
          ],
        }),
      },
      on: {
        CHOSEN: [
          { guard: 'isOwnNumberChosen', target: 'confirming', actions: 'storeOwnNumber' },
          { guard: 'isOtherNumberChosen', target: 'awaitingPhone', actions: 'clearError' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: { target: 'choosingBundle', actions: 'clearError' },
      },
    },
    awaitingPhone: {
      meta: { view: (context) => ({ text: { key: 'data.askPhone' }, error: context.error, input: 'phone' }) },
      on: {
        ANSWERED: [{ guard: 'isValidPhone', target: 'confirming', actions: 'storePhone' }, { actions: 'storePhone' }],
        BACK: [
          { guard: 'hasUserPhone', target: 'choosingPhone', actions: 'clearError' },
          { target: 'choosingBundle', actions: 'clearError' },
        ],
      },
    },
    confirming: {
      meta: { view: confirmView('data', purchaseParams) },
      on: { ...confirmTransitions, BACK: toPhoneStep },
    },
    ...purchaseStates({
      flow: 'data',
      amount: (context: DataContext) => context.bundle?.price ?? '',
      purchase: {
        src: 'purchaseData',
        input: (context) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          duplicateCheckKey: context.key,
          network: context.network ?? '',
          datacode: context.bundle?.datacode ?? '',
          phonenumber: context.phone ?? '',
          accountNumber: context.accountNumber,
          amount: context.bundle?.price ?? '',
          metadata: { chat: context.input.chat, ref: context.key },
        }),
      },
      receipt: (context) => ({
        ...purchaseParams(context),
        reference: shownRef(context.result, context.result?.reference ?? ''),
      }),
    }),
    left: {
      type: 'final',
      meta: { view: () => ({ text: { key: 'data.left' }, final: true }), outcome: () => 'left' },
      output: { next: 'menu' },
    },
  },
});

/** The buy-data flow for the registry. */
export const dataFlow: FlowModule = { id: 'data', machine: dataMachine, messages: dataMessages };
