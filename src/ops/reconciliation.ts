/**
 * `GET /ops/reconciliation`: the reconciliation runs (newest first: period, when, how it ended, counts per
 * outcome) and one run's items (`?run=<id>`, default the newest): by default those where an operation of ours
 * is not as the service holds it, and the service's records not made here; `?outcome=<one>` shows one outcome
 * (`matched` too). Each ref opens its timeline (/ops/payments/<ref>). Reads: reconciliation-reads.ts.
 *
 * Who may call it: through the /ops access check (src/ops/access.ts): a signed-in operator (or Basic auth with
 * an operator's name and password), everyone in the embedded demo; not a script's Bearer token; anyone else
 * 401 (a browser is sent to sign in). A bad query value
 * is a 400 with its reason; a database that does not answer a 503.
 */
import type { Express } from 'express';
import { z } from 'zod';
import { EXCEPTION_STATES } from '../reconciliation/schema.js';
import type { OpsAccess, SignIn } from './access.js';
import { amountText, html, queryString, when, unavailableAlert, type Html, pageSender } from './html.js';
import {
  DIFFERING,
  RECONCILIATION_OUTCOMES,
  ReconciliationReads,
  type ItemView,
  type RunView,
} from './reconciliation-reads.js';
import { addDifferenceRoutes, differencesSection, type DifferencesOptions } from './reconciliation-differences.js';

const send = pageSender('reconciliation', '/ops/reconciliation');

export type ReconciliationRouteOptions = DifferencesOptions;

/** Runs listed; items shown of the chosen run. */
const RUNS_SHOWN = 30;
const ITEMS_SHOWN = 500;

const OUTCOME_WORDS: Record<string, string> = {
  matched: 'matched',
  unknown_to_service: 'ours, unknown to the service',
  not_ours: "the service's, not made here",
  state_differs: 'state differs',
  detail_differs: 'amount, currency or recipient differs',
};

const query = z
  .object({
    run: z
      .string('run is one value')
      .regex(/^\d{1,18}$/, 'run is a run number')
      .optional(),
    outcome: z
      .enum(RECONCILIATION_OUTCOMES as [string, ...string[]], `outcome is one of ${RECONCILIATION_OUTCOMES.join(', ')}`)
      .optional(),
    state: z.enum(EXCEPTION_STATES, `state is one of ${EXCEPTION_STATES.join(', ')}`).optional(),
  })
  .strict();

export function addReconciliationRoute(app: Express, access: OpsAccess, options: ReconciliationRouteOptions): void {
  const reads = options.journal ? new ReconciliationReads(options.journal.db) : undefined;
  const differences = addDifferenceRoutes(app, access, options);
  app.get('/ops/reconciliation', async (req, res) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) {
      const reasons = parsed.error.issues.map((i) =>
        i.code === 'unrecognized_keys' ? `${i.keys.join(', ')}: not taken (run, outcome, state)` : i.message,
      );
      send(
        res,
        400,
        html`<ul class="reasons" role="alert">
          ${reasons.map((r) => html`<li>${r}</li>`)}
        </ul>`,
      );
      return;
    }
    if (!reads) {
      send(res, 503, html`<p class="reasons" role="alert">The journal is not open: no database.</p>`);
      return;
    }
    try {
      const runs = await reads.runs(RUNS_SHOWN);
      if (runs === undefined) {
        send(
          res,
          200,
          html`<section>
            <h2>Reconciliation</h2>
            <p class="empty">No reconciliation has run here yet (its tables are not in the database).</p>
          </section>`,
        );
        return;
      }
      const chosenId = parsed.data.run ?? runs[0]?.id;
      const chosen =
        chosenId === undefined ? undefined : (runs.find((r) => r.id === chosenId) ?? (await reads.run(chosenId)));
      if (parsed.data.run && !chosen) {
        send(
          res,
          404,
          html`<p class="reasons" role="alert">No reconciliation run ${parsed.data.run}.</p>
            <p><a href="/ops/reconciliation">All runs</a></p>`,
        );
        return;
      }
      const outcomes = parsed.data.outcome ? [parsed.data.outcome] : [...DIFFERING, 'not_ours'];
      const items = chosen ? await reads.items(chosen.id, outcomes, ITEMS_SHOWN) : { items: [], more: false };
      const view = await differences?.view(parsed.data.state);
      const signIn = res.locals.signIn as SignIn | undefined;
      send(
        res,
        200,
        html`${view ? differencesSection(view, signIn, OUTCOME_WORDS, parsed.data.state) : ''}
        ${reconciliationBody(runs, chosen, items, parsed.data.outcome)}`,
      );
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the reconciliation page could not read the database');
      send(res, 503, unavailableAlert('The reconciliation could not be read'));
    }
  });
}

const counts = (run: RunView): Html =>
  html`<span class="counts"
    >${RECONCILIATION_OUTCOMES.map(
      (o) =>
        html`<span class="state ${(run.counts[o] ?? 0) === 0 ? 'zero' : `outcome-${o}`}"
          >${OUTCOME_WORDS[o] ?? o}: ${run.counts[o] ?? 0}</span
        >`,
    )}</span
  >`;

