/**
 * The benchmark's 4-step menu (welcome, phone, amount, PIN, end) written as one of our flows, so the
 * engine and USSD adapter do their full work on it: input validation, the PIN check and an idempotent
 * payment as services, compare-and-set sessions, duplicate-delivery marks.
 */
import { assign, setup } from 'xstate';
import { serviceActors } from '../../flows/actors.js';
import { parseAmount, parsePhone } from '../../flows/input.js';
import {
  contextFromInput,
  type FlowEvent,
  type FlowInput,
  type FlowModule,
  type Text,
  type View,
} from '../../flows/types.js';

interface SendContext {
  input: FlowInput;
  key: string;
  phone?: string;
  amount?: string;
  error?: Text;
}

const answer = (e: FlowEvent) => (e.type === 'ANSWERED' ? e.value : '');

const machine = setup({
  types: { context: {} as SendContext, input: {} as FlowInput, events: {} as FlowEvent },
  actors: { verifyPin: serviceActors.verifyPin, createPayment: serviceActors.createPayment },
  guards: {
    isPhone: ({ context, event }) => parsePhone(answer(event), context.input.defaultCountry).ok,
    isAmount: ({ event }) => parseAmount(answer(event)).ok,
    isPin: ({ event }) => /^\d{4}$/.test(answer(event)),
  },
  actions: {
    storePhone: assign({
      phone: ({ context, event }) => {
        const p = parsePhone(answer(event), context.input.defaultCountry);
        return p.ok ? p.e164 : undefined;
      },
      error: undefined,
    }),
    storeAmount: assign({
      amount: ({ event }) => {
        const a = parseAmount(answer(event));
        return a.ok ? a.amount : undefined;
      },
      error: undefined,
    }),
    refuse: assign({ error: { key: 'bench.invalid' } }),
  },
}).createMachine({
  id: 'bench',
  context: contextFromInput((input) => ({ input, key: `${input.runId}:pay` })),
  initial: 'welcome',
  states: {
    welcome: {
      meta: {
        view: (): View => ({ text: { key: 'bench.welcome' }, choices: [{ id: 'send', text: { key: 'bench.send' } }] }),
      },
      on: { CHOSEN: 'phone', ANSWERED: { actions: 'refuse' } },
    },
    phone: {
      meta: {
        view: (c: SendContext): View => ({
          text: { key: 'bench.phone' },
          input: 'phone',
          ...(c.error ? { error: c.error } : {}),
        }),
      },
      on: {
        ANSWERED: [{ guard: 'isPhone', target: 'amount', actions: 'storePhone' }, { actions: 'refuse' }],
        BACK: 'welcome',
      },
    },
    amount: {
      meta: {
        view: (c: SendContext): View => ({
          text: { key: 'bench.amount' },
          input: 'amount',
          ...(c.error ? { error: c.error } : {}),
        }),
      },
      on: {
        ANSWERED: [{ guard: 'isAmount', target: 'pin', actions: 'storeAmount' }, { actions: 'refuse' }],
        BACK: 'phone',
      },
    },
    pin: {
      meta: {
        view: (c: SendContext): View => ({
          text: { key: 'bench.pin' },
          input: 'pin',
          ...(c.error ? { error: c.error } : {}),
        }),
      },
      on: { ANSWERED: [{ guard: 'isPin', target: 'checkingPin' }, { actions: 'refuse' }], BACK: 'amount' },
    },
    checkingPin: {
      tags: ['busy', 'secret'],
      invoke: {
        src: 'verifyPin',
        input: ({ context, event }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          pin: answer(event),
        }),
        onDone: 'paying',
        onError: { target: 'pin', actions: 'refuse' },
      },
    },
    paying: {
      tags: ['busy'],
      invoke: {
        src: 'createPayment',
        input: ({ context }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          duplicateCheckKey: context.key,
          paymentType: 'money' as const,
          phonenumber: context.phone!,
          amount: context.amount!,
          currency: context.input.currencies[0]!,
          description: 'bench',
          metadata: { chat: context.input.chat, ref: context.key },
        }),
        onDone: 'done',
        onError: 'done',
      },
    },
    done: {
      type: 'final',
      meta: {
        view: (c: SendContext): View => ({
          text: {
            key: 'bench.sent',
            params: { amount: c.amount ?? '', currency: c.input.currencies[0] ?? '', phone: c.phone ?? '' },
          },
          final: true,
        }),
      },
    },
  },
});

export const benchFlow: FlowModule = {
  id: 'menu',
  machine,
  messages: {
    en: {
      'bench.welcome': 'Welcome',
      'bench.send': 'Send money',
      'bench.phone': 'Enter phone number',
      'bench.amount': 'Enter amount',
      'bench.pin': 'Enter PIN',
      'bench.sent': 'Sent {amount} {currency} to {phone}',
      'bench.invalid': 'Invalid answer',
    },
    sw: {},
  },
};
