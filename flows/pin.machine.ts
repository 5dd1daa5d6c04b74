/**
 * Buy an exam pin: exam service -> its pin bundles (only those on sale) -> one bundle (and how many, when
 * more than one is available) -> the candidate's confirmation code, typed or picked from the candidates
 * remembered for this user -> name validation showing the candidate's name -> confirmation (the PIN on
 * the same screen when the channel asks for one) -> spend reserved within the user's limits -> purchase
 * under an idempotency key, with the `gsmNo` validation returned -> the pins.
 *
 * Remembered candidates are validated again, not used as is: one call, and the purchase always carries
 * the `gsmNo` the service gave for this bundle's product code (a remembered one may be for another
 * product, or stale). Remembering still spares typing the code. The validated candidate is remembered
 * (FlowOutput.remember), newest first, at most {@link REMEMBERED_MAX}.
 *
 * Money is never sent twice: the key `${runId}:pin` is fixed in context when the flow starts; a purchase
 * the service already holds under it, or an answer lost after the client's own retries, reads "already
 * sent" or "could not confirm", both "you will be told", and is never retried.
 *
 * Amounts: a pin bundle carries no currency in the service contract; the vending group's prices are in
 * naira, so the spend is reserved in {@link VENDING_CURRENCY}. The spend reserved is the total paid (the bundle's amount times the
 * quantity); the purchase sends the price of one pin and the quantity, as the vending group expects.
 */
import { Decimal } from 'decimal.js';
import { and, assign, setup } from 'xstate';
import { serviceActors } from './actors.js';
import { answer, chosenId, errorOf, outputOf } from './events.js';
import { createFailureText, failureText } from './failure.js';
import { parseText } from './input.js';
import { pinMessages } from './messages/pin.js';
import {
  confirmTransitions,
  confirmView,
  purchaseGuards,
  purchaseStates,
  unconfirmedKeys,
  VENDING_CURRENCY,
  type PurchaseContext,
} from './purchase.js';
import { shownRef, type Candidate, type PinBundle, type PurchaseResult } from './calls.js';
import {
  contextFromInput,
  type FlowEvent,
  type FlowInput,
  type FlowModule,
  type FlowOutput,
  type RememberedCandidate,
  type Text,
  type View,
} from './types.js';

/** Exam services offered, by the service's `service_type`, with the name people know them by. */
export const PIN_SERVICES = { jamb: 'JAMB', waec: 'WAEC' } as const;

export type PinService = keyof typeof PIN_SERVICES;

/** Most pins bought at once. */
export const QUANTITY_MAX = 5;
/** Most candidates remembered per user (all services together). */
export const REMEMBERED_MAX = 3;
/** Longest confirmation code taken before the service judges it. */
const CODE_MAX = 20;

/** Failures of the purchase after which it may still have happened (see flows/purchase.ts). */
const UNCONFIRMED = unconfirmedKeys('pin');

/**
 * The `product_code` of a pin bundle, for name validation and purchase: the code the listing gives
 * (`utme`, `result-checker` in the sandbox). The spec's listing element has none and the product list
 * endpoint is not shown, so a listing without it falls back to the description, which names the product;
 * a service that refuses it says so at validation, before anything is bought.
 */
export function productCodeOf(bundle: PinBundle): string {
  return bundle.productCode ?? bundle.description;
}

/** Everything the flow knows; plain JSON (amounts are the service's decimal strings). */
export interface PinContext extends PurchaseContext {
  input: FlowInput;
  /** Duplicate-Check-Key of the purchase, `${runId}:pin`, made before any call and never changed. */
  key: string;
  /** Currency the spend is reserved in: naira, {@link VENDING_CURRENCY}. */
  currency: string;
  serviceType?: PinService;
  /** The bundles on sale (available > 0); a choice's id is its index here. */
  bundles: PinBundle[];
  bundle?: PinBundle;
  quantity: number;
  /** The candidate's confirmation code. */
  accountNumber?: string;
  /** What validation returned for that code. */
  candidate?: Candidate;
  /** Why the last answer or call was refused; the next screen shows it. */
  error?: Text;
  result?: PurchaseResult;
}

