/**
 * Checks of the purchase tail (flows/purchase.ts) that the data and pin tests share: each takes a live
 * flow stopped at the summary or at the waiting purchase call.
 */
import { expect } from 'vitest';
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import { ALREADY_SUBMITTED, type PurchaseResult } from '../../flows/calls.js';
import type { ServiceFailure } from '../../flows/types.js';
import { currentView } from '../../src/conversation/flow/render.js';
import { chosen, live, type Live } from './driver.js';

export type PurchaseFlow = 'data' | 'pin';
type PurchaseService = 'purchaseData' | 'purchasePin';

/** The purchase may have gone through (a 429 may follow an attempt whose answer was lost): never "failed", never a retry. */
const unconfirmed = (flow: PurchaseFlow): Partial<Record<ServiceFailure['code'], string>> => ({
  service: `${flow}.unconfirmed`,
  connection: `${flow}.unconfirmed`,
  unknown: `${flow}.unconfirmed`,
  rate_limited: `${flow}.unconfirmed`,
});

/**
 * The waiting purchase fails with `failure`: `unconfirmed` with its words when it may have gone through,
 * else `failed` with the reason; called once either way. Returns the end snapshot.
 */
export async function expectPurchaseFailing(
  flow: Live,
  id: PurchaseFlow,
  service: PurchaseService,
  failure: ServiceFailure,
): Promise<AnyMachineSnapshot> {
  const end = await flow.settle(service, { error: failure });
  const view = currentView(end);
  const words = unconfirmed(id)[failure.code];
  if (words) {
    expect(end.value).toBe('unconfirmed');
    const ref = failure.shortRef ? { hasRef: 'yes', ref: failure.shortRef } : { hasRef: 'no' };
    expect(view).toEqual({ text: { key: words, params: ref }, final: true });
  } else {
    expect(end.value).toBe('failed');
    expect(view?.text).toEqual({ key: `${id}.notBought` });
    expect(view?.error?.key).toBe(`failure.${failure.code}`);
  }
  expect(flow.calls.filter((c) => c.service === service)).toHaveLength(1);
  return end;
}

/** From the summary (no PIN asked): confirmed, the reservation fails with `code`, nothing is bought. */
export async function expectReservingFailing(
  flow: Live,
  code: ServiceFailure['code'],
  service: PurchaseService,
): Promise<void> {
  await flow.send(chosen('confirm'));
  const end = await flow.settle('reserveSpend', { error: { code } });
  expect(end.value).toBe('failed');
  expect(currentView(end)?.error?.key).toBe(`failure.${code}`);
  expect(flow.calls.map((c) => c.service)).not.toContain(service);
}

/** The service already held a purchase under our key (AlreadySubmitted): its own screen, not "bought", never a retry. */
export async function expectSubmittedBefore(flow: Live, id: PurchaseFlow, service: PurchaseService): Promise<void> {
  // Our short ref, drawn with the intent, names it all the same.
  const end = await flow.settle(service, { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4X' } });
  expect(end.value).toBe('submittedBefore');
  expect(currentView(end)).toEqual({
    text: { key: `${id}.submittedBefore`, params: { hasRef: 'yes', ref: 'MC-7KQ4X' } },
    final: true,
  });
  expect(flow.calls.filter((c) => c.service === service)).toHaveLength(1);
}

/**
 * The busy snapshot of `first` (its purchase waiting) through a JSON round trip and restored: the purchase
 * is called again, and only it, under the same `key`, and ends done.
 */
export async function expectKeyKeptAcrossRestore(
  first: Live,
  machine: AnyStateMachine,
  service: PurchaseService,
  key: string,
  purchased: PurchaseResult,
): Promise<void> {
  const stored = first.persisted();
  first.stop();
  const restored = live(machine, { snapshot: stored });
  const done = await restored.settle(service, { output: purchased });
  const keys = [...first.calls, ...restored.calls]
    .filter((c) => c.service === service)
    .map((c) => c.input.duplicateCheckKey);
  expect(keys).toEqual([key, key]);
  expect(restored.calls.map((c) => c.service)).toEqual([service]);
  expect(done.value).toBe('done');
}
