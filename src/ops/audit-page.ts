/**
 * The operators' audit (audit.ts, `operator_audit`), read:
 * - `GET /ops/audit`: the page that searches it (`actor`, `action`, `text` found in the actor, the action or the
 *   detail, `from` / `to` UTC days both included, `size` 1 to 500), newest first, a keyset page at a time
 *   (`cursor`: the `next` of the page before);
 * - `GET /ops/audit.json`: the same search as JSON, a page at a time: `{items: [{id, at, actor, action, detail}],
 *   next?}`;
 * - `GET /ops/audit.csv`: every row the search finds (`size` aside), streamed as CSV (src/csv.ts: formula cells
 *   defused), `detail` as JSON text.
 *
 * Who may call them: through the /ops access check (access.ts), exactly as `/ops/payments.json`: a signed-in
 * operator (or Basic auth with an operator's name and password); the `.json` and `.csv` also whoever sends
 * `Authorization: Bearer <OPS_TOKEN>` ({@link SCRIPT_ROUTES}); nobody else (401, a browser sent to sign in; a
 * wrong token counts as a failed sign-in, and is itself audited). A query value that is not what it should be is
 * refused with 400 and its reason; a database that does not answer gives 503.
 *
 * Each read of the audit is itself a row of it: a page shown is `audit.read` (the filter, the rows, the cursor),
 * written before the page is sent; an export is `export` (`audit.json` or `audit.csv`, the filter, the rows).
 * Secrets never reach a row (audit.ts masks them when it writes, and the row counts them as `masked`).
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Express, Request, Response } from 'express';
import { z } from 'zod';
import { csvWriter } from '../csv.js';
import type { Logger } from '../log.js';
import { actorOf, AUDIT_ACTIONS, viaOf, type AuditItem, type AuditQuery, type OperatorAudit } from './audit.js';
import { Html, html, page, searchBody, when, unavailable } from './html.js';
import { day, optional } from './payments-query.js';

export interface AuditRoutesOptions {
  /** The audit; unset (no database), the routes answer 503. */
  audit?: OperatorAudit;
  logger?: Logger;
}

/** Rows a page shows by default, and at most. */
const SIZE_DEFAULT = 100;
const SIZE_MAX = 500;
const DAYS_MAX = 3660;
const TAKEN = 'actor, action, text, from, to, size, cursor';
const UNAVAILABLE = unavailable('The audit could not be read');

/** The CSV's columns. */
export const AUDIT_CSV_COLUMNS = ['id', 'at', 'actor', 'action', 'detail'] as const;

const schema = z
  .object({
    actor: optional(
      z
        .string('actor is one value')
        .max(200, 'actor is at most 200 characters')
        .regex(/^[^\u0000-\u001f]+$/, 'actor is printable'),
    ),
    action: optional(
      z
        .string('action is one value')
        .regex(/^[a-z][a-z0-9.-]{0,63}$/, 'action is a word such as sign-in, export, refused'),
    ),
    text: optional(
      z
        .string('text is one value')
        .max(100, 'text is at most 100 characters')
        .regex(/^[^\u0000-\u001f]+$/, 'text is printable'),
    ),
    from: optional(day('from')),
    to: optional(day('to')),
    size: optional(
      z
        .string('size is one value')
        .regex(/^\d{1,4}$/, 'size is a whole number')
        .transform(Number)
        .pipe(z.number().min(1, `size is 1 to ${SIZE_MAX}`).max(SIZE_MAX, `size is 1 to ${SIZE_MAX}`)),
    ),
    cursor: optional(z.string('cursor is one value').regex(/^[1-9]\d{0,18}$/, 'cursor is not one this search gave')),
  })
  .strict()
  .superRefine((q, ctx) => {
    if (q.from && q.to) {
      const span = (Date.parse(q.to) - Date.parse(q.from)) / 86_400_000;
      if (span < 0) ctx.addIssue({ code: 'custom', message: 'from is after to' });
      else if (span > DAYS_MAX) ctx.addIssue({ code: 'custom', message: `the period is at most ${DAYS_MAX} days` });
    }
  });

type Parsed = { ok: true; query: AuditQuery; given: Record<string, string> } | { ok: false; reasons: string[] };

