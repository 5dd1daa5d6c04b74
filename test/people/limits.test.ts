/**
 * Limits and lock-outs kept by the database (src/people/limits.ts), on PostgreSQL and PGlite: the day's total is
 * the database's, two identities of one person reserving at once (two connection pools, as two processes) never
 * pass it together, a reservation repeats under its ref without counting twice and is given back once with why;
 * wrong PINs and one-time codes lock the person in `persons.pin_locked_until` with the reason, journalled. The
 * store is a fresh MemoryStore at every call: nothing in it decides, as after Redis is emptied.
 */
import { expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import { AccessPolicy, hashPin, peopleOfPolicy } from '../../src/conversation/calls/access-policy.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Channel } from '../../src/conversation/types.js';
import { createLogger } from '../../src/log.js';
import { DatabaseLimits } from '../../src/people/limits.js';
import { Operators } from '../../src/people/operators.js';
import { OperatorRequests } from '../../src/people/requests.js';
import { People } from '../../src/people/people.js';
import { personServices } from '../../src/people/person-calls.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import type { PeopleDirectory } from '../../src/people/start.js';
import { PeopleSync } from '../../src/people/sync.js';
import { forEachDatabase } from '../journal/databases.js';

const POLICY = {
  roles: { teller: { flows: ['pay'], perPaymentLimit: { UGX: '1000' }, dailyLimit: { UGX: '1000' } } },
  users: {
    ussd: {
      '+256700777001': { role: 'teller', person: 'amina', pin: hashPin('4821') },
      '+256700777002': { role: 'teller', person: 'brian', pin: hashPin('4821') },
      '*': { role: 'teller', pin: hashPin('1234') },
    },
    whatsapp: { '256700777001': { role: 'teller', person: 'amina' } },
    telegram: {},
    slack: {},
  },
};
const AMINA = { ussd: '+256700777001', whatsapp: '256700777001' };

const rejection = async (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

forEachDatabase('people-limits', (open, engine) => {
  const clock = { now: Date.parse('2026-12-02T12:00:00Z') };
  const now = () => clock.now;
  /** A process: its own pool (PostgreSQL), policy and limits over the database. */
  async function process(fresh = false) {
    const db = (await open({ fresh: fresh && engine === 'postgres' })).db as unknown as Kysely<PeopleSchema>;
    const people = new People(db, { now });
    const policy = new AccessPolicy(POLICY, { now });
    await people.importPolicy(peopleOfPolicy(policy.document));
    const sync = new PeopleSync({ people, policy, logger: createLogger('silent') });
    await sync.refresh(true);
    const limits = new DatabaseLimits(db, { now });
    policy.useLimits(limits);
    return { db, people, policy, sync, limits };
  }
  const pay = (channel: Channel, amount: string, duplicateCheckKey: string) => ({
    channel,
    userId: channel === 'ussd' ? AMINA.ussd : AMINA.whatsapp,
    flow: 'pay',
    amount,
    currency: 'UGX',
    duplicateCheckKey,
  });

  it('two identities of one person reserving at once, from two processes, never pass the daily limit', async () => {
    const one = await process();
    const two = await process(true);
    expect(one.policy.limitsIn(new MemoryStore()).where).toBe('database');
    // 30 payments of 100 at once, alternately on USSD (one process) and WhatsApp (the other): 10 fit in 1,000.
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? one : two).policy
          .reserveSpend(new MemoryStore(), pay(i % 2 === 0 ? 'ussd' : 'whatsapp', '100', `race-${i}:pay`))
          .then(
            () => 'reserved',
            (e: { code: string }) => e.code,
          ),
      ),
    );
    expect(results.filter((r) => r === 'reserved')).toHaveLength(10);
    expect(results.filter((r) => r === 'limit_exceeded')).toHaveLength(20);
    const rows = await one.db
      .selectFrom('spend_reservations')
      .select(['ref', 'minor', 'person_id', 'day'])
      .where('ref', 'like', 'race-%')
      .execute();
    expect(rows).toHaveLength(10);
    expect(rows.every((r) => r.person_id === 'amina' && r.day === '2026-12-02')).toBe(true);
    expect(rows.reduce((sum, r) => sum + Number(r.minor), 0)).toBe(100_000);
    expect(await one.limits.spent('amina', 'UGX', '2026-12-02')).toBe(100_000);
    // Told with the figures, whichever channel asks next and whatever the store holds.
    expect(
      await rejection(two.policy.checkSpend(new MemoryStore(), { ...pay('whatsapp', '1', ''), pin: false })),
    ).toMatchObject({
      code: 'limit_exceeded',
      limit: { per: 'day', max: '0', spent: '1000', currency: 'UGX' },
    });
    // The next day starts at nothing.
    clock.now += 24 * 3600_000;
    await expect(one.policy.reserveSpend(new MemoryStore(), pay('ussd', '100', 'next-day:pay'))).resolves.toBe(
      undefined,
    );
    clock.now -= 24 * 3600_000;
  });

  it('counts a reservation once under its ref, and gives it back once, saying why', async () => {
    const { db, policy, limits } = await process();
    const day = '2026-12-13';
    clock.now = Date.parse(`${day}T09:00:00Z`);
    const first = pay('ussd', '600', 'again-1:pay');
    await Promise.all(Array.from({ length: 5 }, () => policy.reserveSpend(new MemoryStore(), first)));
    expect(await limits.spent('amina', 'UGX', day)).toBe(60_000);
    const second = pay('whatsapp', '500', 'again-2:pay');
    expect(await rejection(policy.reserveSpend(new MemoryStore(), second))).toMatchObject({
      code: 'limit_exceeded',
      limit: { per: 'day', max: '400', spent: '600' },
    });
    expect(await policy.giveBackSpend(new MemoryStore(), first.duplicateCheckKey, 'refused by the service')).toBe(true);
    expect(await policy.giveBackSpend(new MemoryStore(), first.duplicateCheckKey)).toBe(false);
    expect(await limits.spent('amina', 'UGX', day)).toBe(0);
    const row = await db
      .selectFrom('spend_reservations')
      .selectAll()
      .where('ref', '=', 'again-1:pay')
      .executeTakeFirst();
    expect(row).toMatchObject({ person_id: 'amina', currency: 'UGX', given_back_reason: 'refused by the service' });
    expect(Number(row!.amount)).toBe(600);
    expect(row!.given_back_at).not.toBeNull();
    // A ref given back does not reserve again (its payment is over); the room it left is the next payment's.
    await expect(policy.reserveSpend(new MemoryStore(), first)).resolves.toBeUndefined();
    await expect(policy.reserveSpend(new MemoryStore(), second)).resolves.toBeUndefined();
    expect(await limits.spent('amina', 'UGX', day)).toBe(50_000);
    expect(await policy.giveBackSpend(new MemoryStore(), 'never-reserved:pay')).toBe(false);
  });

  it('locks the PIN after three wrong tries in the database, with why, whatever the store forgets', async () => {
    const { db, people, policy, sync } = await process();
    clock.now = Date.parse('2026-12-04T10:00:00Z');
    const who = { channel: 'ussd' as const, userId: '+256700777002' };
    for (const left of ['2 attempts left', '1 attempts left'])
      expect(await rejection(policy.verifyPin(new MemoryStore(), { ...who, pin: '0000' }))).toEqual({
        code: 'pin_wrong',
        message: left,
      });
    expect(await rejection(policy.verifyPin(new MemoryStore(), { ...who, pin: '0000' }))).toMatchObject({
      code: 'pin_locked',
    });
    const row = await db
      .selectFrom('persons')
      .select(['pin_locked_until', 'pin_locked_why'])
      .where('id', '=', 'brian')
      .executeTakeFirstOrThrow();
    expect(new Date(row.pin_locked_until as unknown as string).toISOString()).toBe('2026-12-04T10:15:00.000Z');
    expect(row.pin_locked_why).toBe('wrong PIN');
    expect((await people.history('brian')).at(-1)).toMatchObject({ action: 'PIN locked: wrong PIN', by: 'person' });
    // Locked before and after this process's directory learns it, the right PIN too, and when the amount is asked.
    expect(await rejection(policy.verifyPin(new MemoryStore(), { ...who, pin: '4821' }))).toMatchObject({
      code: 'pin_locked',
    });
    await sync.refresh();
    expect(policy.person('ussd', who.userId)?.pinLockedUntil).toBe(Date.parse('2026-12-04T10:15:00Z'));
    expect(
      await rejection(
        policy.checkSpend(new MemoryStore(), { ...who, flow: 'pay', amount: '1', currency: 'UGX', pin: true }),
      ),
    ).toMatchObject({ code: 'pin_locked' });
    // An operator unlocks: the lock and the tries go together.
    await people.unlockPin('operator:ops', 'brian');
    await sync.refresh();
    await expect(policy.verifyPin(new MemoryStore(), { ...who, pin: '4821' })).resolves.toBeUndefined();
    expect(await db.selectFrom('secret_tries').selectAll().where('subject', '=', 'brian').execute()).toEqual([]);
  });

  it("locks a `*` rule's person by their tries, and for 15 minutes only", async () => {
    const { policy } = await process();
    clock.now = Date.parse('2026-12-05T10:00:00Z');
    const who = { channel: 'ussd' as const, userId: '+256700999999' };
    for (let i = 0; i < 3; i++) await rejection(policy.verifyPin(new MemoryStore(), { ...who, pin: '0000' }));
    expect(await rejection(policy.verifyPin(new MemoryStore(), { ...who, pin: '1234' }))).toMatchObject({
      code: 'pin_locked',
    });
    clock.now += 15 * 60_000;
    await expect(policy.verifyPin(new MemoryStore(), { ...who, pin: '1234' })).resolves.toBeUndefined();
  });

  it('locks the PIN after three wrong one-time codes, saying so, and counts link codes tried per account', async () => {
    const { db, people, policy, sync, limits } = await process();
    clock.now = Date.parse('2026-12-06T10:00:00Z');
    await people.resetPin('operator:ops', 'amina');
    await sync.refresh();
    const directory: PeopleDirectory = {
      open: async () => ({ people, operators: new Operators(db), limits, requests: new OperatorRequests(db) }),
      operators: async () => null,
      changed: () => sync.refresh(),
      readOnly: null,
      close: async () => {},
    };
    const services = personServices({ policy, store: new MemoryStore(), directory });
    const code = (secret: string) =>
      rejection(services.startPinChange({ channel: 'ussd', userId: AMINA.ussd, via: 'code', secret }));
    expect(await code('00000000')).toMatchObject({ code: 'code_wrong', message: '2 attempts left' });
    expect(await code('00000001')).toMatchObject({ code: 'code_wrong', message: '1 attempts left' });
    expect(await code('00000002')).toMatchObject({ code: 'pin_locked' });
    const row = await db.selectFrom('persons').select(['pin_locked_why']).where('id', '=', 'amina').executeTakeFirst();
    expect(row?.pin_locked_why).toBe('wrong one-time code');
    expect(await code('00000003')).toMatchObject({ code: 'pin_locked' });

    // Link codes tried from one chat account are counted in the database too.
    for (let i = 0; i < 5; i++) expect((await limits.countTry('link-tries', 'telegram:9', 5, 900)).ok).toBe(true);
    expect(await limits.countTry('link-tries', 'telegram:9', 5, 900)).toEqual({ ok: false, total: 5 });
    expect(await limits.tries('link-tries', 'telegram:10')).toBe(0);
  });
});
