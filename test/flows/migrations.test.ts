import { describe, expect, it } from 'vitest';
import { flows } from '../../flows/index.js';
import { migrateValue, migrations, stateLabel, stateValue } from '../../flows/migrations/index.js';
import { flowShape, stateIds } from '../../flows/shape.js';
import type { FlowId } from '../../flows/types.js';

describe('the declared migrations (flows/migrations/)', () => {
  it('each name a shipped flow, a shape that is not its shape now, and move every state to one that exists', () => {
    for (const [flow, byShape] of Object.entries(migrations) as Array<
      [FlowId, Record<string, Record<string, string>>]
    >) {
      const module = flows[flow];
      expect(module, `migrations name flow ${flow}, which is not shipped`).toBeDefined();
      const ids = stateIds(module!.machine);
      const id = module!.machine.id;
      for (const [shape, moves] of Object.entries(byShape)) {
        expect(shape, `${flow}: a migration from the shape the flow has now`).not.toBe(flowShape(module!.machine));
        expect(Object.keys(moves).length, `${flow} ${shape}: an empty migration`).toBeGreaterThan(0);
        for (const [from, to] of Object.entries(moves)) {
          expect(ids.has(`${id}.${to}`), `${flow} ${shape}: ${from} moves to ${to}, which does not exist`).toBe(true);
        }
      }
    }
  });

  it('move a state by its label, a nested one by its parent, and leave alone what they do not list', () => {
    const moves = { awaitingAmount: 'enteringAmount', buying: 'purchasing', 'bank.awaitingAccount': 'awaitingIban' };
    expect(migrateValue('awaitingAmount', moves)).toBe('enteringAmount');
    expect(migrateValue({ buying: 'awaitingCode' }, moves)).toEqual({ purchasing: 'awaitingCode' });
    expect(migrateValue({ bank: 'awaitingAccount' }, moves)).toBe('awaitingIban');
    expect(migrateValue('awaitingPhone', moves)).toBeUndefined();
    expect(migrateValue({ a: 'x', b: 'y' }, moves)).toBeUndefined();
    expect(migrateValue(42, moves)).toBeUndefined();
    // Names of Object's own are not moves.
    expect(migrateValue('toString', moves)).toBeUndefined();
  });

  it('read state labels as the funnel writes them', () => {
    for (const value of ['done', { bank: 'awaitingAccount' }, { a: { b: 'c' } }])
      expect(stateValue(stateLabel(value))).toEqual(value);
  });
});
