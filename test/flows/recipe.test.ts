import { afterEach, expect, it } from 'vitest';
import { failure, flowTest, type FlowTest } from '../../src/testing/flow-test.js';

let t: FlowTest;
afterEach(() => t.close());

it('pays on a phone, with the embedded sandbox as the service', async () => {
  t = flowTest('pay', { calls: 'sandbox' });
  await t
    .dial()
    .sees('What do you want to send?')
    .press('Mobile money')
    .sees(/phone number/);
  await t.send('0772000001').send('Sarah').send('Nakato').send('5000').press('UGX');
  await t.sees('Send 5,000 UGX of mobile money to Sarah Nakato').press('Confirm').send('1234');
  await t.sees(/^Sent: 5,000 UGX to Sarah Nakato/);
  expect(t.sandbox!.payments()).toHaveLength(1);
});

it('says why the list failed, on Telegram, with a fake service', async () => {
  t = flowTest('check', { channel: 'telegram', answers: { latestCollections: failure('rate_limited') } });
  await t.dial().press('Latest payments received').sees(/busy/);
  expect(t.calls.map((c) => c.name)).toEqual(['latestCollections']);
});
