/**
 * The operator's view of money, from the journal (src/journal):
 * - `GET /ops/payments`: the page that searches operations (query: src/ops/payments-query.ts), a page of
 *   rows at a time, each opening its timeline;
 * - `GET /ops/payments/<ref>`: one operation's timeline: the intent, the service's answer or refusal, every
 *   state reported (and how we learned it), approval decisions, tellings, corrections; for a payment held for
 *   an approver, its maker, checker and decision (src/approvals: `held_payments`);
 * - `GET /ops/payments.json`: the same search as JSON, a page at a time (`next` gives the next page's cursor);
 * - every export carries the journal's chain head (header `Journal-Head`, and `head` in the JSON);
 * - `GET /ops/payments.csv`: every operation the search finds (`size` aside), streamed as CSV (src/csv.ts: formula cells
 *   defused), read from one cursor of the journal a batch at a time, never all in memory.
 *
 * Who may call them: through the /ops access check (src/ops/access.ts): a signed-in operator (or Basic auth
 * with an operator's name and password); the `.json` and `.csv` also whoever sends `Authorization: Bearer
 * <OPS_TOKEN>` (when set); everyone in the embedded demo; nobody else (401, a browser sent to sign in). A query value that is not what
 * it should be is refused with 400 and its reason; a journal that does not answer gives 503.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Express, Request, Response } from 'express';
import { HeldPayments, type HeldPayment } from '../approvals/held.js';
import { csvWriter } from '../csv.js';
import { chainHead, type ChainHead } from '../journal/chain.js';
import { REF_SHAPE, SearchError, type Journal, type SearchQuery } from '../journal/journal.js';
import { referenceOf } from '../journal/short-ref.js';
import { OPERATION_KINDS, OPERATION_STATES, type Operation, type OperationEvent } from '../journal/schema.js';
import type { Logger } from '../log.js';
import { actorOf, viaOf, type OperatorAudit } from './audit.js';
import { CHANNELS } from './funnel.js';
import { amountText, Html, html, page, searchBody, when, unavailable } from './html.js';
import { parsePaymentsQuery, type PaymentsQuery } from './payments-query.js';

export interface PaymentsRoutesOptions {
  /** The journal; unset (no database), the routes answer 503. */
  journal?: Journal;
  /** DEFAULT_COUNTRY: for a phone number searched without its country code. */
  defaultCountry: string;
  logger?: Logger;
  /** The operators' audit: every search, timeline opened and export is a row of it (audit.ts). */
  audit?: OperatorAudit | undefined;
}

/** One operation as the JSON and the CSV give it. */
export interface PaymentItem {
  /**
   * Ours: the short ref (`MC-7K2QX`, src/journal/short-ref.ts), the `Ref` people were told; a teller reads it
   * out, `/ops/payments?ref=` finds it as typed.
   */
  ref: string;
  /** The service's id, once it answered. */
  id: string | null;
  /** Our key of the operation: the Duplicate-Check-Key of its create, also its `metadata.ref` at the service. */
  key: string;
  kind: string;
  amount: string;
  currency: string;
  payee: string;
  payeeName: string | null;
  state: string;
  serviceState: string | null;
  channel: string;
  /** Who asked: the channel's user id (a phone number on USSD). */
  user: string;
  chat: string;
  role: string;
  flow: string;
  created: string;
  updated: string;
  /** A payment held for an approver (src/approvals `held_payments`): who made it, as the pages name them. */
  maker: string | null;
  /** Who decided it: their identity, person and name; null while it waits or when never held. */
  checker: string | null;
  /** The hold's state: `held` (waiting), `approved`, `rejected`, `expired` or `cancelled`; null when never held. */
  decision: string | null;
  /** When the checker decided (ISO 8601, UTC). */
  decidedAt: string | null;
  /** The checker's reason (a rejection's). */
  decisionReason: string | null;
}

