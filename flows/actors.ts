/**
 * The runtime side of the services convention (flows/calls.ts): one named fromPromise actor per
 * FlowCalls method. Flows declare `actors: serviceActors` (or a subset) in setup(); the stubs throw, so
 * a service nobody bound fails loudly. The engine never starts an invoke: it calls the service the invoke names
 * (src/conversation/flow/flow-runtime.ts, FlowRuntime.call). Tests that run a flow as a live actor bind
 * implementations with `machine.provide({ actors: provideServices(services) })`.
 */
import { fromPromise, type PromiseActorLogic } from 'xstate';
import type { FlowCalls, CallName } from './calls.js';

/** What service `K` takes. */
export type CallInput<K extends CallName> = Parameters<FlowCalls[K]>[0];
/** What service `K` resolves with. */
export type CallOutput<K extends CallName> = Awaited<ReturnType<FlowCalls[K]>>;

export type CallActors = { [K in CallName]: PromiseActorLogic<CallOutput<K>, CallInput<K>> };

function stub<K extends CallName>(name: K): CallActors[K] {
  return fromPromise<CallOutput<K>, CallInput<K>>(async () => {
    throw new Error(`service ${name} not provided`);
  }) as CallActors[K];
}

/** One stub actor per service, named like the service. */
export const serviceActors: CallActors = {
  verifyPin: stub('verifyPin'),
  startPinChange: stub('startPinChange'),
  draftPin: stub('draftPin'),
  savePin: stub('savePin'),
  makeLinkCode: stub('makeLinkCode'),
  checkSpend: stub('checkSpend'),
  reserveSpend: stub('reserveSpend'),
  lookupContact: stub('lookupContact'),
  verifyContact: stub('verifyContact'),
  createPayment: stub('createPayment'),
  listBanks: stub('listBanks'),
  recentPayment: stub('recentPayment'),
  recentPayees: stub('recentPayees'),
  createCollectionRequest: stub('createCollectionRequest'),
  claimCollection: stub('claimCollection'),
  latestCollections: stub('latestCollections'),
  listDataBundles: stub('listDataBundles'),
  purchaseData: stub('purchaseData'),
  listPinBundles: stub('listPinBundles'),
  validateCandidate: stub('validateCandidate'),
  purchasePin: stub('purchasePin'),
};

/**
 * Actors running the given implementations, for `machine.provide({ actors })`. Services left out keep the
 * machine's stubs. A rejection (a ServiceFailure) reaches the flow as the invoke's error.
 */
export function provideServices(services: Partial<FlowCalls>): Partial<CallActors> {
  const actors: Partial<Record<CallName, unknown>> = {};
  for (const name of Object.keys(serviceActors) as CallName[]) {
    const impl = services[name] as ((input: unknown) => Promise<unknown>) | undefined;
    if (impl) actors[name] = fromPromise(({ input }) => impl.call(services, input));
  }
  return actors as Partial<CallActors>;
}
