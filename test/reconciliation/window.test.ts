/**
 * The nightly run's rolling window against a real sandbox over HTTP, on both databases: a payment whose state
 * changes at the service three days after it was made is caught by a later nightly run; a night with nothing
 * changed asks the service only for what changed since its last look (`modified_after`), one read a list; vending
 * purchases are declared not compared, with their count, in the run's result.
 */
import type { Kysely } from 'kysely';
import { expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import type { PeopleSchema } from '../../src/people/schema.js';
import { MomoClient } from '../../src/momo/index.js';
import { dailyReconciliation } from '../../src/reconciliation/daily.js';
import type { TheirKind } from '../../src/reconciliation/match.js';
import { dayOf, filterDate, LOOK_OVERLAP_MS, PURCHASES_NOT_LISTED, THEIR_KINDS } from '../../src/reconciliation/run.js';
import type { ReconciliationSchema } from '../../src/reconciliation/schema.js';
import { serviceSide, type ListPeriod, type ServiceSide } from '../../src/reconciliation/service.js';
import { TEST_NUMBERS } from '../../src/sandbox/index.js';
import { forEachDatabase } from '../journal/databases.js';
import { API_KEY, silent, startSandbox, type RunningSandbox } from '../sandbox/harness.js';

const SARAH = TEST_NUMBERS.find((t) => t.behaviour === 'registered')!.phonenumber;
const DAY = 86_400_000;

async function pay(sb: RunningSandbox, ref: string, amount: string): Promise<string> {
  const json = { currency: 'UGX', description: 'Rent', amount, phonenumber: SARAH, metadata: { ref } };
  const res = await sb.api('POST', '/payments', { json });
  expect(res.status).toBe(201);
  return String(res.body.id);
}

forEachDatabase('reconciliation window', (open, engine) => {
  it('a state the service changes three days later is caught by a later night, which then asks only what changed', async () => {
    const sb = await startSandbox();
    try {
      // Payments above 100,000 wait for the organization's approval at the service.
      sb.controls.setOrganization({ approvalRules: [{ currency: 'UGX', above: '100000' }] });
      const database = await open({ fresh: true });
      const db = database.db as unknown as Kysely<ReconciliationSchema>;
      const journal = new Journal(database.db);
      let reads = 0;
      const real = serviceSide(
        new MomoClient({ baseUrl: sb.base, apiKey: API_KEY, readBudget: { take: async () => void reads++ } }),
      );
      const asked: Array<[TheirKind, ListPeriod]> = [];
      const service: ServiceSide = {
        list(kind, period) {
          asked.push([kind, period]);
          return real.list(kind, period);
        },
        get: (kind, id) => real.get(kind, id),
      };
      const said: string[] = [];
      let clock = sb.controls.now();
      const nightly = dailyReconciliation({
        database: database as unknown as { kind: 'postgres' | 'pglite'; db: Kysely<ReconciliationSchema> },
        journal,
        service,
        tell: async (_address, key, params) => {
          said.push(`${key} ${params.state}`);
          return 'said';
        },
        logger: silent,
        now: () => clock,
        windowDays: 7,
      });
      const suffix = `${engine}-${Date.now()}`;
      const intent = (ref: string, kind: 'payment' | 'purchase', amount: string, at: Date) =>
        journal.intend({
          ref,
          kind,
          amount,
          currency: kind === 'purchase' ? 'NGN' : 'UGX',
          payee: SARAH,
          channel: 'telegram',
          channelUser: 'u1',
          chat: 'telegram:chat-1',
          role: 'staff',
          flow: kind === 'purchase' ? 'data' : 'pay',
          at,
        });

      // Day 0: a payment held for approval at the service, its person told it is on its way; one completed; a
      // data bundle bought from the vending group.
      const made = sb.controls.now();
      const held = `held-${suffix}:pay`;
      // Its person's daily total holds it (written with the intent) until it ends.
      await journal.intend(
        {
          ref: held,
          kind: 'payment',
          amount: '150000',
          currency: 'UGX',
          payee: SARAH,
          channel: 'telegram',
          channelUser: 'u1',
          chat: 'telegram:chat-1',
          role: 'staff',
          flow: 'pay',
          at: made,
        },
        {
          ref: held,
          person: `p-${suffix}`,
          currency: 'UGX',
          day: dayOf(made.getTime()),
          amount: '150000',
          minor: 15_000_000,
          limit: 100_000_000,
        },
      );
      const heldId = await pay(sb, held, '150000');
      await journal.answered(held, { serviceId: heldId, serviceState: 'new', at: made });
      await journal.told(held, {
        channel: 'telegram',
        to: 'telegram:chat-1',
        text: 'On its way',
        outcome: 'submitted',
      });
      const done = `done-${suffix}:pay`;
      await intent(done, 'payment', '5000', made);
      const doneId = await pay(sb, done, '5000');
      await journal.answered(done, { serviceId: doneId, serviceState: 'new', at: made });
      await intent(`bundle-${suffix}:data`, 'purchase', '500', made);
      await sb.controls.advanceClock(120);
      await sb.controls.idle();
      await journal.stateReported(done, { state: 'completed', serviceState: 'processed', source: 'notification' });
      expect(sb.controls.payments().find((p) => String(p.id) === heldId)?.state).toBe('approval_requested');

      // Night 1: no look yet, the whole window (the 7 days before today); both as the service holds them.
      clock = new Date(made.getTime() + DAY);
      const first = (await nightly.tick())!;
      expect(asked.map(([, p]) => p.modifiedAfter)).toEqual([undefined, undefined, undefined]);
      expect(first.items.find((i) => i.ref === held)?.outcome).toBe('matched');
      expect(first.items.find((i) => i.ref === done)?.outcome).toBe('matched');
      const firstRun = await db
        .selectFrom('reconciliation_runs')
        .selectAll()
        .where('id', '=', first.id)
        .executeTakeFirstOrThrow();
      expect(firstRun).toMatchObject({
        from_day: dayOf(clock.getTime() - 7 * DAY),
        to_day: dayOf(clock.getTime() - DAY),
        trigger: 'daily',
        changed_since: null,
      });
      // Vending purchases: declared, with their count, in the run's result.
      expect(first.notCompared).toEqual({ purchase: { count: 1, why: PURCHASES_NOT_LISTED } });
      expect(firstRun.not_compared).toEqual(first.notCompared);
      // Ticking again the same night runs nothing.
      expect(await nightly.tick()).toBeNull();

      // Day 3: the organization rejects the held payment at the service.
      await sb.controls.advanceClock(3 * 86_400);
      sb.controls.decidePayment(Number(heldId), 'reject', { reason: 'over budget' });
      await sb.controls.idle();

      // The next night asks what changed since night 1's look, finds the rejection, confirms it by one read,
      // journals it and tells the person once. The completed payment, unchanged on both sides, is not compared.
      clock = new Date(sb.controls.now().getTime() + 3_600_000);
      asked.length = 0;
      reads = 0;
      const later = (await nightly.tick())!;
      expect(asked.map(([kind, p]) => [kind, p.modifiedAfter])).toEqual(
        THEIR_KINDS.map((kind) => [kind, filterDate(first.looked[kind].getTime() - LOOK_OVERLAP_MS)]),
      );
      expect(later.items.find((i) => i.ref === held)).toMatchObject({
        outcome: 'state_differs',
        correction: 'rejected',
        confirmed: true,
      });
      expect(later.items.find((i) => i.ref === done)).toBeUndefined();
      expect(reads).toBe(3 + 1);
      expect(await journal.byRef(held)).toMatchObject({ state: 'rejected', service_state: 'rejected' });
      expect(said).toEqual(['notify.correction.payment rejected']);
      // Rejected, nothing moved: its reservation went back to the person's daily total with the state.
      const reservation = await (db as unknown as Kysely<PeopleSchema>)
        .selectFrom('spend_reservations')
        .selectAll()
        .where('ref', '=', held)
        .executeTakeFirstOrThrow();
      expect(reservation.given_back_reason).toBe('ended without money moving');

      // A night with nothing changed: each list asks only what changed since the last look, one read each, and
      // nothing is compared again.
      clock = new Date(clock.getTime() + DAY);
      asked.length = 0;
      reads = 0;
      const quiet = (await nightly.tick())!;
      expect(asked.map(([kind, p]) => [kind, p.modifiedAfter])).toEqual(
        THEIR_KINDS.map((kind) => [kind, filterDate(later.looked[kind].getTime() - LOOK_OVERLAP_MS)]),
      );
      expect(reads).toBe(3);
      expect(quiet.items).toEqual([]);
      expect(quiet.status).toBe('clean');
      expect(said).toHaveLength(1);
      const looks = await db.selectFrom('reconciliation_looks').selectAll().orderBy('kind').execute();
      expect(looks.map((l) => [l.kind, new Date(l.looked).getTime()])).toEqual(
        [...THEIR_KINDS].sort().map((kind) => [kind, quiet.looked[kind].getTime()]),
      );
    } finally {
      await sb.close();
    }
  });
});
