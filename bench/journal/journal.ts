/**
 * `npm run bench -- journal`: the operator's search and export on a big journal. A database of its own on the
 * PostgreSQL server (POSTGRES_URL, default 127.0.0.1:5432; dropped after) is filled with 1,000,000 operations
 * (100,000 with BENCH_QUICK=1) over a year, 2,000 payees, every kind, state and channel; then, each the median
 * of several runs through `Journal` as /ops/payments calls it:
 * - the first page (50 rows, no cursor), a page from the middle (cursor at row N/2) and the last page (cursor
 *   50 rows from the end): keyset pages on `(created, ref)`, so the last should cost what the first does;
 * - the same middle and last pages with the old cursor (`created < $1 or (created = $1 and ref < $2)`), which
 *   the index cannot use: the before;
 * - a filtered search (one payee's phone, and one state with a deep cursor);
 * - the whole export, every row through `Journal.stream` and the CSV writer to a null sink, and a tenth of it
 *   (a date range), to see it linear in rows (µs per row alike).
 * Every figure is also given as a ratio to the first page.
 */
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { csvWriter } from '../../src/csv.js';
import { openDatabase } from '../../src/journal/database.js';
import { Journal, writeCursor, type SearchQuery } from '../../src/journal/journal.js';
import { migrate } from '../../src/journal/migrate.js';
import { CSV_COLUMNS, itemOf } from '../../src/ops/payments.js';
import { serverDatabase } from '../../test/journal/server-database.js';

export interface JournalFigure {
  what: string;
  /** Median milliseconds. */
  ms: number;
  /** Rows it returned. */
  rows: number;
  /** ms / the first page's ms. */
  ratio: number;
}

export interface JournalResult {
  rows: number;
  fillSeconds: number;
  figures: JournalFigure[];
  /** The export's microseconds per row, whole and a tenth. */
  exportUsPerRow: { whole: number; tenth: number };
  loadBefore: number[];
  loadAfter: number[];
}

const PAGE = 50;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

