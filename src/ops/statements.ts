/**
 * The daily statement on /ops (src/ops/statement.ts; `npm run statement` gives the same):
 * - `GET /ops/statements`: a page with a date picker and the CSV and JSON downloads; with `?date=YYYY-MM-DD`,
 *   that day's count and totals per currency, kind and state, and the chain's head of the day;
 * - `GET /ops/statements.csv?date=YYYY-MM-DD`: the statement as CSV (an attachment, `statement-<date>.csv`);
 * - `GET /ops/statements.json?date=YYYY-MM-DD`: the statement as JSON (an attachment, `statement-<date>.json`).
 * The day is a calendar day of the `TZ` setting's zone (UTC by default). Both files stream from one cursor of the
 * journal and answer with the header `Journal-Head` (the head of that day) as the payments' exports do.
 *
 * Who may call them: through the /ops access check (src/ops/access.ts), the same credentials as
 * /ops/payments.json: a signed-in operator (or Basic auth with an operator's name and password), everyone in
 * the embedded demo; the `.csv` and `.json` also whoever sends `Authorization: Bearer <OPS_TOKEN>` (when set),
 * the page not; nobody else (401, a browser sent to sign in). A missing or wrong `date` (or anything else in
 * the query) is a 400 with its reason; a journal that does not answer gives 503.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Express, Request, Response } from 'express';
import { z } from 'zod';
import { csvWriter } from '../csv.js';
import type { ChainHead } from '../journal/chain.js';
import type { Journal } from '../journal/journal.js';
import { dayIn, shownTimeZone } from '../local-time.js';
import type { Logger } from '../log.js';
import { actorOf, viaOf, type OperatorAudit } from './audit.js';
import { amountText, html, queryString, unavailable, type Html, pageSender } from './html.js';
import { HEAD_HEADER } from './payments.js';
import {
  headOfDay,
  headText,
  isDay,
  statementCsvRows,
  statementJsonChunks,
  statementPeriod,
  statementSummary,
  type CurrencyTotals,
  type StatementPeriod,
} from './statement.js';

const send = pageSender('statements', '/ops/statements');

export interface StatementRoutesOptions {
  /** The journal; unset (no database), the routes answer 503. */
  journal?: Journal;
  /** The zone whose days a statement covers. Default the `TZ` setting's (src/local-time.ts). */
  zone?: () => string;
  /** Clock for the picker's default day (yesterday). Default now. */
  now?: () => Date;
  logger?: Logger;
  /** The operators' audit: each export is a row, with its day and the movements it held (audit.ts). */
  audit?: OperatorAudit | undefined;
}

const UNAVAILABLE = unavailable('The journal could not be read');

const day = z
  .string('date is required, once: one day, YYYY-MM-DD')
  .refine(isDay, 'date is a day of the calendar, YYYY-MM-DD');
const query = (required: boolean) => z.object({ date: required ? day : day.optional() }).strict();

function reasonsOf(error: z.ZodError): string[] {
  return error.issues.map((i) =>
    i.code === 'unrecognized_keys' ? `${i.keys.join(', ')}: not taken (date)` : i.message,
  );
}

