/**
 * The sandbox's records, kept in memory. Records hold decimals and epoch milliseconds; render.ts turns
 * them into the wire shapes of each version. Ids are per resource, counting from 1.
 */
import { Decimal } from 'decimal.js';

export const VERSIONS = ['v1', 'v2', 'v3', 'v4', 'v5'] as const;
export type Version = (typeof VERSIONS)[number];
export const LATEST_VERSION: Version = 'v5';

export const CURRENCIES = ['BXC', 'UGX', 'KES'] as const;
export type Currency = (typeof CURRENCIES)[number];

export interface WebhookAuth {
  username: string;
  password: string;
}

/** Organization options an operator sets in the web portal; the sandbox sets them through its controls. */
export interface OrganizationSettings {
  name: string;
  /** `Name match affects payment`: a name mismatch makes a payment fail. Default true. */
  nameMatchAffectsPayment: boolean;
  /** `Accept Collections By Default`: the answer when the verification URL gives none. Default true. */
  acceptCollectionsByDefault: boolean;
  /** Collection verification URL (http or https). Default none: collections are accepted. */
  verificationUrl: string | null;
  /** Basic auth credentials sent on webhook notifications. Default none. */
  webhookAuth: WebhookAuth | null;
  /**
   * The API key's user holds `Manage Users and Organization Settings`, which managing webhooks needs
   * (403 without it). Default true.
   */
  manageSettings: boolean;
  /** API version saved at the organization's first request (null before it). */
  version: Version | null;
  /**
   * Payment approval rules, as set in the web portal: a payment whose amount is above a rule's amount in
   * its currency waits in `approval_needed`, then `approval_requested`, for an approver. Default none.
   */
  approvalRules: ApprovalRule[];
}

/** One payment approval rule: payments in `currency` above `above` need an approver. */
export interface ApprovalRule {
  currency: Currency;
  /** Decimal string. */
  above: string;
}

export interface Organization extends OrganizationSettings {
  id: number;
  apiKey: string;
  vendingApiKey: string;
  /** The user all API keys of the organization act as. */
  userId: number;
}

export interface Account {
  id: number;
  organization: number;
  currency: Currency;
  balance: Decimal;
  label: string;
  status: 'active' | 'inactive';
  created: number;
  modified: number;
}

export interface Verification {
  phone_is_supported: 'yes' | 'no';
  phone_is_mm_registered: 'yes' | 'no';
  name_on_network: string;
  name_matches_network_status: 'checked' | 'not_checked';
  name_matches_network_score: number;
  network_name: string;
}

export interface Contact {
  id: number;
  organization: number;
  first_name: string;
  last_name: string;
  email: string | null;
  phone_number: string;
  type: string;
  status: 'active' | 'inactive';
  metadata: Record<string, unknown> | null;
  national_id: string | null;
  national_id_type: string | null;
  verification: Verification | null;
  created: number;
  modified: number;
}

/** The spec's `payment_state` values (per recipient). */
export const RECIPIENT_STATES = [
  'new',
  'processing',
  'pending_confirmation',
  'complete',
  'error',
  'paused',
  'parked',
  'paused_for_admin_action',
  'queued',
  'aborted',
] as const;
export type RecipientState = (typeof RECIPIENT_STATES)[number];

export interface Recipient {
  phonenumber: string;
  amount: Decimal;
  description: string;
  metadata: Record<string, unknown> | null;
  state: RecipientState;
  last_error: string | null;
  contact: number;
  /** The name the payer gave (or the contact's), checked against the network; '' skips the check. */
  name: string;
  /** A Kenyan recipient given with national_id and national_id_type: the network verifies by id. */
  verified_by_id: boolean;
}

/** The spec's payment states. */
export const PAYMENT_STATES = [
  'new',
  'validated',
  'approval_needed',
  'approval_requested',
  'approved',
  'rejected',
  'scheduled',
  'processed',
  'processed_with_errors',
  'cancelled',
] as const;
export type PaymentState = (typeof PAYMENT_STATES)[number];

/** Who decided, when and why: a rejection or a cancellation. */
export interface Decision {
  reason: string;
  time: number;
  /** The user who decided. */
  by: number;
}

export interface BankDetails {
  bank: number;
  account_number: string;
  account_name: string;
  email: string;
}

export interface Payment {
  id: number;
  organization: number;
  payment_type: 'money' | 'airtime';
  currency: Currency;
  account: number;
  description: string;
  recipients: Recipient[];
  /** The payment schedule all payments of one create call share (recipient entries' batch_id). */
  batch_id: number;
  start_date: number;
  metadata: Record<string, string> | null;
  state: PaymentState;
  last_error: string | null;
  rejected: Decision | null;
  cancelled: Decision | null;
  /** Why a recipient's transfer is paused (the `paused_reason` filter); null when none is. */
  paused_reason: string | null;
  remote_transaction_id: string | null;
  send_sms_message: boolean;
  charged_fee: Decimal | null;
  callback_url: string | null;
  bank: BankDetails | null;
  created: number;
  modified: number;
}

export interface Transaction {
  id: number;
  amount: Decimal;
  currency: Currency;
  description: string;
  created: number;
  account: number;
}

