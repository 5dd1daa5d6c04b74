import type { Transport } from '../http.js';
import { listAll, listPage, type ListParams } from '../pagination.js';
import { eventSchema, type Event, type Page } from '../schemas.js';

const PATH = '/api/events';

export interface EventListFilters extends ListParams {
  type?: string;
}

/** Events are kept at least 30 days. */
export class Events {
  constructor(private readonly http: Transport) {}

  async get(id: number | string): Promise<Event> {
    return this.http.request({ method: 'GET', path: `${PATH}/${encodeURIComponent(id)}` }, eventSchema);
  }

  async list(filters: EventListFilters = {}): Promise<Page<Event>> {
    return listPage(this.http, PATH, { ...filters }, eventSchema);
  }

  listAll(filters: EventListFilters = {}): AsyncGenerator<Event, void, undefined> {
    return listAll(this.http, PATH, { ...filters }, eventSchema);
  }
}
