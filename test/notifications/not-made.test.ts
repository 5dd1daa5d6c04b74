/**
 * "Already submitted" is believed only while the service can be believed to hold it (issue 32, item 7), against
 * a real sandbox over HTTP: a process killed mid-request leaves the service holding our key with nothing made;
 * our repeat under the key is answered 409 ("already submitted"); two budgeted list reads minutes apart find
 * nothing, so the person is told plainly that nothing was sent, the journal hook runs and the spend is given
 * back. A 409 on a payment the service did make is never told "not made".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ALREADY_SUBMITTED } from '../../flows/calls.js';
import type { Made } from '../../src/conversation/calls/made-records.js';
import { API_KEY, cutOff, payment, startProcess, startService, type Process, type Service } from './stack.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** Delays no test waits for: the checks are run by hand. */
const BY_HAND = [3600, 7200];

async function setup(): Promise<{ service: Service; product: Process; notMade: string[]; givenBack: string[] }> {
  const service = await startService();
  open.push(service);
  const notMade: string[] = [];
  const givenBack: string[] = [];
  const product = await startProcess(service, {
    followUpDelaysSeconds: BY_HAND,
    onNotMade: async (record: Made) => void notMade.push(record.ref),
    onPaymentFailed: async (ref) => void givenBack.push(ref),
  });
  open.push(product);
  return { service, product, notMade, givenBack };
}

describe('"already submitted" of a payment the service never made', () => {
  it('is found out by two reads: the person is told nothing was sent, the journal hook runs, the limit is given back', async () => {
    const { service, product, notMade, givenBack } = await setup();
    const key = `cut-${Date.now()}:pay`;
    await cutOff(service, key, 'telegram:61');
    expect(service.sandbox.controls.payments()).toHaveLength(0);

    // The run taken over repeats the create under its key: the service answers 409.
    expect(await product.calls.createPayment(payment(key, 'telegram:61'))).toEqual(ALREADY_SUBMITTED);
    expect(await product.made.byRef(key)).toMatchObject({ accepted: true });
    expect(await product.made.byRef(key)).not.toHaveProperty('id');

    // The first check: one read, nothing found, nothing told yet.
    const before = service.reads.length;
    await product.notifications.followUp.check({ ref: key, step: 0 });
    expect(service.reads.length - before).toBe(1);
    expect(product.telegram.told).toEqual([]);
    expect(notMade).toEqual([]);

    // The second, minutes later: nothing again. Told plainly, journalled, limit back.
    await product.notifications.followUp.check({ ref: key, step: 1 });
    expect(service.reads.length - before).toBe(2);
    expect(notMade).toEqual([key]);
    expect(givenBack).toEqual([key]);
    expect(product.telegram.told).toEqual([
      {
        address: { channel: 'telegram', conversationId: '61' },
        text: expect.stringMatching(/^Your payment – of 5,000 UGX to \+256772000001 was NOT made: .*Nothing was sent/),
      },
    ]);
    // Told once: a repeated check reads nothing more and tells nothing more.
    await product.notifications.followUp.check({ ref: key, step: 1 });
    expect(product.telegram.told).toHaveLength(1);
    expect(service.reads.length - before).toBe(2);
  });

  it('a 409 on a payment the service did make is found by the first read, and told its outcome, never "not made"', async () => {
    const { service, product, notMade, givenBack } = await setup();
    const key = `made-${Date.now()}:pay`;
    // The first create reached the service (its answer is of no matter here); the repeat is answered 409.
    await fetch(`${service.url}/api/payments`, {
      method: 'POST',
      headers: { authorization: `Token ${API_KEY}`, 'content-type': 'application/json', 'duplicate-check-key': key },
      body: JSON.stringify(payment(key, 'telegram:62')),
    });
    expect(await product.calls.createPayment(payment(key, 'telegram:62'))).toEqual(ALREADY_SUBMITTED);
    await service.sandbox.controls.advanceClock(30);
    await service.sandbox.controls.idle();
    await product.notifications.followUp.check({ ref: key, step: 0 });
    expect(product.telegram.told).toEqual([
      {
        address: { channel: 'telegram', conversationId: '62' },
        text: expect.stringMatching(/^Done: 5,000 UGX reached/),
      },
    ]);
    expect((await product.made.byRef(key))?.id).toEqual(expect.any(String));
    await product.notifications.followUp.check({ ref: key, step: 1 });
    expect([notMade, givenBack]).toEqual([[], []]);
    expect(product.telegram.told).toHaveLength(1);
  });
});
