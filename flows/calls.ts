/**
 * Every side effect a flow may ask for. Each method becomes a named fromPromise actor of the same name
 * (see flows/actors.ts); the engine implements them over MomoClient and the access policy
 * (src/conversation/calls/flow-calls.ts), tests bind fakes. Amounts are decimal strings. Failures reject with
 * a ServiceFailure (flows/types.ts).
 */
export interface ContactCheck {
  /** A contact with this number already exists in the organization. */
  known: boolean;
  /** Registered for mobile money on its network (false: a payment would not be sent). */
  registered: boolean;
  /** Full name held by the network, when the network told it. */
  nameOnNetwork?: string;
  networkName?: string;
  firstName?: string;
  lastName?: string;
}

/**
 * Who is asking. What one user typed or asked for is kept for that user only: the names they gave a number,
 * the collection requests they made (and so the collections they see).
 */
export interface Asker {
  channel: string;
  userId: string;
}

/**
 * The service already holds a create under our Duplicate-Check-Key (it answered 409 `Duplicate Request
 * Detected!` to a repeat of our own call): it was made earlier, by a call whose answer we did not get. The
 * service's answer carries nothing of it, so there is no id, state or reference to show.
 */
export interface AlreadySubmitted {
  kind: 'alreadySubmitted';
  /** Our short ref of it ({@link ShortRef}), when the journal wrote the intent. */
  shortRef?: string;
}

/**
 * Our short ref of what a create made (`MC-7K2QX`, src/journal/short-ref.ts): drawn by the journal's intent before
 * the call, the one reference people read; the recording services (made-records.ts) give it with the result.
 */
export interface ShortRef {
  shortRef?: string;
}

/** The reference people read for a create's result: our short ref, else the service's own (`fallback`). */
export const shownRef = (result: ShortRef | undefined, fallback: string): string => result?.shortRef || fallback;

/** A screen's optional `Ref …` (`{hasRef, select, yes { Ref {ref}.} other {}}`): shown when the result has our short ref. */
export const refParams = (result: ShortRef | undefined): { hasRef: 'yes'; ref: string } | { hasRef: 'no' } =>
  result?.shortRef ? { hasRef: 'yes', ref: result.shortRef } : { hasRef: 'no' };

/** A create's result: what the service made, or {@link AlreadySubmitted}. */
export type Created<T> = T | AlreadySubmitted;

export const ALREADY_SUBMITTED: AlreadySubmitted = { kind: 'alreadySubmitted' };

export function isAlreadySubmitted(result: unknown): result is AlreadySubmitted {
  return typeof result === 'object' && result !== null && (result as { kind?: unknown }).kind === 'alreadySubmitted';
}

/**
 * The payment was not sent: it is held for an approver (maker/checker, src/approvals), who sends it later
 * under the same Duplicate-Check-Key, or rejects it. The maker is told the decision.
 */
export interface Held {
  kind: 'held';
  /** Our short ref of it ({@link ShortRef}), when the journal wrote the intent. */
  shortRef?: string;
}

export const HELD: Held = { kind: 'held' };

export function isHeld(result: unknown): result is Held {
  return typeof result === 'object' && result !== null && (result as { kind?: unknown }).kind === 'held';
}

/** One recipient of a bulk payout: number in `+` format, decimal amount, description for them. */
export interface PayoutRecipient {
  phonenumber: string;
  amount: string;
  description: string;
}

/**
 * A payment this user made a moment ago to the same payee, of the same amount and currency, as the journal
 * holds it (so also after a Redis loss erased the conversation that made it).
 */
export interface RecentPayment {
  /** Our ref of it (its Duplicate-Check-Key). */
  ref: string;
  /** Whole minutes since it was made (0: under a minute). */
  minutesAgo: number;
  /** Its state in the journal's words (`submitted`, `completed`, ...). */
  state: string;
  /** Its short ref, the one the person was told (absent from an answer stored before it was given). */
  shortRef?: string;
}

/**
 * Someone this user paid lately (mobile money, airtime or a bank account), newest first: listed first when they
 * pay, so paying them again takes no typing of number, names, account or currency. Never a PIN or a secret.
 */
export interface RecentPayee {
  kind: 'money' | 'airtime' | 'bank';
  /** Their number, `+` format. */
  phone: string;
  /**
   * The name the payment was made to, kept only when the network confirmed it (its check matched the names, or
   * its own name was chosen) and the name has not failed since (`nameChecked`); else the payee is listed by number.
   * A bank payee is listed by its account's name.
   */
  name?: string;
  /** The name was confirmed by the network; an entry without it (kept before this rule) is listed by number. */
  nameChecked?: true;
  /** The currency they were last paid in: proposed again when the role may pay in several. */
  currency?: string;
  /** A bank payee's account, as the last payment gave it. */
  bank?: RecentBank;
}

