import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { menuFlow, menuMachine, MENU_FLOWS } from '../../flows/menu.machine.js';
import type { FlowEvent, FlowOutput } from '../../flows/types.js';
import { currentView, render } from '../../src/conversation/flow/render.js';
import { missingMessages, sampleInput, walkFlow } from './coverage.js';

const events: FlowEvent[] = [
  ...MENU_FLOWS.map((id): FlowEvent => ({ type: 'CHOSEN', id })),
  { type: 'CHOSEN', id: 'lang' },
  { type: 'CHOSEN', id: 'en' },
  { type: 'CHOSEN', id: 'sw' },
  { type: 'CHOSEN', id: 'nonsense' },
  { type: 'ANSWERED', value: '1' },
  { type: 'BACK' },
];

function run(allowed: typeof MENU_FLOWS, steps: FlowEvent[]) {
  const actor = createActor(menuMachine, { input: sampleInput({ allowedFlows: [...allowed] }) }).start();
  for (const step of steps) actor.send(step);
  const snapshot = actor.getSnapshot();
  actor.stop();
  return snapshot;
}

describe('menu machine', () => {
  it('visits every state and uses only catalogued keys in both languages', () => {
    const walk = walkFlow(menuFlow);
    expect(walk.missing).toEqual([]);
    expect(walk.visited).toEqual(['choosing', 'choosingLanguage', 'flowChosen', 'languageChosen']);
    expect(missingMessages(menuFlow, walk.keys)).toEqual([]);
    expect(walk.keys).toContain('common.pickOne');
  });

  it('every shortest path ends where its events lead and every final output is a flow to start', () => {
    const paths = getShortestPaths(menuMachine, { input: sampleInput(), events });
    const outputs = paths.filter((p) => p.state.status === 'done').map((p) => p.state.output as FlowOutput);
    expect(outputs.map((o) => o.next).sort()).toEqual([...MENU_FLOWS, 'menu', 'menu'].sort());
    expect(
      outputs
        .filter((o) => o.remember)
        .map((o) => o.remember?.lang)
        .sort(),
    ).toEqual(['en', 'sw']);
  });

  it('simple paths to a language choice all pass through the language screen', () => {
    const paths = getSimplePaths(menuMachine, {
      input: sampleInput(),
      events,
      toState: (s) => s.matches('languageChosen'),
    });
    expect(paths.length).toBeGreaterThan(0);
    for (const path of paths) {
      expect(path.steps.some((s) => s.state.matches('choosingLanguage'))).toBe(true);
      expect(path.state.output).toEqual({
        remember: { lang: (path.steps.at(-1)?.event as { id: string }).id },
        next: 'menu',
      });
    }
  });

  it('offers only the flows the role allows, in menu order, and refuses the others', () => {
    const snapshot = run(['check', 'pay'], [{ type: 'CHOSEN', id: 'data' }]);
    expect(snapshot.value).toBe('choosing');
    expect(currentView(snapshot)?.choices?.map((c) => c.id)).toEqual(['pay', 'check', 'lang']);
    expect(currentView(snapshot)?.error).toEqual({ key: 'common.pickOne' });
    const chosen = run(['check', 'pay'], [{ type: 'CHOSEN', id: 'check' }]);
    expect(chosen.output).toEqual({ next: 'check' });
  });

  it('without allowed flows offers the language only, with a title that says so', () => {
    const snapshot = run([], []);
    const view = currentView(snapshot);
    expect(view?.choices?.map((c) => c.id)).toEqual(['lang']);
    expect(render(view!.text, 'en')).toMatch(/No payment options/);
  });

  it('BACK from the language screen returns to the menu with the error cleared', () => {
    const snapshot = run(['pay'], [{ type: 'CHOSEN', id: 'lang' }, { type: 'ANSWERED', value: 'x' }, { type: 'BACK' }]);
    expect(snapshot.value).toBe('choosing');
    expect(currentView(snapshot)?.error).toBeUndefined();
  });
});