const iso = (at: Date | string): string => (at instanceof Date ? at.toISOString() : new Date(at).toISOString());

/** The operation as exported; `held`: its hold, when it was held for an approver. */
export function itemOf(op: Operation, held?: HeldPayment): PaymentItem {
  const d = held?.decision;
  return {
    ref: op.short_ref,
    id: op.service_id,
    key: op.ref,
    kind: op.kind,
    amount: op.amount,
    currency: op.currency,
    payee: op.payee,
    payeeName: op.payee_name,
    state: op.state,
    serviceState: op.service_state,
    channel: op.channel,
    user: op.channel_user,
    chat: op.chat,
    role: op.role,
    flow: op.flow,
    created: iso(op.created),
    updated: iso(op.updated),
    maker: held ? whoIs(held.maker) : null,
    checker: d ? `${whoIs(d)} (${d.name})` : null,
    decision: held ? held.state : null,
    decidedAt: d ? iso(new Date(d.at)) : null,
    decisionReason: d?.reason ?? null,
  };
}

/** The CSV's columns: the JSON item's fields, in its order. */
export const CSV_COLUMNS: readonly (keyof PaymentItem)[] = [
  'ref',
  'id',
  'key',
  'kind',
  'amount',
  'currency',
  'payee',
  'payeeName',
  'state',
  'serviceState',
  'channel',
  'user',
  'chat',
  'role',
  'flow',
  'created',
  'updated',
  'maker',
  'checker',
  'decision',
  'decidedAt',
  'decisionReason',
];

/** Rows fetched from the journal's cursor at a time while the CSV streams. */
const CSV_BATCH = 500;

const UNAVAILABLE = unavailable('The journal could not be read');
const REFUSED = 'The search is not one this export takes.';

