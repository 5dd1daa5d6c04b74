/**
 * The reads the notifications layer sends the service, each through the client and so through the read
 * budget (src/ops/read-budget.ts, 30 a minute for all processes): a final state confirmed before it is told
 * when notifications carry no credentials, and the follow-up of an outcome that never came by webhook.
 * Each answers the notice the object read says (the same object a notification carries as `data`).
 */
import type { Made } from '../conversation/calls/made-records.js';
import { NotFoundError, type MomoClient } from '../momo/index.js';
import { noticeOfRead, type Notice, type NoticeKind } from './events.js';

export interface ServiceReads {
  /** One GET of the payment, collection request or collection; null when the service has no such object. */
  get(kind: NoticeKind, id: string): Promise<Notice | null>;
  /**
   * Our payment or request whose create's answer was lost, found by a list read filtered as the contract
   * allows (number, amount, currency, created after our intent) and matched by its `metadata.ref`; a payout
   * request by its first recipient's number, currency and time.
   */
  find(made: Made): Promise<Notice | null>;
}

/** How far before our intent the service's `created` may be: clocks differ, and the filter has minutes only. */
const CLOCK_MARGIN_MS = 5 * 60_000;
/** Records per page of the list read: one page holds every match but in a storm of identical payments. */
const PAGE = 100;

/** `YYYY-MM-DD HH:MM` in UTC, the contract's filter format. */
const filterDate = (ms: number): string => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

export function serviceReads(client: MomoClient): ServiceReads {
  return {
    async get(kind, id) {
      try {
        const data =
          kind === 'payment'
            ? await client.payments.get(id)
            : kind === 'request'
              ? await client.collectionRequests.get(id)
              : await client.collections.get(id);
        return noticeOfRead(kind, data);
      } catch (error) {
        if (error instanceof NotFoundError) return null;
        throw error;
      }
    },

    async find(made) {
      if (made.kind === 'purchase') return null;
      // No list filter takes our ref (the Duplicate-Check-Key, our `metadata.ref`): the filters only narrow
      // the list, the ref picks ours. A payout request's payee counts its recipients, so one recipient's number
      // narrows it instead; its amount is left out, as the contract does not say whether a multi-recipient
      // payment's `amount` filter matches its total or each recipient's amount.
      const narrowing =
        made.recipient === undefined
          ? { phonenumber: made.payee, amount: made.amount }
          : { phonenumber: made.recipient };
      const filters = {
        ...narrowing,
        currency: made.currency,
        created_after: filterDate(made.created - CLOCK_MARGIN_MS),
        limit: PAGE,
      };
      const kind = made.kind === 'payment' ? 'payment' : 'request';
      const list = kind === 'payment' ? client.payments.listAll(filters) : client.collectionRequests.listAll(filters);
      for await (const data of list) {
        const notice = noticeOfRead(kind, data);
        if (notice?.ref === made.ref) return notice;
      }
      return null;
    },
  };
}
