/**
 * Change PIN: a person changes their own PIN. They prove who they are (their current PIN, or after a reset the
 * one-time code texted to them: `input.pinReset`), then type the new PIN twice; a weak one is refused
 * with the reason (4 to 6 digits, not one digit repeated, not a run, not the end of their number). The engine
 * starts this flow before the menu for a person whose PIN was reset (src/conversation/engine/engine.ts).
 *
 * No PIN or code is ever kept in context: each is typed into a state tagged `secret`, whose service takes it
 * from the event (the engine never stores that snapshot). Between the two typings of the new PIN only the
 * database holds it, as a scrypt hash (src/people/pin-change.ts): the second typing is compared there.
 */
import { assign, setup } from 'xstate';
import { serviceActors } from './actors.js';
import { answer, errorOf } from './events.js';
import { failureText } from './failure.js';
import { changePinMessages } from './messages/change-pin.js';
import { ask } from './steps.js';
import {
  contextFromInput,
  isServiceFailure,
  type FlowEvent,
  type FlowId,
  type FlowInput,
  type FlowModule,
  type FlowOutcome,
  type FlowOutput,
  type ServiceFailure,
  type Text,
  type View,
} from './types.js';

interface ChangePinContext {
  input: FlowInput;
  /** Why the last answer was refused; the next screen shows it. */
  error?: Text;
  /** The final screen's words, and how the run ended. */
  outcome?: Text;
  result?: FlowOutcome;
  /** Set when the person backed out: the menu comes next. */
  next?: FlowId;
}

const failed = (event: object, code: ServiceFailure['code']): boolean => {
  const error = errorOf(event);
  return isServiceFailure(error) && error.code === code;
};
/** The PIN or code typed, from the event only (never from context). */
const typed = ({ event }: { event: FlowEvent }): string => answer(event).trim();

export const changePinMachine = setup({
  types: {
    context: {} as ChangePinContext,
    events: {} as FlowEvent,
    input: {} as FlowInput,
    output: {} as FlowOutput,
    meta: {} as { view?: (context: ChangePinContext) => View; outcome?: (context: ChangePinContext) => FlowOutcome },
    tags: {} as 'busy' | 'secret',
  },
  actors: {
    startPinChange: serviceActors.startPinChange,
    draftPin: serviceActors.draftPin,
    savePin: serviceActors.savePin,
  },
  guards: {
    isWrongSecret: ({ event }) => failed(event, 'pin_wrong') || failed(event, 'code_wrong'),
    isWeak: ({ event }) => failed(event, 'pin_weak'),
    isMismatch: ({ event }) => failed(event, 'pin_mismatch'),
  },
  actions: {
    clearError: assign({ error: undefined }),
    refuseChoice: assign({ error: { key: 'common.pickOne' } }),
    refuseSecret: assign({ error: ({ event }) => failureText(errorOf(event)) }),
    refuseWeak: assign({
      error: ({ event }): Text => {
        const error = errorOf(event) as ServiceFailure;
        return { key: `changePin.weak.${error.message ?? 'length'}` };
      },
    }),
    refuseMismatch: assign({ error: { key: 'changePin.mismatch' } }),
    noteFailure: assign(({ event }) => {
      const error = errorOf(event);
      const code = isServiceFailure(error) ? error.code : 'unknown';
      const refused = code === 'not_allowed' || code === 'pin_locked' || code === 'code_expired';
      return { outcome: failureText(error), result: (refused ? 'refused' : 'failed') as FlowOutcome };
    }),
    noteSet: assign(({ context }) => ({
      outcome: { key: context.input.pinReset ? 'changePin.set' : 'changePin.changed' },
      result: 'done' as FlowOutcome,
      error: undefined,
    })),
    noteLeft: assign({ next: 'menu' as FlowId }),
  },
}).createMachine({
  id: 'changePin',
  context: contextFromInput((input) => ({ input })),
  initial: 'awaitingSecret',
  states: {
    // The current PIN, or after a reset the one-time code texted to the person.
    awaitingSecret: {
      meta: {
        view: (context: ChangePinContext): View =>
          ask(context.input.pinReset ? 'changePin.askCode' : 'changePin.askOld', 'pin')(context),
      },
      on: {
        ANSWERED: { target: 'checkingSecret', actions: 'clearError' },
        CHOSEN: { actions: 'refuseChoice' },
        BACK: { target: 'left', actions: 'noteLeft' },
      },
    },
    checkingSecret: {
      tags: ['busy', 'secret'],
      invoke: {
        src: 'startPinChange',
        input: ({ context, event }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          via: context.input.pinReset ? ('code' as const) : ('pin' as const),
          secret: typed({ event }),
        }),
        onDone: 'awaitingNew',
        onError: [
          { guard: 'isWrongSecret', target: 'awaitingSecret', actions: 'refuseSecret' },
          { target: 'done', actions: 'noteFailure' },
        ],
      },
    },
    awaitingNew: {
      meta: { view: ask('changePin.askNew', 'pin') },
      on: {
        ANSWERED: { target: 'drafting', actions: 'clearError' },
        CHOSEN: { actions: 'refuseChoice' },
        BACK: { target: 'left', actions: 'noteLeft' },
      },
    },
    drafting: {
      tags: ['busy', 'secret'],
      invoke: {
        src: 'draftPin',
        input: ({ context, event }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          pin: typed({ event }),
        }),
        onDone: 'awaitingRepeat',
        onError: [
          { guard: 'isWeak', target: 'awaitingNew', actions: 'refuseWeak' },
          { target: 'done', actions: 'noteFailure' },
        ],
      },
    },
    awaitingRepeat: {
      meta: { view: ask('changePin.askRepeat', 'pin') },
      on: {
        ANSWERED: { target: 'saving', actions: 'clearError' },
        CHOSEN: { actions: 'refuseChoice' },
        BACK: { target: 'awaitingNew', actions: 'clearError' },
      },
    },
    saving: {
      tags: ['busy', 'secret'],
      invoke: {
        src: 'savePin',
        input: ({ context, event }) => ({
          channel: context.input.channel,
          userId: context.input.userId,
          pin: typed({ event }),
        }),
        onDone: { target: 'done', actions: 'noteSet' },
        onError: [
          { guard: 'isMismatch', target: 'awaitingNew', actions: 'refuseMismatch' },
          { target: 'done', actions: 'noteFailure' },
        ],
      },
    },
    done: {
      type: 'final',
      meta: {
        view: (context: ChangePinContext): View => ({
          text: context.outcome ?? { key: 'failure.unknown' },
          final: true,
        }),
        outcome: (context: ChangePinContext): FlowOutcome => context.result ?? 'failed',
      },
    },
    left: { type: 'final', meta: { outcome: () => 'left' } },
  },
  output: ({ context }): FlowOutput => (context.next ? { next: context.next } : {}),
});

export const changePinFlow: FlowModule = { id: 'changePin', machine: changePinMachine, messages: changePinMessages };