export function addPaymentsRoutes(app: Express, options: PaymentsRoutesOptions): void {
  const { journal, defaultCountry, audit } = options;

  /**
   * Records what the caller did (a search, an export with its row count) before the answer goes: a row the audit
   * could not write refuses the answer (503), so nothing is read out unaudited. False when it answered.
   */
  const audited = async (
    res: Response,
    asPage: boolean,
    action: string,
    detail: Record<string, unknown>,
  ): Promise<boolean> => {
    if (!audit) return true;
    try {
      await audit.record(actorOf(res), action, { ...detail, via: viaOf(res) });
      return true;
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the audit could not be written');
      failed(res, asPage, 503, UNAVAILABLE, {});
      return false;
    }
  };

  /** The query, or a 400 with the reasons (as the caller reads: JSON, or the page with them). */
  const queryOf = (req: Request, res: Response, asPage: boolean): PaymentsQuery | undefined => {
    const parsed = parsePaymentsQuery(req.query, defaultCountry);
    if (parsed.ok) return parsed.query;
    refused(res, asPage, parsed.reasons, stringsOf(req.query));
    return undefined;
  };

  /** One page of the search; a cursor it did not give is a 400, a journal away a 503 (answered here). */
  const searchPage = async (res: Response, search: SearchQuery, asPage: boolean, given: Record<string, string>) => {
    if (!journal) {
      failed(res, asPage, 503, UNAVAILABLE, given);
      return undefined;
    }
    try {
      return await journal.search(search);
    } catch (err) {
      if (err instanceof SearchError) refused(res, asPage, [err.message], given);
      else {
        options.logger?.warn({ err }, 'ops: the journal search failed');
        failed(res, asPage, 503, UNAVAILABLE, given);
      }
      return undefined;
    }
  };

  /** The holds (maker, checker, decision) of these refs; none when they cannot be read (the page still shows). */
  const holdsOf = async (refs: string[]): Promise<Map<string, HeldPayment>> =>
    journal
      ? new HeldPayments(journal.db).byRefs(refs).catch((err: unknown) => {
          options.logger?.warn({ err }, 'ops: the holds could not be read');
          return new Map<string, HeldPayment>();
        })
      : new Map<string, HeldPayment>();

  app.get('/ops/payments', async (req, res) => {
    const query = queryOf(req, res, true);
    if (!query) return;
    const found = await searchPage(res, query.search, true, query.given);
    if (!found) return;
    const approvals = await holdsOf(found.items.map((op) => op.ref));
    if (
      !(await audited(res, true, 'search', {
        filter: query.given,
        ...(query.search.cursor ? { page: 'later' } : {}),
        rows: found.items.length,
      }))
    )
      return;
    res.type('html').send(
      paymentsPage({
        given: query.given,
        items: found.items,
        next: found.next,
        cursor: query.search.cursor,
        approvals,
      }),
    );
  });

  app.get('/ops/payments.json', async (req, res) => {
    const query = queryOf(req, res, false);
    if (!query) return;
    const found = await searchPage(res, query.search, false, query.given);
    if (!found) return;
    let holds: Map<string, HeldPayment>;
    try {
      // An export without its approvals would read as payments never held: none rather than that.
      holds = await new HeldPayments(journal!.db).byRefs(found.items.map((op) => op.ref));
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the holds could not be read');
      return failed(res, false, 503, UNAVAILABLE, query.given);
    }
    const head = await journalHead(journal!);
    const { size: _size, ...filter } = query.given;
    if (!(await audited(res, false, 'export', { export: 'payments.json', filter, rows: found.items.length }))) return;
    res.setHeader(HEAD_HEADER, headValue(head));
    res.json({
      items: found.items.map((op) => itemOf(op, holds.get(op.ref))),
      ...(found.next ? { next: found.next } : {}),
      head: head ?? null,
    });
  });

  app.get('/ops/payments.csv', async (req, res) => {
    const query = queryOf(req, res, false);
    if (!query) return;
    // The export is every row the search finds (from the cursor's, when given), read from one database cursor.
    const { limit: _limit, ...search } = query.search;
    if (!journal) return failed(res, false, 503, UNAVAILABLE, query.given);
    const found = journal.stream(search, CSV_BATCH);
    let next: IteratorResult<Operation>;
    try {
      // The first row before the status: a cursor it did not give is a 400, a journal away a 503.
      next = await found.next();
    } catch (err) {
      if (err instanceof SearchError) refused(res, false, [err.message], query.given);
      else {
        options.logger?.warn({ err }, 'ops: the journal export failed');
        failed(res, false, 503, UNAVAILABLE, query.given);
      }
      return;
    }
    const held = new HeldPayments(journal.db);
    const head = headValue(await journalHead(journal));
    let count = 0;
    async function* rows(): AsyncGenerator<string[]> {
      try {
        yield [...CSV_COLUMNS, HEAD_COLUMN];
        while (!next.done) {
          // A batch of rows, then their holds in one query (beside the cursor, never inside it).
          const batch: Operation[] = [];
          for (; !next.done && batch.length < CSV_BATCH; next = await found.next()) batch.push(next.value);
          const holds = await held.byRefs(batch.map((op) => op.ref));
          for (const op of batch) {
            const item = itemOf(op, holds.get(op.ref));
            count += 1;
            yield [...CSV_COLUMNS.map((c) => item[c] ?? ''), head];
          }
        }
      } finally {
        // A reader gone midway: the cursor is closed (and its connection given back) now.
        await found.return(undefined);
      }
    }
    res
      .status(200)
      .setHeader(HEAD_HEADER, head)
      .type('text/csv; charset=utf-8')
      .attachment(`payments-${new Date().toISOString().slice(0, 10)}.csv`);
    let complete = true;
    try {
      await pipeline(Readable.from(rows()), csvWriter(), res);
    } catch (err) {
      // The status is sent: a failure midway ends the response unfinished (no final chunk), never a short file
      // that looks whole.
      complete = false;
      options.logger?.warn({ err }, 'ops: the payments export stopped');
      res.destroy();
    }
    // The row count is known once the file is out: recorded then (a row that could not be written is logged).
    const { size: _size, ...filter } = query.given;
    await audit?.recordQuietly(actorOf(res), 'export', {
      export: 'payments.csv',
      filter,
      rows: count,
      via: viaOf(res),
      ...(complete ? {} : { complete }),
    });
  });

  app.get('/ops/payments/:ref', async (req, res) => {
    const ref = String(req.params.ref ?? '');
    if (!REF_SHAPE.test(ref)) {
      res
        .status(400)
        .type('html')
        .send(
          page(
            'payment',
            '/ops/payments',
            html`<p class="reasons" role="alert">A ref is 1 to 100 printable characters without spaces.</p>`,
          ),
        );
      return;
    }
    if (!journal) {
      failed(res, true, 503, UNAVAILABLE, {});
      return;
    }
    let op: Operation | undefined;
    let events: OperationEvent[];
    let approval: HeldPayment | undefined;
    try {
      let holds: Map<string, HeldPayment>;
      [op, events, holds] = await Promise.all([
        journal.byRef(ref),
        journal.timeline(ref),
        new HeldPayments(journal.db).byRefs([ref]),
      ]);
      approval = holds.get(ref);
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the journal timeline failed');
      failed(res, true, 503, UNAVAILABLE, {});
      return;
    }
    if (!(await audited(res, true, 'view', { ref, found: Boolean(op) || events.length > 0 }))) return;
    if (!op && events.length === 0) {
      res
        .status(404)
        .type('html')
        .send(
          page(
            'payment',
            '/ops/payments',
            html`<p class="reasons" role="alert">No operation has the ref ${ref}.</p>
              <p><a href="/ops/payments">Back to the search</a></p>`,
          ),
        );
      return;
    }
    res.type('html').send(timelinePage(ref, op, events, approval));
  });
}

