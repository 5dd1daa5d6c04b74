/**
 * The tail the data and pin flows share once the user has picked what to buy: a summary to confirm (the
 * PIN on the same screen when `input.requirePin`) -> `verifyingPin` -> `reserving` (the spend, within the
 * user's limits, in naira: {@link VENDING_CURRENCY}) -> `purchasing` under the flow's idempotency key ->
 * `done`, `submittedBefore`, `unconfirmed` or `failed`.
 *
 * Each flow keeps its own ids, messages (`<flow>.summary`, `<flow>.notBought`, ...) and purchase call; this
 * module only builds the parts that are the same. A flow using it names, in its setup():
 * - actors `verifyPin`, `reserveSpend` and its purchase actor;
 * - the guards of {@link purchaseGuards};
 * - actions `clearError`, `refuseChoice`, `storeFailure`, `storePurchaseFailure` (the failure in words with
 *   {@link unconfirmedKeys}) and `storeResult`. They stay in each flow: an action
 *   made outside a flow's setup() does not type against its context.
 */
import type { CallInput } from './actors.js';
import { answer, chosenId, errorOf, outputOf } from './events.js';
import type { FailureKeys } from './failure.js';
import { outcomeOfText } from './outcome.js';
import { isAlreadySubmitted, refParams, type PurchaseResult } from './calls.js';
import {
  isServiceFailure,
  type FlowEvent,
  type FlowInput,
  type FlowOutcome,
  type Params,
  type Text,
  type View,
} from './types.js';

/** The flows that end in a purchase; their id prefixes their message keys. */
export type PurchaseFlow = 'data' | 'pin';

/**
 * The currency vending prices are in: the vending group sells Nigerian data bundles and exam pins, priced in
 * naira (its listings carry amounts without a currency). Purchases reserve the user's spend in it, so a
 * role's `NGN` limits (or `*`) apply, not those of the first currency offered for payments.
 */
export const VENDING_CURRENCY = 'NGN';

/**
 * Where the vending group sells: Nigerian networks' data bundles and exam pins (`mtn`, `glo`, `airtel`,
 * `9mobile`, WAEC/JAMB). The menu offers its flows ({@link VENDING_FLOWS}) only to a number of this country (a
 * chat without a number has no country to tell, and is offered them).
 */
export const VENDING_COUNTRY = 'NG';
/** The flows that buy from the vending group. */
export const VENDING_FLOWS: readonly string[] = ['data', 'pin'];

/** The purchase actors. */
export type PurchaseService = 'purchaseData' | 'purchasePin';

/** What the tail reads and writes in a flow's context. */
export interface PurchaseContext {
  input: FlowInput;
  /** Duplicate-Check-Key of the purchase, `${runId}:<flow>`. */
  key: string;
  /** Currency the spend is reserved in. */
  currency: string;
  error?: Text;
  result?: PurchaseResult;
}

/**
 * Failures of the purchase after which it may still have happened: the answer was lost after the client's
 * retries (connection, 5xx, an unreadable answer), or a 429 came after an attempt whose answer was lost. (A purchase the service already holds under our key is
 * not a failure: it is the AlreadySubmitted result, shown by `submittedBefore`.)
 */
export const unconfirmedKeys = (flow: PurchaseFlow): FailureKeys => ({
  connection: `${flow}.unconfirmed`,
  service: `${flow}.unconfirmed`,
  unknown: `${flow}.unconfirmed`,
  rate_limited: `${flow}.unconfirmed`,
});

type Args = { context: PurchaseContext; event: FlowEvent };

/** Guards of the confirmation and of the calls after it. */
export function purchaseGuards(flow: PurchaseFlow) {
  const unconfirmed = unconfirmedKeys(flow);
  return {
    isConfirmed: ({ context, event }: Args) => !context.input.requirePin && chosenId(event) === 'confirm',
    isPinGiven: ({ context, event }: Args) => context.input.requirePin && event.type === 'ANSWERED',
    isPinLocked: ({ event }: Args) => {
      const error = errorOf(event);
      return isServiceFailure(error) && error.code === 'pin_locked';
    },
    /** The service already held a purchase under our key (AlreadySubmitted). */
    isSubmittedBefore: ({ event }: Args) => isAlreadySubmitted(outputOf(event)),
    isUnconfirmed: ({ event }: Args) => {
      const error = errorOf(event);
      return !isServiceFailure(error) || Object.hasOwn(unconfirmed, error.code);
    },
  };
}

