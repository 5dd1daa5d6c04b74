import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { flows } from '../../flows/index.js';
import { flowShape, flowShapes, shapeParts } from '../../flows/shape.js';
import { contextFromInput, type FlowEvent, type FlowInput, type FlowModule } from '../../flows/types.js';

/** A small flow whose machine each test changes in one way. */
function machine(
  o: { amountState?: string; extraEvent?: boolean; extraKey?: boolean; label?: string; extraState?: boolean } = {},
) {
  const amount = o.amountState ?? 'awaitingAmount';
  return setup({
    types: { context: {} as Record<string, unknown>, input: {} as FlowInput, events: {} as FlowEvent },
  }).createMachine({
    id: 'pay',
    context: contextFromInput((input) => ({ input, key: `${input.runId}:pay`, ...(o.extraKey ? { note: '' } : {}) })),
    initial: amount,
    states: {
      [amount]: {
        meta: { label: o.label ?? 'Amount asked' },
        on: { ANSWERED: 'done', BACK: 'done', ...(o.extraEvent ? { CHOSEN: 'done' } : {}) },
      },
      ...(o.extraState ? { awaitingNote: { on: { ANSWERED: 'done' } } } : {}),
      done: { type: 'final' },
    },
  });
}

describe('flow shapes', () => {
  it('are made of state ids, their events and the initial context keys', () => {
    expect(shapeParts(machine())).toEqual({
      states: [
        ['pay', []],
        ['pay.awaitingAmount', ['ANSWERED', 'BACK']],
        ['pay.done', []],
      ],
      context: ['input', 'key'],
    });
  });

  it('change with a state renamed or added, an event added, a context field added; not with words', () => {
    const base = flowShape(machine());
    expect(flowShape(machine())).toBe(base);
    expect(flowShape(machine({ label: 'Amount typed' }))).toBe(base);
    const changed = [
      flowShape(machine({ amountState: 'enteringAmount' })),
      flowShape(machine({ extraState: true })),
      flowShape(machine({ extraEvent: true })),
      flowShape(machine({ extraKey: true })),
    ];
    expect(new Set([base, ...changed]).size).toBe(5);
    for (const shape of changed) expect(shape).toMatch(/^[\w-]{12}$/);
  });

  it('of every shipped flow are made, and differ from each other', () => {
    expect(Object.keys(flowShapes(flows)).sort()).toEqual(Object.keys(flows).sort());
    const shapes = Object.values(flowShapes(flows));
    expect(new Set(shapes).size).toBe(shapes.length);
    const module: FlowModule = flows.pay!;
    expect(flowShape(module.machine)).toBe(flowShapes(flows).pay);
  });
});