export function addStatementRoutes(app: Express, options: StatementRoutesOptions): void {
  const zone = options.zone ?? shownTimeZone;
  const now = options.now ?? (() => new Date());

  /** The period asked for, or the 400 / 503 answered here. */
  const periodOf = (req: Request, res: Response): StatementPeriod | undefined => {
    const parsed = query(true).safeParse(req.query);
    if (!parsed.success) {
      res
        .status(400)
        .json({ detail: 'A statement is of one day: ?date=YYYY-MM-DD.', reasons: reasonsOf(parsed.error) });
      return undefined;
    }
    if (!options.journal) {
      res.status(503).json({ detail: UNAVAILABLE });
      return undefined;
    }
    return statementPeriod(parsed.data.date!, zone());
  };

  /** The head of the day, or the 503 answered here. */
  const headOf = async (res: Response, period: StatementPeriod): Promise<{ head?: ChainHead } | undefined> => {
    try {
      const head = await headOfDay(options.journal!.db, period.to);
      return head ? { head } : {};
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the statement could not read the journal');
      res.status(503).json({ detail: UNAVAILABLE });
      return undefined;
    }
  };

  /**
   * Streams one format; a failure midway ends the response unfinished, never a short file that looks whole. Once
   * out, the export is a row of the audit with the movements it held (`rows`).
   */
  const stream = async <T>(
    res: Response,
    period: StatementPeriod,
    source: AsyncIterable<T>,
    csv: boolean,
    isMovement: (item: T) => boolean,
  ): Promise<void> => {
    let rows = 0;
    let complete = true;
    async function* counted(): AsyncGenerator<T> {
      for await (const item of source) {
        if (isMovement(item)) rows += 1;
        yield item;
      }
    }
    try {
      if (csv) await pipeline(Readable.from(counted()), csvWriter(), res);
      else await pipeline(Readable.from(counted()), res);
    } catch (err) {
      complete = false;
      options.logger?.warn({ err }, 'ops: the statement stopped');
      res.destroy();
    }
    await options.audit?.recordQuietly(actorOf(res), 'export', {
      export: csv ? 'statements.csv' : 'statements.json',
      filter: { date: period.date },
      rows,
      via: viaOf(res),
      ...(complete ? {} : { complete }),
    });
  };

  app.get('/ops/statements.csv', async (req, res) => {
    const period = periodOf(req, res);
    if (!period) return;
    const found = await headOf(res, period);
    if (!found) return;
    res
      .status(200)
      .setHeader(HEAD_HEADER, headText(found.head))
      .type('text/csv; charset=utf-8')
      .attachment(`statement-${period.date}.csv`);
    await stream(
      res,
      period,
      statementCsvRows(options.journal!, period, found.head),
      true,
      (row) => row[0] === 'movement',
    );
  });

  app.get('/ops/statements.json', async (req, res) => {
    const period = periodOf(req, res);
    if (!period) return;
    const found = await headOf(res, period);
    if (!found) return;
    res
      .status(200)
      .setHeader(HEAD_HEADER, headText(found.head))
      .type('application/json; charset=utf-8')
      .attachment(`statement-${period.date}.json`);
    // A movement is one chunk of its own (statementJsonChunks), after the opening one, each its JSON on a line.
    await stream(res, period, statementJsonChunks(options.journal!, period, found.head), false, (chunk) =>
      /^,?\n\{/.test(chunk),
    );
  });

  app.get('/ops/statements', async (req, res) => {
    const today = dayIn(now(), zone());
    const yesterday = dayIn(new Date(Date.parse(`${today}T12:00:00Z`) - 86_400_000), 'UTC');
    const parsed = query(false).safeParse(req.query);
    if (!parsed.success) {
      send(res, 400, statementsBody({ date: yesterday, today, zone: zone(), reasons: reasonsOf(parsed.error) }));
      return;
    }
    const date = parsed.data.date;
    if (!date) {
      send(res, 200, statementsBody({ date: yesterday, today, zone: zone() }));
      return;
    }
    if (!options.journal) {
      send(res, 503, statementsBody({ date, today, zone: zone(), reasons: [UNAVAILABLE] }));
      return;
    }
    try {
      const period = statementPeriod(date, zone());
      const summary = await statementSummary(options.journal, period);
      send(res, 200, statementsBody({ date, today, zone: zone(), period, ...summary }));
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the statement could not read the journal');
      send(res, 503, statementsBody({ date, today, zone: zone(), reasons: [UNAVAILABLE] }));
    }
  });
}

interface StatementsView {
  /** The day in the picker. */
  date: string;
  today: string;
  zone: string;
  reasons?: string[];
  /** A day asked for: its period, head and totals. */
  period?: StatementPeriod;
  head?: ChainHead;
  currencies?: CurrencyTotals[];
}

export function statementsBody(view: StatementsView): Html {
  const q = queryString({ date: view.date });
  const summary = view.period
    ? html`<section aria-labelledby="summary-title">
        <h2 id="summary-title">Statement of ${view.period.date} (${view.zone})</h2>
        <p class="note">
          From ${view.period.from.toISOString()} to ${view.period.to.toISOString()} (UTC). Download:
          <a class="csv" href="/ops/statements.csv${q}" download>CSV</a> ·
          <a class="json" href="/ops/statements.json${q}">JSON</a>
        </p>
        <p id="day-head">
          The journal's head of the day:
          ${view.head ? html`seq ${view.head.seq} <code>${view.head.hash}</code>` : 'none (no event by then)'}
        </p>
        ${
          !view.currencies?.length
            ? html`<p class="empty">No money movement that day.</p>`
            : html`<table class="statement">
                <thead>
                  <tr>
                    <th scope="col">Currency</th>
                    <th scope="col">Kind</th>
                    <th scope="col">State</th>
                    <th scope="col" class="num">Count</th>
                    <th scope="col" class="num">Amount</th>
                  </tr>
                </thead>
                <tbody>
                  ${view.currencies.map(
                    (c) =>
                      html`${c.totals.map(
                          (t) =>
                            html`<tr data-currency="${t.currency}" data-kind="${t.kind}" data-state="${t.state}">
                              <td>${t.currency}</td>
                              <td>${t.kind}</td>
                              <td><span class="state state-${t.state}">${t.state}</span></td>
                              <td class="num">${t.count}</td>
                              <td class="num">${amountText(t.amount, t.currency)}</td>
                            </tr>`,
                        )}
                        <tr class="currency-count" data-currency="${c.currency}">
                          <th scope="row">${c.currency}</th>
                          <td colspan="2">all movements</td>
                          <td class="num">${c.count}</td>
                          <td></td>
                        </tr>`,
                  )}
                </tbody>
              </table>`
        }
      </section>`
    : '';
  return html`<section aria-labelledby="statements-title">
      <h2 id="statements-title">Daily statement</h2>
      <p class="note">
        Every money movement of one day (${view.zone}) with our ref and the service's id, then per currency the count
        and the totals by kind and state, carrying the journal's head of that day. The same as
        <code>npm run statement -- --date YYYY-MM-DD</code>.
      </p>
      <form class="search" method="get" action="/ops/statements">
        <label>Day <input name="date" type="date" value="${view.date}" max="${view.today}" required /></label>
        <button type="submit">Show</button>
        <button type="submit" formaction="/ops/statements.csv">Download CSV</button>
        <button type="submit" formaction="/ops/statements.json">Download JSON</button>
      </form>
      ${
        view.reasons?.length
          ? html`<ul class="reasons" role="alert">
              ${view.reasons.map((r) => html`<li>${r}</li>`)}
            </ul>`
          : ''
      }
    </section>
    ${summary}`;
}