/** Reads the query string: a search of the audit, or every reason it is refused. */
export function parseAuditQuery(raw: unknown): Parsed {
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success)
    return {
      ok: false,
      reasons: parsed.error.issues.map((i) =>
        i.code === 'unrecognized_keys' ? `${i.keys.join(', ')}: not taken (${TAKEN})` : i.message,
      ),
    };
  const q = parsed.data;
  const given: Record<string, string> = {};
  for (const key of ['actor', 'action', 'text', 'from', 'to'] as const) if (q[key] !== undefined) given[key] = q[key];
  if (q.size !== undefined) given.size = String(q.size);
  return {
    ok: true,
    given,
    query: {
      ...(q.actor !== undefined ? { actor: q.actor } : {}),
      ...(q.action !== undefined ? { action: q.action } : {}),
      ...(q.text !== undefined ? { text: q.text } : {}),
      ...(q.from ? { from: new Date(`${q.from}T00:00:00Z`) } : {}),
      // `to` is a whole day: up to the start of the next.
      ...(q.to ? { to: new Date(Date.parse(`${q.to}T00:00:00Z`) + 86_400_000) } : {}),
      ...(q.cursor ? { before: q.cursor } : {}),
      limit: q.size ?? SIZE_DEFAULT,
    },
  };
}

/** The filter an export of the audit is recorded with: the values given, without the page's size. */
const filterOf = (given: Record<string, string>): Record<string, string> => {
  const { size: _size, ...filter } = given;
  return filter;
};

export function addAuditRoutes(app: Express, options: AuditRoutesOptions): void {
  const { audit } = options;

  const queryOf = (req: Request, res: Response, asPage: boolean) => {
    const parsed = parseAuditQuery(req.query);
    if (parsed.ok) return parsed;
    if (asPage)
      res
        .status(400)
        .type('html')
        .send(auditPage({ given: {}, items: [], reasons: parsed.reasons }));
    else res.status(400).json({ detail: 'The search is not one this export takes.', reasons: parsed.reasons });
    return undefined;
  };
  const unavailable = (res: Response, asPage: boolean, err?: unknown) => {
    if (err) options.logger?.warn({ err }, 'ops: the audit could not be read');
    if (asPage)
      res
        .status(503)
        .type('html')
        .send(auditPage({ given: {}, items: [], reasons: [UNAVAILABLE] }));
    else res.status(503).json({ detail: UNAVAILABLE });
  };

  app.get('/ops/audit', async (req, res) => {
    const parsed = queryOf(req, res, true);
    if (!parsed) return;
    if (!audit) return unavailable(res, true);
    try {
      const found = await audit.search(parsed.query);
      // Who read the audit is in it too, written before the page is sent: a read it could not record is not shown.
      await audit.record(actorOf(res), 'audit.read', {
        filter: filterOf(parsed.given),
        rows: found.items.length,
        ...(parsed.query.before ? { cursor: parsed.query.before } : {}),
        via: viaOf(res),
      });
      res.type('html').send(
        auditPage({
          given: parsed.given,
          items: found.items,
          ...(found.next ? { next: found.next } : {}),
          ...(parsed.query.before ? { cursor: parsed.query.before } : {}),
        }),
      );
    } catch (err) {
      unavailable(res, true, err);
    }
  });

  app.get('/ops/audit.json', async (req, res) => {
    const parsed = queryOf(req, res, false);
    if (!parsed) return;
    if (!audit) return unavailable(res, false);
    try {
      const found = await audit.search(parsed.query);
      // Recorded before it is sent: an export the audit could not record is not made.
      await audit.record(actorOf(res), 'export', {
        export: 'audit.json',
        filter: filterOf(parsed.given),
        rows: found.items.length,
        via: viaOf(res),
      });
      res.json({ items: found.items, ...(found.next ? { next: found.next } : {}) });
    } catch (err) {
      unavailable(res, false, err);
    }
  });

  app.get('/ops/audit.csv', async (req, res) => {
    const parsed = queryOf(req, res, false);
    if (!parsed) return;
    if (!audit) return unavailable(res, false);
    const { limit: _limit, ...query } = parsed.query;
    const found = audit.stream(query);
    let next: IteratorResult<AuditItem>;
    try {
      // The first row before the status: a database away is a 503.
      next = await found.next();
    } catch (err) {
      return unavailable(res, false, err);
    }
    let rows = 0;
    async function* lines(): AsyncGenerator<string[]> {
      yield [...AUDIT_CSV_COLUMNS];
      for (; !next.done; next = await found.next()) {
        const item = next.value;
        rows += 1;
        yield [item.id, item.at, item.actor, item.action, JSON.stringify(item.detail)];
      }
    }
    res
      .status(200)
      .type('text/csv; charset=utf-8')
      .attachment(`audit-${new Date().toISOString().slice(0, 10)}.csv`);
    let complete = true;
    try {
      await pipeline(Readable.from(lines()), csvWriter(), res);
    } catch (err) {
      complete = false;
      options.logger?.warn({ err }, 'ops: the audit export stopped');
      res.destroy();
    }
    // The row count is known once the file is out: the row is written then (a failure to write it is logged).
    await audit.recordQuietly(actorOf(res), 'export', {
      export: 'audit.csv',
      filter: filterOf(parsed.given),
      rows,
      via: viaOf(res),
      ...(complete ? {} : { complete }),
    });
  });
}

