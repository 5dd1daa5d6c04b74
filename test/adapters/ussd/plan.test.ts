/** The USSD hop planner (adapters/ussd/plan.ts) as a table: stored state and request in, plan out. */
import { describe, expect, it } from 'vitest';
import type { ConversationView, Prompt } from '../../../src/conversation/types.js';
import type { Hop } from '../../../adapters/ussd/codecs/codec.js';
import { decisionOf, planHop, type HopInput, type HopPlan } from '../../../adapters/ussd/plan.js';
import { renderPrompt } from '../../../adapters/ussd/renderer.js';
import { answersDigest, type UssdState } from '../../../adapters/ussd/session.js';

const digest = answersDigest('plan-test-key');
const NOW = 1_000_000;
const PHONE = '+256772000001';

const MENU: Prompt = {
  text: 'Menu',
  choices: [
    { id: 'pay', label: 'Pay' },
    { id: 'request', label: 'Request' },
  ],
  final: false,
};
const ASK_AMOUNT: Prompt = { text: 'Enter amount', input: 'amount', final: false };
const LONG: Prompt = {
  text: 'Pick a bundle',
  choices: Array.from({ length: 12 }, (_, i) => ({
    id: `b${i}`,
    label: `Bundle number ${i} with a rather long description`,
  })),
  final: false,
};
const PIN: Prompt = { text: 'Enter PIN', input: 'pin', final: false };
const CONFIRM: Prompt = {
  text: 'Send 5000?',
  choices: [
    { id: 'confirm', label: 'Confirm' },
    { id: 'cancel', label: 'Cancel' },
  ],
  final: false,
};
const DONE: Prompt = { text: 'Sent', final: true };

/** The state a session `S1` of Africa's Talking keeps after answering `seen` at hop `hop`, showing `prompt`. */
function state(seen: string, hop: number, prompt: Prompt, extra: Partial<UssdState> = {}): UssdState {
  return {
    gateway: 'africastalking',
    sessionId: 'S1',
    hop,
    seenLength: seen.length,
    seenDigest: digest(seen),
    prompt,
    page: 0,
    at: NOW - 1000,
    ...extra,
  };
}

function input(hop: Exclude<Hop, { kind: 'end' }>, extra: Partial<HopInput> = {}): HopInput {
  return {
    gateway: 'africastalking',
    sessionId: 'S1',
    phone: PHONE,
    hop,
    serviceCodes: ['*384*123#'],
    digest,
    now: NOW,
    resumeMs: 120_000,
    ...extra,
  };
}
const at = (text: string, extra: Partial<HopInput> = {}) => input({ kind: 'cumulative', text }, extra);

/** The plan's parts a row checks: its kind, and the message handed to the engine or the screen kept. */
function summary(plan: HopPlan) {
  if (plan.kind === 'answers') {
    const { channel, conversationId, userId, phoneNumber, ...message } = plan.inbound;
    expect({ channel, conversationId, userId, phoneNumber }).toEqual({
      channel: 'ussd',
      conversationId: PHONE,
      userId: PHONE,
      phoneNumber: PHONE,
    });
    return { kind: plan.kind, message, ahead: plan.ahead };
  }
  return { kind: plan.kind, screen: plan.state.prompt.text, page: plan.state.page, hop: plan.state.hop };
}

const dropped = { ...state('1*1', 2, ASK_AMOUNT), sessionId: 'OLD' };
const resumeAsked = state(
  '',
  0,
  { text: 'Continue where you left off?', final: false },
  { resume: { prompt: ASK_AMOUNT, page: 0 } },
);
const waiting: ConversationView = { waiting: true, notes: false };

