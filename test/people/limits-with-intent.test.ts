/**
 * A payment's reservation in its person's daily total written in the statement that writes its intent
 * (src/journal/journal.ts intend, src/conversation/calls/made-records.ts), on PostgreSQL and PGlite: two
 * identities of one person paying at once (two connection pools, as two processes) never pass the limit
 * together; a payment the limit refuses leaves no intent and nothing is sent; an intent whose write fails leaves
 * no reservation; a refusal by the service gives the reservation back in the transaction that journals it;
 * retention deletes old rows of the limits but never an open payment's reservation or a live lock. The
 * store is a fresh MemoryStore each time: nothing in it decides.
 */
import { expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import type { FlowCalls } from '../../flows/calls.js';
import type { PaymentInput } from '../../src/approvals/held.js';
import { AccessPolicy, hashPin, peopleOfPolicy } from '../../src/conversation/calls/access-policy.js';
import { MadeRecords, recordMade } from '../../src/conversation/calls/made-records.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Channel } from '../../src/conversation/types.js';
import { Journal, moneyJournal, type Intent } from '../../src/journal/index.js';
import type { Reservation } from '../../src/conversation/calls/limits.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { createLogger } from '../../src/log.js';
import { DatabaseLimits, deleteLimitsOlderThan } from '../../src/people/limits.js';
import { People } from '../../src/people/people.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import { PeopleSync } from '../../src/people/sync.js';
import { forEachDatabase } from '../journal/databases.js';

const logger = createLogger('silent');
const POLICY = {
  roles: { teller: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '1000' } } },
  users: {
    ussd: { '+256700888001': { role: 'teller', person: 'amina', pin: hashPin('4821') } },
    whatsapp: { '256700888001': { role: 'teller', person: 'amina' } },
    telegram: {},
    slack: {},
  },
};
const AMINA: Record<'ussd' | 'whatsapp', string> = { ussd: '+256700888001', whatsapp: '256700888001' };

