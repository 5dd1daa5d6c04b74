import type { Query, Transport } from '../http.js';
import { ALL_AT_ONCE, listAll, listPage, type MoneyListFilters } from '../pagination.js';
import { amount, phone, required, type Amount } from '../params.js';
import { collectionSchema, type Collection, type Page } from '../schemas.js';

const PATH = '/api/collections';

export interface CollectionListFilters extends MoneyListFilters {
  reference?: string;
  status?: string;
  network?: string;
}

/** True when the query names a filter (the service then answers a bare list). */
const isFiltered = (filters: CollectionListFilters): boolean =>
  Object.entries(filters).some(([key, value]) => value !== undefined && !['limit', 'offset', 'ordering'].includes(key));

/** Rule 1 of claiming: all three together. Rule 2: the full international number. */
export interface CollectionClaimParams {
  amount: Amount;
  remote_transaction_id: string;
  phonenumber: string;
}

export class Collections {
  constructor(private readonly http: Transport) {}

  async get(id: number | string): Promise<Collection> {
    return this.http.request({ method: 'GET', path: `${PATH}/${encodeURIComponent(id)}` }, collectionSchema);
  }

  /**
   * Without filters: one page of the envelope. With filters the service answers a bare list of one page
   * (no count, no next link): then every match is fetched, page after page (`limit`, default
   * MAX_LIST_LIMIT, then the next offset until a short page), and returned as one envelope whose `count` is
   * their number. With an `offset` given, only that page is returned (its `next` asks the following one).
   */
  async list(filters: CollectionListFilters = {}): Promise<Page<Collection>> {
    if (!isFiltered(filters) || filters.offset !== undefined)
      return listPage(this.http, PATH, { ...filters }, collectionSchema);
    const results: Collection[] = [];
    for await (const c of this.listAll(filters)) results.push(c);
    return { count: results.length, next: null, previous: null, results };
  }

  /** Every match, following the envelope's links or, for a bare list, asking the next offset until a short page. */
  listAll(filters: CollectionListFilters = {}): AsyncGenerator<Collection, void, undefined> {
    const query: Query = { ...filters };
    if (isFiltered(filters)) query.limit ??= ALL_AT_ONCE;
    return listAll(this.http, PATH, query, collectionSchema);
  }

  /**
   * Searches unmatched collections too and assigns a single match to the organization (`claim=True`).
   * Refuses locally, before sending, unless amount, remote_transaction_id and a full international
   * phonenumber are all given. Answers the list of collections (the spec's rule 4).
   */
  async claim(params: CollectionClaimParams): Promise<Collection[]> {
    const query = {
      claim: 'True',
      amount: amount(params.amount),
      remote_transaction_id: required(params.remote_transaction_id, 'remote_transaction_id'),
      phonenumber: phone(params.phonenumber, 'phonenumber'),
    };
    return (await listPage(this.http, PATH, query, collectionSchema)).results;
  }
}
