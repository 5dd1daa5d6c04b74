/**
 * Held approvals in the journal, on both engines: a payment held for approval is journalled as an intent in
 * state held (nothing moved), the decision with who, name, when and reason, what the maker was told, and, once
 * approved, the create's answer under the same ref (through recordMade, as the product wires it).
 */
import { expect, it } from 'vitest';
import { HELD, type FlowCalls } from '../../flows/calls.js';
import { ApprovalDesk, type ApprovalBoard, type HeldPayment } from '../../src/approvals/desk.js';
import { AccessPolicy } from '../../src/conversation/calls/access-policy.js';
import { MadeRecords, recordMade } from '../../src/conversation/calls/made-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { Journal, moneyJournal } from '../../src/journal/index.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { createLogger } from '../../src/log.js';
import { forEachDatabase } from './databases.js';

const logger = createLogger('silent');
const POLICY = {
  roles: {
    teller: {
      flows: ['pay'],
      perPaymentLimit: { UGX: '400000' },
      dailyLimit: { UGX: '5000000' },
      approvalAbove: { UGX: '100000' },
    },
    finance: { flows: [], perPaymentLimit: {}, dailyLimit: {}, approve: true },
  },
  users: { slack: { UMAKER: { role: 'teller' }, UFIN: { role: 'finance' } } },
};

class Board implements ApprovalBoard {
  async post(held: HeldPayment) {
    return { channel: 'C1', ts: held.id };
  }
  async update() {}
}

const payment = (key: string, amount: string) => ({
  channel: 'slack',
  userId: 'UMAKER',
  duplicateCheckKey: key,
  paymentType: 'money' as const,
  phonenumber: '+256772000001',
  amount,
  currency: 'UGX',
  description: 'rent',
  metadata: { chat: 'slack:T1:UMAKER', ref: key },
});

forEachDatabase('held approvals', (open) => {
  it('journals the hold, the decision, the telling and the approved payment under one ref', async () => {
    const { db } = await open();
    const journal = new Journal(db);
    const writer = new JournalWriter({ journal, logger });
    const store = new MemoryStore();
    const policy = new AccessPolicy(POLICY);
    const money = moneyJournal(journal, writer, (channel, userId) => ({
      role: policy.roleName(channel as 'slack', userId),
    }));
    let creates = 0;
    const service = {
      reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: input.channel as 'slack' }),
      createPayment: async () => ({ id: String(++creates), state: 'new' }),
    } as Pick<FlowCalls, 'reserveSpend' | 'createPayment'> as FlowCalls;
    const recorded = recordMade(service, new MadeRecords({ store, logger }), logger, { journal: money });
    const desk = new ApprovalDesk({
      db,
      policy,
      calls: recorded,
      ttlHours: 24,
      tell: async () => 'Your payment of 150000 UGX was approved by fin.',
      journal: money,
      logger,
    });
    desk.attach(new Board());
    const guarded = desk.guard(recorded);

    expect(await guarded.createPayment(payment('k-approve', '150000'))).toEqual(HELD);
    expect(await guarded.createPayment(payment('k-reject', '250000'))).toEqual(HELD);
    await writer.settled();
    expect(await journal.byRef('k-approve')).toMatchObject({
      state: 'held',
      kind: 'payment',
      amount: '150000',
      channel: 'slack',
      channel_user: 'UMAKER',
      role: 'teller',
      flow: 'pay',
    });
    expect(creates).toBe(0);

    // The approval's id, as the board shows it, is kept in the intent.
    const ids = await Promise.all(
      ['k-approve', 'k-reject'].map(async (key) => (await journal.timeline(key))[0]!.data.approval as string),
    );
    expect(await desk.decide(ids[0]!, { channel: 'slack', userId: 'UFIN', name: 'fin' }, 'approve')).toMatchObject({
      ok: true,
    });
    expect(
      await desk.decide(ids[1]!, { channel: 'slack', userId: 'UFIN', name: 'fin' }, 'reject', 'not this month'),
    ).toMatchObject({ ok: true });
    await writer.settled();
    expect(creates).toBe(1);

    const approved = await journal.timeline('k-approve');
    const types = approved.map((e) => e.type);
    expect(types.slice(0, 2)).toEqual(['intent', 'approval']);
    // The answer and the telling may land in the same millisecond, in either order.
    expect(types.slice(2).sort()).toEqual(['answer', 'telling']);
    // Who: the checker's identity, name and person (committed before the payment was sent).
    expect(approved[1]!.data).toEqual({
      decision: 'approved',
      by: 'slack:UFIN',
      name: 'fin',
      person: policy.personOf('slack', 'UFIN'),
    });
    expect(approved.find((e) => e.type === 'telling')!.data).toMatchObject({
      channel: 'slack',
      to: 'slack:T1:UMAKER',
      text: 'Your payment of 150000 UGX was approved by fin.',
    });
    expect(await journal.byRef('k-approve')).toMatchObject({ state: 'submitted', service_id: '1' });

    const rejected = await journal.timeline('k-reject');
    expect(rejected.find((e) => e.type === 'approval')?.data).toEqual({
      decision: 'rejected',
      by: 'slack:UFIN',
      name: 'fin',
      reason: 'not this month',
      person: policy.personOf('slack', 'UFIN'),
    });
    expect(await journal.byRef('k-reject')).toMatchObject({ state: 'rejected', service_id: null });
    await writer.close();
    await store.close();
  });
});
