/**
 * `GET /ops/journal`: the journal's tamper evidence as an operator reads it: the hash chain's head now (what
 * every export carries, and `npm run journal:verify -- --head` checks), and the receipt of each retention
 * deletion (`journal_receipts`, written by `Journal.deleteOlderThan`, src/journal/retention.ts), newest first:
 * when, the range of time and of the chain's seqs it deleted, how many operations, events and reconciliation
 * rows, and the chain's head before and after it (the receipt's own event). `journal:verify` crosses each such
 * hole with its receipt.
 *
 * Who may call it: through the /ops access check (src/ops/access.ts): a signed-in operator (or Basic auth with
 * an operator's name and password), everyone in the embedded demo; not a script's Bearer token; anyone else
 * 401 (a browser is sent to sign in). It takes no query; a database that does not answer gives 503.
 */
import type { Express } from 'express';
import { chainHead, receipts, type ChainHead, type Receipt } from '../journal/chain.js';
import type { Journal } from '../journal/journal.js';
import type { Logger } from '../log.js';
import { html, pageSender, unavailableAlert, when, type Html } from './html.js';

const send = pageSender('journal', '/ops/journal');

export interface JournalRouteOptions {
  journal?: Journal;
  logger?: Logger;
}

/** Receipts shown: a year and a day of daily runs. */
export const RECEIPTS_SHOWN = 366;

export function addJournalRoute(app: Express, options: JournalRouteOptions): void {
  app.get('/ops/journal', async (req, res) => {
    if (Object.keys(req.query ?? {}).length > 0) {
      send(res, 400, html`<p class="reasons" role="alert">This page takes no query.</p>`);
      return;
    }
    if (!options.journal) {
      send(res, 503, html`<p class="reasons" role="alert">The journal is not open: no database.</p>`);
      return;
    }
    try {
      const db = options.journal.db;
      // One more than shown: whether there are more.
      const [head, list] = await Promise.all([chainHead(db), receipts(db, RECEIPTS_SHOWN + 1)]);
      send(res, 200, journalBody(head, list.slice(0, RECEIPTS_SHOWN), list.length > RECEIPTS_SHOWN));
    } catch (err) {
      options.logger?.warn({ err }, 'ops: the journal page could not read the database');
      send(res, 503, unavailableAlert('The journal could not be read'));
    }
  });
}

/** A head as the exports write it: seq, then the hash in full (it is what gets compared). */
const headCell = (seq: string, hash: string): Html =>
  html`seq ${seq}<br /><small class="hash">${hash || '(none: the chain was empty)'}</small>`;

function receiptRow(r: Receipt): Html {
  const range = r.rangeFrom ? `${when(r.rangeFrom)} to ${when(r.rangeTo)}` : `before ${when(r.rangeTo)}`;
  return html`<tr data-receipt="${r.id}">
    <td>${r.id}</td>
    <td class="when">${when(r.at)}</td>
    <td>${range}</td>
    <td>${r.firstSeq === null ? '–' : `${r.firstSeq} to ${r.lastSeq}`}</td>
    <td class="num">${r.operations}</td>
    <td class="num">${r.events}</td>
    <td class="num">${r.reconciliation}</td>
    <td class="head-before">${headCell(r.headBeforeSeq, r.headBefore)}</td>
    <td class="head-after">${headCell(r.headAfterSeq, r.headAfter)}</td>
  </tr>`;
}

export function journalBody(head: ChainHead | undefined, list: Receipt[], more: boolean): Html {
  return html`<section aria-labelledby="head-title">
      <h2 id="head-title">The chain's head</h2>
      ${
        head
          ? html`<p id="chain-head" data-seq="${head.seq}">seq ${head.seq} <code>${head.hash}</code></p>`
          : html`<p id="chain-head" class="empty">The journal is empty: no head yet.</p>`
      }
      <p class="note">
        Every export carries the head it was read against (the <code>Journal-Head</code> header, the CSV's
        <code>journalHead</code> column, the JSON's <code>head</code>). Check one later with
        <code>npm run journal:verify -- --head '&lt;seq&gt; &lt;sha256&gt;'</code>.
      </p>
    </section>
    <section aria-labelledby="receipts-title">
      <h2 id="receipts-title">Retention receipts</h2>
      <p class="note">
        Each deletion of what is older than <code>RETENTION_DAYS</code> writes a receipt: what it deleted, and the
        chain's head before it and after it (the receipt's own event). <code>npm run journal:verify</code> accepts a
        hole in the chain only where a receipt covers it.
      </p>
      ${
        list.length === 0
          ? html`<p class="empty">Nothing has been deleted: no receipt.</p>`
          : html`<table class="receipts">
                <thead>
                  <tr>
                    <th scope="col">Receipt</th>
                    <th scope="col">When</th>
                    <th scope="col">Deleted what was written</th>
                    <th scope="col">Seqs deleted</th>
                    <th scope="col" class="num">Operations</th>
                    <th scope="col" class="num">Events</th>
                    <th scope="col" class="num">Reconciliation rows</th>
                    <th scope="col">Head before</th>
                    <th scope="col">Head after</th>
                  </tr>
                </thead>
                <tbody>
                  ${list.map(receiptRow)}
                </tbody>
              </table>
              ${more ? html`<p class="note">The newest ${RECEIPTS_SHOWN} shown.</p>` : ''}`
      }
    </section>`;
}
