/**
 * The runtime side of the services convention (flows/services.ts): one named fromPromise actor per
 * FlowServices method. Flows declare `actors: serviceActors` (or a subset) in setup(); the stubs throw, so
 * a service nobody bound fails loudly. The engine never starts an invoke: it calls the service the invoke names
 * (src/conversation/flow/flow-runtime.ts, FlowRuntime.call). Tests that run a flow as a live actor bind
 * implementations with `machine.provide({ actors: provideServices(services) })`.
 */
import { fromPromise, type PromiseActorLogic } from 'xstate';
import type { FlowServices, ServiceName } from './services.js';

/** What service `K` takes. */
export type ServiceInput<K extends ServiceName> = Parameters<FlowServices[K]>[0];
/** What service `K` resolves with. */
export type ServiceOutput<K extends ServiceName> = Awaited<ReturnType<FlowServices[K]>>;

export type ServiceActors = { [K in ServiceName]: PromiseActorLogic<ServiceOutput<K>, ServiceInput<K>> };

function stub<K extends ServiceName>(name: K): ServiceActors[K] {
  return fromPromise<ServiceOutput<K>, ServiceInput<K>>(async () => {
    throw new Error(`service ${name} not provided`);
  }) as ServiceActors[K];
}

/** One stub actor per service, named like the service. */
export const serviceActors: ServiceActors = {
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
export function provideServices(services: Partial<FlowServices>): Partial<ServiceActors> {
  const actors: Partial<Record<ServiceName, unknown>> = {};
  for (const name of Object.keys(serviceActors) as ServiceName[]) {
    const impl = services[name] as ((input: unknown) => Promise<unknown>) | undefined;
    if (impl) actors[name] = fromPromise(({ input }) => impl.call(services, input));
  }
  return actors as Partial<ServiceActors>;
}