/** A 400 with its reasons, in one shape whichever check refused: `{detail, reasons}`, or the page listing them. */
function refused(res: Response, asPage: boolean, reasons: string[], given: Record<string, string>): void {
  if (asPage)
    res
      .status(400)
      .type('html')
      .send(paymentsPage({ given, items: [], reasons }));
  else res.status(400).json({ detail: REFUSED, reasons });
}

function failed(res: Response, asPage: boolean, status: number, detail: string, given: Record<string, string>): void {
  if (asPage)
    res
      .status(status)
      .type('html')
      .send(paymentsPage({ given, items: [], reasons: [detail] }));
  else res.status(status).json({ detail });
}

/** The query's values as strings, for showing a refused search in its form again (anything else dropped). */
function stringsOf(query: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (
      typeof value === 'string' &&
      ['phone', 'ref', 'id', 'channel', 'state', 'kind', 'from', 'to', 'size'].includes(key)
    )
      out[key] = value.slice(0, 100);
  }
  return out;
}

const option = (value: string, label: string, selected: string | undefined): Html =>
  html`<option value="${value}" ${value === (selected ?? '') ? html` selected` : ''}>${label}</option>`;

function searchForm(given: Record<string, string>): Html {
  /** `extra`: attributes written here, never from outside. */
  const field = (name: string, label: string, type = 'text', extra = '') =>
    html`<label
      >${label} <input name="${name}" type="${type}" value="${given[name] ?? ''}" ${extra ? new Html(` ${extra}`) : ''}
    /></label>`;
  return html`<form class="search" method="get" action="/ops/payments" role="search">
    ${field('phone', 'Phone', 'text', 'inputmode="tel" maxlength="32" placeholder="+256…"')}
    ${field('ref', 'Ref', 'text', 'maxlength="100" placeholder="MC-…"')}
    ${field('id', "Service's id", 'text', 'maxlength="100"')}
    <label
      >Channel
      <select name="channel">
        ${option('', 'all', given.channel)}${CHANNELS.map((c) => option(c, c, given.channel))}
      </select></label
    >
    <label
      >State
      <select name="state">
        ${option('', 'all', given.state)}${OPERATION_STATES.map((s) => option(s, s, given.state))}
      </select></label
    >
    <label
      >Kind
      <select name="kind">
        ${option('', 'all', given.kind)}${OPERATION_KINDS.map((k) => option(k, k, given.kind))}
      </select></label
    >
    ${field('from', 'From', 'date')} ${field('to', 'To', 'date')}
    <button type="submit">Search</button>
  </form>`;
}

