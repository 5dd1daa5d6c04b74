/**
 * Issue item 4 with the real engine and sandbox: when the service is slower than the USSD deadline, the
 * user gets an END saying the request is being processed; the work completes, and the outcome is shown at
 * the next dial. The service is made slow by a fetch that holds payment creation back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../src/store/index.js';
import { postAt } from './helpers.js';
import { ONE_CURRENCY_PAYMENT, paymentsOf, startStack, type Stack } from './stack.js';

/** Room for the PIN's scrypt check on a loaded machine (a check out at the deadline is "nothing was sent"). */
const DEADLINE_MS = 2000;
const PHONE = '+256772140001';

let stack: Stack;
let held = 0;
/** Payment creations wait for this: opened once the dial was answered, so the service is slower than that. */
let answered!: () => void;
const answeredGate = new Promise<void>((resolve) => (answered = resolve));

beforeAll(async () => {
  const slowFetch: typeof fetch = async (input, init) => {
    if (init?.method === 'POST' && /\/api\/payments\/?$/.test(new URL(String(input)).pathname)) {
      held += 1;
      await answeredGate;
    }
    return fetch(input, init);
  };
  stack = await startStack({ store: new MemoryStore(), deadlineMs: DEADLINE_MS, fetch: slowFetch });
});
afterAll(async () => {
  await stack?.close();
});

describe('a service slower than the USSD deadline', () => {
  it('ends with "processing", completes the payment, and shows the outcome at the next dial', async () => {
    const answers: string[] = [];
    const hop = async (sessionId: string, answer?: string) => {
      if (answer !== undefined) answers.push(answer);
      const fields = {
        sessionId,
        serviceCode: '*384*123#',
        phoneNumber: PHONE,
        networkCode: '63902',
        text: answers.join('*'),
      };
      return (await postAt(stack.url, fields)).body;
    };
    await hop('SLOW-1');
    for (const answer of ONE_CURRENCY_PAYMENT.slice(0, -1)) expect(await hop('SLOW-1', answer)).toMatch(/^CON /);
    const last = await hop('SLOW-1', ONE_CURRENCY_PAYMENT.at(-1));
    answered();
    // "Processing", or "being confirmed, do not send it again" when the run was already making the payment.
    expect(last).toMatch(
      /^END We are still working on it(\. You will be notified of the result\.|: it is being confirmed\. Do not send it again; you will be notified of the result\.)$/,
    );

    await stack.engine.drain();
    expect(held).toBe(1);
    const payments = paymentsOf(stack.sandbox, PHONE);
    expect(payments).toHaveLength(1);

    answers.length = 0;
    const next = await hop('SLOW-2');
    expect(next).toMatch(/^CON /);
    expect(next).toContain(`Sent: 9,000 UGX to Sarah Nakato. Ref ${String(payments[0]?.id)}.`);
    expect(next.length - 4).toBeLessThanOrEqual(182);
  });
});
