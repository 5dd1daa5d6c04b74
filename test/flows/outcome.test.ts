/**
 * How a run ended (flows/outcome.ts, each final state's `meta.outcome`): every final snapshot the walk of a
 * flow reaches names an outcome, and it is the one its last screen tells (a table written here, apart from
 * the flows' own). Walked on USSD (PIN, limits) and on Telegram.
 */
import { describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { flows } from '../../flows/index.js';
import { finalOutcome } from '../../flows/outcome.js';
import {
  FLOW_OUTCOMES,
  type FlowId,
  type FlowInput,
  type FlowModule,
  type FlowOutcome,
  type FlowOutput,
} from '../../flows/types.js';
import { currentView } from '../../src/conversation/flow/render.js';
import { walkFlow } from './coverage.js';

/** The outcome each last screen tells, by its text key (and the error line's, for the purchase flows). */
const BY_SCREEN: Record<string, FlowOutcome> = {
  'pay.submitted': 'paid',
  'pay.submittedBefore': 'paid',
  'pay.unconfirmed': 'processing',
  'pay.refused': 'failed',
  'pay.cancelled': 'cancelled',
  'request.created': 'done',
  'request.createdWithCode': 'done',
  'request.unconfirmed': 'processing',
  'request.submittedBefore': 'done',
  'request.refused': 'failed',
  'request.cancelled': 'cancelled',
  'check.details': 'done',
  'check.noneYet': 'done',
  'check.noMatch': 'done',
  'check.refused': 'failed',
  'data.done': 'paid',
  'pin.done': 'paid',
  'data.submittedBefore': 'paid',
  'pin.submittedBefore': 'paid',
  'data.unconfirmed': 'processing',
  'pin.unconfirmed': 'processing',
  'changePin.changed': 'done',
  'changePin.set': 'done',
  'link.shown': 'done',
  'failure.code_expired': 'refused',
  'failure.too_many_codes': 'refused',
  'failure.duplicate': 'processing',
  'failure.not_allowed': 'refused',
  'failure.limit_exceeded': 'refused',
  'failure.pin_locked': 'refused',
};

function expected(flow: FlowId, snapshot: AnyMachineSnapshot): FlowOutcome {
  if (flow === 'menu') return 'done';
  if ((snapshot.output as FlowOutput | undefined)?.next === 'menu') return 'left';
  const view = currentView(snapshot)!;
  // The purchase flows' failed screen says "not bought" and why on its error line.
  const key = view.text.key.endsWith('.notBought') ? (view.error?.key ?? '') : view.text.key;
  return BY_SCREEN[key] ?? (key.startsWith('failure.') ? 'failed' : (`unexpected screen ${key}` as FlowOutcome));
}

const outcomes = {
  createPayment: [
    { output: { id: 'pay-1', state: 'new' } },
    { output: { id: '', state: 'submitted' } },
    { error: { code: 'validation' as const, fields: { amount: ['Insufficient'] } } },
    { error: { code: 'connection' as const } },
    { error: { code: 'duplicate' as const } },
  ],
};

describe.each(Object.values(flows) as FlowModule[])('the outcome of $id', (module) => {
  it.each<[string, Partial<FlowInput>]>([
    ['USSD', { channel: 'ussd', requirePin: true }],
    ['Telegram', {}],
  ])('every final screen reached on %s names the outcome it tells', (_channel, input) => {
    const walk = walkFlow(module, { input, outcomes, print: false });
    const ends = walk.paths.map((p) => p.state).filter((s) => s.status === 'done');
    expect(ends.length).toBeGreaterThan(0);
    const seen = new Set<FlowOutcome>();
    for (const end of ends) {
      const outcome = finalOutcome(end);
      expect(FLOW_OUTCOMES).toContain(outcome);
      expect(outcome, JSON.stringify(end.value)).toBe(expected(module.id, end));
      seen.add(outcome!);
    }
    // The money flows end every way there is on USSD (the menu only ever hands on).
    if (module.id === 'pay' && input.requirePin)
      expect([...seen].sort()).toEqual(['cancelled', 'failed', 'left', 'paid', 'processing', 'refused']);
    if (module.id === 'menu') expect([...seen]).toEqual(['done']);
  });

  it('names no outcome while the run goes on', () => {
    const walk = walkFlow(module, { print: false });
    for (const state of walk.paths.map((p) => p.state).filter((s) => s.status !== 'done'))
      expect(finalOutcome(state)).toBeUndefined();
  });
});
