/** What the flow authors' kit (src/testing/flow-test.ts) promises a test, beyond the recipe's example. */
import { afterEach, describe, expect, it } from 'vitest';
import { RUN_LEASE_MS } from '../../src/conversation/engine/engine.js';
import { flowTest, held, type Answers, type FlowTest, type FlowTestOptions } from '../../src/testing/flow-test.js';

const tests: FlowTest[] = [];
afterEach(async () => {
  await Promise.all(tests.splice(0).map((t) => t.close()));
});
const check = (options: FlowTestOptions = {}) => {
  const t = flowTest('check', { channel: 'telegram', ...options });
  tests.push(t);
  return t;
};

describe('flowTest', () => {
  it('fails the step whose service call it was given no answer for, naming the service', async () => {
    const t = check();
    await expect(t.dial().press('Latest payments received')).rejects.toThrow(/latestCollections was called/);
    expect(t.calls.map((c) => c.name)).toEqual(['latestCollections']);
  });

  it('rejects a chain with what was seen and skips its later steps; the next chain goes on', async () => {
    const t = check({ answers: { latestCollections: { output: [] } } });
    await expect(t.dial().sees('Not on this screen').press('Latest payments received')).rejects.toThrow(
      /expected to see Not on this screen on:\nCheck a payment received/,
    );
    expect(t.calls).toEqual([]);
    await t.press('Latest payments received').sees('No payments received yet.');
  });

  it('runs on its own clock: an answer after the flow expired starts over, one before does not', async () => {
    const t = check();
    await t.dial().send('hello');
    expect(t.flow()?.id).toBe('check');
    await t
      .wait(11 * 60_000)
      .send('hello')
      .sees('What would you like to do?');
    expect(t.flow()?.id).toBe('menu');
  });

  it('restart with nothing out: the USSD session goes on in the new process from the stored flow', async () => {
    const t = flowTest('check', { answers: { latestCollections: { output: [] } } });
    tests.push(t);
    await t.dial().sees('Check a payment received');
    await t
      .restart()
      .press(/latest/i)
      .sees('No payments received yet.');
    expect(t.calls.map((c) => c.name)).toEqual(['latestCollections']);
  });

  it('types a dial string ahead on USSD, as a phone sends it', async () => {
    const t = flowTest('check', { answers: { latestCollections: { output: [] } } });
    tests.push(t);
    await t.dial('*384*123*3*1#').sees('No payments received yet.');
    expect(t.calls.map((c) => c.name)).toEqual(['latestCollections']);
  });

  describe('a call held until the test releases it', () => {
    /** A payment to a number the network knows by the name typed, every call answered but the payment's. */
    const paying: Answers = {
      lookupContact: { output: { known: false, registered: false } },
      verifyContact: { output: { known: true, registered: true, nameOnNetwork: 'SARAH NAKATO', networkName: 'MTN' } },
      verifyPin: { output: undefined },
      checkSpend: { output: undefined },
      reserveSpend: { output: undefined },
      createPayment: held,
    };
    const upToThePin = (t: FlowTest) =>
      t
        .dial()
        .press('Mobile money')
        .send('0772000001')
        .send('Sarah')
        .send('Nakato')
        .send('5000')
        .press('UGX')
        .press('Confirm')
        .sees(/PIN/);

    it('on USSD: "being confirmed" while it is out, at every dial; its outcome at the next dial once released', async () => {
      const t = flowTest('pay', { answers: paying });
      tests.push(t);
      await upToThePin(t);
      await t.send('1234').sees(/being confirmed/);
      expect(t.calls.filter((c) => c.name === 'createPayment')).toHaveLength(1);
      await t.dial('*384*123#').sees(/being confirmed/);
      await t
        .release('createPayment', { output: { id: 'pay-1', state: 'new' } })
        .dial('*384*123#')
        .sees(/Update on your last request:/)
        .sees(/Sent: 5,000 UGX to Sarah Nakato/);
      expect(t.calls.filter((c) => c.name === 'createPayment')).toHaveLength(1);
    });

    it('on a chat: the outcome is the message on screen once released', async () => {
      const t = flowTest('pay', { channel: 'telegram', answers: paying });
      tests.push(t);
      await t.dial().press('Mobile money').send('0772000001').send('Sarah').send('Nakato').send('5000').press('UGX');
      await t
        .press('Confirm')
        .sees(/being confirmed/)
        .release('createPayment', { output: { id: 'pay-1', state: 'new' } })
        .sees(/Sent: 5,000 UGX to Sarah Nakato/);
    });

    const payments = (t: FlowTest) => t.calls.filter((c) => c.name === 'createPayment');
    const keysOf = (t: FlowTest) => payments(t).map((c) => c.input.duplicateCheckKey);

    it('restart: the new process makes the payment out again under its key, the old one writing nothing', async () => {
      const t = flowTest('pay', { answers: paying });
      tests.push(t);
      await upToThePin(t);
      await t.send('1234').sees(/being confirmed/);
      const [key] = keysOf(t);
      expect(key).toMatch(/:pay$/);
      const before = t.now();
      // Had the old process written its call's end (refused here), nothing would be left to take over.
      await t.restart();
      expect(t.now() - before).toBeGreaterThanOrEqual(RUN_LEASE_MS);
      expect(keysOf(t)).toEqual([key, key]);
      expect(t.flow()?.snapshot.value).toBe('submitting');
      await t
        .dial('*384*123#')
        .sees(/being confirmed/)
        .release('createPayment', { output: { id: 'pay-1', state: 'new' } })
        .dial('*384*123#')
        .sees(/Update on your last request:/)
        .sees(/Sent: 5,000 UGX to Sarah Nakato/);
      expect(payments(t)).toHaveLength(2);
    });

    it('restart on a chat: the step ends once the run taken over finished, its outcome the message on screen', async () => {
      let made = 0;
      const t = flowTest('pay', {
        channel: 'telegram',
        answers: { ...paying, createPayment: () => (++made === 1 ? held : { output: { id: 'pay-1', state: 'new' } }) },
        deadlineMs: 500,
      });
      tests.push(t);
      await t.dial().press('Mobile money').send('0772000001').send('Sarah').send('Nakato').send('5000').press('UGX');
      await t
        .press('Confirm')
        .sees(/being confirmed/)
        .restart()
        .sees(/Sent: 5,000 UGX to Sarah Nakato/);
      expect(keysOf(t)).toEqual(['run-1:pay', 'run-1:pay']);
      expect(t.flow()?.ended).toBe(true);
    });

    it('refuses to release a call that is not out', async () => {
      const t = flowTest('pay', { answers: paying });
      tests.push(t);
      await expect(t.dial().release('createPayment', { output: {} })).rejects.toThrow(
        /no held createPayment call is out/,
      );
    });
  });
});
