import { describe, expect, it } from 'vitest';
import { MadeRecords } from '../../src/conversation/calls/made-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { createLogger } from '../../src/log.js';
import { verificationBody, verifyCollection } from '../../src/notifications/verify.js';

const logger = createLogger('silent');
const policy = { default: 'reject' as const, rejectReason: 'Not expected', defaultCountry: 'UG' };

async function withOpenRequest(phone = '+256772000001') {
  const made = new MadeRecords({ store: new MemoryStore(), logger });
  await made.intend({
    kind: 'request',
    ref: 'r1:request',
    chat: 'telegram:1',
    amount: '2000',
    currency: 'UGX',
    payee: phone,
  });
  await made.accepted('r1:request', '55');
  return made;
}
const body = (phonenumber: string, remote_transaction_id: string, amount: string | number = '2000.00') =>
  verificationBody.parse({ phonenumber, amount, currency_code: 'UGX', reference: 'fees', remote_transaction_id });

describe('collection verification', () => {
  it("matches a request made here whatever form the sender's number comes in", async () => {
    for (const phone of ['+256772000001', '256772000001', '+256 772 000 001', '0772000001']) {
      const made = await withOpenRequest();
      expect(await verifyCollection(made, body(phone, 'TX1'), policy), phone).toBe('ACCEPT TX1');
    }
  });

  it('one open request accepts ONE collection: a second gets the default; the first asked again gets the same answer', async () => {
    const made = await withOpenRequest();
    expect(await verifyCollection(made, body('+256772000001', 'TX1', 2000), policy)).toBe('ACCEPT TX1');
    expect(await verifyCollection(made, body('+256772000001', 'TX2'), policy)).toBe('REJECT TX2 Not expected');
    expect(await verifyCollection(made, body('+256772000001', 'TX1'), policy)).toBe('ACCEPT TX1');
  });

  it('gives the default to another number, amount or currency, and to an unreadable number', async () => {
    const made = await withOpenRequest();
    expect(await verifyCollection(made, body('+256772000002', 'TX1'), policy)).toBe('REJECT TX1 Not expected');
    expect(await verifyCollection(made, body('+256772000001', 'TX2', '2001'), policy)).toBe('REJECT TX2 Not expected');
    expect(
      await verifyCollection(
        made,
        verificationBody.parse({
          phonenumber: '+256772000001',
          amount: '2000',
          currency_code: 'KES',
          remote_transaction_id: 'TX3',
        }),
        policy,
      ),
    ).toBe('REJECT TX3 Not expected');
    expect(await verifyCollection(made, body('not a number', 'TX4'), policy)).toBe('REJECT TX4 Not expected');
    expect(await verifyCollection(made, body('+256772000001', 'TX5'), { ...policy, default: 'accept' })).toBe(
      'ACCEPT TX5',
    );
  });

  it('bounds what it reads', () => {
    expect(
      verificationBody.safeParse({
        phonenumber: '1'.repeat(41),
        amount: '1',
        currency_code: 'UGX',
        remote_transaction_id: 'T',
      }).success,
    ).toBe(false);
    expect(
      verificationBody.safeParse({
        phonenumber: '+256772000001',
        amount: '1',
        currency_code: 'UGX',
        remote_transaction_id: 'T'.repeat(101),
      }).success,
    ).toBe(false);
  });
});
