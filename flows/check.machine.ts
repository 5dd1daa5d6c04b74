/**
 * Check a collection: see the latest collections (up to five, each opened for its details), or find a
 * payment received by its amount, transaction id and the sender's full number (the claim rules of the
 * spec: all three together, the number in full). Ends showing the collection's status and sender, or
 * that none matches, or the service's reason.
 */
import { assign, setup } from 'xstate';
import { serviceActors } from './actors.js';
import { failureText, type FailureKeys } from './failure.js';
import { parseAmount, parsePhone, parseText, type Invalid } from './input.js';
import { checkMessages } from './messages/check.js';
import { outcomeOfText } from './outcome.js';
import { answered, ask, backIn, chosen } from './steps.js';
import type { CollectionSummary } from './calls.js';
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

/** Everything the check flow has learnt so far. JSON only. */
export interface CheckContext {
  input: FlowInput;
  /** The latest collections, as listed. */
  collections?: CollectionSummary[];
  amount?: string;
  transactionId?: string;
  /** The sender's number, international `+` format. */
  phone?: string;
  /** Why the last answer was refused (catalogue text: some reasons carry parameters). */
  error?: Text;
  /** The last screen's words: the collection found, none, or a failure. */
  outcome?: Text;
  /** Set when the user backs out of the first step: the flow ends and the menu starts. */
  next?: 'menu';
}

/** How many latest collections are listed. */
export const LATEST_LIMIT = 5;
/** Longest transaction id taken before the service judges it. */
const TRANSACTION_ID_MAX = 64;

/** The free-text answers of the flow, each named for the context field it fills. */
type Field = 'amount' | 'transactionId' | 'phone';

/** Reads the answer typed for `field`: the context update, or why it is refused. */
function readAnswer(
  field: Field,
  context: CheckContext,
  event: FlowEvent,
): { ok: true; update: Partial<CheckContext> } | Invalid {
  const value = event.type === 'ANSWERED' ? event.value : '';
  if (field === 'amount') {
    const amount = parseAmount(value);
    return amount.ok ? { ok: true, update: { amount: amount.amount } } : amount;
  }
  if (field === 'phone') {
    const phone = parsePhone(value, context.input.defaultCountry);
    return phone.ok ? { ok: true, update: { phone: phone.e164 } } : phone;
  }
  const id = parseText(value, TRANSACTION_ID_MAX);
  return id.ok ? { ok: true, update: { transactionId: id.text } } : id;
}

/** `2026-01-01T10:00:00Z` -> `2026-01-01 10:00`: the service's UTC time, shortened for a small screen. */
const shortDate = (date: string): string => date.replace('T', ' ').slice(0, 16);

/** The details screen of one collection: status, sender, amount, date, reference. */
function detailsOf(collection: CollectionSummary): Text {
  return {
    key: 'check.details',
    params: {
      status: collection.status,
      sender: collection.senderName ? `${collection.senderName} ${collection.phonenumber}` : collection.phonenumber,
      amount: collection.amount,
      currency: collection.currency,
      date: collection.paymentTime ?? shortDate(collection.paymentDate),
      reference: collection.reference,
      transactionId: collection.remoteTransactionId,
    },
  };
}

/** A failed claim: no such collection, or the service's reason for refusing the search. */
const CLAIM_FAILURES: FailureKeys = { not_found: 'check.noMatch', validation: 'check.refused' };

/** How a run ended, by the words of its last screen: an answer, found or not, is `done`. */
const CHECK_OUTCOMES: Record<string, FlowOutcome> = {
  'check.details': 'done',
  'check.noneYet': 'done',
  'check.noMatch': 'done',
  'check.refused': 'failed',
  'common.cancelled': 'cancelled',
};

const back = backIn<CheckContext>();

