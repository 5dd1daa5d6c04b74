/**
 * A reconciliation against a real sandbox over HTTP and the journal on both databases (the PostgreSQL server
 * and PGlite): every outcome, the corrections journalled, the result kept, the corrections told once, the
 * reads counted, and the daily run one process at a time.
 */
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import { MomoClient } from '../../src/momo/index.js';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { tellCorrections } from '../../src/reconciliation/corrections.js';
import { dailyReconciliation } from '../../src/reconciliation/daily.js';
import { dayOf, runReconciliation } from '../../src/reconciliation/run.js';
import type { ReconciliationSchema } from '../../src/reconciliation/schema.js';
import { serviceSide, type ServiceSide } from '../../src/reconciliation/service.js';
import { forEachDatabase } from '../journal/databases.js';
import { API_KEY, silent, startSandbox, type RunningSandbox } from '../sandbox/harness.js';

const number = (behaviour: string) => TEST_NUMBERS.find((t) => t.behaviour === behaviour)!.phonenumber;
const SARAH = number('registered');
const FAILS = number('payment_fails');

let sb: RunningSandbox;
let reads = 0;
let client: MomoClient;
beforeAll(async () => {
  sb = await startSandbox();
  client = new MomoClient({ baseUrl: sb.base, apiKey: API_KEY, readBudget: { take: async () => void reads++ } });
});
afterAll(() => sb.close());

/** A payment made at the service (as the product would, with our ref in its metadata, or none). */
async function pay(ref: string | null, phonenumber: string, amount = '5000'): Promise<string> {
  const json = {
    currency: 'UGX',
    description: 'Rent',
    amount,
    phonenumber,
    ...(ref ? { metadata: { ref, chat: 'telegram:1' } } : {}),
  };
  // Once more if the kept-alive connection was closed by the server while PGlite started (nothing was sent).
  const res = await sb.api('POST', '/payments', { json }).catch(() => sb.api('POST', '/payments', { json }));
  expect(res.status).toBe(201);
  return String(res.body.id);
}

