/**
 * Checks of the purchase tail (flows/purchase.ts) that the data and pin tests share, as a person on a chat
 * (no PIN) meets it: each takes a way to the summary with the service's answers (flowTest), confirms there and
 * checks what the person is shown and what the service was asked. One the pay tests share too: a money call
 * out when the product's process restarts ({@link expectKeyKeptAcrossRestart}).
 */
import { expect } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { ALREADY_SUBMITTED, type CallName, type PurchaseResult } from '../../flows/calls.js';
import type { ServiceFailure } from '../../flows/types.js';
import { held, type Answers, type FlowTest, type Outcome } from '../../src/testing/flow-test.js';

export type PurchaseFlow = 'data' | 'pin';
type PurchaseCall = 'purchaseData' | 'purchasePin';
/** The flow opened and driven to its summary, the service answering `answers` besides the test's own. */
export type ToSummary = (answers?: Answers) => Promise<FlowTest>;

/** The purchase may have gone through (a 429 may follow an attempt whose answer was lost): never "failed", never a retry. */
const unconfirmed = (flow: PurchaseFlow): Partial<Record<ServiceFailure['code'], string>> => ({
  service: `${flow}.unconfirmed`,
  connection: `${flow}.unconfirmed`,
  unknown: `${flow}.unconfirmed`,
  rate_limited: `${flow}.unconfirmed`,
});

const named = (t: FlowTest, name: PurchaseCall) => t.calls.filter((c) => c.name === name);

/**
 * Confirmed, the purchase fails with `failure`: `unconfirmed` with its words when it may have gone through,
 * else `failed` with the reason; called once either way. Returns the stored end snapshot.
 */
export async function expectPurchaseFailing(
  toSummary: ToSummary,
  id: PurchaseFlow,
  name: PurchaseCall,
  failure: ServiceFailure,
): Promise<AnyMachineSnapshot> {
  const t = await toSummary({ [name]: { error: failure } });
  await t.choose('confirm');
  const end = t.flow()!.snapshot;
  const view = t.flow()!.view;
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
  expect(named(t, name)).toHaveLength(1);
  return end;
}

/** Confirmed at the summary, the reservation fails with `code`: nothing is bought. */
export async function expectReservingFailing(
  toSummary: ToSummary,
  code: ServiceFailure['code'],
  name: PurchaseCall,
): Promise<void> {
  const t = await toSummary({ reserveSpend: { error: { code } } });
  await t.choose('confirm');
  expect(t.flow()!.snapshot.value).toBe('failed');
  expect(t.flow()!.view?.error?.key).toBe(`failure.${code}`);
  expect(t.calls.map((c) => c.name)).not.toContain(name);
}

/** The service already held a purchase under our key (AlreadySubmitted): its own screen, not "bought", never a retry. */
export async function expectSubmittedBefore(toSummary: ToSummary, id: PurchaseFlow, name: PurchaseCall): Promise<void> {
  // Our short ref, drawn with the intent, names it all the same.
  const t = await toSummary({ [name]: { output: { ...ALREADY_SUBMITTED, shortRef: 'MC-7KQ4X' } } });
  await t.choose('confirm');
  expect(t.flow()!.snapshot.value).toBe('submittedBefore');
  expect(t.flow()!.view).toEqual({
    text: { key: `${id}.submittedBefore`, params: { hasRef: 'yes', ref: 'MC-7KQ4X' } },
    final: true,
  });
  expect(named(t, name)).toHaveLength(1);
}

/**
 * While the purchase is out, the flow is stored busy (through JSON) with the idempotency `key` the call carries,
 * the one a repeat of the call from the stored flow would carry; once it answers, the flow is done, and the
 * purchase was called once.
 */
export async function expectKeyKeptWhileOut(
  toSummary: ToSummary,
  name: PurchaseCall,
  key: string,
  purchased: PurchaseResult,
): Promise<void> {
  const t = await toSummary({ [name]: held });
  await t.choose('confirm');
  expect(t.flow()!.snapshot.hasTag('busy')).toBe(true);
  expect(t.flow()!.snapshot.value).toBe('purchasing');
  expect(t.flow()!.snapshot.context).toMatchObject({ key });
  expect(named(t, name).map((c) => c.input.duplicateCheckKey)).toEqual([key]);
  await t.release(name, { output: purchased });
  expect(t.flow()!.snapshot.value).toBe('done');
  expect(named(t, name)).toHaveLength(1);
}

/**
 * The money call `name` is out (answered {@link held}) and the flow stored busy with its idempotency key when
 * the product's process restarts (flowTest's restart): the new process makes the call again under the SAME
 * key, the one it carried before the restart, and once the service answers (`answer`) the flow ends `done`.
 * Every call carried that one key: the service holds one payment, never a second.
 */
export async function expectKeyKeptAcrossRestart(t: FlowTest, name: CallName, answer: Outcome): Promise<void> {
  const keys = () => t.calls.filter((c) => c.name === name).map((c) => c.input.duplicateCheckKey);
  const [key] = keys();
  expect(key).toEqual(expect.any(String));
  expect(keys()).toEqual([key]);
  expect(t.flow()!.snapshot.hasTag('busy')).toBe(true);
  expect(t.flow()!.snapshot.context).toMatchObject({ key });
  await t.restart();
  expect(keys()).toEqual([key, key]);
  await t.release(name, answer);
  expect(t.flow()!.snapshot.value).toBe('done');
  expect(keys()).toEqual([key, key]);
}