forEachDatabase('limits-with-intent', (open, engine) => {
  const clock = { now: Date.parse('2026-12-02T12:00:00Z') };
  const now = () => clock.now;
  const day = '2026-12-02';
  let n = 0;

  /** A process: its own pool (PostgreSQL), policy, journal and the recorded services over a fake service. */
  async function process(fresh: boolean, create: (input: PaymentInput) => Promise<unknown>) {
    const db = (await open({ fresh: fresh && engine === 'postgres' })).db;
    const peopleDb = db as unknown as Kysely<PeopleSchema>;
    const people = new People(peopleDb, { now });
    const policy = new AccessPolicy(POLICY, { now });
    await people.importPolicy(peopleOfPolicy(policy.document));
    await new PeopleSync({ people, policy, logger }).refresh(true);
    const limits = new DatabaseLimits(peopleDb, { now });
    policy.useLimits(limits);
    const journal = new Journal(db);
    const writer = new JournalWriter({ journal, logger });
    const money = moneyJournal(journal, writer, (channel, userId) => ({
      role: policy.roleName(channel as Channel, userId),
      person: policy.personOf(channel as Channel, userId),
    }));
    const calls: string[] = [];
    const wrap = (journalOf = money) =>
      recordMade(
        {
          reserveSpend: async () => {
            throw new Error('the reservation is written with the intent, never on its own');
          },
          createPayment: async (input: PaymentInput) => {
            calls.push(input.duplicateCheckKey);
            return create(input);
          },
        } as unknown as FlowCalls,
        new MadeRecords({ store: new MemoryStore(), logger }),
        logger,
        {
          journal: journalOf,
          reservation: {
            of: (input) => policy.reservationOf({ ...input, channel: input.channel as Channel }),
            check: (input) => policy.checkReservation({ ...input, channel: input.channel as Channel }),
            refused: (reservation, total) => policy.overDayOf(reservation, total),
          },
        },
      );
    return { db: peopleDb, journal, writer, money, limits, calls, services: wrap(), wrap };
  }
  const payment = (channel: 'ussd' | 'whatsapp', amount: string, key: string): PaymentInput => ({
    channel,
    userId: AMINA[channel],
    duplicateCheckKey: key,
    paymentType: 'money',
    phonenumber: '+256772000001',
    amount,
    currency: 'UGX',
    description: 'test',
    metadata: { chat: `${channel}:${AMINA[channel]}`, ref: key },
  });
  const reservationsOf = (db: Kysely<PeopleSchema>, like: string) =>
    db.selectFrom('spend_reservations').selectAll().where('ref', 'like', like).execute();

  it('two identities of one person paying at once, from two processes, never pass the limit together', async () => {
    const paid = async () => ({ id: String(++n), state: 'new' });
    const one = await process(false, paid);
    const two = await process(true, paid);
    // The flows' reservation step only checks: it writes nothing.
    await one.services.reserveSpend({
      channel: 'ussd',
      userId: AMINA.ussd,
      flow: 'pay',
      amount: '100',
      currency: 'UGX',
      duplicateCheckKey: 'check:pay',
    });
    expect(await reservationsOf(one.db, 'check:%')).toHaveLength(0);
    // 30 payments of 100 at once, alternately on USSD (one process) and WhatsApp (the other): 10 fit in 1,000.
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? one : two).services
          .createPayment(payment(i % 2 === 0 ? 'ussd' : 'whatsapp', '100', `race-${i}:pay`))
          .then(
            () => 'sent',
            (e: { code?: string }) => e.code ?? String(e),
          ),
      ),
    );
    expect(results.filter((r) => r === 'sent')).toHaveLength(10);
    expect(results.filter((r) => r === 'limit_exceeded')).toHaveLength(20);
    // Only what was reserved was sent, and each sent payment has its intent and its reservation.
    const sent = [...one.calls, ...two.calls].sort();
    expect(sent).toHaveLength(10);
    expect((await reservationsOf(one.db, 'race-%')).map((r) => r.ref).sort()).toEqual(sent);
    const intents = await one.db
      .selectFrom('operations')
      .select('ref')
      .where('ref', 'like', 'race-%')
      .orderBy('ref')
      .execute();
    expect(intents.map((r) => r.ref).sort()).toEqual(sent);
    expect(await one.limits.spent('amina', 'UGX', day)).toBe(100_000);
  });

  it('a payment the limit refuses leaves no intent, sends nothing, and is told with the figures', async () => {
    const {
      db,
      journal,
      calls,
      services: flowCalls,
    } = await process(false, async () => ({ id: String(++n), state: 'new' }));
    // The first test spent the day's 1,000.
    const key = `over-${++n}:pay`;
    await expect(flowCalls.createPayment(payment('whatsapp', '1', key))).rejects.toMatchObject({
      code: 'limit_exceeded',
      limit: { per: 'day', max: '0', spent: '1000', currency: 'UGX' },
    });
    expect(calls).toEqual([]);
    expect(await journal.byRef(key)).toBeUndefined();
    expect(await journal.timeline(key)).toEqual([]);
    expect(await reservationsOf(db, key)).toHaveLength(0);
  });

  it('an intent whose write fails leaves no reservation; a refusal by the service gives it back with the refusal', async () => {
    const refusing = async () => {
      throw { code: 'validation', message: 'bad number', fields: { phonenumber: 'bad' } };
    };
    const p = await process(false, refusing);
    // The next day: nothing spent yet.
    clock.now += 24 * 3600_000;
    const later = payment('ussd', '400', '');
    const spent = () => p.limits.spent('amina', 'UGX', '2026-12-03');

    // The intent's statement fails after the reservation was made in it (the event's insert refused): the
    // whole statement is undone, so no reservation stays.
    const failing = {
      ...p.money,
      intend: (intent: Intent, reservation?: Reservation) => p.journal.intend({ ...intent, amount: '-1' }, reservation),
    };
    const broken = `broken-${++n}:pay`;
    await expect(p.wrap(failing).createPayment({ ...later, duplicateCheckKey: broken })).rejects.toMatchObject({
      code: 'not_recorded',
    });
    await p.writer.settled();
    expect(p.calls).toEqual([]);
    expect(await reservationsOf(p.db, broken)).toHaveLength(0);
    expect(await spent()).toBe(0);

    // Refused by the service: the refusal is journalled and the reservation given back in one transaction.
    const refused = `refused-${++n}:pay`;
    await expect(p.services.createPayment({ ...later, duplicateCheckKey: refused })).rejects.toMatchObject({
      code: 'validation',
    });
    expect(p.calls).toEqual([refused]);
    expect((await p.journal.byRef(refused))?.state).toBe('refused');
    const [held] = await reservationsOf(p.db, refused);
    expect(held).toMatchObject({ given_back_reason: 'refused by the service' });
    expect(held!.given_back_at).not.toBeNull();
    expect(await spent()).toBe(0);
    // Written again (the buffered writer replaying it), it gives nothing back twice.
    await p.journal.append(Journal.refusalEvent(refused, { reason: 'bad number', giveBack: 'refused by the service' }));
    expect(await spent()).toBe(0);
    // A refusal whose event the database refuses (no such operation) gives nothing back: one transaction.
    const alone = `alone-${++n}:pay`;
    await p.limits.reserve({
      ref: alone,
      person: 'amina',
      currency: 'UGX',
      day: '2026-12-03',
      amount: '300',
      minor: 30_000,
      limit: 100_000,
    });
    expect(await spent()).toBe(30_000);
    await expect(
      p.journal.append(Journal.refusalEvent(alone, { reason: 'x', giveBack: 'refused by the service' })),
    ).rejects.toThrow();
    expect(await spent()).toBe(30_000);
    expect((await reservationsOf(p.db, alone))[0]?.given_back_at).toBeNull();
    clock.now -= 24 * 3600_000;
  });

  it("retention deletes old reservations, totals and tries, never an open payment's or a live lock", async () => {
    const p = await process(false, async () => ({ id: String(++n), state: 'new' }));
    const today = clock.now;
    // 400 days ago: an open payment (its intent and reservation written, no answer yet), one refused, and a
    // reservation alone.
    clock.now = today - 400 * 86_400_000;
    const oldDay = new Date(clock.now).toISOString().slice(0, 10);
    const [open, refused, alone] = [`old-open-${++n}:pay`, `old-refused-${++n}:pay`, `old-alone-${++n}:pay`];
    await p.journal.intend(
      {
        ref: open,
        kind: 'payment',
        amount: '100',
        currency: 'UGX',
        payee: '+256772000001',
        channel: 'ussd',
        channelUser: AMINA.ussd,
        chat: `ussd:${AMINA.ussd}`,
        role: 'teller',
        flow: 'pay',
      },
      { ref: open, person: 'amina', currency: 'UGX', day: oldDay, amount: '100', minor: 10_000, limit: 100_000 },
    );
    await p.services.createPayment(payment('ussd', '200', refused));
    await p.journal.append(Journal.refusalEvent(refused, { reason: 'x', giveBack: 'refused by the service' }));
    await p.limits.reserve({
      ref: alone,
      person: 'amina',
      currency: 'UGX',
      day: oldDay,
      amount: '1',
      minor: 100,
      limit: 100_000,
    });
    await p.limits.countTry('pin', 'old-tries', 3, 900);
    clock.now = today;
    // Now: a live lock.
    for (let i = 0; i < 3; i += 1) await p.limits.countTry('pin', 'live-lock', 3, 900);

    const deleted = await deleteLimitsOlderThan(p.db, 365, new Date(today));
    expect(deleted).toMatchObject({ reservations: 2, days: 0 });
    expect(deleted.tries).toBeGreaterThanOrEqual(1);
    expect((await reservationsOf(p.db, 'old-%')).map((r) => r.ref)).toEqual([open]);
    // The day's total stays what it was (the open payment 100 and the reservation alone 1): deleting is no give-back.
    expect(await p.limits.spent('amina', 'UGX', oldDay)).toBe(10_100);
    expect(await p.limits.tries('pin', 'live-lock')).toBe(3);
    expect(
      await p.db.selectFrom('secret_tries').select('subject').where('subject', '=', 'old-tries').execute(),
    ).toEqual([]);
    // Once the payment is no longer open, its reservation and its day go too.
    await p.journal.append(Journal.stateEvent(open, { state: 'completed', source: 'notification' }));
    expect(await deleteLimitsOlderThan(p.db, 365, new Date(today))).toMatchObject({ reservations: 1, days: 1 });
    expect(await reservationsOf(p.db, 'old-%')).toEqual([]);
  });
});