/** A record's amount with its currency, grouped when it is a decimal ("1,500 UGX"); as given otherwise. */
function amountOf(amount: string | undefined, currency: string | undefined): string {
  if (amount && currency && /^\d+(\.\d+)?$/.test(amount)) return amountText(amount, currency);
  return [amount, currency].filter(Boolean).join(' ');
}

/** A compared record's main fields as one line of text. */
function record(value: Record<string, unknown> | null): string {
  if (!value) return '–';
  const pick = (k: string) =>
    value[k] === undefined || value[k] === null || value[k] === '' ? undefined : String(value[k]);
  const parts = [
    amountOf(pick('amount'), pick('currency')),
    pick('payee') ?? pick('phone'),
    pick('state'),
    pick('kind'),
  ].filter((p): p is string => Boolean(p));
  return parts.join(' · ') || JSON.stringify(value);
}

function itemRow(item: ItemView): Html {
  return html`<tr class="item" data-outcome="${item.outcome}">
    <td>
      <span class="state outcome-${item.outcome}">${OUTCOME_WORDS[item.outcome] ?? item.outcome}</span
      >${item.differs?.length ? html`<br /><small>${item.differs.join(', ')}</small>` : ''}
    </td>
    <td>${item.ref ? html`<a href="/ops/payments/${encodeURIComponent(item.ref)}">${item.ref}</a>` : '–'}</td>
    <td>${item.serviceId ?? '–'}</td>
    <td>${record(item.ours)}</td>
    <td>${record(item.theirs)}</td>
  </tr>`;
}

function reconciliationBody(
  runs: RunView[],
  chosen: RunView | undefined,
  found: { items: ItemView[]; more: boolean },
  outcome: string | undefined,
): Html {
  const runRows = runs.map(
    (r) =>
      html`<tr data-run="${r.id}" ${r.id === chosen?.id ? html` class="chosen"` : ''}>
        <td><a href="/ops/reconciliation${queryString({ run: r.id })}">${r.id}</a></td>
        <td>${r.fromDay === r.toDay ? r.fromDay : `${r.fromDay} to ${r.toDay}`}</td>
        <td>${when(r.started)}</td>
        <td>${r.finished ? when(r.finished) : 'running'}</td>
        <td>
          <span class="state status-${r.status}">${r.status}</span
          >${r.error ? html`<br /><small>${r.error}</small>` : ''}
        </td>
        <td>${r.trigger}</td>
        <td>${counts(r)}</td>
      </tr>`,
  );
  const filters = chosen
    ? html`<p class="filters">
        Show:
        <a href="/ops/reconciliation${queryString({ run: chosen.id })}" ${outcome ? '' : html` aria-current="true"`}
          >differences and the service's own</a
        >${RECONCILIATION_OUTCOMES.map(
          (o) =>
            html` ·
              <a
                href="/ops/reconciliation${queryString({ run: chosen.id, outcome: o })}"
                ${o === outcome ? html` aria-current="true"` : ''}
                >${OUTCOME_WORDS[o] ?? o}</a
              >`,
        )}
      </p>`
    : html``;
  return html`<section aria-labelledby="runs-title">
      <h2 id="runs-title">Reconciliation runs</h2>
      <p class="note">
        Each run compares the journal with the service's payments, collection requests and collections of its days
        (UTC): <code>npm run reconcile -- --from YYYY-MM-DD --to YYYY-MM-DD</code>, and the product's daily run of the
        day before.
      </p>
      ${
        runs.length === 0
          ? html`<p class="empty">No reconciliation has run yet.</p>`
          : html`<table class="runs">
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Days</th>
                  <th scope="col">Started</th>
                  <th scope="col">Finished</th>
                  <th scope="col">Result</th>
                  <th scope="col">By</th>
                  <th scope="col">Counts</th>
                </tr>
              </thead>
              <tbody>
                ${runRows}
              </tbody>
            </table>`
      }
    </section>
    ${
      chosen
        ? html`<section aria-labelledby="items-title">
            <h2 id="items-title">
              Run ${chosen.id}:
              ${chosen.fromDay === chosen.toDay ? chosen.fromDay : `${chosen.fromDay} to ${chosen.toDay}`}
            </h2>
            ${counts(chosen)} ${filters}
            ${
              found.items.length === 0
                ? html`<p class="empty">
                    ${outcome ? `Nothing ${OUTCOME_WORDS[outcome] ?? outcome}.` : 'No differences: every operation of ours is as the service holds it.'}
                  </p>`
                : html`<table class="items">
                      <thead>
                        <tr>
                          <th scope="col">Outcome</th>
                          <th scope="col">Our ref</th>
                          <th scope="col">Service's id</th>
                          <th scope="col">Ours</th>
                          <th scope="col">The service's</th>
                        </tr>
                      </thead>
                      <tbody>
                        ${found.items.map(itemRow)}
                      </tbody>
                    </table>
                    ${found.more ? html`<p class="note">The first ${ITEMS_SHOWN} shown.</p>` : ''}`
            }
          </section>`
        : ''
    }`;
}
