import { it, expect } from 'vitest';
import { setup, fromPromise, createActor, type AnyActorScope } from 'xstate';
it('logic identity', async () => {
  const m = setup({ actors: { r: fromPromise(async () => 'default') } }).createMachine({ initial: 'a', states: { a: { on: { GO: 'b' } }, b: { invoke: { src: 'r', onDone: 'c' } }, c: {} } });
  const p1 = m.provide({ actors: { r: fromPromise(() => new Promise(() => {})) } });
  const p2 = m.provide({ actors: { r: fromPromise(async () => 'two') } });
  const scope = (mm: any) => { const self = createActor(mm); return { self, defer() {}, id: '', logger() {}, sessionId: '', stopChild() {}, system: self.system, emit() {}, actionExecutor() {} } as unknown as AnyActorScope; };
  const s1 = p1.transition(p1.getInitialSnapshot(scope(p1)), { type: 'GO' }, scope(p1));
  const s2 = p2.transition(p2.getInitialSnapshot(scope(p2)), { type: 'GO' }, scope(p2));
  const c1: any = Object.values(s1.children)[0]; const c2: any = Object.values(s2.children)[0];
  console.log(c1.logic === c2.logic, c1.logic.config === c2.logic.config, String(c1.logic.config), String(c2.logic.config));
});
