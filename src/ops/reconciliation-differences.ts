/**
 * The reconciliation's differences on /ops/reconciliation (src/reconciliation/exceptions.ts): the list, each with
 * its state (`open`, `resolved`, `corrected`), and the changes that close one.
 *
 * - `POST /ops/reconciliation/differences/<id>/resolve` (form: `csrf`, `reason`): closed as `resolved`, the
 *   journal's state unchanged, the reason journalled on the operation (source `operator`).
 * - `POST /ops/reconciliation/differences/<id>/correct` (form: `csrf`, `reason`): the journal takes the
 *   service's state (source `operator`) and a person told another outcome is owed the correction. One that tells
 *   a person or changes a final state waits for a second operator when OPS_DUAL_CONTROL names `correct` (202: an
 *   `operator_requests` row, src/people/requests.ts, the People page's mechanism).
 * - `POST /ops/reconciliation/requests/<id>/approve` and `/reject` (form: `csrf`, `reason`): a second operator's
 *   decision on a correction asked; approved, it is made (as the asker, approved by the decider). Nobody approves
 *   their own (403 with the reason; the table refuses it too); the asker may reject (withdraw) their own.
 *
 * Who may call them: a signed-in operator with the page's CSRF token, from this site (access.ts requireCsrf);
 * without a session (Basic auth, the OPS_TOKEN, nobody) or with another token: 403, nothing changed. An unknown
 * difference or request is a 404, one already closed or decided a 409, a missing reason a 400, a database that
 * does not answer a 503. Each close and decision is a row of the operators' audit (audit.ts), written before it
 * takes effect (nothing done unaudited).
 */
import type { Express, Request, RequestHandler, Response } from 'express';
import type { Kysely } from 'kysely';
import type { DualControlAction } from '../config.js';
import { readBody } from '../http/body.js';
import type { Journal } from '../journal/journal.js';
import type { Logger } from '../log.js';
import { PeopleError } from '../people/people.js';
import { OperatorRequests, type OperatorRequest } from '../people/requests.js';
import type { PeopleSchema } from '../people/schema.js';
import { correctionNeedsSecond, ExceptionError, Exceptions, type ExceptionRow } from '../reconciliation/exceptions.js';
import type { OperatorAudit } from './audit.js';
import type { OpsAccess, SignIn } from './access.js';
import { html, page, when, type Html } from './html.js';

export interface DifferencesOptions {
  journal?: Journal;
  logger?: Logger;
  audit?: OperatorAudit;
  /** OPS_DUAL_CONTROL: with `correct`, a correction that tells a person or changes a final state waits. */
  dualControl?: ReadonlySet<DualControlAction>;
}

const CORRECT: readonly DualControlAction[] = ['correct'];
const ID = /^\d{1,18}$/;
const REQUEST_ID = /^r-[\w-]{1,40}$/;

/** What the page shows of the differences: the list and the corrections waiting for a second operator. */
export interface DifferencesView {
  rows: ExceptionRow[];
  waiting: OperatorRequest[];
}

export class Differences {
  readonly exceptions: Exceptions;
  readonly requests: OperatorRequests;

  constructor(journal: Journal) {
    this.exceptions = new Exceptions(journal.db, journal);
    this.requests = new OperatorRequests(journal.db as unknown as Kysely<PeopleSchema>);
  }

  async view(state?: ExceptionRow['state']): Promise<DifferencesView> {
    const rows = await this.exceptions.list(state ? { state } : {});
    const { pending } = await this.requests.list(0, CORRECT);
    return { rows, waiting: pending };
  }
}