interface PaymentsView {
  given: Record<string, string>;
  items: Operation[];
  next?: string;
  cursor?: string;
  reasons?: string[];
  /** The holds among the items, by ref: their maker, checker and decision. */
  approvals?: Map<string, HeldPayment>;
}

/** Who someone is on the operator's pages: their channel's user id, and their person when they have one. */
const whoIs = (who: { channel: string; userId: string; person?: string }): string =>
  `${who.userId} on ${who.channel}${who.person ? ` (person ${who.person})` : ''}`;

/** A hold's decision in a line: who decided what and when (or that it waits). */
export function decisionOf(held: HeldPayment): string {
  const d = held.decision;
  if (held.state === 'held') return `waiting for an approver until ${when(new Date(held.expiresAt))}`;
  if (held.state === 'expired') return `expired undecided ${when(new Date(held.expiresAt))}`;
  if (held.state === 'cancelled') return 'cancelled: never shown to an approver';
  const by = d ? ` by ${whoIs(d)} (${d.name}) ${when(new Date(d.at))}` : '';
  return `${held.state}${by}${d?.reason ? `: ${d.reason}` : ''}`;
}

export function paymentsPage(view: PaymentsView): string {
  const { given, items } = view;
  const rows = items.map((op) => {
    const held = view.approvals?.get(op.ref);
    const link = `/ops/payments/${encodeURIComponent(op.ref)}`;
    return html`<tr data-ref="${op.ref}">
      <td class="when">${when(op.created).slice(0, 10)}<br /><small>${when(op.created).slice(11)}</small></td>
      <td class="ref"><a href="${link}">${referenceOf(op)}</a></td>
      <td>${op.kind}</td>
      <td class="num">${amountText(op.amount, op.currency)}</td>
      <td>${op.payee}${op.payee_name ? html`<br /><small>${op.payee_name}</small>` : ''}</td>
      <td><span class="state state-${op.state}">${op.state}</span></td>
      <td>${op.channel}</td>
      <td>
        ${op.channel_user}<br /><small>${op.role}</small>${
          held ? html`<br /><small class="approval">${decisionOf(held)}</small>` : ''
        }
      </td>
    </tr>`;
  });
  const body = searchBody({
    path: '/ops/payments',
    title: 'Search payments',
    form: searchForm(given),
    given,
    reasons: view.reasons,
    count: `${items.length} operation${items.length === 1 ? '' : 's'}`,
    table:
      items.length === 0
        ? undefined
        : html`<table class="payments">
            <thead>
              <tr>
                <th scope="col">Created</th>
                <th scope="col">Ref</th>
                <th scope="col">Kind</th>
                <th scope="col">Amount</th>
                <th scope="col">Payee</th>
                <th scope="col">State</th>
                <th scope="col">Channel</th>
                <th scope="col">Who asked</th>
              </tr>
            </thead>
            <tbody>
              ${rows}
            </tbody>
          </table>`,
    cursor: view.cursor,
    next: view.next,
  });
  return page('payments', '/ops/payments', body);
}

