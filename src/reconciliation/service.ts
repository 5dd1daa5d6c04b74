/**
 * The service's side of a reconciliation: its payments, collection requests and collections created in a
 * period, paged through the client (so every page is one read taken from the shared read budget,
 * src/ops/read-budget.ts: 30 a minute for every process of the product), and one record by id.
 *
 * Pages are as large as the service allows (MAX_LIST_LIMIT, src/momo/assumptions.ts) and ordered by id
 * ascending, so a record created while we page lands on a later page instead of shifting one already read
 * (a record seen twice is one item: match.ts).
 */
import { NotFoundError, type MomoClient } from '../momo/index.js';
import { ALL_AT_ONCE } from '../momo/pagination.js';
import { noticeOfRead, type Notice } from '../notifications/events.js';
import type { Theirs, TheirKind } from './match.js';

/** A period as the list filters take it: `YYYY-MM-DD HH:MM` (UTC), both ends included by the service. */
export interface ListPeriod {
  createdAfter: string;
  createdBefore: string;
  /** Only what the service changed since (`modified_after`, included): the nightly run's records changed since its last look. */
  modifiedAfter?: string;
}

export interface ServiceSide {
  /** Every record of `kind` created in the period (and changed since, if asked), a page (one budgeted read) at a time. */
  list(kind: TheirKind, period: ListPeriod): AsyncIterable<Theirs>;
  /** One payment or request by the service's id (one budgeted read); null when the service has none. */
  get(kind: 'payment' | 'request', id: string): Promise<Theirs | null>;
}

/** A notice (the parsed object the service shows) as matching compares it. */
export function theirsOf(notice: Notice): Theirs {
  return {
    kind: notice.kind,
    id: notice.id,
    ref: notice.ref,
    // A collection's own status (successful, failed, ...), not the notice's `received`.
    state:
      notice.kind === 'collection'
        ? (notice.status ?? '')
        : notice.state.startsWith('recipient.')
          ? 'approved'
          : notice.state,
    amount: notice.amount,
    currency: notice.currency,
    phone: notice.phone,
    ...(notice.requestId ? { requestId: notice.requestId } : {}),
  };
}

export function serviceSide(client: MomoClient): ServiceSide {
  return {
    async *list(kind, period) {
      const filters = {
        created_after: period.createdAfter,
        created_before: period.createdBefore,
        ...(period.modifiedAfter ? { modified_after: period.modifiedAfter } : {}),
        limit: ALL_AT_ONCE,
        ordering: 'id',
      };
      const records: AsyncIterable<unknown> =
        kind === 'payment'
          ? client.payments.listAll(filters)
          : kind === 'request'
            ? client.collectionRequests.listAll(filters)
            : client.collections.listAll(filters);
      for await (const data of records) {
        const notice = noticeOfRead(kind, data);
        if (notice) yield theirsOf(notice);
      }
    },

    async get(kind, id) {
      try {
        const data = kind === 'payment' ? await client.payments.get(id) : await client.collectionRequests.get(id);
        const notice = noticeOfRead(kind, data);
        return notice ? theirsOf(notice) : null;
      } catch (error) {
        if (error instanceof NotFoundError) return null;
        throw error;
      }
    },
  };
}
