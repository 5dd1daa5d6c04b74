import type { Transport, WriteOptions } from '../http.js';
import { listAll, listPage, type ListParams } from '../pagination.js';
import { webhookSchema, type Page, type Webhook } from '../schemas.js';

const PATH = '/api/webhooks';

/** The event types the service notifies. */
export type EventType =
  'payment.status.changed' | 'collection.received' | 'contact.created' | 'collectionrequest.status.changed';

export interface WebhookCreateParams {
  event: EventType;
  /** An https URL (the service rejects others). */
  target: string;
}

export interface WebhookListFilters extends ListParams {
  user?: number;
  event?: string;
}

/** Create and read only: deletion happens in the portal, or by answering a notification with 410. */
export class Webhooks {
  constructor(private readonly http: Transport) {}

  async create(params: WebhookCreateParams, options: WriteOptions = {}): Promise<Webhook> {
    return this.http.request({ method: 'POST', path: PATH, body: params, ...options }, webhookSchema);
  }

  async get(id: number | string): Promise<Webhook> {
    return this.http.request({ method: 'GET', path: `${PATH}/${encodeURIComponent(id)}` }, webhookSchema);
  }

  async list(filters: WebhookListFilters = {}): Promise<Page<Webhook>> {
    return listPage(this.http, PATH, { ...filters }, webhookSchema);
  }

  listAll(filters: WebhookListFilters = {}): AsyncGenerator<Webhook, void, undefined> {
    return listAll(this.http, PATH, { ...filters }, webhookSchema);
  }
}