/** The spec's collection statuses, and those its status filter lists besides. */
export const COLLECTION_STATUSES = ['pending', 'successful', 'failed', 'cashed_out', 'reversed'] as const;
export type CollectionStatus = (typeof COLLECTION_STATUSES)[number];

export interface Collection {
  id: number;
  /** null until matched to an organization (a claim can assign it). */
  organization: number | null;
  amount: Decimal;
  currency: Currency;
  phonenumber: string;
  reference: string;
  remote_transaction_id: string;
  status: CollectionStatus;
  contact: number | null;
  collection_request: number | null;
  transaction: Transaction | null;
  payment_date: number;
  created: number;
  modified: number;
}

/** The spec's collection request statuses. */
export const REQUEST_STATUSES = [
  'new',
  'pending',
  'successful',
  'instructions_sent',
  'processing_started',
  'failed',
  'expired',
  'reversed',
] as const;
export type CollectionRequestStatus = (typeof REQUEST_STATUSES)[number];

export interface CollectionRequest {
  id: number;
  organization: number;
  amount: Decimal;
  currency: Currency;
  account: number;
  phonenumber: string;
  mfscode: string;
  contact: number;
  reason: string;
  metadata: Record<string, unknown>;
  collection: number | null;
  success_message: string | null;
  instructions: string | null;
  send_instructions: boolean;
  status: CollectionRequestStatus;
  error_message: string;
  expiry_date: number;
  start_date: number | null;
  retry_interval_minutes: number | null;
  /** Retries allowed (0 disables them); they need retry_interval_minutes. */
  max_attempts: number;
  /** Retries made so far. */
  retries: number;
  /** The first request of a recurring series this one repeats (null: not an occurrence). */
  series: number | null;
  /** How long each attempt stays open (expiry_date minus its start), for retries. */
  open_ms: number;
  subscription_settings: string | null;
  created: number;
  modified: number;
}

export const EVENT_TYPES = [
  'payment.status.changed',
  'collection.received',
  'contact.created',
  'collectionrequest.status.changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface Webhook {
  id: number;
  organization: number;
  user: number;
  event: EventType;
  target: string;
  created: number;
  updated: number;
}

export interface SandboxEvent {
  id: number;
  organization: number;
  type: EventType;
  /** The triggering object as rendered at the organization's version when the event occurred. */
  data: unknown;
  created: number;
}

/** An SMS the sandbox would have sent (payment descriptions, collection request instructions). */
export interface Sms {
  to: string;
  text: string;
  at: string;
}

type Kind =
  'contact' | 'payment' | 'batch' | 'collection' | 'request' | 'webhook' | 'event' | 'transaction' | 'org' | 'account';

export class SandboxState {
  readonly organizations = new Map<number, Organization>();
  readonly accounts = new Map<number, Account>();
  readonly contacts = new Map<number, Contact>();
  readonly payments = new Map<number, Payment>();
  readonly collections = new Map<number, Collection>();
  readonly requests = new Map<number, CollectionRequest>();
  readonly webhooks = new Map<number, Webhook>();
  readonly events = new Map<number, SandboxEvent>();
  readonly sms: Sms[] = [];
  private readonly counters = new Map<Kind, number>();

  nextId(kind: Kind): number {
    const id = (this.counters.get(kind) ?? 0) + 1;
    this.counters.set(kind, id);
    return id;
  }

  /** Adds an organization with funded BXC, UGX and KES accounts. */
  addOrganization(input: { name: string; apiKey: string; vendingApiKey: string; now: number }): Organization {
    const org: Organization = {
      id: this.nextId('org'),
      name: input.name,
      apiKey: input.apiKey,
      vendingApiKey: input.vendingApiKey,
      userId: 0,
      nameMatchAffectsPayment: true,
      acceptCollectionsByDefault: true,
      verificationUrl: null,
      webhookAuth: null,
      manageSettings: true,
      version: null,
      approvalRules: [],
    };
    org.userId = org.id;
    this.organizations.set(org.id, org);
    for (const [currency, balance] of [
      ['BXC', '1000000000'],
      ['UGX', '50000000'],
      ['KES', '1000000'],
    ] as const) {
      const id = this.nextId('account');
      this.accounts.set(id, {
        id,
        organization: org.id,
        currency,
        balance: new Decimal(balance),
        label: `${currency} wallet`,
        status: 'active',
        created: input.now,
        modified: input.now,
      });
    }
    return org;
  }

  organizationByKey(apiKey: string): Organization | undefined {
    return [...this.organizations.values()].find((o) => o.apiKey === apiKey);
  }

  organizationByVendingKey(key: string): Organization | undefined {
    return [...this.organizations.values()].find((o) => o.vendingApiKey === key);
  }

  /** The oldest active account of the organization in this currency. */
  accountFor(organization: number, currency: Currency): Account | undefined {
    return [...this.accounts.values()]
      .filter((a) => a.organization === organization && a.currency === currency && a.status === 'active')
      .sort((a, b) => a.created - b.created || a.id - b.id)[0];
  }

  contactByPhone(organization: number, phone: string): Contact | undefined {
    return [...this.contacts.values()].find((c) => c.organization === organization && c.phone_number === phone);
  }
}
