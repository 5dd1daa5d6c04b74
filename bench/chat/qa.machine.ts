/**
 * The chat-depth benchmark's conversation as one of our flows: QUESTIONS questions in a row, each answer
 * kept in context (as the plugin keeps every update of its replay log). Update 1 opens it (question 1 is
 * shown), update k answers question k-1: "depth k".
 */
import { assign, setup } from 'xstate';
import type { FlowEvent, FlowInput, FlowModule, View } from '../../flows/types.js';

export const QUESTIONS = 25;

interface QaContext {
  answers: string[];
}

const states: Record<string, object> = {};
for (let i = 1; i <= QUESTIONS; i++) {
  states[`q${i}`] = {
    meta: { view: (): View => ({ text: { key: 'qa.question', params: { n: i } }, input: 'text' }) },
    on: { ANSWERED: { target: i === QUESTIONS ? 'done' : `q${i + 1}`, actions: 'storeAnswer' } },
  };
}
states.done = {
  type: 'final',
  meta: { view: (c: QaContext): View => ({ text: { key: 'qa.done', params: { n: c.answers.length } }, final: true }) },
};

const machine = setup({
  types: { context: {} as QaContext, input: {} as FlowInput, events: {} as FlowEvent },
  actions: {
    storeAnswer: assign({
      answers: ({ context, event }) => [...context.answers, event.type === 'ANSWERED' ? event.value : ''],
    }),
  },
}).createMachine({
  id: 'qa',
  context: () => ({ answers: [] }),
  initial: 'q1',
  states: states as never,
});

export const qaFlow: FlowModule = {
  id: 'menu',
  machine: machine as unknown as FlowModule['machine'],
  messages: { en: { 'qa.question': 'Question {n}?', 'qa.done': 'Thanks, {n} answers.' }, sw: {} },
};
