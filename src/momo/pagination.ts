/** `list` (one page) and `listAll` (every record, following `next`) shared by every list endpoint. */
import type { z } from 'zod';
import type { Query, Transport } from './http.js';
import { pageSchema, type Page } from './schemas.js';

/** Parameters every list endpoint takes. The service's default page size is 10. */
export interface ListParams {
  limit?: number;
  offset?: number;
  /** A visible field; `-field` sorts descending. */
  ordering?: string;
}

export function listPage<T>(http: Transport, path: string, query: Query, item: z.ZodType<T>): Promise<Page<T>> {
  return http.request({ method: 'GET', path, query }, pageSchema(item));
}

/** Yields every record of every page once, following the service's `next` links (on our origin only). */
export async function* listAll<T>(http: Transport, path: string, query: Query, item: z.ZodType<T>): AsyncGenerator<T, void, undefined> {
  const schema = pageSchema(item);
  const seen = new Set<string>();
  let page = await http.request({ method: 'GET', path, query }, schema);
  for (;;) {
    yield* page.results;
    // A `next` seen before would loop forever: stop there.
    if (page.next === null || seen.has(page.next)) return;
    seen.add(page.next);
    page = await http.request({ method: 'GET', path: page.next }, schema);
  }
}