const intent = (journal: Journal, ref: string, at: Date, amount = '5000', payee = SARAH) =>
  journal.intend({
    ref,
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

forEachDatabase('reconciliation', (open, engine) => {
  it('records each outcome, journals what the service corrects, keeps the run and owes the corrections once', async () => {
    const database = await open();
    const db = database.db as unknown as Kysely<ReconciliationSchema>;
    const journal = new Journal(database.db);
    const at = sb.controls.now();
    const day = dayOf(at.getTime());
    const suffix = `${engine}-${Date.now()}`;
    const ref = (name: string) => `${name}-${suffix}:pay`;

    // Matched: made, completed, told completed.
    await intent(journal, ref('match'), at);
    const matchId = await pay(ref('match'), SARAH);
    await journal.answered(ref('match'), { serviceId: matchId, serviceState: 'new' });
    // Told it completed; the network failed it: a correction is owed.
    await intent(journal, ref('fail'), at, '5000', FAILS);
    const failId = await pay(ref('fail'), FAILS);
    await journal.answered(ref('fail'), { serviceId: failId, serviceState: 'new' });
    // The create's answer was lost: found by metadata.ref, its id linked.
    await intent(journal, ref('lost'), at);
    const lostId = await pay(ref('lost'), SARAH);
    // Answered with an id the service does not hold.
    await intent(journal, ref('ghost'), at);
    await journal.answered(ref('ghost'), { serviceId: '987654321' });
    // Another amount than ours.
    await intent(journal, ref('detail'), at, '5000');
    const detailId = await pay(ref('detail'), SARAH, '6000');
    // Made elsewhere.
    const elsewhere = await pay(null, SARAH, '700');

    await sb.controls.advanceClock(120);
    await sb.controls.idle();
    await journal.stateReported(ref('match'), {
      state: 'completed',
      serviceState: 'processed',
      source: 'notification',
    });
    await journal.told(ref('match'), {
      channel: 'telegram',
      to: 'telegram:chat-1',
      text: 'Done',
      outcome: 'completed',
    });
    await journal.stateReported(ref('fail'), { state: 'completed', serviceState: 'processed', source: 'notification' });
    await journal.told(ref('fail'), { channel: 'telegram', to: 'telegram:chat-1', text: 'Done', outcome: 'completed' });

    reads = 0;
    const result = await runReconciliation({
      db,
      journal,
      service: serviceSide(client),
      period: { from: day, to: day },
      trigger: 'command',
      logger: silent,
    });
    const outcome = (r: string) => result.items.find((i) => i.ref === r)?.outcome;
    expect(outcome(ref('match'))).toBe('matched');
    // A final state contradicted, confirmed by a read of that one payment: an exception, not an overwrite.
    expect(result.items.find((i) => i.ref === ref('fail'))).toMatchObject({
      outcome: 'state_differs',
      exception: 'failed',
      confirmed: true,
    });
    expect(result.items.find((i) => i.ref === ref('fail'))?.correction).toBeUndefined();
    expect(outcome(ref('lost'))).toBe('state_differs');
    expect(outcome(ref('ghost'))).toBe('unknown_to_service');
    expect(outcome(ref('detail'))).toBe('detail_differs');
    expect(result.items.find((i) => i.serviceId === elsewhere)?.outcome).toBe('not_ours');
    expect(result.items.find((i) => i.serviceId === detailId)?.differs).toEqual(['amount']);
    expect(result.status).toBe('differences');
    // One read per list (each a single page here), one for the id the lists did not show, and the one
    // confirming the final state contradicted.
    expect(reads).toBe(5);

    // The journal learned what the service holds of what was not final (source: reconciliation), and the lost
    // answer's id; its final state was left alone.
    expect(await journal.byRef(ref('fail'))).toMatchObject({ state: 'completed', service_state: 'processed' });
    expect(await journal.byRef(ref('lost'))).toMatchObject({ state: 'completed', service_id: lostId });
    expect((await journal.timeline(ref('fail'))).filter((e) => e.source === 'reconciliation')).toEqual([]);
    expect((await journal.byRef(ref('match')))?.state).toBe('completed');

    // Kept: the run and its items, by the names the operator's page reads.
    const run = await db
      .selectFrom('reconciliation_runs')
      .selectAll()
      .where('id', '=', result.id)
      .executeTakeFirstOrThrow();
    expect(run).toMatchObject({ from_day: day, to_day: day, status: 'differences', trigger: 'command' });
    expect(run.finished).not.toBeNull();
    expect(run.counts).toEqual(result.counts);
    const kept = await db.selectFrom('reconciliation_items').selectAll().where('run_id', '=', result.id).execute();
    expect(kept).toHaveLength(result.items.length);
    expect(kept.find((k) => k.ref === ref('ghost'))).toMatchObject({
      outcome: 'unknown_to_service',
      service_id: '987654321',
      theirs: null,
    });
    expect(kept.find((k) => k.ref === ref('detail'))?.theirs).toMatchObject({ id: detailId, amount: '6000.00' });

    // Owed: nothing. The person told "completed" of the payment the service failed hears nothing until a
    // person has looked at the exception.
    const owed = await db
      .selectFrom('reconciliation_corrections')
      .selectAll()
      .where('ref', 'like', `%${suffix}%`)
      .execute();
    expect(owed).toEqual([]);
    const exception = kept.find((k) => k.ref === ref('fail'));
    expect(exception).toMatchObject({ outcome: 'state_differs', service_id: failId });
    expect(exception?.theirs).toMatchObject({ state: 'processed_with_errors' });

    // A second run finds the same exception, changes and owes nothing.
    const again = await runReconciliation({
      db,
      journal,
      service: serviceSide(client),
      period: { from: day, to: day },
      trigger: 'command',
      logger: silent,
    });
    expect(again.items.find((i) => i.ref === ref('fail'))).toMatchObject({
      outcome: 'state_differs',
      exception: 'failed',
    });
    expect((await journal.byRef(ref('fail')))?.state).toBe('completed');
    expect(
      await db.selectFrom('reconciliation_corrections').select('id').where('ref', 'like', `%${suffix}%`).execute(),
    ).toEqual([]);
  });

  it('a stale list entry never steps a final state back; a correction is told once a single read confirms it', async () => {
    const database = await open();
    const db = database.db as unknown as Kysely<ReconciliationSchema>;
    const journal = new Journal(database.db);
    const at = sb.controls.now();
    const day = dayOf(at.getTime());
    const suffix = `stale-${engine}-${Date.now()}`;
    const done = `done-${suffix}:pay`;
    const late = `late-${suffix}:pay`;

    // Completed in the journal, told completed.
    await intent(journal, done, at);
    const doneId = await pay(done, SARAH);
    await journal.answered(done, { serviceId: doneId, serviceState: 'new' });
    // Submitted in the journal, the person told "submitted"; the notification of its completion was lost.
    await intent(journal, late, at);
    const lateId = await pay(late, SARAH);
    await journal.answered(late, { serviceId: lateId, serviceState: 'new' });
    await journal.told(late, { channel: 'telegram', to: 'telegram:chat-1', text: 'On its way', outcome: 'submitted' });
    await sb.controls.advanceClock(120);
    await sb.controls.idle();
    await journal.stateReported(done, { state: 'completed', serviceState: 'processed', source: 'notification' });
    await journal.told(done, { channel: 'telegram', to: 'telegram:chat-1', text: 'Done', outcome: 'completed' });

    // The lists are read over HTTP; the entry of the completed payment is an old one (pending), the single
    // read (also over HTTP) is not touched.
    const real = serviceSide(client);
    const singleReads: string[] = [];
    const service: ServiceSide = {
      async *list(kind, period) {
        for await (const record of real.list(kind, period))
          yield record.id === doneId && kind === 'payment' ? { ...record, state: 'pending' } : record;
      },
      async get(kind, id) {
        singleReads.push(id);
        return real.get(kind, id);
      },
    };
    expect((await real.get('payment', doneId))?.state).toBe('processed');
    expect((await real.get('payment', lateId))?.state).toBe('processed');

    reads = 0;
    const result = await runReconciliation({
      db,
      journal,
      service,
      period: { from: day, to: day },
      trigger: 'command',
      logger: silent,
    });
    // One read per list, and one single read of each of these two (the other reads are the earlier test's
    // operations of the same day): each through the read budget.
    expect(singleReads.filter((id) => id === doneId || id === lateId).sort()).toEqual([doneId, lateId].sort());
    expect(reads).toBe(3 + singleReads.length);

    // The stale entry: nothing changed, nobody is owed anything.
    expect(result.items.find((i) => i.ref === done)).toMatchObject({ outcome: 'matched', confirmed: true });
    expect(await journal.byRef(done)).toMatchObject({ state: 'completed', service_state: 'processed' });
    expect((await journal.timeline(done)).filter((e) => e.source === 'reconciliation')).toEqual([]);

    // The confirmed one: corrected, and owed once.
    expect(result.items.find((i) => i.ref === late)).toMatchObject({
      outcome: 'state_differs',
      correction: 'completed',
      confirmed: true,
    });
    expect(await journal.byRef(late)).toMatchObject({ state: 'completed', service_state: 'processed' });
    const owed = await db
      .selectFrom('reconciliation_corrections')
      .selectAll()
      .where('ref', 'like', `%${suffix}%`)
      .execute();
    expect(owed.map((o) => [o.ref, o.state, o.told_state])).toEqual([[late, 'completed', 'submitted']]);

    // Told once, journalled as a telling; the stale one never.
    const said: Array<[string, string, Record<string, string>]> = [];
    const tell = async (
      address: { channel: string; conversationId: string },
      key: string,
      params: Record<string, string>,
    ) => {
      said.push([`${address.channel}:${address.conversationId}`, key, params]);
      return `correction of ${params.ref}`;
    };
    await tellCorrections({ db, journal, tell, logger: silent });
    await runReconciliation({
      db,
      journal,
      service,
      period: { from: day, to: day },
      trigger: 'command',
      logger: silent,
    });
    await tellCorrections({ db, journal, tell, logger: silent });
    // Named by our short ref, the one the person was told.
    const [lateShort, doneShort] = [(await journal.byRef(late))!.short_ref, (await journal.byRef(done))!.short_ref];
    expect(said.filter(([, , p]) => p.ref === lateShort || p.ref === doneShort)).toEqual([
      [
        'telegram:chat-1',
        'notify.correction.payment',
        {
          ref: lateShort,
          // The service's id, shown beside our short ref in the chat's words.
          id: (await journal.byRef(late))?.service_id,
          amount: '5000',
          currency: 'UGX',
          phone: SARAH,
          state: 'completed',
          told: 'submitted',
        },
      ],
    ]);
    expect(
      (await journal.timeline(late)).filter((e) => e.type === 'telling' && e.source === 'reconciliation'),
    ).toHaveLength(1);
    expect((await journal.byRef(late))?.told_state).toBe('completed');
    expect(await journal.byRef(done)).toMatchObject({ state: 'completed', told_state: 'completed' });
  });

  it('a correction that cannot be told is tried again later', async () => {
    const database = await open();
    const db = database.db as unknown as Kysely<ReconciliationSchema>;
    const journal = new Journal(database.db);
    const r = `untold-${engine}-${Date.now()}:pay`;
    await intent(journal, r, new Date());
    const run = await db
      .insertInto('reconciliation_runs')
      .values({
        from_day: '2026-01-01',
        to_day: '2026-01-01',
        started: new Date(),
        finished: null,
        counts: '{}',
        status: 'running',
        error: null,
        trigger: 'command',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await db
      .insertInto('reconciliation_corrections')
      .values({
        run_id: run.id,
        ref: r,
        chat: 'slack:C1',
        state: 'failed',
        told_state: 'completed',
        service_state: 'processed_with_errors',
        created: new Date(),
        claimed: null,
        told: null,
      })
      .execute();
    let fail = true;
    const tell = async () => {
      if (fail) throw new Error('slack is down');
      return 'said';
    };
    await tellCorrections({ db, journal, tell, logger: silent });
    expect(
      (await db.selectFrom('reconciliation_corrections').selectAll().where('ref', '=', r).executeTakeFirstOrThrow())
        .told,
    ).toBeNull();
    fail = false;
    await tellCorrections({ db, journal, tell, logger: silent });
    expect(
      (await db.selectFrom('reconciliation_corrections').selectAll().where('ref', '=', r).executeTakeFirstOrThrow())
        .told,
    ).not.toBeNull();
  });

  it('the nightly run of the window runs once, however many processes tick together', async () => {
    const processes =
      engine === 'postgres' ? [await open(), await open({ fresh: true }), await open({ fresh: true })] : [await open()];
    const tomorrow = new Date(sb.controls.now().getTime() + 86_400_000 * 3);
    const day = dayOf(tomorrow.getTime() - 86_400_000);
    const dailies = processes.map((database) =>
      dailyReconciliation({
        database: database as unknown as { kind: 'postgres' | 'pglite'; db: Kysely<ReconciliationSchema> },
        journal: new Journal(database.db),
        service: serviceSide(client),
        tell: async () => 'said',
        logger: silent,
        now: () => tomorrow,
      }),
    );
    await Promise.all(dailies.map((d) => d.tick()));
    await Promise.all(dailies.map((d) => d.tick()));
    const db = processes[0]!.db as unknown as Kysely<ReconciliationSchema>;
    const runs = await db
      .selectFrom('reconciliation_runs')
      .selectAll()
      .where('to_day', '=', day)
      .where('trigger', '=', 'daily')
      .execute();
    // One run of the window, the 7 days before today (which holds the differences of the tests above).
    expect(runs.map((r) => [r.from_day, r.to_day, r.status])).toEqual([
      [dayOf(tomorrow.getTime() - 7 * 86_400_000), day, 'differences'],
    ]);
  });
});