/** A bank account paid before: the bank (its id and name as listed), the account and the receipt's e-mail. */
export interface RecentBank {
  id: string;
  name: string;
  accountNumber: string;
  accountName: string;
  /** Absent when it was skipped (the organization's address was sent). */
  email?: string;
}

/** A bank as the pay flow lists it. */
export interface BankChoice {
  id: string;
  name: string;
}

export interface PaymentResult extends ShortRef {
  id: string;
  state: string;
}

export interface CollectionRequestResult extends ShortRef {
  id: string;
  status: string;
  mfscode?: string;
}

export interface CollectionSummary {
  id: string;
  amount: string;
  currency: string;
  phonenumber: string;
  status: string;
  reference: string;
  remoteTransactionId: string;
  paymentDate: string;
  /** The payment's time as people read it: in the `TZ` setting's zone, with its name ("2026-12-02 14:05 EAT"). */
  paymentTime?: string;
  senderName?: string;
}

export interface DataBundle {
  datacode: string;
  name: string;
  allowance: string;
  price: string;
  validity: string;
}

export interface PinBundle {
  amount: string;
  available: number;
  description: string;
  /**
   * The product's `product_code` (name validation and purchase need it) when the listing gives one: the
   * spec's element has none, the sandbox adds `product_code` (src/sandbox/vending-catalog.ts).
   */
  productCode?: string;
}

export interface Candidate {
  name: string;
  gsmNo: string;
}

export interface PurchaseResult extends ShortRef {
  reference: string;
  status: string;
  /** Pins bought, for exam pins. */
  pins?: string[];
}

/** A spend checked against the role's flows and limits: who, in which flow, how much. */
export interface Spend<C extends string = string> {
  channel: C;
  userId: string;
  flow: string;
  amount: string;
  currency: string;
}

export interface CheckSpend<C extends string = string> extends Spend<C> {
  /** A PIN will be asked to confirm: a locked one is told now (pin_locked), not after every other screen. */
  pin?: boolean;
}

export interface ReserveSpend<C extends string = string> extends Spend<C> {
  duplicateCheckKey: string;
  /** A bulk payout's largest recipient amount: the per-payment limit applies to it, the daily total to `amount`. */
  largest?: string;
}

export interface FlowCalls {
  /** Verifies the USSD PIN of the user; rejects pin_wrong (with attempts left in message) or pin_locked. */
  verifyPin(input: { channel: string; userId: string; pin: string }): Promise<void>;
  /**
   * Starts a change of the person's own PIN once they proved who they are: their old PIN (`via: 'pin'`;
   * rejects as verifyPin does) or, after a reset, the reset's one-time code (`via: 'code'`; rejects
   * code_wrong, code_expired, or pin_locked after too many wrong ones). Rejects not_allowed for someone
   * who cannot have a PIN of their own.
   */
  startPinChange(input: { channel: string; userId: string; via: 'pin' | 'code'; secret: string }): Promise<void>;
  /**
   * The new PIN, typed the first time, for the change under way: rejects pin_weak (message: the reason,
   * src/people/pin-rules.ts) or code_expired when the change is no longer under way.
   */
  draftPin(input: { channel: string; userId: string; pin: string }): Promise<void>;
  /**
   * The new PIN typed again: the same makes it the person's PIN; rejects pin_mismatch (type it twice again)
   * or code_expired.
   */
  savePin(input: { channel: string; userId: string; pin: string }): Promise<void>;
  /** A link code for the person (src/people/link.ts); rejects too_many_codes, or not_allowed. */
  makeLinkCode(input: { channel: string; userId: string }): Promise<string>;
  /**
   * The checks of reserveSpend made as soon as the amount is known, reserving nothing: the role may use the flow,
   * the amount is within the per-payment limit and what is left of today's. Rejects not_allowed, or
   * limit_exceeded with the figures (ServiceFailure.limit), or pin_locked when a PIN will be asked and is locked.
   */
  checkSpend(input: CheckSpend): Promise<void>;
  /**
   * Checks role and limits and reserves the amount in today's total, once per `duplicateCheckKey` (the key of
   * the payment or purchase it is for); rejects not_allowed / limit_exceeded.
   */
  reserveSpend(input: ReserveSpend): Promise<void>;