interface AuditView {
  given: Record<string, string>;
  items: AuditItem[];
  next?: string;
  cursor?: string;
  reasons?: string[];
}

/** A row's detail as a list of what it says (values as text); a masked count shown as such. */
function detailOf(detail: Record<string, unknown>): Html {
  const entries = Object.entries(detail).filter(([, v]) => v !== null && v !== undefined && v !== '');
  if (entries.length === 0) return html``;
  return html`<dl class="data">
    ${entries.map(([k, v]) =>
      k === 'masked'
        ? html`<dt>masked</dt>
            <dd class="masked">${String(v)} secret${v === 1 ? '' : 's'} masked</dd>`
        : html`<dt>${k}</dt>
            <dd>${typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>`,
    )}
  </dl>`;
}

const option = (value: string, label: string, selected: string | undefined): Html =>
  html`<option value="${value}" ${value === (selected ?? '') ? html` selected` : ''}>${label}</option>`;

function searchForm(given: Record<string, string>): Html {
  const field = (name: string, label: string, type = 'text', extra = '') =>
    html`<label
      >${label} <input name="${name}" type="${type}" value="${given[name] ?? ''}" ${extra ? new Html(` ${extra}`) : ''}
    /></label>`;
  return html`<form class="search" method="get" action="/ops/audit" role="search">
    ${field('actor', 'Actor', 'text', 'maxlength="200"')}
    <label
      >Action
      <select name="action">
        ${option('', 'all', given.action)}${Object.keys(AUDIT_ACTIONS).map((a) => option(a, a, given.action))}
      </select></label
    >
    ${field('text', 'Text', 'search', 'maxlength="100"')} ${field('from', 'From', 'date')} ${field('to', 'To', 'date')}
    <button type="submit">Search</button>
  </form>`;
}

export function auditPage(view: AuditView): string {
  const { given, items } = view;
  const body = searchBody({
    path: '/ops/audit',
    title: "Search the operators' audit",
    form: searchForm(given),
    given,
    reasons: view.reasons,
    count: `${items.length} action${items.length === 1 ? '' : 's'}`,
    table:
      items.length === 0
        ? undefined
        : html`<table class="payments audit">
            <thead>
              <tr>
                <th scope="col">At</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Detail</th>
              </tr>
            </thead>
            <tbody>
              ${items.map(
                (item) =>
                  html`<tr data-id="${item.id}" data-action="${item.action}">
                    <td class="when">
                      <time datetime="${item.at}"
                        >${when(item.at).slice(0, 10)}<br /><small>${when(item.at).slice(11)}</small></time
                      >
                    </td>
                    <td>${item.actor}</td>
                    <td>${item.action}</td>
                    <td>${detailOf(item.detail)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`,
    cursor: view.cursor,
    next: view.next,
  });
  return page('audit', '/ops/audit', body);
}
