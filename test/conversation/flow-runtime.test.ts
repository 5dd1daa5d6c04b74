import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { serviceActors } from '../../flows/actors.js';
import type { FlowEvent, FlowId, FlowInput, FlowModule, View } from '../../flows/types.js';
import { FlowRuntime, isBusy, type Step, type StepContext } from '../../src/conversation/flow/flow-runtime.js';

/** Asks an amount, pays it (a service call), shows the outcome. */
const payFlow: FlowModule = {
  id: 'menu',
  messages: { en: { 't.ask': 'Amount?', 't.paid': 'Paid' }, sw: {} },
  machine: setup({
    types: { context: {} as { input: FlowInput; amount?: string }, input: {} as FlowInput, events: {} as FlowEvent },
    actors: { createPayment: serviceActors.createPayment },
  }).createMachine({
    context: ({ input }) => ({ input }),
    initial: 'ask',
    states: {
      ask: { meta: { view: (): View => ({ text: { key: 't.ask' }, input: 'amount' }) }, on: { ANSWERED: 'paying' } },
      paying: {
        tags: ['busy', 'money'],
        invoke: {
          src: 'createPayment',
          input: ({ context }) => ({
            duplicateCheckKey: `${context.input.runId}:pay`,
            paymentType: 'money' as const,
            phonenumber: '+256772123456',
            amount: '5000',
            currency: 'UGX',
            description: 't',
            metadata: {},
          }),
          onDone: 'paid',
        },
      },
      paid: { type: 'final', meta: { view: (): View => ({ text: { key: 't.paid' }, final: true }) } },
    },
  }),
};

const ctx: StepContext = {
  allowedFlows: [],
  home: 'menu',
  newRunId: () => 'run-1',
  expiresAt: 10_000,
  channel: 'ussd',
  at: 1_000,
  input: (runId, profile) => ({
    runId,
    channel: 'ussd',
    chat: 'ussd:+1',
    userId: '+1',
    requirePin: false,
    defaultCountry: 'UG',
    currencies: ['UGX'],
    profile,
    allowedFlows: [],
  }),
};
const base: Omit<Step, 'storedFlow'> = { profile: { lang: 'en' }, remember: {}, notes: [] };
const asStored = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

describe('FlowRuntime: the snapshot as stored', () => {
  it("stores a step without children as xstate's getPersistedSnapshot would, less the defaults, for every registered flow's start", async () => {
    const { flows } = await import('../../flows/index.js');
    const runtime = new FlowRuntime(flows, {});
    const all = { ...ctx, allowedFlows: Object.keys(flows) as FlowId[] };
    for (const id of Object.keys(flows) as FlowId[]) {
      const machine = runtime.machine(id);
      const started = runtime.start(id, base, all);
      const live = runtime.restore(started.storedFlow);
      if (Object.keys(live.children).length > 0) continue;
      const { children, historyValue, status, ...kept } = machine.getPersistedSnapshot(live) as Record<string, unknown>;
      expect([children, historyValue, status], id).toEqual([{}, {}, 'active']);
      expect(asStored(started.storedFlow.snapshot), id).toEqual(
        asStored(Object.fromEntries(Object.entries(kept).filter(([, v]) => v !== undefined))),
      );
    }
    // A finished flow keeps its status and output.
    const payments: unknown[] = [];
    const pay = new FlowRuntime(
      { menu: payFlow },
      { createPayment: async (input) => (payments.push(input), { id: 'p1', state: 'new' as const }) },
    );
    const paying = pay.send(
      pay.start('menu', base, ctx).storedFlow,
      { type: 'ANSWERED', value: '5000' },
      base,
      ctx,
    ).storedFlow;
    const invocation = pay.invocation(paying.flow, pay.restore(paying));
    const done = pay.restore(pay.resolve(paying, await pay.call(invocation), base, ctx).storedFlow);
    const stored = pay.persist('menu', done) as Record<string, unknown>;
    const { children, historyValue, ...expected } = pay.machine('menu').getPersistedSnapshot(done) as Record<
      string,
      unknown
    >;
    expect([children, historyValue]).toEqual([{}, {}]);
    expect(asStored(stored)).toEqual(
      asStored(Object.fromEntries(Object.entries(expected).filter(([, v]) => v !== undefined))),
    );
    expect(stored.status).toBe('done');
  });

  it('leaves out an active status, no children and no history, and a restore puts them back', () => {
    const payments: unknown[] = [];
    const runtime = new FlowRuntime(
      { menu: payFlow },
      { createPayment: async (input) => (payments.push(input), { id: 'p1', state: 'new' as const }) },
    );
    const asking = runtime.start('menu', base, ctx).storedFlow;
    expect(Object.keys(asking.snapshot as object).sort()).toEqual(['context', 'value']);
    // Read back from the store (a new object): the same step, not busy.
    const restored = runtime.restore(asStored(asking));
    expect(restored.status).toBe('active');
    expect(restored.value).toBe('ask');
    expect(isBusy(restored)).toBe(false);
  });

  it('keeps the invoke of a busy step, so a run restored from the store makes its call', async () => {
    const payments: unknown[] = [];
    const runtime = new FlowRuntime(
      { menu: payFlow },
      { createPayment: async (input) => (payments.push(input), { id: 'p1', state: 'new' as const }) },
    );
    const asking = runtime.start('menu', base, ctx).storedFlow;
    const paying = runtime.send(asking, { type: 'ANSWERED', value: '5000' }, base, ctx).storedFlow;
    expect(Object.keys(paying.snapshot as object).sort()).toEqual(['children', 'context', 'value']);
    const stored = asStored(paying);
    const restored = runtime.restore(stored);
    expect(isBusy(restored)).toBe(true);
    const invocation = runtime.invocation(stored.flow, restored);
    const outcome = await runtime.call(invocation);
    expect(payments).toEqual([expect.objectContaining({ duplicateCheckKey: 'run-1:pay', amount: '5000' })]);
    const done = runtime.resolve(stored, outcome, base, ctx).storedFlow;
    expect(done.ended).toBe(true);
    expect((done.snapshot as { status?: string }).status).toBe('done');
    expect(runtime.restore(asStored(done)).status).toBe('done');
  });
});