const rows: [string, UssdState | undefined, HopInput, ConversationView | undefined, ReturnType<typeof summary>][] = [
  [
    'a plain dial: the engine starts the conversation',
    undefined,
    at(''),
    undefined,
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: [] },
  ],
  [
    "Africa's Talking's dial string: its answers typed ahead",
    undefined,
    at('1*1*0772000001'),
    undefined,
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: ['1', '1', '0772000001'] },
  ],
  [
    "Hubtel's dialled string past the service code",
    undefined,
    input({ kind: 'latest', start: true, input: '*384*123*1*2#' }, { gateway: 'hubtel' }),
    undefined,
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: ['1', '2'] },
  ],
  [
    'a dial string of another service code is a plain dial',
    undefined,
    input({ kind: 'latest', start: true, input: '*999*1#' }, { gateway: 'hubtel' }),
    undefined,
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: [] },
  ],
  [
    'the dial again (a doubled start): the same screen',
    state('', 0, MENU),
    at(''),
    waiting,
    { kind: 'repeat', screen: 'Menu', page: 0, hop: 0 },
  ],
  [
    'a resend of the last answer: the same screen',
    state('1', 1, ASK_AMOUNT),
    at('1'),
    waiting,
    { kind: 'repeat', screen: 'Enter amount', page: 0, hop: 1 },
  ],
  [
    'text that does not extend what was answered: the same screen',
    state('1', 1, ASK_AMOUNT),
    at('2*5000'),
    waiting,
    { kind: 'repeat', screen: 'Enter amount', page: 0, hop: 1 },
  ],
  [
    'anything after the END: the END again',
    state('1*5000', 2, DONE),
    at('1*5000*1'),
    waiting,
    { kind: 'repeat', screen: 'Sent', page: 0, hop: 2 },
  ],
  [
    'a new answer: a shown choice by its number',
    state('', 0, MENU),
    at('2'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:1', choice: 'request' }, ahead: [] },
  ],
  [
    'a new answer: text',
    state('1', 1, ASK_AMOUNT),
    at('1*5000'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:2', text: '5000' }, ahead: [] },
  ],
  [
    '00: home',
    state('1', 1, ASK_AMOUNT),
    at('1*00'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:2', nav: 'home' }, ahead: [] },
  ],
  [
    '0 on a first page: back in the flow',
    state('1', 1, ASK_AMOUNT),
    at('1*0'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:2', nav: 'back' }, ahead: [] },
  ],
  [
    '98 on a paged screen: its next page, the flow untouched',
    state('1', 1, LONG),
    at('1*98'),
    waiting,
    { kind: 'page', screen: 'Pick a bundle', page: 1, hop: 2 },
  ],
  [
    '0 on a second page: the page before',
    state('1*98', 2, LONG, { page: 1 }),
    at('1*98*0'),
    waiting,
    { kind: 'page', screen: 'Pick a bundle', page: 0, hop: 3 },
  ],
  [
    '98 after a refused answer: the next page, the error left behind',
    state('1*9', 2, { ...LONG, text: 'Please pick one of the options.\nPick a bundle', refused: true }),
    at('1*9*98'),
    waiting,
    { kind: 'page', screen: 'Pick a bundle', page: 1, hop: 3 },
  ],
  [
    '0 back to the first page after a refused answer: the page, not the error again',
    state('1*9*98', 3, LONG, { page: 1 }),
    at('1*9*98*0'),
    waiting,
    { kind: 'page', screen: 'Pick a bundle', page: 0, hop: 4 },
  ],
  [
    '98 on the last page: an answer for the flow',
    state('1', 1, MENU),
    at('1*98'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:2', text: '98' }, ahead: [] },
  ],
  [
    'a plain dial after a session dropped mid-flow: offered to take it up',
    dropped,
    at(''),
    waiting,
    { kind: 'offer-resume', screen: 'Continue where you left off?', page: 0, hop: 0 },
  ],
  [
    'a dial string after a dropped session: what it says, no offer',
    dropped,
    at('1'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: ['1'] },
  ],
  [
    'a dropped session whose flow no longer waits (a call out, ended): no offer',
    dropped,
    at(''),
    { waiting: false, notes: false },
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: [] },
  ],
  [
    'a dropped session while outcomes are kept for the dial: no offer, they are shown first',
    dropped,
    at(''),
    { waiting: true, notes: true },
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: [] },
  ],
  [
    'a session dropped past the resume window: no offer',
    dropped,
    at('', { now: NOW + 200_000 }),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:0', newSession: true }, ahead: [] },
  ],
  [
    '1 on the offer: the flow where it was',
    resumeAsked,
    at('1'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:1', resume: true }, ahead: [] },
  ],
  [
    '2 on the offer: the menu',
    resumeAsked,
    at('2'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:1', newSession: true }, ahead: [] },
  ],
  [
    '00 on the offer: the menu',
    resumeAsked,
    at('00'),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:1', newSession: true }, ahead: [] },
  ],
  [
    'anything else on the offer: asked again',
    resumeAsked,
    at('7'),
    waiting,
    { kind: 'offer-resume', screen: 'Continue where you left off?', page: 0, hop: 1 },
  ],
  [
    'a gateway numbering its requests: a stale number is the same screen',
    { ...state('', 2, ASK_AMOUNT), gateway: 'hubtel' },
    input({ kind: 'latest', start: false, input: '5000', sequence: 2 }, { gateway: 'hubtel' }),
    waiting,
    { kind: 'repeat', screen: 'Enter amount', page: 0, hop: 2 },
  ],
  [
    'a gateway sending the latest answer: the next hop',
    { ...state('', 2, ASK_AMOUNT), gateway: 'hubtel' },
    input({ kind: 'latest', start: false, input: '5000', sequence: 3 }, { gateway: 'hubtel' }),
    waiting,
    { kind: 'answers', message: { messageId: 'S1:3', text: '5000' }, ahead: [] },
  ],
  [
    'another session id: a new dial',
    state('1', 1, ASK_AMOUNT),
    at('', { sessionId: 'S2' }),
    { waiting: false, notes: false },
    { kind: 'answers', message: { messageId: 'S2:0', newSession: true }, ahead: [] },
  ],
];

describe('planHop', () => {
  it.each(rows)('%s', (_, stored, request, conversation, expected) => {
    const plan = planHop(stored, request, conversation);
    expect(summary(plan)).toEqual(expected);
    // The plan is the same however often it is made (the engine decides again after a conflict).
    expect(planHop(stored, request, conversation)).toEqual(plan);
  });
});

describe('decisionOf', () => {
  it('answers a repeat from the state without writing, a page or an offer with a write, answers with a step', () => {
    expect(decisionOf(planHop(state('1', 1, ASK_AMOUNT), at('1'), waiting))).toMatchObject({
      kind: 'reply',
      changed: false,
    });
    expect(decisionOf(planHop(state('1', 1, LONG), at('1*98'), waiting))).toMatchObject({
      kind: 'reply',
      changed: true,
    });
    expect(decisionOf(planHop(dropped, at(''), waiting))).toMatchObject({ kind: 'reply', changed: true });
    const step = decisionOf(planHop(state('1', 1, ASK_AMOUNT), at('1*5000'), waiting));
    expect(step).toMatchObject({ kind: 'step', inbound: { text: '5000' } });
    expect(step.kind === 'step' && step.ahead).toBe(undefined);
  });

  it("keeps the engine's answer from its first page, stamped with the request's time and the answers taken ahead", () => {
    const step = decisionOf(planHop(undefined, at('1*1'), undefined));
    if (step.kind !== 'step') throw new Error('a step');
    expect(step.after(ASK_AMOUNT, 0)).toEqual({
      gateway: 'africastalking',
      sessionId: 'S1',
      hop: 0,
      seenLength: 3,
      seenDigest: digest('1*1'),
      prompt: ASK_AMOUNT,
      page: 0,
      at: NOW,
    });
    expect(step.after(ASK_AMOUNT, 2)).toMatchObject({ hop: 0, walked: 2, at: NOW });
  });

  const take = (screen: Prompt, answer: string) => {
    const step = decisionOf(planHop(undefined, at('1'), undefined));
    if (step.kind !== 'step' || !step.ahead) throw new Error('a step with answers ahead');
    return step.ahead.take(screen, answer);
  };
  const takes: [string, Prompt, string, ReturnType<typeof take>][] = [
    ['a choice by its number', MENU, '1', { choice: 'pay' }],
    ['text', ASK_AMOUNT, '5000', { text: '5000' }],
    ['back', ASK_AMOUNT, '0', { nav: 'back' }],
    ['never a PIN', PIN, '1234', undefined],
    ['never a confirmation', CONFIRM, '1', undefined],
    ['never past the end', DONE, '1', undefined],
    ['never on a screen that refused the last answer', { ...ASK_AMOUNT, refused: true }, '5000', undefined],
    ['never on a screen opening with kept outcomes', { ...MENU, noted: true }, '1', undefined],
    ['not a page turn (the walk stops on the screen)', LONG, '98', undefined],
  ];
  it.each(takes)('an answer typed ahead: %s', (_, screen, answer, expected) => {
    expect(take(screen, answer)).toEqual(expected);
  });

  it('pages LONG (the table relies on it)', () => {
    expect(renderPrompt(LONG, 0).pageCount).toBeGreaterThan(1);
  });
});
