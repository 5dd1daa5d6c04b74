import { describe, expect, it } from 'vitest';
import { flows } from '../../flows/index.js';
import { FLOW_LABELS, STEP_LABELS, stepLabel } from '../../flows/step-labels.js';
import type { FlowId } from '../../flows/types.js';
import { finalSteps, flowGraph, stepNames } from '../../src/ops/flow-graph.js';

describe("the funnel's step labels", () => {
  it('name every step of every registered flow in words, never by the state id', () => {
    for (const [flow, module] of Object.entries(flows) as Array<[FlowId, NonNullable<(typeof flows)[FlowId]>]>) {
      expect(FLOW_LABELS[flow], flow).toMatch(/^[A-Z]/);
      const graph = flowGraph(module.machine);
      const steps = [...stepNames(graph), ...finalSteps(graph)];
      for (const step of steps) {
        const label = STEP_LABELS[flow][step];
        expect(label, `${flow}.${step} has no label in flows/step-labels.ts`).toBeDefined();
        expect(label).not.toBe(step);
        expect(label).toMatch(/^[A-Z]/);
        expect(label).not.toMatch(/[a-z][A-Z]/);
      }
      // No label for a step the flow no longer has.
      for (const step of Object.keys(STEP_LABELS[flow])) expect(steps, `${flow}.${step}`).toContain(step);
    }
  });

  it('reads an unknown step as its words', () => {
    expect(stepLabel('pay', 'awaitingSomethingNew')).toBe('Awaiting something new');
    expect(stepLabel('pay', 'awaitingAmount')).toBe('Amount asked');
  });
});