  /**
   * What this product already knows of a number (a local record kept from earlier verifications and
   * payments; no read is sent to the service, whose reads are limited to 30 a minute). `known` (names to use
   * without asking) only from what this user typed for the number; of what others learnt, only what the
   * network verified (registered, its name for the number).
   */
  lookupContact(input: { phonenumber: string } & Asker): Promise<ContactCheck>;
  /**
   * Instant verification: creates (or, for an existing number, returns) the contact with metadata sync=1,
   * which runs the network check synchronously. A write, not a read. Remembers the result for lookupContact:
   * what the network said for everyone; the names given, for this user only and only when the network's name
   * holds them (flows/input.ts namesWithin): a name the network refused is never used again without asking.
   */
  verifyContact(input: { phonenumber: string; firstName: string; lastName: string } & Asker): Promise<ContactCheck>;
  /**
   * Creates the payment; remembers the names given for the number, for the asker only, when the network's name
   * holds them (as verifyContact learnt it); a payment that later fails on the name forgets them again.
   * {@link Held} when the asker's role holds payments of this size for an approver: nothing was sent.
   */
  createPayment(
    input: Partial<Asker> & {
      duplicateCheckKey: string;
      paymentType: 'money' | 'airtime' | 'bank';
      phonenumber: string;
      amount: string;
      currency: string;
      description: string;
      firstName?: string;
      lastName?: string;
      /** `name`: the bank's name as listed, kept with the recent payees, never sent. */
      /** `email` absent: the person skipped it, and the services send the organization's (BANK_TRANSFER_EMAIL). */
      bank?: { bank: string; name?: string; accountNumber: string; accountName: string; email?: string };
      metadata: Record<string, string>;
      /**
       * A bulk payout (Slack `/momo payout`): one request paying each of these (`recipient_data`); `amount` is then
       * their total and `phonenumber` a label of them (`3 recipients`), for records and approvals only.
       */
      recipients?: PayoutRecipient[];
      /** Our grouping of this payment (a payout's id): kept in our journal as its parent, never sent to the service. */
      parentRef?: string;
      /** Who is paid as the summary named them: kept with the asker's recent payees and in our journal, never sent to the service. */
      payeeName?: string;
    },
  ): Promise<Created<PaymentResult> | Held>;
  /**
   * The people this user paid lately (at most {@link RECENT_PAYEES_MAX}, newest first), as kept by createPayment:
   * one read of the store when the pay flow starts. Empty when none are known.
   */
  recentPayees(input: Asker): Promise<RecentPayee[]>;
  /**
   * The banks a payment may go to, for a caller of `country` (ISO 3166 alpha-2, FlowInput.defaultCountry): those
   * of that country and those naming none (BANK_COUNTRY_FIELD, src/momo/assumptions.ts). No country: every bank.
   */
  listBanks(input: { country?: string }): Promise<BankChoice[]>;
  /**
   * The latest payment the asker made to this payee (number or bank account), of this amount and currency,
   * within the last few minutes, that was not refused: asked before a payment is confirmed, so a person paying
   * the same again (their conversation lost, or not) is asked whether they mean a second payment. Null when
   * there is none. Reads the journal, never the service.
   */
  recentPayment(input: Asker & { payee: string; amount: string; currency: string }): Promise<RecentPayment | null>;

  /** Creates the request and files it among the asker's requests (the collections they may see). */
  createCollectionRequest(
    input: Partial<Asker> & {
      duplicateCheckKey: string;
      phonenumber: string;
      amount: string;
      currency: string;
      reason: string;
      sendInstructions: boolean;
      metadata: Record<string, string>;
    },
  ): Promise<Created<CollectionRequestResult>>;

  /**
   * Claim rules of the spec: amount, transaction id and full phone number together. A collection that
   * matched another user's request is not shown (unless the role has `seeAllCollections`).
   */
  claimCollection(
    input: { amount: string; remoteTransactionId: string; phonenumber: string } & Asker,
  ): Promise<CollectionSummary[]>;
  /**
   * The latest collections this user may see: those matching requests they made, or every one when their
   * role has `seeAllCollections`.
   */
  latestCollections(input: { limit: number } & Asker): Promise<CollectionSummary[]>;

  listDataBundles(input: { network: string; accountNumber?: string }): Promise<DataBundle[]>;
  purchaseData(
    input: Partial<Asker> & {
      duplicateCheckKey: string;
      network: string;
      datacode: string;
      phonenumber: string;
      /** Spectranet only: the account the bundle is for (as given to listDataBundles). */
      accountNumber?: string;
      amount: string;
      metadata: Record<string, string>;
    },
  ): Promise<Created<PurchaseResult>>;

  listPinBundles(input: { serviceType: string }): Promise<PinBundle[]>;
  validateCandidate(input: { serviceType: string; productCode: string; accountNumber: string }): Promise<Candidate>;
  purchasePin(
    input: Partial<Asker> & {
      duplicateCheckKey: string;
      serviceType: string;
      productCode: string;
      accountNumber: string;
      gsmNo: string;
      amount: string;
      quantity: number;
      metadata: Record<string, string>;
    },
  ): Promise<Created<PurchaseResult>>;
}

export type CallName = keyof FlowCalls;

/** How many recent payees are kept and listed: three fit a USSD screen beside the kinds of payment. */
export const RECENT_PAYEES_MAX = 3;
