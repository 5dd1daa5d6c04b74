/**
 * HTML of the operator's money pages, written on the server: every value from outside (the journal, the
 * service, the query) goes through {@link html}'s escaping, so data is shown as text, never as markup. The
 * pages carry no inline script or style (the /ops Content-Security-Policy allows only /ops's own files).
 */
import type { Response } from 'express';
import { localTime } from '../local-time.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Markup already safe (made by {@link html}). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** Text as HTML: `&`, `<`, `>` and both quotes escaped. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** A template of markup whose every interpolated value is escaped (unless it is {@link Html} itself). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/** The pages of /ops, for the navigation bar. */
const NAV: ReadonlyArray<{ href: string; label: string }> = [
  { href: '/ops', label: 'Funnel' },
  { href: '/ops/payments', label: 'Payments' },
  { href: '/ops/reconciliation', label: 'Reconciliation' },
  { href: '/ops/statements', label: 'Statements' },
  { href: '/ops/journal', label: 'Journal' },
  { href: '/ops/people', label: 'People' },
  { href: '/ops/deliveries', label: 'Deliveries' },
  { href: '/ops/audit', label: 'Audit' },
];

/** A whole page: head (own stylesheet only), header with the navigation, the body. */
export function page(title: string, current: string, body: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>momo-chat · ${title}</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="/ops/ops.css" />
        <link rel="stylesheet" href="/ops/money.css" />
      </head>
      <body class="money">
        <header>
          <h1>momo-chat · ${title}</h1>
          <nav aria-label="Operations">
            ${NAV.map((n) => html`<a href="${n.href}" ${n.href === current ? html` aria-current="page"` : ''}>${n.label}</a>`)}
          </nav>
        </header>
        <main>${body}</main>
      </body>
    </html> `.text;
}

/** What sends a body as the whole page `title` (`current` marked in the navigation), with a status. */
export const pageSender =
  (title: string, current: string) =>
  (res: Response, status: number, body: Html): void => {
    res
      .status(status)
      .type('html')
      .send(page(title, current, body));
  };

/** What an answer says when the database did not answer: `what` (e.g. "The journal could not be read"). */
export const unavailable = (what: string): string => `${what} (the database did not answer); try again shortly.`;

/** {@link unavailable} as a page's alert. */
export const unavailableAlert = (what: string): Html => html`<p class="reasons" role="alert">${unavailable(what)}</p>`;

/** A query string from the values given (empty ones left out). */
export function queryString(values: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** A time as the pages show it: in the `TZ` setting's zone, to the second, with the zone's name (local-time.ts). */
export const when = (at: Date | string | null | undefined): string => (at ? localTime(at, { seconds: true }) : '');

/**
 * An amount as the pages show it: its whole part grouped in threes, its decimals as the journal keeps them, then
 * its currency ("8,150.5 NGN", never "8150.5"). The exports keep the plain decimal and a currency column.
 */
export function amountText(amount: string, currency: string): string {
  const [whole = '', fraction] = amount.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${grouped}${fraction ? `.${fraction}` : ''} ${currency}`;
}

/** What a search page shows: its form, the refusals of its query, its results and the way to the next page. */
export interface SearchView {
  /** The page's path (`/ops/payments`); its exports are `<path>.csv` and `<path>.json`. */
  path: string;
  /** The form's heading (`Search payments`). */
  title: string;
  form: Html;
  /** The values as given, to fill the links again. */
  given: Record<string, string>;
  /** Why the query was refused; none shown when it was taken. */
  reasons?: string[];
  /** The results' heading (`3 operations`). */
  count: string;
  /** The results' table; absent when nothing was found. */
  table?: Html;
  cursor?: string;
  next?: string;
}

/** The body of a search page: the form, the refusals and the exports, then the results and their pages. */
export function searchBody(view: SearchView): Html {
  const { path, given } = view;
  const exportQuery = queryString({ ...given, size: undefined });
  return html`<section aria-labelledby="search-title">
      <h2 id="search-title">${view.title}</h2>
      ${view.form}
      ${
        view.reasons?.length
          ? html`<ul class="reasons" role="alert">
              ${view.reasons.map((r) => html`<li>${r}</li>`)}
            </ul>`
          : ''
      }
      <p class="exports">
        Export this search: <a href="${path}.csv${exportQuery}" download>CSV</a> ·
        <a href="${path}.json${exportQuery}">JSON</a>
      </p>
    </section>
    <section aria-labelledby="results-title">
      <h2 id="results-title">
        ${view.reasons?.length ? 'No search' : `${view.count}${view.cursor ? ' (a later page)' : ''}`}
      </h2>
      ${view.table ?? html`<p class="empty">Nothing found.</p>`}
      <p class="pages">
        ${view.cursor ? html`<a href="${path}${queryString(given)}">First page</a>` : ''}${
          view.next
            ? html` <a rel="next" href="${path}${queryString({ ...given, cursor: view.next })}">Next page</a>`
            : ''
        }
      </p>
    </section>`;
}
