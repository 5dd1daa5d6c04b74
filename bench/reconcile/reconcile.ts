/**
 * `npm run bench -- reconcile`: how long a month of 100,000 operations takes to reconcile, and how many reads
 * (issue 48). The sandbox (served over HTTP on localhost) holds 100,000 payments made over 30 days (10,000 with
 * BENCH_QUICK=1), all processed (100 BXC each: the test currency, no fee, whose funded account covers them); the journal, a PostgreSQL database of its own (POSTGRES_URL; dropped after),
 * holds the same as ours, completed and told. Then, through the product's own code:
 * - the month: `runReconciliation` over the 30 days, as `npm run reconcile -- --from --to` runs it;
 * - the first night after the month: the nightly run of its window (RECONCILE_WINDOW_DAYS, 7), no look yet;
 * - the next night, after one more day of payments: only what changed since the first night's look.
 *
 * Reads are counted where the client takes them from the read budget. The budget's wait is not slept: a
 * simulated clock runs the budget's rule for reads behind the product's (20 in any 61 s: 30 less the reserve
 * of 10, src/ops/read-budget.ts) over the real time between reads, so `wallSeconds` is the run's time as the
 * budget would pace it against an idle product, and `workSeconds` the time it took here without waiting (the
 * sandbox answering every page included).
 */
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { sql, type Kysely } from 'kysely';
import { openDatabase } from '../../src/journal/database.js';
import { Journal } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { createLogger } from '../../src/log.js';
import { MomoClient } from '../../src/momo/index.js';
import { dailyReconciliation } from '../../src/reconciliation/daily.js';
import { dayOf, runReconciliation, type RunResult } from '../../src/reconciliation/run.js';
import type { ReconciliationSchema } from '../../src/reconciliation/schema.js';
import { serviceSide } from '../../src/reconciliation/service.js';
import { createSandbox, TEST_NUMBERS } from '../../src/sandbox/index.js';
import { serverDatabase } from '../../test/journal/server-database.js';

export interface ReconcileFigure {
  what: string;
  /** Operations of ours compared (items with a record of ours). */
  compared: number;
  reads: number;
  /** The run's time paced by the read budget (simulated wait + real work), seconds. */
  wallSeconds: number;
  /** The run's real time without the budget's wait, seconds. */
  workSeconds: number;
  status: string;
  counts: Record<string, number>;
}

export interface ReconcileResult {
  operations: number;
  days: number;
  fillSeconds: number;
  figures: ReconcileFigure[];
  loadBefore: number[];
  loadAfter: number[];
}

const DAY = 86_400_000;
const WINDOW_MS = 61_000;
/** Reads behind the product's per window: 30 less the reserve of 10. */
const BEHIND = 20;
const r1 = (x: number) => Math.round(x * 10) / 10;

/** The budget's rule for reads behind the product's, on a clock that jumps instead of sleeping. */
class PacedBudget {
  reads = 0;
  private simulated = 0;
  private last = performance.now();
  private readonly grants: number[] = [];

  take = async (): Promise<void> => {
    const real = performance.now();
    this.simulated += real - this.last;
    this.last = real;
    while (this.grants.length > 0 && this.grants[0]! <= this.simulated - WINDOW_MS) this.grants.shift();
    if (this.grants.length >= BEHIND) this.simulated = this.grants[this.grants.length - BEHIND]! + WINDOW_MS;
    this.grants.push(this.simulated);
    this.reads++;
  };

  /** Seconds since the start, the budget's waits included. */
  seconds(): number {
    return (this.simulated + performance.now() - this.last) / 1000;
  }
}

