import type { Transport, WriteOptions } from '../http.js';
import { listAll, listPage, type ListParams } from '../pagination.js';
import { metadata, phone, type Metadata } from '../params.js';
import { contactSchema, type Contact, type Page } from '../schemas.js';

const PATH = '/api/contacts';

export interface ContactCreateParams {
  /** International format, starting with `+`. */
  phone_number: string;
  first_name: string;
  last_name: string;
  email?: string;
  /** `{ sync: '1' }` runs the network verification synchronously. */
  metadata?: Metadata;
}

export interface ContactUpdateParams {
  first_name?: string;
  last_name?: string;
  email?: string;
  national_id?: string;
}

export interface ContactListFilters extends ListParams {
  first_name?: string;
  last_name?: string;
  email?: string;
  phone_number?: string;
  /** `YYYY-MM-DD HH:MM` */
  created_after?: string;
  created_before?: string;
}

export class Contacts {
  constructor(private readonly http: Transport) {}

  async create(params: ContactCreateParams, options: WriteOptions = {}): Promise<Contact> {
    const body = {
      ...params,
      phone_number: phone(params.phone_number, 'phone_number'),
      metadata: params.metadata === undefined ? undefined : metadata(params.metadata),
    };
    return this.http.request({ method: 'POST', path: PATH, body, ...options }, contactSchema);
  }

  async get(id: number | string): Promise<Contact> {
    return this.http.request({ method: 'GET', path: `${PATH}/${encodeURIComponent(id)}` }, contactSchema);
  }

  async update(id: number | string, params: ContactUpdateParams, options: WriteOptions = {}): Promise<Contact> {
    return this.http.request(
      { method: 'PATCH', path: `${PATH}/${encodeURIComponent(id)}`, body: params, ...options },
      contactSchema,
    );
  }

  async list(filters: ContactListFilters = {}): Promise<Page<Contact>> {
    return listPage(this.http, PATH, { ...filters }, contactSchema);
  }

  listAll(filters: ContactListFilters = {}): AsyncGenerator<Contact, void, undefined> {
    return listAll(this.http, PATH, { ...filters }, contactSchema);
  }
}
