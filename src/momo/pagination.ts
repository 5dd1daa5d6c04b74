/**
 * `list` (one page) and `listAll` (every record) shared by every list endpoint. An answer is the list
 * envelope, whose `next` link is followed, or a bare list (collections filtered by query answer so, the
 * spec's samples show): it has no link, so the next page is asked by offset until a page comes back
 * shorter than the limit asked.
 */
import { z } from 'zod';
import { MAX_LIST_LIMIT } from './assumptions.js';
import type { Query, Transport } from './http.js';
import type { Page } from './schemas.js';

/** Parameters every list endpoint takes. The service's default page size is 10. */
export interface ListParams {
  limit?: number;
  offset?: number;
  /** A visible field; `-field` sorts descending. */
  ordering?: string;
}

/**
 * The filters the lists of money records (payments, collections, collection requests) take alike; each list
 * adds its own.
 */
export interface MoneyListFilters extends ListParams {
  amount?: string | number;
  currency?: string;
  phonenumber?: string;
  remote_transaction_id?: string;
  created_after?: string;
  created_before?: string;
  modified_after?: string;
  modified_before?: string;
  contact_first_name?: string;
  contact_last_name?: string;
}

/** The service's page size when no `limit` is sent ("default 10 when omitted"). */
const DEFAULT_LIMIT = 10;

/** One answer: its page, and whether it came as a bare list (no count, no links). */
interface Answer<T> {
  page: Page<T>;
  bare: boolean;
}

function answerSchema<T>(item: z.ZodType<T>): z.ZodType<Answer<T>> {
  return z.union([
    z
      .looseObject({
        count: z.number().int(),
        next: z.string().nullish(),
        previous: z.string().nullish(),
        results: z.array(item),
      })
      .transform((p) => ({
        page: { count: p.count, next: p.next ?? null, previous: p.previous ?? null, results: p.results },
        bare: false,
      })),
    z
      .array(item)
      .transform((results) => ({ page: { count: results.length, next: null, previous: null, results }, bare: true })),
  ]);
}

const offsetOf = (query: Query): number => Number(query.offset ?? 0);
const limitOf = (query: Query): number => Number(query.limit ?? DEFAULT_LIMIT);

/** The query of the page after a full bare page. */
const following = (query: Query, got: number): Query => ({
  ...query,
  limit: limitOf(query),
  offset: offsetOf(query) + got,
});

/** The path and query of a link, as the transport takes it. */
function linkOf(path: string, query: Query): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  return `${path}?${params.toString()}`;
}

/**
 * One page. A bare list is made an envelope: `count` is the records up to the end of this page (the service
 * gives no total), and `next` asks the following offset when the page was full.
 */
export async function listPage<T>(http: Transport, path: string, query: Query, item: z.ZodType<T>): Promise<Page<T>> {
  const { page, bare } = await http.request({ method: 'GET', path, query }, answerSchema(item));
  if (!bare) return page;
  const full = page.results.length >= limitOf(query);
  return {
    count: offsetOf(query) + page.results.length,
    next: full ? linkOf(path, following(query, page.results.length)) : null,
    previous: null,
    results: page.results,
  };
}

/**
 * Yields every record of every page once: follows the envelope's `next` (on our origin only), or asks a
 * bare list's next offset until a short page.
 */
export async function* listAll<T>(
  http: Transport,
  path: string,
  query: Query,
  item: z.ZodType<T>,
): AsyncGenerator<T, void, undefined> {
  const schema = answerSchema(item);
  const seen = new Set<string>();
  let asked = query;
  let answer = await http.request({ method: 'GET', path, query: asked }, schema);
  for (;;) {
    yield* answer.page.results;
    if (answer.bare) {
      if (answer.page.results.length < limitOf(asked)) return;
      asked = following(asked, answer.page.results.length);
      answer = await http.request({ method: 'GET', path, query: asked }, schema);
      continue;
    }
    // A `next` seen before would loop forever: stop there.
    const next = answer.page.next;
    if (next === null || seen.has(next)) return;
    seen.add(next);
    answer = await http.request({ method: 'GET', path: next }, schema);
  }
}

/** The page size to ask when every record is wanted: as large as the service allows (MAX_LIST_LIMIT). */
export const ALL_AT_ONCE = MAX_LIST_LIMIT;
