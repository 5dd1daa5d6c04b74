import { setup, fromPromise, assign, createActor, type AnyActorScope } from 'xstate';
const m = setup({ actors: { pay: fromPromise(async ({ input }: { input: { n: number } }) => ({ id: 'p' + input.n })) } }).createMachine({
  context: { n: 5, id: '' as string }, initial: 'idle',
  states: { idle: { on: { GO: 'paying' } }, paying: { tags: ['busy', 'money'], invoke: { src: 'pay', input: ({ context }) => ({ n: context.n }), onDone: { target: 'done', actions: assign({ id: ({ event }) => event.output.id }) }, onError: 'failed' } }, done: { type: 'final' }, failed: {} },
});
const provided = m.provide({ actors: { pay: fromPromise(async ({ input }: any) => ({ id: 'provided' + input.n })) } });
const self = createActor(provided);
const actions: any[] = [];
const scope = { self, defer: () => {}, id: '', logger: () => {}, sessionId: '', stopChild: () => {}, system: self.system, emit: () => {}, actionExecutor: (a: any) => actions.push(a) } as unknown as AnyActorScope;
const s0 = provided.getInitialSnapshot(scope, undefined);
const s1 = provided.transition(s0, { type: 'GO' }, scope);
console.log(actions.map(a => [a.type, a.params?.id, a.params?.src, (a.params as any)?.input]));
console.log(Object.entries(s1.children).map(([id, c]: any) => [id, c.src, c.getSnapshot().status, c.getSnapshot().input, typeof c.logic.config]));
const persisted = provided.getPersistedSnapshot(s1);
console.log(JSON.stringify(persisted));
const r = provided.restoreSnapshot(JSON.parse(JSON.stringify(persisted)), scope);
const [id, child]: any = Object.entries(r.children)[0];
const out = await child.logic.config({ input: child.getSnapshot().input, self: child, system: child.system, signal: new AbortController().signal, emit: () => {} });
const s2 = provided.transition(r as any, { type: `xstate.done.actor.${id}`, output: out, actorId: id } as any, scope);
console.log(s2.value, s2.status, (s2.context as any).id, Object.keys(s2.children));
const s3 = provided.transition(r as any, { type: `xstate.error.actor.${id}`, error: new Error('x'), actorId: id } as any, scope);
console.log(s3.value, s3.status, s1.hasTag('money'));