const serviceName = (context: PinContext): string => (context.serviceType ? PIN_SERVICES[context.serviceType] : '');
/** A choice id that is a whole number (`0`, `12`), as that number. */
const chosenNumber = (event: FlowEvent): number | undefined => {
  const id = chosenId(event);
  return id !== undefined && /^\d+$/.test(id) ? Number(id) : undefined;
};
const chosenBundle = (context: PinContext, event: FlowEvent): PinBundle | undefined => {
  const index = chosenNumber(event);
  return index === undefined ? undefined : context.bundles[index];
};
/** How many of the bundle may be bought at once. */
const quantityMax = (bundle: PinBundle | undefined): number => Math.min(bundle?.available ?? 0, QUANTITY_MAX);
/** The candidates remembered for the chosen service; a choice's id is `remembered:<index here>`. */
const rememberedFor = (context: PinContext): RememberedCandidate[] =>
  (context.input.profile.candidates ?? []).filter((c) => c.serviceType === context.serviceType);
const rememberedChosen = (context: PinContext, event: FlowEvent): RememberedCandidate | undefined => {
  const match = /^remembered:(\d+)$/.exec(chosenId(event) ?? '');
  return match ? rememberedFor(context)[Number(match[1])] : undefined;
};
const total = (context: PinContext): string =>
  new Decimal(context.bundle?.amount ?? 0).times(context.quantity).toFixed();

/** What is bought, for whom, at what price: the summary's and the receipt's parameters. */
function purchaseParams(context: PinContext): Record<string, string | number> {
  return {
    bundle: context.bundle?.description ?? '',
    quantity: context.quantity,
    name: context.candidate?.name ?? '',
    total: total(context),
    currency: context.currency,
  };
}

/** The candidates to remember: the validated one first, replacing an older entry of the same code. */
function remembered(context: PinContext, candidate: Candidate): RememberedCandidate[] {
  const fresh: RememberedCandidate = {
    serviceType: context.serviceType ?? '',
    productCode: context.bundle ? productCodeOf(context.bundle) : '',
    accountNumber: context.accountNumber ?? '',
    name: candidate.name,
    gsmNo: candidate.gsmNo,
  };
  const older = (context.input.profile.candidates ?? []).filter(
    (c) => c.serviceType !== fresh.serviceType || c.accountNumber !== fresh.accountNumber,
  );
  return [fresh, ...older].slice(0, REMEMBERED_MAX);
}

/** After the bundle (and quantity): pick a remembered candidate when there are some, else type the code. */
const toCodeStep = [
  { guard: 'hasRemembered', target: 'choosingCandidate', actions: 'clearError' },
  { target: 'awaitingCode', actions: 'clearError' },
] as const;

/** Back to the bundle's step: the quantity when there was one to choose, else the bundle. */
const toQuantityStep = [
  { guard: 'hasQuantityChoice', target: 'choosingQuantity', actions: 'clearError' },
  { target: 'choosingBundle', actions: 'clearError' },
] as const;

