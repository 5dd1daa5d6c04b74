/**
 * Request money: ask someone to pay us. Phone, amount, currency, a reason the network shows them (up to
 * what the service takes; past 19 characters the next screen warns that networks may cut it), whether
 * the service sends them instructions, a summary, then one collection request created under an
 * idempotency key made from the run id when the flow starts. The outcome
 * shows the request's status (and its payment code when given); the chat is notified when money comes.
 */
import { and, assign, setup } from 'xstate';
import { serviceActors } from './actors.js';
import { chosenId } from './events.js';
import { REQUEST_REASON_MAX_LENGTH, REQUEST_REASON_SAFE_LENGTH } from '../src/momo/assumptions.js';
import { createFailureText, type FailureKeys } from './failure.js';
import { parseAmount, parsePhone, parseText, type Invalid } from './input.js';
import { requestMessages } from './messages/request.js';
import { outcomeOfText } from './outcome.js';
import { answered, ask, backIn, chosen, isValid, store } from './steps.js';
import {
  isAlreadySubmitted,
  refParams,
  shownRef,
  type CollectionRequestResult,
  type Created,
  type ShortRef,
} from './calls.js';
import {
  contextFromInput,
  type FlowEvent,
  type FlowInput,
  type FlowModule,
  type FlowOutcome,
  type FlowOutput,
  type Text,
  type View,
} from './types.js';

/** Everything the request flow has learnt so far. JSON only: the amount is a decimal string. */
export interface RequestContext {
  input: FlowInput;
  /** Duplicate-Check-Key and metadata ref of the request: `${runId}:request`, made at start, never changed. */
  key: string;
  /** The payer's number, international `+` format. */
  phone?: string;
  amount?: string;
  currency?: string;
  reason?: string;
  /** Set when the reason is longer than networks show: the words of the warning. */
  reasonWarning?: Text;
  sendInstructions?: boolean;
  /** Why the last answer was refused (catalogue text: some reasons carry parameters). */
  error?: Text;
  /** The last screen's words: the result, a failure, or a cancellation. */
  outcome?: Text;
  /** Set when the user backs out of the first step: the flow ends and the menu starts. */
  next?: 'menu';
}

/**
 * Longest reason: what the service takes (REQUEST_REASON_MAX_LENGTH). The spec says keep it below 20
 * characters because networks may cut longer ones: past REQUEST_REASON_SAFE_LENGTH the user is warned.
 */
export const REASON_MAX = REQUEST_REASON_MAX_LENGTH;

/** The free-text answers of the flow, each named for the context field it fills. */
type Field = 'phone' | 'amount' | 'reason';

/** Reads the answer typed for `field`: the context update, or why it is refused. */
function readAnswer(
  field: Field,
  context: RequestContext,
  event: FlowEvent,
): { ok: true; update: Partial<RequestContext> } | Invalid {
  const value = event.type === 'ANSWERED' ? event.value : '';
  if (field === 'phone') {
    const phone = parsePhone(value, context.input.defaultCountry);
    return phone.ok ? { ok: true, update: { phone: phone.e164 } } : phone;
  }
  if (field === 'amount') {
    const amount = parseAmount(value);
    if (!amount.ok) return amount;
    // With one currency there is nothing to choose: it comes with the amount.
    const [only, ...others] = context.input.currencies;
    return { ok: true, update: { amount: amount.amount, ...(others.length === 0 ? { currency: only } : {}) } };
  }
  const reason = parseText(value, REASON_MAX);
  if (!reason.ok) return reason;
  const long = reason.text.length > REQUEST_REASON_SAFE_LENGTH;
  const shown = reason.text.slice(0, REQUEST_REASON_SAFE_LENGTH);
  const reasonWarning: Text | undefined = long
    ? { key: 'request.reasonLong', params: { max: REQUEST_REASON_SAFE_LENGTH, shown } }
    : undefined;
  return { ok: true, update: { reason: reason.text, reasonWarning } };
}

/**
 * Failures of the create call. An answer lost after the client's retries may hide a request made: say
 * we could not confirm it, never invite a retry. (A request already made under our own key is not a
 * failure: it is the AlreadySubmitted result.)
 */
