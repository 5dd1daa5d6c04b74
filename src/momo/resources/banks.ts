import type { Transport } from '../http.js';
import { listPage, type ListParams } from '../pagination.js';
import { bankSchema, type Bank, type Page } from '../schemas.js';

/**
 * GET /api/banks, the ids a bank payment's `bank` takes. Its shape is not in the spec: we read the list
 * envelope of `{ id, name, code }` and accept a bare list too (see bankSchema).
 */
export class Banks {
  constructor(private readonly http: Transport) {}

  async list(params: ListParams = {}): Promise<Page<Bank>> {
    return listPage(this.http, '/api/banks', { ...params }, bankSchema);
  }
}