/** The exam-pin flow. Input: FlowInput; output: FlowOutput with the candidates to remember. */
export const pinMachine = setup({
  types: {
    context: {} as PinContext,
    events: {} as FlowEvent,
    input: {} as FlowInput,
    output: {} as FlowOutput,
    meta: {} as { view: (context: PinContext) => View },
    tags: {} as 'busy' | 'secret' | 'money',
  },
  actors: {
    listPinBundles: serviceActors.listPinBundles,
    validateCandidate: serviceActors.validateCandidate,
    verifyPin: serviceActors.verifyPin,
    reserveSpend: serviceActors.reserveSpend,
    purchasePin: serviceActors.purchasePin,
  },
  guards: {
    isServiceChosen: ({ event }) => Object.hasOwn(PIN_SERVICES, chosenId(event) ?? ''),
    hasBundlesOnSale: ({ event }) => outputOf<PinBundle[]>(event).some((b) => b.available > 0),
    isBundleChosen: ({ context, event }) => chosenBundle(context, event) !== undefined,
    isSeveralChosen: ({ context, event }) => quantityMax(chosenBundle(context, event)) > 1,
    hasQuantityChoice: ({ context }) => quantityMax(context.bundle) > 1,
    isQuantityChosen: ({ context, event }) => {
      const quantity = chosenNumber(event) ?? 0;
      return quantity >= 1 && quantity <= quantityMax(context.bundle);
    },
    hasRemembered: ({ context }) => rememberedFor(context).length > 0,
    isRememberedChosen: ({ context, event }) => rememberedChosen(context, event) !== undefined,
    isAnotherCodeChosen: ({ event }) => chosenId(event) === 'another',
    isValidCode: ({ event }) => parseText(answer(event), CODE_MAX).ok,
    ...purchaseGuards('pin'),
  },
  actions: {
    storeService: assign({ serviceType: ({ event }) => chosenId(event) as PinService, error: undefined }),
    storeBundles: assign({
      bundles: ({ event }) => outputOf<PinBundle[]>(event).filter((b) => b.available > 0),
      error: undefined,
    }),
    refuseEmptyList: assign({
      error: ({ context }): Text => ({ key: 'pin.noBundles', params: { service: serviceName(context) } }),
    }),
    refuseList: assign({ error: ({ event }) => failureText(errorOf(event)) }),
    storeBundle: assign({
      bundle: ({ context, event }) => chosenBundle(context, event),
      quantity: 1,
      error: undefined,
    }),
    storeQuantity: assign({ quantity: ({ event }) => chosenNumber(event) ?? 1, error: undefined }),
    storeRemembered: assign({
      accountNumber: ({ context, event }) => rememberedChosen(context, event)?.accountNumber,
      candidate: undefined,
      error: undefined,
    }),
    storeCode: assign(({ event }) => {
      const parsed = parseText(answer(event), CODE_MAX);
      return parsed.ok
        ? { accountNumber: parsed.text, candidate: undefined, error: undefined }
        : { error: parsed.reason };
    }),
    storeCandidate: assign({ candidate: ({ event }) => outputOf<Candidate>(event), error: undefined }),
    refuseCode: assign({ error: ({ event }) => failureText(errorOf(event), { not_found: 'pin.codeNotFound' }) }),
    /** An answer that is none of the choices offered. */
    refuseChoice: assign({ error: { key: 'common.pickOne' } }),
    clearError: assign({ error: undefined }),
    /** Before the purchase: nothing was bought, whatever went wrong. */
    storeFailure: assign({ error: ({ event }) => failureText(errorOf(event)) }),
    storePurchaseFailure: assign({
      error: ({ event }) => createFailureText(errorOf(event), UNCONFIRMED, 'pin.unconfirmed'),
    }),
    storeResult: assign({ result: ({ event }) => outputOf<PurchaseResult>(event), error: undefined }),
  },
}).createMachine({
  id: 'pin',
  context: contextFromInput((input) => ({
    input,
    key: `${input.runId}:pin`,
    currency: VENDING_CURRENCY,
    bundles: [],
    quantity: 1,
  })),
  initial: 'choosingService',
  output: ({ context, event }) => ({
    ...(event as { output?: FlowOutput }).output,
    ...(context.candidate ? { remember: { candidates: remembered(context, context.candidate) } } : {}),
  }),
  states: {
    choosingService: {
      meta: {
        view: (context) => ({
          text: { key: 'pin.askService' },
          error: context.error,
          choices: Object.entries(PIN_SERVICES).map(([id, label]) => ({ id, label })),
        }),
      },
      on: {
        CHOSEN: [
          { guard: 'isServiceChosen', target: 'loadingBundles', actions: 'storeService' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: 'left',
      },
    },
    loadingBundles: {
      tags: 'busy',
      invoke: {
        src: 'listPinBundles',
        input: ({ context }) => ({ serviceType: context.serviceType ?? '' }),
        onDone: [
          { guard: 'hasBundlesOnSale', target: 'choosingBundle', actions: 'storeBundles' },
          { target: 'choosingService', actions: 'refuseEmptyList' },
        ],
        // A listing moves no money: back to the service, with the reason, to try again.
        onError: { target: 'choosingService', actions: 'refuseList' },
      },
    },
    choosingBundle: {
      meta: {
        view: (context) => ({
          text: { key: 'pin.askBundle', params: { service: serviceName(context) } },
          error: context.error,
          choices: context.bundles.map((b, i) => ({
            id: String(i),
            text: {
              key: 'pin.bundleLine',
              params: { name: b.description, amount: b.amount, currency: context.currency },
            },
          })),
        }),
      },
      on: {
        CHOSEN: [
          { guard: and(['isBundleChosen', 'isSeveralChosen']), target: 'choosingQuantity', actions: 'storeBundle' },
          { guard: and(['isBundleChosen', 'hasRemembered']), target: 'choosingCandidate', actions: 'storeBundle' },
          { guard: 'isBundleChosen', target: 'awaitingCode', actions: 'storeBundle' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: { target: 'choosingService', actions: 'clearError' },
      },
    },
    choosingQuantity: {
      meta: {
        view: (context) => ({
          text: { key: 'pin.askQuantity', params: { bundle: context.bundle?.description ?? '' } },
          error: context.error,
          choices: Array.from({ length: quantityMax(context.bundle) }, (_, i) => ({
            id: String(i + 1),
            label: String(i + 1),
          })),
        }),
      },
      on: {
        CHOSEN: [
          { guard: and(['isQuantityChosen', 'hasRemembered']), target: 'choosingCandidate', actions: 'storeQuantity' },
          { guard: 'isQuantityChosen', target: 'awaitingCode', actions: 'storeQuantity' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: { target: 'choosingBundle', actions: 'clearError' },
      },
    },
    choosingCandidate: {
      meta: {
        view: (context) => ({
          text: { key: 'pin.askCandidate' },
          error: context.error,
          choices: [
            ...rememberedFor(context).map((c, i) => ({
              id: `remembered:${i}`,
              text: { key: 'pin.useCandidate', params: { name: c.name, code: c.accountNumber } },
            })),
            { id: 'another', text: { key: 'pin.anotherCode' } },
          ],
        }),
      },
      on: {
        CHOSEN: [
          { guard: 'isRememberedChosen', target: 'validating', actions: 'storeRemembered' },
          { guard: 'isAnotherCodeChosen', target: 'awaitingCode', actions: 'clearError' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: toQuantityStep,
      },
    },
    awaitingCode: {
      meta: {
        view: (context) => ({
          text: { key: 'pin.askCode', params: { service: serviceName(context) } },
          error: context.error,
          input: 'code',
        }),
      },
      on: {
        ANSWERED: [{ guard: 'isValidCode', target: 'validating', actions: 'storeCode' }, { actions: 'storeCode' }],
        BACK: [{ guard: 'hasRemembered', target: 'choosingCandidate', actions: 'clearError' }, ...toQuantityStep],
      },
    },
    validating: {
      tags: 'busy',
      invoke: {
        src: 'validateCandidate',
        input: ({ context }) => ({
          serviceType: context.serviceType ?? '',
          productCode: context.bundle ? productCodeOf(context.bundle) : '',
          accountNumber: context.accountNumber ?? '',
        }),
        onDone: { target: 'confirming', actions: 'storeCandidate' },
        // Validation moves no money: ask the code again with the reason.
        onError: { target: 'awaitingCode', actions: 'refuseCode' },
      },
    },
    confirming: {
      meta: { view: confirmView('pin', purchaseParams) },
      on: { ...confirmTransitions, BACK: toCodeStep },
    },
    ...purchaseStates({
      flow: 'pin',
      amount: total,
      purchase: {
        src: 'purchasePin',
        input: (context) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          duplicateCheckKey: context.key,
          serviceType: context.serviceType ?? '',
          productCode: context.bundle ? productCodeOf(context.bundle) : '',
          accountNumber: context.accountNumber ?? '',
          gsmNo: context.candidate?.gsmNo ?? '',
          amount: context.bundle?.amount ?? '',
          quantity: context.quantity,
          metadata: { chat: context.input.chat, ref: context.key },
        }),
      },
      receipt: (context) => ({
        ...purchaseParams(context),
        pins: (context.result?.pins ?? []).join(', '),
        reference: shownRef(context.result, context.result?.reference ?? ''),
      }),
      // The pins are vouchers worth money: the journal and /ops keep only how many.
      masked: (context) => ({
        key: 'pin.doneMasked',
        params: {
          ...purchaseParams(context),
          count: context.result?.pins?.length ?? 0,
          reference: shownRef(context.result, context.result?.reference ?? ''),
        },
      }),
    }),
    left: {
      type: 'final',
      meta: { view: () => ({ text: { key: 'pin.left' }, final: true }), outcome: () => 'left' },
      output: { next: 'menu' },
    },
  },
});

/** The exam-pin flow for the registry. */
export const pinFlow: FlowModule = { id: 'pin', machine: pinMachine, messages: pinMessages };
