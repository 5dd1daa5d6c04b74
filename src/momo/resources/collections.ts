import type { Transport } from '../http.js';
import { listAll, listPage, type ListParams } from '../pagination.js';
import { amount, phone, required, type Amount } from '../params.js';
import { collectionSchema, pageSchema, type Collection, type Page } from '../schemas.js';

const PATH = '/api/collections';

export interface CollectionListFilters extends ListParams {
  amount?: string | number;
  currency?: string;
  phonenumber?: string;
  reference?: string;
  remote_transaction_id?: string;
  created_after?: string;
  created_before?: string;
  modified_after?: string;
  modified_before?: string;
  status?: string;
  network?: string;
  contact_first_name?: string;
  contact_last_name?: string;
}

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

  /** A filtered query may answer a bare list: it comes back as an envelope all the same. */
  async list(filters: CollectionListFilters = {}): Promise<Page<Collection>> {
    return listPage(this.http, PATH, { ...filters }, collectionSchema);
  }

  listAll(filters: CollectionListFilters = {}): AsyncGenerator<Collection, void, undefined> {
    return listAll(this.http, PATH, { ...filters }, collectionSchema);
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
    const page = await this.http.request({ method: 'GET', path: PATH, query }, pageSchema(collectionSchema));
    return page.results;
  }
}