export function addDifferenceRoutes(app: Express, access: OpsAccess, o: DifferencesOptions): Differences | undefined {
  if (!o.journal) return undefined;
  const differences = new Differences(o.journal);
  const { exceptions, requests } = differences;
  const form = readBody('form', { limit: '4kb' }) as RequestHandler;

  /** Runs a change for a signed-in operator with a valid CSRF token; answers a refusal with its reason. */
  const change =
    (work: (req: Request, res: Response, operator: string) => Promise<void>): RequestHandler =>
    async (req, res) => {
      const operator = access.requireCsrf(req, res);
      if (!operator) return;
      try {
        await work(req, res, operator);
      } catch (err) {
        const status = err instanceof ExceptionError || err instanceof PeopleError ? err.status : 503;
        if (status === 503) o.logger?.warn({ err }, 'ops: a reconciliation difference could not be changed');
        const why =
          status === 503
            ? 'The database did not answer (or the audit could not be written); try again shortly'
            : (err as Error).message;
        res
          .status(status)
          .type('html')
          .send(
            page(
              'reconciliation',
              '/ops/reconciliation',
              html`<p class="reasons" role="alert">${why}. Nothing was changed.</p>
                <p><a href="/ops/reconciliation">Back to the reconciliation</a></p>`,
            ),
          );
      }
    };
  const reasonOf = (req: Request): string => {
    const value = (req.body as Record<string, unknown> | undefined)?.reason;
    return typeof value === 'string' ? value.trim().slice(0, 500) : '';
  };
  const idOf = (req: Request): string => {
    const id = String(req.params.id ?? '');
    if (!ID.test(id)) throw new ExceptionError('no such difference', 404);
    return id;
  };
  const back = (res: Response) => res.redirect(303, '/ops/reconciliation#differences');

  app.post(
    '/ops/reconciliation/differences/:id/resolve',
    form,
    change(async (req, res, operator) => {
      const id = idOf(req);
      const reason = reasonOf(req);
      if (!reason) throw new ExceptionError('give a reason', 400);
      const { exception } = await exceptions.openOne(id);
      await o.audit?.record(operator, 'resolve', { difference: id, ref: exception.ref, state: 'resolved', reason });
      await exceptions.resolve(id, operator, reason);
      o.logger?.info({ difference: id, by: operator }, 'reconciliation: difference resolved');
      back(res);
    }),
  );

  app.post(
    '/ops/reconciliation/differences/:id/correct',
    form,
    change(async (req, res, operator) => {
      const id = idOf(req);
      const reason = reasonOf(req);
      if (!reason) throw new ExceptionError('give a reason', 400);
      const { exception, op } = await exceptions.openOne(id);
      const state = exception.correction;
      if (!state) throw new ExceptionError('this difference has no correction to make: resolve it with a reason', 409);
      if (!o.dualControl?.has('correct') || !correctionNeedsSecond(op, state)) {
        await o.audit?.record(operator, 'resolve', { difference: id, ref: op.ref, state: 'corrected', reason });
        await exceptions.correct(id, operator, reason);
        o.logger?.info({ difference: id, by: operator }, 'reconciliation: difference corrected');
        back(res);
        return;
      }
      const { pending } = await requests.list(0, CORRECT);
      if (pending.some((r) => r.target === id))
        throw new ExceptionError('a correction of this difference already waits for a second operator', 409);
      const asked = await requests.ask(operator, 'correct', id, { ref: op.ref, state, reason });
      try {
        await o.audit?.record(operator, 'request.made', {
          request: asked.id,
          change: 'correct',
          target: id,
          what: describeCorrection(asked),
        });
      } catch (err) {
        // Nothing waits unaudited: withdrawn by its asker (which the table allows).
        await requests.decide(asked.id, operator, false, 'the audit row could not be written').catch(() => {});
        throw err;
      }
      o.logger?.info({ difference: id, request: asked.id, by: operator }, 'reconciliation: correction asked');
      res
        .status(202)
        .type('html')
        .send(
          page(
            'reconciliation',
            '/ops/reconciliation',
            html`<h2>Waiting for a second operator</h2>
              <p data-testid="request">
                Asked: ${describeCorrection(asked)} (request <code>${asked.id}</code>). It takes effect once another
                operator approves it on this page; you cannot approve your own.
              </p>
              <p><a href="/ops/reconciliation#differences">Back to the reconciliation</a></p>`,
          ),
        );
    }),
  );

  const decision = (approve: boolean) =>
    change(async (req, res, operator) => {
      const id = String(req.params.id ?? '');
      if (!REQUEST_ID.test(id)) throw new ExceptionError('no such request', 404);
      const reason = reasonOf(req);
      const decided = await requests.decide(id, operator, approve, reason, CORRECT);
      const audited = {
        request: id,
        change: 'correct',
        target: decided.target,
        askedBy: decided.askedBy,
        ...(reason ? { reason } : {}),
      };
      if (!approve) {
        await o.audit?.record(operator, 'request.rejected', audited);
        back(res);
        return;
      }
      try {
        await o.audit?.record(operator, 'request.approved', audited);
        await exceptions.correct(decided.target!, decided.askedBy, String(decided.payload.reason ?? ''), {
          approvedBy: operator,
          request: id,
        });
      } catch (err) {
        const why = err instanceof ExceptionError ? err.message : 'the correction failed';
        await requests.failed(id, why);
        if (err instanceof ExceptionError)
          throw new ExceptionError(
            `approved, but it could not take effect: ${why}`,
            err.status === 404 ? 409 : err.status,
          );
        throw err;
      }
      o.logger?.info({ request: id, difference: decided.target, by: operator }, 'reconciliation: correction approved');
      back(res);
    });
  app.post('/ops/reconciliation/requests/:id/approve', form, decision(true));
  app.post('/ops/reconciliation/requests/:id/reject', form, decision(false));
  return differences;
}

function describeCorrection(r: OperatorRequest): string {
  return `correct ${String(r.payload.ref)} to ${String(r.payload.state)} (difference ${r.target}): ${String(r.payload.reason ?? '')}`;
}

