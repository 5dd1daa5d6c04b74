import { expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import { recentPayment, REPEAT_WINDOW_MINUTES } from '../../src/conversation/calls/recent-payment.js';
import { forEachDatabase } from '../journal/databases.js';

forEachDatabase('recent payment', (open, engine) => {
  it("finds the same person's payment of the same to the same payee within the window, and nothing else", async () => {
    const { db } = await open();
    const journal = new Journal(db);
    const now = Date.now();
    const user = `+2567000${engine === 'postgres' ? '1' : '2'}${String(now).slice(-4)}`;
    const pay = (
      ref: string,
      changes: Partial<{
        amount: string;
        payee: string;
        channelUser: string;
        minutesAgo: number;
        currency: string;
      }> = {},
    ) =>
      journal.intend({
        ref: `${ref}-${now}`,
        kind: 'payment',
        amount: changes.amount ?? '2500',
        currency: changes.currency ?? 'UGX',
        payee: changes.payee ?? '+256772000001',
        channel: 'ussd',
        channelUser: changes.channelUser ?? user,
        chat: `ussd:${user}`,
        role: 'payer',
        flow: 'pay',
        at: new Date(now - (changes.minutesAgo ?? 3) * 60_000),
      });
    const ask = { channel: 'ussd', userId: user, payee: '+256772000001', amount: '2500.00', currency: 'UGX' };
    expect(await recentPayment(db, ask, now)).toBeNull();

    await pay('old', { minutesAgo: REPEAT_WINDOW_MINUTES + 1 });
    await pay('other-amount', { amount: '2600' });
    await pay('other-payee', { payee: '+256772000002' });
    await pay('other-person', { channelUser: '+256700000999' });
    await pay('other-currency', { currency: 'KES' });
    expect(await recentPayment(db, ask, now)).toBeNull();

    await pay('same', { minutesAgo: 4 });
    expect(await recentPayment(db, ask, now)).toEqual({
      ref: `same-${now}`,
      shortRef: expect.stringMatching(/\S/),
      state: 'intended',
      minutesAgo: 4,
    });
    // The latest of several; one that ended without money moving is no reason to ask.
    await pay('later', { minutesAgo: 1 });
    await journal.refused(`later-${now}`, { reason: 'refused by the service', status: 400 });
    expect((await recentPayment(db, ask, now))?.ref).toBe(`same-${now}`);
    await journal.answered(`same-${now}`, { serviceId: '77' });
    await journal.stateReported(`same-${now}`, { state: 'failed', source: 'notification' });
    expect(await recentPayment(db, ask, now)).toBeNull();
  });
});
