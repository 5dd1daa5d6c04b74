/**
 * Records -> wire shapes, per API version. Timestamps are `YYYY-MM-DDTHH:MM:SSZ`; amounts are decimal
 * strings with two places. Version-dependent shapes (spec, Versioning 4):
 * - payment `phone_nos`: recipient entries from v5, plain phone numbers before; `callback_url` below v5 only;
 * - collection `collection_request`: the expanded object from v3, its id before;
 * - collection `transaction`: from v4.
 */
import { Decimal } from 'decimal.js';
import type {
  Account,
  Collection,
  CollectionRequest,
  Contact,
  Payment,
  SandboxEvent,
  SandboxState,
  Transaction,
  Version,
  Webhook,
} from './state.js';

export const timestamp = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
export const money = (d: Decimal): string => d.toFixed(2);
const versionNumber = (v: Version): number => Number(v.slice(1));

export type Wire = Record<string, unknown>;

export class Renderer {
  constructor(private readonly state: SandboxState) {}

  /** The fields every record ends with: timestamps, and the organization's user as author and updater. */
  private stamps(r: { organization: number | null; created: number; modified: number }) {
    const user = r.organization === null ? undefined : this.state.organizations.get(r.organization)?.userId;
    return {
      created: timestamp(r.created),
      modified: timestamp(r.modified),
      author: user ?? null,
      updated_by: user === undefined ? null : String(user),
    };
  }

  contact(c: Contact): Wire {
    return {
      id: c.id,
      organization: c.organization,
      first_name: c.first_name,
      last_name: c.last_name,
      email: c.email,
      phone_number: c.phone_number,
      type: c.type,
      status: c.status,
      metadata: c.metadata,
      national_id: c.national_id,
      national_id_type: c.national_id_type,
      ...(c.verification ?? {}),
      ...this.stamps(c),
    };
  }

  payment(p: Payment, version: Version): Wire {
    const v5 = versionNumber(version) >= 5;
    return {
      id: p.id,
      organization: p.organization,
      payment_type: p.payment_type,
      amount: money(Decimal.sum(...p.recipients.map((r) => r.amount))),
      currency: p.currency,
      account: p.account,
      description: p.description,
      phone_nos: v5
        ? p.recipients.map((r) => ({
            phonenumber: r.phonenumber,
            amount: money(r.amount),
            description: r.description,
            metadata: r.metadata,
            state: r.state,
            last_error: r.last_error,
            contact: String(r.contact),
            batch_id: p.batch_id,
            payment_id: p.id,
          }))
        : p.recipients.map((r) => r.phonenumber),
      ...(v5 ? {} : { callback_url: p.callback_url }),
      ...(p.bank ?? {}),
      start_date: timestamp(p.start_date),
      metadata: p.metadata,
      state: p.state,
      last_error: p.last_error,
      rejected_reason: p.rejected?.reason ?? null,
      rejected_time: p.rejected ? timestamp(p.rejected.time) : null,
      rejected_by: p.rejected?.by ?? null,
      cancelled_reason: p.cancelled?.reason ?? null,
      cancelled_time: p.cancelled ? timestamp(p.cancelled.time) : null,
      cancelled_by: p.cancelled?.by ?? null,
      paused_reason: p.paused_reason,
      remote_transaction_id: p.remote_transaction_id,
      send_sms_message: p.send_sms_message,
      charged_fee: p.charged_fee ? money(p.charged_fee) : null,
      transactions: [],
      ...this.stamps(p),
    };
  }

  collectionRequest(r: CollectionRequest): Wire {
    const contact = this.state.contacts.get(r.contact);
    return {
      id: r.id,
      organization: r.organization,
      amount: money(r.amount),
      currency: r.currency,
      account: r.account,
      phonenumber: r.phonenumber,
      mfscode: r.mfscode,
      contact: contact ? this.contact(contact) : null,
      reason: r.reason,
      metadata: r.metadata,
      collection: r.collection,
      success_message: r.success_message,
      instructions: r.instructions,
      send_instructions: r.send_instructions,
      status: r.status,
      error_message: r.error_message,
      expiry_date: timestamp(r.expiry_date),
      start_date: r.start_date === null ? null : timestamp(r.start_date),
      retry_interval_minutes: r.retry_interval_minutes,
      max_attempts: r.max_attempts,
      subscription_settings: r.subscription_settings,
      ...this.stamps(r),
    };
  }

  collection(c: Collection, version: Version): Wire {
    const n = versionNumber(version);
    const contact = c.contact === null ? undefined : this.state.contacts.get(c.contact);
    const request = c.collection_request === null ? undefined : this.state.requests.get(c.collection_request);
    return {
      id: c.id,
      remote_transaction_id: c.remote_transaction_id,
      organization: c.organization,
      amount: money(c.amount),
      currency: c.currency,
      phonenumber: c.phonenumber,
      payment_date: timestamp(c.payment_date),
      reference: c.reference,
      status: c.status,
      contact: contact ? this.contact(contact) : null,
      collection_request: n >= 3 ? (request ? this.collectionRequest(request) : null) : c.collection_request,
      ...(n >= 4 ? { transaction: c.transaction ? this.transaction(c.transaction) : null } : {}),
      ...this.stamps(c),
    };
  }

  transaction(t: Transaction): Wire {
    const account = this.state.accounts.get(t.account);
    return {
      id: t.id,
      amount: money(t.amount),
      currency: t.currency,
      description: t.description,
      created: timestamp(t.created),
      type: 'mobile_collection',
      fee_transaction: null,
      account: account ? this.account(account) : null,
    };
  }

  account(a: Account): Wire {
    return {
      id: a.id,
      organization: a.organization,
      status: a.status,
      label: a.label,
      description: a.label,
      currency: a.currency,
      balance: money(a.balance),
      low_balance_threshold: null,
      low_balance_notification_last_send_time: null,
      ...this.stamps(a),
    };
  }

  webhook(w: Webhook): Wire {
    return {
      id: w.id,
      user: w.user,
      event: w.event,
      target: w.target,
      created: timestamp(w.created),
      updated: timestamp(w.updated),
    };
  }

  event(e: SandboxEvent): Wire {
    return {
      id: e.id,
      organization: e.organization,
      type: e.type,
      data: e.data,
      ...this.stamps({ ...e, modified: e.created }),
    };
  }
}