/** An event's data as a list of what it says (values as text). */
function details(data: Record<string, unknown>): Html {
  const entries = Object.entries(data ?? {}).filter(([, v]) => v !== null && v !== undefined && v !== '');
  if (entries.length === 0) return html``;
  return html`<dl class="data">
    ${entries.map(
      ([k, v]) =>
        html`<dt>${k}</dt>
          <dd>${typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>`,
    )}
  </dl>`;
}

/** What each event type is, in the timeline's words. */
const EVENT_WORDS: Record<string, string> = {
  intent: 'Intent (written before the service was asked)',
  answer: "The service's answer",
  refusal: 'Refused',
  state: 'State reported',
  approval: 'Approval decision',
  telling: 'Told',
  correction: 'Correction',
};

export function timelinePage(
  ref: string,
  op: Operation | undefined,
  events: OperationEvent[],
  approval?: HeldPayment,
): string {
  const approvalRows = approval
    ? html`<dt>Maker</dt>
        <dd>${whoIs(approval.maker)}</dd>
        <dt>Checker</dt>
        <dd>${approval.decision ? `${whoIs(approval.decision)} (${approval.decision.name})` : '–'}</dd>
        <dt>Decision</dt>
        <dd class="approval">${decisionOf(approval)}</dd>`
    : '';
  const summary = op
    ? html`<dl class="summary">
        <dt>Ref</dt>
        <dd class="ref">${referenceOf(op)}</dd>
        <dt>Key</dt>
        <dd><small>${op.ref}</small></dd>
        <dt>Kind</dt>
        <dd>${op.kind} (${op.flow})</dd>
        <dt>Amount</dt>
        <dd>${amountText(op.amount, op.currency)}</dd>
        <dt>Payee</dt>
        <dd>${op.payee}${op.payee_name ? ` (${op.payee_name})` : ''}</dd>
        <dt>State</dt>
        <dd>
          <span class="state state-${op.state}">${op.state}</span
          >${op.service_state ? ` (the service: ${op.service_state})` : ''}
        </dd>
        <dt>Who asked</dt>
        <dd>${op.channel_user} on ${op.channel}, role ${op.role}</dd>
        ${approvalRows}
        <dt>Chat</dt>
        <dd>${op.chat}</dd>
        <dt>Created</dt>
        <dd>${when(op.created)}</dd>
        <dt>Last change</dt>
        <dd>${when(op.updated)}</dd>
      </dl>`
    : html`<p class="empty">No current-state row (only events).</p>`;
  const body = html`<section aria-labelledby="op-title">
      <h2 id="op-title">Operation ${ref}</h2>
      ${summary}
      <p><a href="/ops/payments">Back to the search</a></p>
    </section>
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      <ol class="timeline">
        ${events.map(
          (e) =>
            html`<li class="event event-${e.type}" data-type="${e.type}">
              <div class="event-head">
                <time datetime="${iso(e.at)}">${when(e.at)}</time> <strong>${EVENT_WORDS[e.type] ?? e.type}</strong>
                <span class="source">via ${e.source}</span>
              </div>
              ${details(e.data)}
            </li>`,
        )}
      </ol>
    </section>`;
  return page(`payment ${op?.short_ref ?? ref}`, '/ops/payments', body);
}

/**
 * The response header every export carries: the journal's hash chain head when the export began (`<seq>
 * <sha256 hex>`, `none` while the journal is empty, `unknown` when it could not be read), so what was exported
 * can be checked later with `npm run journal:verify` (docs/journal.md, Tamper evidence). The JSON has it as
 * `head` too.
 */
export const HEAD_HEADER = 'Journal-Head';

/**
 * The CSV's last column: the same head (`<seq> <sha256 hex>`) on every row, so a file saved from the download
 * keeps it, and a row copied, sorted or filtered in a spreadsheet still says which chain it was read against.
 * A column rather than a line after the rows: the file stays one table every CSV reader takes.
 */
export const HEAD_COLUMN = 'journalHead';

async function journalHead(journal: Journal): Promise<ChainHead | undefined | null> {
  return chainHead(journal.db).catch(() => null);
}

function headValue(head: ChainHead | undefined | null): string {
  return head === null ? 'unknown' : head ? `${head.seq} ${head.hash}` : 'none';
}