/** The check flow: FlowInput in, FlowOutput out (`next: 'menu'` when the user backs out of it). */
export const checkMachine = setup({
  types: {
    context: {} as CheckContext,
    events: {} as FlowEvent,
    input: {} as FlowInput,
    output: {} as FlowOutput,
  },
  actors: { latestCollections: serviceActors.latestCollections, claimCollection: serviceActors.claimCollection },
  guards: {
    isValidAnswer: ({ context, event }, params: { field: Field }) => readAnswer(params.field, context, event).ok,
    isChosen: ({ event }, params: { id: string }) => event.type === 'CHOSEN' && event.id === params.id,
    isListedCollection: ({ context, event }) =>
      event.type === 'CHOSEN' && (context.collections ?? []).some((c) => c.id === event.id),
    isEmpty: (_, { collections }: { collections: CollectionSummary[] }) => collections.length === 0,
  },
  actions: {
    storeAnswer: assign(({ context, event }, params: { field: Field }) => {
      const read = readAnswer(params.field, context, event);
      return read.ok ? { ...read.update, error: undefined } : { error: read.reason };
    }),
    storeCollections: assign((_, { collections }: { collections: CollectionSummary[] }) => ({ collections })),
    showChosen: assign({
      outcome: ({ context, event }) => {
        const id = event.type === 'CHOSEN' ? event.id : '';
        return detailsOf((context.collections ?? []).find((c) => c.id === id)!);
      },
    }),
    /** A claim matches at most one collection (more is refused by the service): show the first. */
    showFound: assign((_, { collections }: { collections: CollectionSummary[] }) => ({
      outcome: detailsOf(collections[0]!),
    })),
    noteNoneYet: assign({ outcome: { key: 'check.noneYet' } }),
    noteNoMatch: assign({ outcome: { key: 'check.noMatch' } }),
    noteFailure: assign((_, { error }: { error: unknown }) => ({ outcome: failureText(error, CLAIM_FAILURES) })),
    forget: assign((_, { fields }: { fields: Array<keyof CheckContext> }) =>
      Object.fromEntries([...fields, 'error'].map((field) => [field, undefined])),
    ),
    refuseChoice: assign({ error: { key: 'common.pickOne' } }),
    clearError: assign({ error: undefined }),
    leaveToMenu: assign({ next: 'menu' as const }),
  },
}).createMachine({
  id: 'check',
  context: contextFromInput((input) => ({ input })),
  initial: 'choosingMode',
  states: {
    choosingMode: {
      meta: {
        view: (context: CheckContext): View => ({
          text: { key: 'check.chooseMode' },
          error: context.error,
          choices: [
            { id: 'latest', text: { key: 'check.mode.latest' } },
            { id: 'find', text: { key: 'check.mode.find' } },
          ],
        }),
      },
      on: {
        CHOSEN: [
          { guard: chosen('latest'), actions: 'clearError', target: 'loadingLatest' },
          { guard: chosen('find'), actions: 'clearError', target: 'awaitingAmount' },
          { actions: 'refuseChoice' },
        ],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: { actions: 'leaveToMenu', target: 'done' },
      },
    },
    loadingLatest: {
      tags: ['busy'],
      invoke: {
        src: 'latestCollections',
        input: ({ context }) => ({ limit: LATEST_LIMIT, channel: context.input.channel, userId: context.input.userId }),
        onDone: [
          {
            guard: { type: 'isEmpty', params: ({ event }) => ({ collections: event.output }) },
            actions: 'noteNoneYet',
            target: 'done',
          },
          {
            actions: { type: 'storeCollections', params: ({ event }) => ({ collections: event.output }) },
            target: 'choosingCollection',
          },
        ],
        onError: { actions: { type: 'noteFailure', params: ({ event }) => ({ error: event.error }) }, target: 'done' },
      },
    },
    choosingCollection: {
      meta: {
        view: (context: CheckContext): View => ({
          text: { key: 'check.chooseCollection' },
          error: context.error,
          choices: (context.collections ?? []).map((c) => ({
            id: c.id,
            text: {
              key: 'check.collectionLine',
              params: { amount: c.amount, currency: c.currency, date: c.paymentTime ?? shortDate(c.paymentDate) },
            },
          })),
        }),
      },
      on: {
        CHOSEN: [{ guard: 'isListedCollection', actions: 'showChosen', target: 'done' }, { actions: 'refuseChoice' }],
        ANSWERED: { actions: 'refuseChoice' },
        BACK: back('choosingMode', 'collections'),
      },
    },
    awaitingAmount: {
      meta: { view: ask('check.askAmount', 'amount') },
      on: {
        ANSWERED: answered('amount', 'awaitingTransactionId'),
        BACK: back('choosingMode'),
      },
    },
    awaitingTransactionId: {
      meta: { view: ask('check.askTransactionId', 'code') },
      on: {
        ANSWERED: answered('transactionId', 'awaitingPhone'),
        BACK: back('awaitingAmount', 'amount'),
      },
    },
    awaitingPhone: {
      meta: { view: ask('check.askPhone', 'phone') },
      on: {
        ANSWERED: answered('phone', 'claiming'),
        BACK: back('awaitingTransactionId', 'transactionId'),
      },
    },
    claiming: {
      tags: ['busy'],
      invoke: {
        src: 'claimCollection',
        input: ({ context }) => ({
          amount: context.amount!,
          remoteTransactionId: context.transactionId!,
          phonenumber: context.phone!,
          channel: context.input.channel,
          userId: context.input.userId,
        }),
        onDone: [
          {
            guard: { type: 'isEmpty', params: ({ event }) => ({ collections: event.output }) },
            actions: 'noteNoMatch',
            target: 'done',
          },
          { actions: { type: 'showFound', params: ({ event }) => ({ collections: event.output }) }, target: 'done' },
        ],
        onError: { actions: { type: 'noteFailure', params: ({ event }) => ({ error: event.error }) }, target: 'done' },
      },
    },
    done: {
      type: 'final',
      meta: {
        view: (context: CheckContext): View => ({ text: context.outcome ?? { key: 'common.cancelled' }, final: true }),
        outcome: (context: CheckContext): FlowOutcome =>
          context.next ? 'left' : outcomeOfText(context.outcome ?? { key: 'common.cancelled' }, CHECK_OUTCOMES),
      },
    },
  },
  output: ({ context }): FlowOutput => (context.next ? { next: context.next } : {}),
});

/** The check flow as the registry lists it. */
export const checkFlow: FlowModule = { id: 'check', machine: checkMachine, messages: checkMessages };