const REQUEST_FAILURES: FailureKeys = {
  connection: 'request.unconfirmed',
  service: 'request.unconfirmed',
  unknown: 'request.unconfirmed',
  rate_limited: 'request.unconfirmed',
  validation: 'request.refused',
};

/** How a run ended, by the words of its last screen (the failure texts are read by outcomeOfText). */
const REQUEST_OUTCOMES: Record<string, FlowOutcome> = {
  'request.created': 'done',
  'request.createdWithCode': 'done',
  'request.unconfirmed': 'processing',
  'request.submittedBefore': 'done',
  'request.refused': 'failed',
  'request.cancelled': 'cancelled',
  'request.noCurrency': 'refused',
};

const back = backIn<RequestContext>();

/** The request flow: FlowInput in, FlowOutput out (`next: 'menu'` when the user backs out of it). */
export const requestMachine = setup({
  types: {
    context: {} as RequestContext,
    events: {} as FlowEvent,
    input: {} as FlowInput,
    output: {} as FlowOutput,
  },
  actors: { createCollectionRequest: serviceActors.createCollectionRequest },
  guards: {
    isValidAnswer: ({ context, event }, params: { field: Field }) => readAnswer(params.field, context, event).ok,
    isChosen: ({ event }, params: { id: string }) => event.type === 'CHOSEN' && event.id === params.id,
    isCurrency: ({ context, event }) => event.type === 'CHOSEN' && context.input.currencies.includes(event.id),
    hasOneCurrency: ({ context }) => context.input.currencies.length === 1,
    hasNoCurrency: ({ context }) => context.input.currencies.length === 0,
    isAlreadySubmitted: (_, result: Created<CollectionRequestResult>) => isAlreadySubmitted(result),
  },
  actions: {
    storeAnswer: assign(({ context, event }, params: { field: Field }) => {
      const read = readAnswer(params.field, context, event);
      return read.ok ? { ...read.update, error: undefined } : { error: read.reason };
    }),
    storeCurrency: assign({ currency: ({ event }) => chosenId(event), error: undefined }),
    storeInstructions: assign({
      sendInstructions: ({ event }) => event.type === 'CHOSEN' && event.id === 'yes',
      error: undefined,
    }),
    /** The request in people's words: who was asked for how much, and its reference (never the service's status). */
    noteRequest: assign(({ context }, result: CollectionRequestResult) => {
      const { mfscode } = result;
      const asked = {
        ref: shownRef(result, result.id),
        phone: context.phone ?? '',
        amount: context.amount ?? '',
        currency: context.currency ?? '',
      };
      const outcome: Text = mfscode
        ? { key: 'request.createdWithCode', params: { ...asked, mfscode } }
        : { key: 'request.created', params: asked };
      return { outcome };
    }),
    /** Made earlier under our key, by a call whose answer was lost: the service's duplicate answer names no request. */
    noteSubmittedBefore: assign((_, result: ShortRef) => ({
      outcome: { key: 'request.submittedBefore', params: refParams(result) },
    })),
    forget: assign((_, { fields }: { fields: Array<keyof RequestContext> }) =>
      Object.fromEntries([...fields, 'error'].map((field) => [field, undefined])),
    ),
    refuseChoice: assign({ error: { key: 'common.pickOne' } }),
    noteCancelled: assign({ outcome: { key: 'request.cancelled' } }),
    noteNoCurrency: assign({ outcome: { key: 'request.noCurrency' } }),
    noteFailure: assign((_, { error }: { error: unknown }) => ({
      outcome: createFailureText(error, REQUEST_FAILURES, 'request.unconfirmed'),
    })),
    leaveToMenu: assign({ next: 'menu' as const }),
  },
}).createMachine({
  id: 'request',
  context: contextFromInput((input) => ({ input, key: `${input.runId}:request` })),
  initial: 'starting',
  states: {
    // A caller offered no currency (their country has none the organization allows; a request is never in a test
    // currency) is told so in one line, not asked a number first nor shown another country's currencies.
    starting: {
      always: [{ guard: 'hasNoCurrency', actions: 'noteNoCurrency', target: 'done' }, { target: 'awaitingPhone' }],
    },
    awaitingPhone: {
      meta: { view: ask('request.askPhone', 'phone') },
      on: {
        ANSWERED: answered('phone', 'awaitingAmount'),
        BACK: { actions: 'leaveToMenu', target: 'done' },
      },
    },
    awaitingAmount: {
      meta: { view: ask('request.askAmount', 'amount') },
      on: {
        ANSWERED: [
          { guard: and([isValid('amount'), 'hasOneCurrency']), actions: store('amount'), target: 'awaitingReason' },
          { guard: isValid('amount'), actions: store('amount'), target: 'choosingCurrency' },
          { actions: store('amount') },
        ],
        BACK: back('awaitingPhone', 'phone'),
      },
    },
    choosingCurrency: {
      meta: {
        view: (context: RequestContext): View => ({
          text: { key: 'request.chooseCurrency' },
          error: context.error,
          choices: context.input.currencies.map((c) => ({ id: c, label: c })),
        }),
      },
      on: {
        CHOSEN: [
          { guard: 'isCurrency', actions: 'storeCurrency', target: 'awaitingReason' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: back('awaitingAmount', 'amount'),
      },
    },
    awaitingReason: {
      meta: { view: ask('request.askReason', 'text') },
      on: {
        ANSWERED: answered('reason', 'choosingInstructions'),
        BACK: [
          { guard: 'hasOneCurrency', ...back('awaitingAmount', 'amount', 'currency') },
          back('choosingCurrency', 'currency'),
        ],
      },
    },
    choosingInstructions: {
      meta: {
        view: (context: RequestContext): View => ({
          text: { key: 'request.askInstructions' },
          error: context.error ?? context.reasonWarning,
          choices: [
            { id: 'yes', text: { key: 'common.yes' } },
            { id: 'no', text: { key: 'common.no' } },
          ],
        }),
      },
      on: {
        CHOSEN: [
          { guard: chosen('yes'), actions: 'storeInstructions', target: 'confirming' },
          { guard: chosen('no'), actions: 'storeInstructions', target: 'confirming' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: back('awaitingReason', 'reason', 'reasonWarning'),
      },
    },
    confirming: {
      meta: {
        view: (context: RequestContext): View => ({
          text: {
            key: context.sendInstructions ? 'request.summaryWithInstructions' : 'request.summary',
            params: {
              phone: context.phone ?? '',
              amount: context.amount ?? '',
              currency: context.currency ?? '',
              reason: context.reason ?? '',
            },
          },
          error: context.error,
          choices: [
            { id: 'confirm', text: { key: 'request.confirm' } },
            { id: 'cancel', text: { key: 'request.cancel' } },
          ],
        }),
      },
      on: {
        CHOSEN: [
          { guard: chosen('confirm'), target: 'submitting' },
          { guard: chosen('cancel'), actions: 'noteCancelled', target: 'done' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: back('choosingInstructions', 'sendInstructions'),
      },
    },
    submitting: {
      tags: ['busy', 'money'],
      invoke: {
        src: 'createCollectionRequest',
        input: ({ context }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          duplicateCheckKey: context.key,
          phonenumber: context.phone!,
          amount: context.amount!,
          currency: context.currency!,
          reason: context.reason!,
          sendInstructions: context.sendInstructions ?? false,
          metadata: { chat: context.input.chat, ref: context.key },
        }),
        onDone: [
          {
            guard: { type: 'isAlreadySubmitted', params: ({ event }) => event.output },
            actions: { type: 'noteSubmittedBefore', params: ({ event }) => event.output as ShortRef },
            target: 'done',
          },
          {
            actions: { type: 'noteRequest', params: ({ event }) => event.output as CollectionRequestResult },
            target: 'done',
          },
        ],
        onError: { actions: { type: 'noteFailure', params: ({ event }) => ({ error: event.error }) }, target: 'done' },
      },
    },
    done: {
      type: 'final',
      meta: {
        view: (context: RequestContext): View => ({
          text: context.outcome ?? { key: 'request.cancelled' },
          final: true,
        }),
        outcome: (context: RequestContext): FlowOutcome =>
          context.next ? 'left' : outcomeOfText(context.outcome ?? { key: 'request.cancelled' }, REQUEST_OUTCOMES),
      },
    },
  },
  output: ({ context }): FlowOutput => (context.next ? { next: context.next } : {}),
});

/** The request flow as the registry lists it. */
export const requestFlow: FlowModule = { id: 'request', machine: requestMachine, messages: requestMessages };
