/**
 * The differences a reconciliation finds, as exceptions (src/reconciliation/exceptions.ts), against a real
 * sandbox over HTTP, on both databases: each kept once with its state, closed once by an operator (resolved with
 * a reason, or corrected: the journal takes the service's state, source `operator`, and the person told
 * another outcome is told once, only then), closed by a later run that finds the operation as the service holds
 * it, the table refusing any other change; a run counts only open differences.
 */
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import { MomoClient } from '../../src/momo/index.js';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { tellCorrections } from '../../src/reconciliation/corrections.js';
import { ExceptionError, Exceptions, type ExceptionRow } from '../../src/reconciliation/exceptions.js';
import { dayOf, runReconciliation } from '../../src/reconciliation/run.js';
import type { ReconciliationSchema } from '../../src/reconciliation/schema.js';
import { serviceSide, type ServiceSide } from '../../src/reconciliation/service.js';
import { forEachDatabase } from '../journal/databases.js';
import { API_KEY, silent, startSandbox, type RunningSandbox } from '../sandbox/harness.js';

const number = (behaviour: string) => TEST_NUMBERS.find((t) => t.behaviour === behaviour)!.phonenumber;
const SARAH = number('registered');
const FAILS = number('payment_fails');

let sb: RunningSandbox;
let client: MomoClient;
beforeAll(async () => {
  sb = await startSandbox();
  client = new MomoClient({ baseUrl: sb.base, apiKey: API_KEY, readBudget: { take: async () => undefined } });
});
afterAll(() => sb.close());

async function pay(ref: string, phonenumber: string, amount = '5000'): Promise<string> {
  const json = { currency: 'UGX', description: 'Rent', amount, phonenumber, metadata: { ref, chat: 'telegram:1' } };
  const res = await sb.api('POST', '/payments', { json }).catch(() => sb.api('POST', '/payments', { json }));
  expect(res.status).toBe(201);
  return String(res.body.id);
}