export async function runReconcileBench(quick: boolean, log: (line: string) => void): Promise<ReconcileResult> {
  const { loadavg } = await import('node:os');
  const load = () => loadavg().map((l) => Math.round(l * 100) / 100);
  const loadBefore = load();
  const n = quick ? 10_000 : 100_000;
  const days = 30;
  const perDay = Math.ceil(n / days);
  const silent = createLogger('silent');
  const sandbox = createSandbox({
    apiKey: 'bench-key',
    autoAdvance: false,
    limits: { readsPerMinute: 1_000_000_000, writesPerMinute: 1_000_000_000 },
    logger: silent,
  });
  const http = createServer(sandbox.app);
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const phone = TEST_NUMBERS.find((t) => t.behaviour === 'registered')!.phonenumber;
  const server = await serverDatabase('bench_reconcile');
  const database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
  const db = database.db as unknown as Kysely<ReconciliationSchema>;
  const journal = new Journal(database.db);
  const figures: ReconcileFigure[] = [];
  try {
    await migrate(database.db);
    const maker = new MomoClient({ baseUrl: base, apiKey: 'bench-key' });
    let made = 0;

    /** One day of payments at the service and in the journal, then the day passes (all processed). */
    async function day(count: number): Promise<void> {
      const rows: Array<{ ref: string; id: string; created: Date }> = [];
      const at = sandbox.controls.now();
      const lanes = 16;
      let next = 0;
      await Promise.all(
        Array.from({ length: lanes }, async () => {
          while (next < count) {
            next++;
            const ref = `bench-${++made}:pay`;
            const payment = await maker.payments.create(
              { phonenumber: phone, amount: '100', currency: 'BXC', description: 'Bench', metadata: { ref } },
              { key: ref },
            );
            rows.push({ ref, id: String(payment.id), created: at });
          }
        }),
      );
      for (let i = 0; i < rows.length; i += 1000) {
        await db
          .insertInto('operations')
          .values(
            rows.slice(i, i + 1000).map((r) => ({
              ref: r.ref,
              kind: 'payment' as const,
              service_id: r.id,
              amount: '100',
              currency: 'BXC',
              payee: phone,
              payee_name: null,
              channel: 'ussd',
              channel_user: phone,
              chat: `ussd:${phone}`,
              role: 'staff',
              flow: 'pay',
              state: 'completed' as const,
              service_state: 'processed',
              told_state: 'completed',
              parent_ref: null,
              created: r.created,
              updated: r.created,
            })),
          )
          .execute();
      }
      await sandbox.controls.advanceClock(86_400);
      await sandbox.controls.idle();
    }

    log(`reconcile: making ${n.toLocaleString('en-US')} payments over ${days} days`);
    const fillStart = performance.now();
    const first = sandbox.controls.now();
    for (let d = 0; d < days; d++) await day(Math.min(perDay, n - made));
    await sql`analyze operations`.execute(database.db);
    const fillSeconds = r1((performance.now() - fillStart) / 1000);
    log(`reconcile: made in ${fillSeconds} s`);

    const measure = async (what: string, run: (client: MomoClient) => Promise<RunResult | null>) => {
      const budget = new PacedBudget();
      const client = new MomoClient({ baseUrl: base, apiKey: 'bench-key', readBudget: budget });
      const started = performance.now();
      const result = await run(client);
      if (!result) throw new Error(`${what}: nothing ran`);
      const figure = {
        what,
        compared: result.items.filter((i) => i.ours !== null).length,
        reads: budget.reads,
        wallSeconds: r1(budget.seconds()),
        workSeconds: r1((performance.now() - started) / 1000),
        status: result.status,
        counts: result.counts,
      };
      figures.push(figure);
      log(`reconcile: ${JSON.stringify(figure)}`);
    };

    const from = dayOf(first.getTime());
    const to = dayOf(first.getTime() + (days - 1) * DAY);
    await measure(`the month (${from} to ${to}), npm run reconcile's run`, (client) =>
      runReconciliation({
        db,
        journal,
        service: serviceSide(client),
        period: { from, to },
        trigger: 'command',
        logger: silent,
      }),
    );

    // Each night at 01:00 of the sandbox's day: its clock moves on, so what is made next is after the look.
    await sandbox.controls.advanceClock(3600);
    let clock = sandbox.controls.now();
    const nightly = (client: MomoClient) =>
      dailyReconciliation({
        database: { kind: 'postgres', db },
        journal,
        service: serviceSide(client),
        tell: async () => 'said',
        logger: silent,
        now: () => clock,
        windowDays: 7,
      }).tick();
    await measure('first night after the month: the 7-day window, no look yet', nightly);
    await day(perDay);
    await sandbox.controls.advanceClock(3600);
    clock = sandbox.controls.now();
    await measure(`next night: one more day (${perDay.toLocaleString('en-US')} payments), what changed since`, nightly);
    return { operations: n, days, fillSeconds, figures, loadBefore, loadAfter: load() };
  } finally {
    await database.close();
    await server.drop();
    http.close();
  }
}