/** The summary to confirm: with the PIN to type when the channel asks for one, else a confirm choice. */
export const confirmView =
  <C extends PurchaseContext>(flow: PurchaseFlow, params: (context: C) => Params) =>
  (context: C): View =>
    context.input.requirePin
      ? { text: { key: `${flow}.summaryPin`, params: params(context) }, error: context.error, input: 'pin' }
      : {
          text: { key: `${flow}.summary`, params: params(context) },
          error: context.error,
          choices: [{ id: 'confirm', text: { key: `${flow}.confirm` } }],
        };

/** The summary's answers (BACK is the flow's own): confirmed, or the PIN given. */
export const confirmTransitions = {
  CHOSEN: [{ guard: 'isConfirmed', target: 'reserving', actions: 'clearError' }, { actions: 'refuseChoice' }],
  ANSWERED: [{ guard: 'isPinGiven', target: 'verifyingPin', actions: 'clearError' }, { actions: 'refuseChoice' }],
} as const;

export interface PurchaseStatesOptions<C extends PurchaseContext, Src extends PurchaseService> {
  flow: PurchaseFlow;
  /** The spend to reserve, a decimal string in `context.currency`. */
  amount: (context: C) => string;
  /** The purchase actor and its input (the key and `metadata: { chat, ref }` included). */
  purchase: { src: Src; input: (context: C) => CallInput<Src> };
  /** The receipt's parameters. */
  receipt: (context: C) => Params;
  /** The receipt as the record keeps it, when it shows a secret (exam pins): their count in their place. */
  masked?: (context: C) => Text;
}

/** The states after `confirming`: verifyingPin, reserving, purchasing, done, submittedBefore, unconfirmed, failed. */
export function purchaseStates<C extends PurchaseContext, Src extends PurchaseService>({
  flow,
  amount,
  purchase,
  receipt,
  masked,
}: PurchaseStatesOptions<C, Src>) {
  return {
    verifyingPin: {
      tags: ['busy', 'secret'],
      invoke: {
        src: 'verifyPin',
        // The PIN goes from the answer straight to the check: never kept in context, never persisted.
        input: ({ context, event }: { context: C; event: unknown }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          pin: answer(event as FlowEvent).trim(),
        }),
        onDone: 'reserving',
        onError: [
          { guard: 'isPinLocked', target: 'failed', actions: 'storeFailure' },
          // A wrong PIN (with the attempts left) or a check that failed: ask again.
          { target: 'confirming', actions: 'storeFailure' },
        ],
      },
    },
    reserving: {
      tags: 'busy',
      invoke: {
        src: 'reserveSpend',
        input: ({ context }: { context: C }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          flow,
          amount: amount(context),
          currency: context.currency,
          duplicateCheckKey: context.key,
        }),
        onDone: 'purchasing',
        onError: { target: 'failed', actions: 'storeFailure' },
      },
    },
    purchasing: {
      tags: ['busy', 'money'],
      invoke: {
        src: purchase.src,
        input: ({ context }: { context: C }) => purchase.input(context),
        onDone: [
          // Its result is kept too: our short ref of it, when the journal wrote the intent.
          { guard: 'isSubmittedBefore', target: 'submittedBefore', actions: 'storeResult' },
          { target: 'done', actions: 'storeResult' },
        ],
        onError: [
          { guard: 'isUnconfirmed', target: 'unconfirmed', actions: 'storePurchaseFailure' },
          { target: 'failed', actions: 'storePurchaseFailure' },
        ],
      },
    },
    done: {
      type: 'final',
      meta: {
        view: (context: C): View => ({
          text: { key: `${flow}.done`, params: receipt(context) },
          ...(masked ? { masked: masked(context) } : {}),
          final: true,
        }),
        outcome: (): FlowOutcome => 'paid',
      },
    },
    submittedBefore: {
      type: 'final',
      meta: {
        view: (context: C): View => ({
          text: { key: `${flow}.submittedBefore`, params: refParams(context.result) },
          final: true,
        }),
        outcome: (): FlowOutcome => 'paid',
      },
    },
    unconfirmed: {
      type: 'final',
      meta: {
        view: (context: C): View => ({
          text: context.error ?? { key: `${flow}.unconfirmed`, params: { hasRef: 'no' } },
          final: true,
        }),
        outcome: (): FlowOutcome => 'processing',
      },
    },
    failed: {
      type: 'final',
      meta: {
        view: (context: C): View => ({ text: { key: `${flow}.notBought` }, error: context.error, final: true }),
        // Refused by the policy (limits, a locked PIN) or by the service.
        outcome: (context: C): FlowOutcome => outcomeOfText(context.error, {}),
      },
    },
  } as const;
}