export async function runJournalBench(quick: boolean, log: (line: string) => void): Promise<JournalResult> {
  const { loadavg } = await import('node:os');
  const loadBefore = loadavg().map((l) => Math.round(l * 100) / 100);
  const n = quick ? 100_000 : 1_000_000;
  const server = await serverDatabase('bench_journal');
  const database = await openDatabase({ databaseUrl: server.url, dataDir: 'memory://' });
  try {
    await migrate(database.db);
    const db = database.db;
    const journal = new Journal(db);
    log(`journal: filling ${n.toLocaleString('en-US')} operations`);
    const fillStart = performance.now();
    // A year back from a fixed day, about 31 s apart; refs unique and unordered against time (as UUIDs are).
    const chunk = 100_000;
    for (let from = 0; from < n; from += chunk) {
      const to = Math.min(n, from + chunk) - 1;
      await sql`
        insert into operations (ref, kind, service_id, amount, currency, payee, payee_name, channel, channel_user,
          chat, role, flow, state, service_state, told_state, parent_ref, created, updated)
        select 'pay-' || md5(i::text), (array['payment','request','purchase','payout'])[1 + i % 4],
          'svc-' || i, (100 + i % 90000)::numeric, 'UGX', '+2567720' || lpad((i % 2000)::text, 5, '0'), null,
          (array['ussd','telegram','slack','whatsapp'])[1 + i % 4], 'U' || (i % 5000), 'chat-' || (i % 5000),
          'staff', 'pay', (array['completed','completed','completed','failed','submitted','refused'])[1 + i % 6],
          null, null, null,
          timestamptz '2026-11-01T00:00:00Z' - make_interval(secs => (${n} - i) * 31.536e6 / ${n}),
          timestamptz '2026-11-01T00:00:00Z' - make_interval(secs => (${n} - i) * 31.536e6 / ${n})
        from generate_series(${from}::int, ${to}::int) as i`.execute(db);
    }
    await sql`analyze operations`.execute(db);
    const fillSeconds = Math.round((performance.now() - fillStart) / 100) / 10;
    log(`journal: filled in ${fillSeconds} s`);

    /** The row at `offset` (newest first), as a cursor: the page after it starts at offset + 1. */
    const cursorAt = async (offset: number, where: SearchQuery = {}) => {
      let q = db.selectFrom('operations').select(['created', 'ref']);
      if (where.state) q = q.where('state', '=', where.state);
      const row = await q
        .orderBy('created', 'desc')
        .orderBy('ref', 'desc')
        .offset(offset)
        .limit(1)
        .executeTakeFirstOrThrow();
      return { cursor: writeCursor(row), row };
    };
    const time = async (runs: number, fn: () => Promise<number>) => {
      await fn();
      await fn();
      const ms: number[] = [];
      let rows = 0;
      for (let i = 0; i < runs; i++) {
        const t = performance.now();
        rows = await fn();
        ms.push(performance.now() - t);
      }
      return { ms: median(ms), rows };
    };
    const page = (query: SearchQuery) => async () => (await journal.search({ limit: PAGE, ...query })).items.length;
    /** The cursor before this change: an OR of two comparisons. */
    const oldPage = (at: { created: Date; ref: string }) => async () =>
      (
        await db
          .selectFrom('operations')
          .selectAll()
          .where((eb) =>
            eb.or([eb('created', '<', at.created), eb.and([eb('created', '=', at.created), eb('ref', '<', at.ref)])]),
          )
          .orderBy('created', 'desc')
          .orderBy('ref', 'desc')
          .limit(PAGE + 1)
          .execute()
      ).slice(0, PAGE).length;
    const exportAll = (query: SearchQuery) => async () => {
      let rows = 0;
      async function* lines() {
        yield [...CSV_COLUMNS];
        for await (const op of journal.stream(query)) {
          rows++;
          const item = itemOf(op);
          yield CSV_COLUMNS.map((c) => item[c] ?? '');
        }
      }
      await pipeline(Readable.from(lines()), csvWriter(), new Writable({ write: (_c, _e, done) => done() }));
      return rows;
    };

    const middle = await cursorAt(Math.floor(n / 2));
    const last = await cursorAt(n - PAGE - 1);
    const deepFailed = await cursorAt(Math.floor((n / 6) * 0.83), { state: 'failed' });
    const runs = 9;
    log('journal: pages');
    const first = await time(runs, page({}));
    const figures: Array<Omit<JournalFigure, 'ratio'>> = [
      { what: 'First page (50 rows)', ...first },
      { what: 'Middle page (cursor at row N/2)', ...(await time(runs, page({ cursor: middle.cursor }))) },
      { what: 'Last page (cursor 50 rows from the end)', ...(await time(runs, page({ cursor: last.cursor }))) },
      { what: 'Middle page, the old OR cursor', ...(await time(3, oldPage(middle.row))) },
      { what: 'Last page, the old OR cursor', ...(await time(3, oldPage(last.row))) },
      { what: "Filtered: one payee's phone, first page", ...(await time(runs, page({ phone: '+256772000777' }))) },
      {
        what: 'Filtered: state failed, cursor 83% deep',
        ...(await time(runs, page({ state: 'failed', cursor: deepFailed.cursor }))),
      },
    ];
    log('journal: exports');
    const tenthFrom = new Date(Date.parse('2026-11-01T00:00:00Z') - 31.536e9 / 10);
    const tenth = await time(3, exportAll({ from: tenthFrom }));
    const whole = await time(quick ? 3 : 1, exportAll({}));
    figures.push(
      { what: `Export, a tenth (${tenth.rows.toLocaleString('en-US')} rows)`, ...tenth },
      { what: `Export, whole (${whole.rows.toLocaleString('en-US')} rows)`, ...whole },
    );
    return {
      rows: n,
      fillSeconds,
      figures: figures.map((f) => ({ ...f, ms: r3(f.ms), ratio: Math.round((f.ms / first.ms) * 100) / 100 })),
      exportUsPerRow: { whole: r3((whole.ms * 1000) / whole.rows), tenth: r3((tenth.ms * 1000) / tenth.rows) },
      loadBefore,
      loadAfter: loadavg().map((l) => Math.round(l * 100) / 100),
    };
  } finally {
    await database.close();
    await server.drop();
  }
}

/** The benchmark's table (docs/benchmarks.md), with its run's machine and load. */
export function journalTable(
  at: { quick: boolean; cpus: number; cpuModel: string; node: string; commit: string; date: string },
  s: JournalResult,
): string {
  const n = (x: number, digits = 0) => x.toLocaleString('en-US', { maximumFractionDigits: digits });
  const lines = [
    `| ${n(s.rows)} operations (PostgreSQL) | ms (median) | Rows | × first page |`,
    '| --- | --- | --- | --- |',
    ...s.figures.map((f) => `| ${f.what} | ${n(f.ms, 2)} | ${n(f.rows)} | ${n(f.ratio, 2)} |`),
  ];
  return `${lines.join('\n')}\n\nExport µs per row: ${s.exportUsPerRow.whole} whole, ${s.exportUsPerRow.tenth} a tenth. Filled in ${s.fillSeconds} s. ${at.quick ? 'QUICK run (BENCH_QUICK=1), ' : ''}${at.cpus} × ${at.cpuModel}, Node ${at.node}, load average ${s.loadBefore.join(' ')} before and ${s.loadAfter.join(' ')} after, commit ${at.commit}, ${at.date}\n`;
}
