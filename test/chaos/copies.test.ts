/**
 * The chaos run's check of a resent USSD request (copies.ts), against the engine as the run met it: two
 * instances on one store, the amount's run held at the contact check (a non-money call) past the deadline,
 * "still working on it" answered, then the copy of that request on the other instance.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/index.js';
import type { LeaseChange } from '../../src/store/types.js';
import { postAt } from '../adapters/ussd/helpers.js';
import { ONE_CURRENCY_PAYMENT, startStack, type Stack } from '../adapters/ussd/stack.js';
import { gate, overriding } from '../conversation/engine-fixtures.js';
import { copyProblem } from './copies.js';
import type { Answer } from './transport.js';

/** Room for the hops before the held one on a loaded machine. */
const DEADLINE_MS = 2000;
const PLACEHOLDER = 'END We are still working on it. You will be notified of the result.';

const stacks: Stack[] = [];
const gates: Array<() => void> = [];
afterEach(async () => {
  for (const open of gates.splice(0)) open();
  await Promise.all(stacks.splice(0).map((s) => s.close()));
});

/** The record being written holds a ledger answer "still working on it". */
const recordsPlaceholder = (snapshot: unknown): boolean =>
  ((snapshot as { ledger?: Array<[string, unknown]> }).ledger ?? []).some(
    ([, answer]) => typeof answer === 'object' && /still working on it/.test((answer as { text: string }).text),
  );

/**
 * Two instances on one store; the amount answered on the first (its contact check held until its answer came),
 * then its copy on the second. With `refuse`, the store refuses the write that records "still working on it"
 * (Redis refusing writes for a moment, as after a payment the chaos run refuses them).
 */
async function resendAfterPlaceholder(phone: string, refuse: boolean) {
  const checking = gate<void>();
  gates.push(() => checking.open());
  let checks = 0;
  const slowFetch: typeof fetch = async (input, init) => {
    if (init?.method === 'POST' && new URL(String(input)).pathname === '/api/contacts') {
      checks += 1;
      await checking.promise;
    }
    return fetch(input, init);
  };
  const base = new MemoryStore();
  let refusedAt: number | undefined;
  const store = overriding(base, {
    async set(key: string, snapshot: unknown, expected: number | null, ttl: number, lease?: LeaseChange) {
      if (refuse && refusedAt === undefined && key.startsWith('conv:') && recordsPlaceholder(snapshot)) {
        refusedAt = Date.now();
        throw new Error("OOM command not allowed when used memory > 'maxmemory'.");
      }
      return base.set(key, snapshot, expected, ttl, lease);
    },
  });
  const a = await startStack({ store, deadlineMs: DEADLINE_MS, fetch: slowFetch });
  stacks.push(a);
  const b = await startStack({ store, deadlineMs: DEADLINE_MS, service: { sandbox: a.sandbox, url: a.url } });
  stacks.push(b);
  const answers: string[] = [];
  const deliver = async (stack: Stack): Promise<Answer> => {
    const sentAt = Date.now();
    const fields = {
      sessionId: 'COPY-1',
      serviceCode: '*384*123#',
      phoneNumber: phone,
      networkCode: '63902',
      text: answers.join('*'),
    };
    const { status, body } = await postAt(stack.url, fields);
    return { status, text: body, instance: stack === a ? 'a' : 'b', sentAt, answeredAt: Date.now() };
  };
  expect((await deliver(a)).text).toMatch(/^CON /);
  const amountAt = ONE_CURRENCY_PAYMENT.indexOf('9000');
  for (const answer of ONE_CURRENCY_PAYMENT.slice(0, amountAt)) {
    answers.push(answer);
    expect((await deliver(a)).text).toMatch(/^CON /);
  }
  answers.push('9000');
  const first = await deliver(a);
  checking.open();
  await a.engine.drain();
  const copy = await deliver(b);
  expect(checks).toBe(1);
  return { first, copy, refusedAt };
}

describe('a resent USSD request after "still working on it"', () => {
  it('recorded: the copy on another instance gets the same screen, though the run has since reached the next question', async () => {
    const { first, copy } = await resendAfterPlaceholder('+256772160001', false);
    expect(first.text).toBe(PLACEHOLDER);
    expect(copy.text).toBe(PLACEHOLDER);
    expect(copyProblem('/ussd/africastalking', first, copy, [])).toBeUndefined();
  });

  it('its write refused by the store: answered unrecorded, the copy gets the next question, which the check allows only with that store fault seen', async () => {
    const { first, copy, refusedAt } = await resendAfterPlaceholder('+256772160002', true);
    expect(refusedAt).toBeDefined();
    expect(first.text).toBe(PLACEHOLDER);
    expect(copy.text).toMatch(/^CON Send 9,000 UGX .*Sarah Nakato[\s\S]*\n1\. Confirm/);
    expect(copyProblem('/ussd/africastalking', first, copy, [[refusedAt!, refusedAt!]])).toBeUndefined();
    // Without a store fault during the first delivery, the same pair is the problem the run reports.
    expect(copyProblem('/ussd/africastalking', first, copy, [])).toMatch(/^a resent USSD request got another screen/);
  });
});