forEachDatabase('reconciliation exceptions', (open, engine) => {
  it('keeps each difference once, closes it once, and a run counts only the open ones', async () => {
    const database = await open();
    const db = database.db as unknown as Kysely<ReconciliationSchema>;
    const journal = new Journal(database.db);
    const exceptions = new Exceptions(database.db, journal);
    const at = sb.controls.now();
    const day = dayOf(at.getTime());
    const suffix = `x-${engine}-${Date.now()}`;
    const ref = (name: string) => `${name}-${suffix}:pay`;
    const intend = (name: string, payee = SARAH, amount = '5000') =>
      journal.intend({
        ref: ref(name),
        kind: 'payment',
        amount,
        currency: 'UGX',
        payee,
        channel: 'telegram',
        channelUser: 'u1',
        chat: 'telegram:chat-1',
        role: 'staff',
        flow: 'pay',
        at,
      });

    // Told completed; the network failed it (a final state contradicted).
    await intend('fail', FAILS);
    const failId = await pay(ref('fail'), FAILS);
    await journal.answered(ref('fail'), { serviceId: failId, serviceState: 'new' });
    // Answered with an id the service does not hold.
    await intend('ghost');
    await journal.answered(ref('ghost'), { serviceId: '987650001' });
    // Another amount.
    await intend('detail');
    const detailId = await pay(ref('detail'), SARAH, '6000');
    await journal.answered(ref('detail'), { serviceId: detailId, serviceState: 'new' });
    // Submitted, told so; completed at the service: the run corrects it itself.
    await intend('late');
    const lateId = await pay(ref('late'), SARAH);
    await journal.answered(ref('late'), { serviceId: lateId, serviceState: 'new' });
    await journal.told(ref('late'), {
      channel: 'telegram',
      to: 'telegram:chat-1',
      text: 'On its way',
      outcome: 'submitted',
    });
    // Completed; the first run's service says failed (list and read), the second says what it holds.
    await intend('flip');
    const flipId = await pay(ref('flip'), SARAH);
    await journal.answered(ref('flip'), { serviceId: flipId, serviceState: 'new' });
    await sb.controls.advanceClock(120);
    await sb.controls.idle();
    for (const name of ['fail', 'flip']) {
      await journal.stateReported(ref(name), { state: 'completed', serviceState: 'processed', source: 'notification' });
      await journal.told(ref(name), { channel: 'telegram', to: 'telegram:chat-1', text: 'Done', outcome: 'completed' });
    }

    const real = serviceSide(client);
    let flipped = true;
    const service: ServiceSide = {
      async *list(kind, period) {
        for await (const r of real.list(kind, period))
          yield flipped && r.id === flipId ? { ...r, state: 'processed_with_errors' } : r;
      },
      async get(kind, id) {
        const r = await real.get(kind, id);
        return flipped && r && id === flipId ? { ...r, state: 'processed_with_errors' } : r;
      },
    };
    const run = () =>
      runReconciliation({ db, journal, service, period: { from: day, to: day }, trigger: 'command', logger: silent });
    const ours = async (): Promise<Record<string, ExceptionRow>> =>
      Object.fromEntries(
        (
          await db.selectFrom('reconciliation_exceptions').selectAll().where('ref', 'like', `%${suffix}%`).execute()
        ).map((e) => [e.ref.split('-')[0], e]),
      );

    const first = await run();
    let kept = await ours();
    expect(Object.keys(kept).sort()).toEqual(['detail', 'fail', 'flip', 'ghost', 'late']);
    expect(kept.fail).toMatchObject({ outcome: 'state_differs', state: 'open', correction: 'failed', day });
    expect(kept.ghost).toMatchObject({ outcome: 'unknown_to_service', state: 'open', correction: 'refused' });
    expect(kept.detail).toMatchObject({ outcome: 'detail_differs', state: 'open', correction: null });
    expect(kept.late).toMatchObject({ state: 'corrected', closed_by: 'reconciliation' });
    expect(first.open).toBeGreaterThanOrEqual(4);
    // Told once confirmed: the run's own correction only (not final before); the contradicted final states wait.
    const owed = () =>
      db
        .selectFrom('reconciliation_corrections')
        .select(['ref', 'state', 'told_state'])
        .where('ref', 'like', `%${suffix}%`)
        .orderBy('ref')
        .execute();
    expect(await owed()).toEqual([{ ref: ref('late'), state: 'completed', told_state: 'submitted' }]);

    // Found again: the same rows, still open.
    const second = await run();
    expect(second.open).toBe(first.open);
    expect(
      Object.values(await ours())
        .map((e) => e.id)
        .sort(),
    ).toEqual(
      Object.values(kept)
        .map((e) => e.id)
        .sort(),
    );

    // Resolved by an operator with a reason: journalled (source operator), the journal's state unchanged; once.
    await expect(exceptions.resolve(kept.ghost!.id, 'alice', '  ')).rejects.toThrow(/give a reason/);
    await exceptions.resolve(kept.ghost!.id, 'alice', 'the service lost it; refunded by hand');
    const again = exceptions.resolve(kept.ghost!.id, 'bob', 'twice');
    await expect(again).rejects.toBeInstanceOf(ExceptionError);
    await expect(again).rejects.toMatchObject({ status: 409 });
    const resolution = (await journal.timeline(ref('ghost'))).filter((e) => e.source === 'operator');
    expect(resolution.map((e) => [e.type, e.data.reason, e.data.by])).toEqual([
      ['resolution', 'the service lost it; refunded by hand', 'alice'],
    ]);
    expect((await journal.byRef(ref('ghost')))?.state).toBe('submitted');

    // A detail is never corrected, only resolved.
    await expect(exceptions.correct(kept.detail!.id, 'alice', 'fix')).rejects.toMatchObject({ status: 409 });
    await exceptions.resolve(kept.detail!.id, 'alice', 'the payee asked for 6000 by phone');

    // The table: an approver who is the asker is refused; a closed row never changes; no row is deleted.
    await expect(
      db
        .updateTable('reconciliation_exceptions')
        .set({ state: 'corrected', closed_by: 'alice', approved_by: 'alice', closed_at: new Date(), reason: 'x' })
        .where('id', '=', kept.fail!.id)
        .execute(),
    ).rejects.toThrow(/reconciliation_exceptions_not_own/);
    await expect(
      db
        .updateTable('reconciliation_exceptions')
        .set({ reason: 'rewritten' })
        .where('id', '=', kept.ghost!.id)
        .execute(),
    ).rejects.toThrow(/already resolved/);
    await expect(db.deleteFrom('reconciliation_exceptions').where('id', '=', kept.ghost!.id).execute()).rejects.toThrow(
      /never deleted/,
    );

    // Corrected by one operator with a second's approval: the final state replaced (source operator), the
    // person told completed owed the correction, told once.
    await exceptions.correct(kept.fail!.id, 'alice', 'the network failed it', { approvedBy: 'bob', request: 'r-1' });
    expect(await journal.byRef(ref('fail'))).toMatchObject({ state: 'failed' });
    expect((await journal.timeline(ref('fail'))).filter((e) => e.source === 'operator').map((e) => e.data)).toEqual([
      expect.objectContaining({ state: 'failed', by: 'alice', approvedBy: 'bob', reason: 'the network failed it' }),
    ]);
    expect(await owed()).toEqual([
      { ref: ref('fail'), state: 'failed', told_state: 'completed' },
      { ref: ref('late'), state: 'completed', told_state: 'submitted' },
    ]);
    const said: string[] = [];
    const tell = async (
      _address: { channel: string; conversationId: string },
      _key: string,
      p: Record<string, string>,
    ) => {
      said.push(`${p.told}->${p.state}`);
      return 'said';
    };
    await tellCorrections({ db, journal, tell, logger: silent });
    await tellCorrections({ db, journal, tell, logger: silent });
    expect(said.sort()).toEqual(['completed->failed', 'submitted->completed']);

    // The next run: the flipped one is as the service holds it (closed by the run), nothing of these is open.
    flipped = false;
    await run();
    kept = await ours();
    expect(kept.flip).toMatchObject({ state: 'resolved', closed_by: 'reconciliation' });
    expect(kept.flip!.reason).toMatch(/found it as the service holds it/);
    expect(kept.fail).toMatchObject({ state: 'corrected', closed_by: 'alice', approved_by: 'bob' });
    expect(Object.values(kept).filter((e) => e.state === 'open')).toEqual([]);
    expect(await exceptions.openIn(day, day)).toBe(
      (
        await db
          .selectFrom('reconciliation_exceptions')
          .select('id')
          .where('state', '=', 'open')
          .where('day', '=', day)
          .execute()
      ).length,
    );
  });

  it('a correction from failed to completed counts its limit again, past the limit, and is never refused', async () => {
    const database = await open();
    const db = database.db as unknown as Kysely<ReconciliationSchema>;
    const people = database.db as unknown as Kysely<PeopleSchema>;
    const journal = new Journal(database.db);
    const exceptions = new Exceptions(database.db, journal);
    const at = sb.controls.now();
    const day = dayOf(at.getTime());
    const suffix = `t-${engine}-${Date.now()}`;
    const person = `p-${suffix}`;
    const ref = (name: string) => `${name}-${suffix}:pay`;
    // 10,000 a day; each payment 6,000 (600,000 minor units).
    const intend = (name: string) =>
      journal.intend(
        {
          ref: ref(name),
          kind: 'payment',
          amount: '6000',
          currency: 'UGX',
          payee: SARAH,
          channel: 'telegram',
          channelUser: 'u1',
          chat: 'telegram:chat-1',
          role: 'staff',
          flow: 'pay',
          at,
        },
        { ref: ref(name), person, currency: 'UGX', day, amount: '6000', minor: 600_000, limit: 1_000_000 },
      );
    const total = async () =>
      Number(
        (
          await people
            .selectFrom('spend_days')
            .select('total')
            .where('person_id', '=', person)
            .where('currency', '=', 'UGX')
            .where('day', '=', day)
            .executeTakeFirstOrThrow()
        ).total,
      );

    // Paid and completed at the service, but journalled failed (a wrong callback): its reservation went back.
    await intend('back');
    const backId = await pay(ref('back'), SARAH, '6000');
    await journal.answered(ref('back'), { serviceId: backId, serviceState: 'new' });
    await sb.controls.advanceClock(120);
    await sb.controls.idle();
    await journal.stateReported(ref('back'), {
      state: 'failed',
      serviceState: 'failed',
      source: 'notification',
      giveBack: 'ended without money moving',
    });
    expect(await total()).toBe(0);
    // The person then spent the room it left.
    await intend('next');
    expect(await total()).toBe(600_000);

    await runReconciliation({
      db,
      journal,
      service: serviceSide(client),
      period: { from: day, to: day },
      trigger: 'command',
      logger: silent,
    });
    const exception = await db
      .selectFrom('reconciliation_exceptions')
      .selectAll()
      .where('ref', '=', ref('back'))
      .executeTakeFirstOrThrow();
    expect(exception).toMatchObject({ outcome: 'state_differs', state: 'open', correction: 'completed' });

    // Approved by another operator: corrected though it takes the total past the limit, recorded as such.
    await exceptions.correct(exception.id, 'alice', 'the service paid it', { approvedBy: 'bob', request: 'r-2' });
    expect(await journal.byRef(ref('back'))).toMatchObject({ state: 'completed' });
    expect(await total()).toBe(1_200_000);
    const reservation = await people
      .selectFrom('spend_reservations')
      .select(['given_back_at', 'over_limit', 'daily_limit', 'taken_again_at'])
      .where('ref', '=', ref('back'))
      .executeTakeFirstOrThrow();
    expect(reservation).toMatchObject({ given_back_at: null, over_limit: true });
    expect(Number(reservation.daily_limit)).toBe(1_000_000);
    expect(reservation.taken_again_at).not.toBeNull();
    const events = await journal.timeline(ref('back'));
    expect(events.find((e) => e.source === 'operator')?.data).toMatchObject({
      state: 'completed',
      limitTakenAgain: { total: 1_200_000, overLimit: true },
    });
    // The same write again counts nothing twice.
    await journal.stateReported(ref('back'), {
      state: 'completed',
      source: 'operator',
      key: `${ref('back')}:state:completed:operator:${exception.id}`,
      takeLimitAgain: true,
    });
    expect(await total()).toBe(1_200_000);
  });
});
