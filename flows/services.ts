/**
 * Every side effect a flow may ask for. Each method becomes a named fromPromise actor of the same name
 * (see flows/actors.ts); the engine implements them over MomoClient and the access policy
 * (src/conversation/services.ts), tests bind fakes. Amounts are decimal strings. Failures reject with
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

export interface PaymentResult {
  id: string;
  state: string;
}

export interface CollectionRequestResult {
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

export interface PurchaseResult {
  reference: string;
  status: string;
  /** Pins bought, for exam pins. */
  pins?: string[];
}

export interface FlowServices {
  /** Verifies the USSD PIN of the user; rejects pin_wrong (with attempts left in message) or pin_locked. */
  verifyPin(input: { channel: string; userId: string; pin: string }): Promise<void>;
  /** Checks role and limits and reserves the amount in today's total; rejects not_allowed / limit_exceeded. */
  reserveSpend(input: { channel: string; userId: string; flow: string; amount: string; currency: string }): Promise<void>;

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
   * the names given for this user only, what the network said for everyone.
   */
  verifyContact(input: { phonenumber: string; firstName: string; lastName: string } & Asker): Promise<ContactCheck>;
  /** Creates the payment; remembers the names given for the number, for the asker only (none: not kept). */
  createPayment(input: Partial<Asker> & {
    duplicateCheckKey: string;
    paymentType: 'money' | 'airtime' | 'bank';
    phonenumber: string;
    amount: string;
    currency: string;
    description: string;
    firstName?: string;
    lastName?: string;
    bank?: { bank: string; accountNumber: string; accountName: string; email: string };
    metadata: Record<string, string>;
  }): Promise<PaymentResult>;
  listBanks(input: Record<string, never>): Promise<Array<{ id: string; name: string }>>;

  /** Creates the request and files it among the asker's requests (the collections they may see). */
  createCollectionRequest(input: Partial<Asker> & {
    duplicateCheckKey: string;
    phonenumber: string;
    amount: string;
    currency: string;
    reason: string;
    sendInstructions: boolean;
    metadata: Record<string, string>;
  }): Promise<CollectionRequestResult>;

  /**
   * Claim rules of the spec: amount, transaction id and full phone number together. A collection that
   * matched another user's request is not shown (unless the role has `seeAllCollections`).
   */
  claimCollection(input: { amount: string; remoteTransactionId: string; phonenumber: string } & Asker): Promise<CollectionSummary[]>;
  /**
   * The latest collections this user may see: those matching requests they made, or every one when their
   * role has `seeAllCollections`.
   */
  latestCollections(input: { limit: number } & Asker): Promise<CollectionSummary[]>;

  listDataBundles(input: { network: string; accountNumber?: string }): Promise<DataBundle[]>;
  purchaseData(input: {
    duplicateCheckKey: string;
    network: string;
    datacode: string;
    phonenumber: string;
    /** Spectranet only: the account the bundle is for (as given to listDataBundles). */
    accountNumber?: string;
    amount: string;
    metadata: Record<string, string>;
  }): Promise<PurchaseResult>;

  listPinBundles(input: { serviceType: string }): Promise<PinBundle[]>;
  validateCandidate(input: { serviceType: string; productCode: string; accountNumber: string }): Promise<Candidate>;
  purchasePin(input: {
    duplicateCheckKey: string;
    serviceType: string;
    productCode: string;
    accountNumber: string;
    gsmNo: string;
    amount: string;
    quantity: number;
    metadata: Record<string, string>;
  }): Promise<PurchaseResult>;
}

export type ServiceName = keyof FlowServices;
