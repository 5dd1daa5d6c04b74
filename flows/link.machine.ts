/**
 * Link a chat app (USSD): shows the person a link code (src/people/people.ts linkCode: 10 characters, single
 * use, 10 minutes) to send to the bot from their chat account: Telegram `/link CODE`, WhatsApp `link CODE`,
 * Slack `/momo link CODE` (answered by src/people/link.ts).
 *
 * The code is a secret until it is used: the call that makes it is tagged `secret` (run as the step is made,
 * never stored), and so is the screen that shows it, which the engine shows once and never stores
 * (src/conversation/engine/turn.ts): a resend of that hop is told to ask for a new code.
 */
import { assign, setup } from 'xstate';
import { serviceActors } from './actors.js';
import { errorOf, outputOf } from './events.js';
import { failureText } from './failure.js';
import { linkMessages } from './messages/link.js';
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

interface LinkContext {
  input: FlowInput;
  code?: string;
  failure?: Text;
}

export const linkMachine = setup({
  types: {
    context: {} as LinkContext,
    events: {} as FlowEvent,
    input: {} as FlowInput,
    output: {} as FlowOutput,
    meta: {} as { view?: (context: LinkContext) => View; outcome?: (context: LinkContext) => FlowOutcome },
    tags: {} as 'busy' | 'secret',
  },
  actors: { makeLinkCode: serviceActors.makeLinkCode },
}).createMachine({
  id: 'link',
  context: contextFromInput((input) => ({ input })),
  initial: 'making',
  states: {
    making: {
      tags: ['busy', 'secret'],
      invoke: {
        src: 'makeLinkCode',
        input: ({ context }) => ({ channel: context.input.channel, userId: context.input.userId }),
        onDone: { target: 'shown', actions: assign({ code: ({ event }) => outputOf<string>(event) }) },
        onError: {
          target: 'refused',
          actions: assign({ failure: ({ event }) => failureText(errorOf(event)) }),
        },
      },
    },
    shown: {
      type: 'final',
      tags: ['secret'],
      meta: {
        view: (context: LinkContext): View => ({
          text: { key: 'link.shown', params: { code: context.code ?? '' } },
          final: true,
        }),
        outcome: () => 'done',
      },
    },
    refused: {
      type: 'final',
      meta: {
        view: (context: LinkContext): View => ({ text: context.failure ?? { key: 'failure.unknown' }, final: true }),
        outcome: (context: LinkContext): FlowOutcome =>
          context.failure?.key === 'failure.not_allowed' || context.failure?.key === 'failure.too_many_codes'
            ? 'refused'
            : 'failed',
      },
    },
  },
  output: (): FlowOutput => ({}),
});

export const linkFlow: FlowModule = { id: 'link', machine: linkMachine, messages: linkMessages };