const csrfField = (signIn: SignIn | undefined): Html =>
  html`<input type="hidden" name="csrf" value="${signIn?.csrf ?? ''}" />`;

/** A compared record's main fields as one line of text. */
function record(value: Record<string, unknown> | null): string {
  if (!value) return '–';
  const pick = (k: string) =>
    value[k] === undefined || value[k] === null || value[k] === '' ? undefined : String(value[k]);
  return [[pick('amount'), pick('currency')].filter(Boolean).join(' '), pick('payee') ?? pick('phone'), pick('state')]
    .filter((p): p is string => Boolean(p))
    .join(' · ');
}

/** The differences section of /ops/reconciliation: each with its state, and the forms that close an open one. */
export function differencesSection(
  view: DifferencesView,
  signIn: SignIn | undefined,
  words: Record<string, string>,
  state: string | undefined,
): Html {
  const waitingFor = new Map(view.waiting.map((r) => [r.target, r]));
  const post = (path: string, label: string, placeholder = 'reason') =>
    html`<form method="post" action="${path}" class="search inline">
      ${csrfField(signIn)}<input name="reason" maxlength="500" required placeholder="${placeholder}" /><button
        type="submit"
      >
        ${label}
      </button>
    </form>`;
  const actions = (row: ExceptionRow): Html => {
    if (row.state !== 'open') {
      return html`<small
        >by ${row.closed_by}${row.approved_by ? `, approved by ${row.approved_by}` : ''}, ${when(row.closed_at)}:
        ${row.reason}</small
      >`;
    }
    if (!signIn) return html``;
    const asked = waitingFor.get(row.id);
    if (asked) {
      const decide = (path: 'approve' | 'reject', label: string) =>
        html`<form
          method="post"
          action="/ops/reconciliation/requests/${encodeURIComponent(asked.id)}/${path}"
          class="search inline"
        >
          ${csrfField(signIn)}<input name="reason" maxlength="500" placeholder="reason" /><button type="submit">
            ${label}
          </button>
        </form>`;
      return html`<p data-testid="waiting">
          ${asked.askedBy} asked to correct it to ${String(asked.payload.state)}: ${String(asked.payload.reason ?? '')}
        </p>
        ${
          signIn.operator === asked.askedBy
            ? html`yours: another operator approves it ${decide('reject', 'Withdraw')}`
            : html`${decide('approve', 'Approve')} ${decide('reject', 'Reject')}`
        }`;
    }
    return html`${post(`/ops/reconciliation/differences/${row.id}/resolve`, 'Resolve')}
    ${row.correction ? post(`/ops/reconciliation/differences/${row.id}/correct`, `Correct to ${row.correction}`) : ''}`;
  };
  const filters = html`<p class="filters">
    Show:
    <a href="/ops/reconciliation#differences" ${state ? '' : html` aria-current="true"`}>all</a>${(
      ['open', 'resolved', 'corrected'] as const
    ).map(
      (s) =>
        html` ·
          <a href="/ops/reconciliation?state=${s}#differences" ${s === state ? html` aria-current="true"` : ''}
            >${s}</a
          >`,
    )}
  </p>`;
  return html`<section id="differences" aria-labelledby="differences-title">
    <h2 id="differences-title">Differences</h2>
    <p class="note">
      Each difference the runs found, once: <strong>open</strong> until an operator resolves it with a reason or
      corrects the journal to the service's state (a correction that tells a person or changes a final state waits for a
      second operator). <code>npm run reconcile</code> exits 1 while one of its period is open.
    </p>
    ${filters}
    ${
      view.rows.length === 0
        ? html`<p class="note" data-testid="no-differences">No differences${state ? ` ${state}` : ''}.</p>`
        : html`<table class="items differences">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">State</th>
                <th scope="col">Difference</th>
                <th scope="col">Our ref</th>
                <th scope="col">Day</th>
                <th scope="col">Ours</th>
                <th scope="col">The service's</th>
                <th scope="col">Found</th>
                <th scope="col">Closed, or close it</th>
              </tr>
            </thead>
            <tbody>
              ${view.rows.map(
                (row) =>
                  html`<tr class="difference" data-difference="${row.id}" data-state="${row.state}">
                    <td>${row.id}</td>
                    <td><span class="state difference-${row.state}">${row.state}</span></td>
                    <td>
                      ${words[row.outcome] ?? row.outcome}${row.differs?.length ? html`<br /><small>${row.differs.join(', ')}</small>` : ''}
                    </td>
                    <td><a href="/ops/payments/${encodeURIComponent(row.ref)}">${row.ref}</a></td>
                    <td>${row.day}</td>
                    <td>${record(row.ours)}</td>
                    <td>${record(row.theirs)}</td>
                    <td>run ${row.found_run}, ${when(row.found_at)}</td>
                    <td>${actions(row)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}
