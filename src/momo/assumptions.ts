/**
 * What the service's contract (shared/spec/mobile-money-api.md) leaves "not shown", and what we chose, in
 * one place: the client, the product and the sandbox all read these. Each constant quotes the contract's
 * words beside our choice. docs/sandbox.md "What we assumed" lists them with the sandbox's own choices; an
 * integrator holding the real documents changes the value here.
 */

/**
 * "The endpoint listing products, and the purchase endpoints of pins and data bundles: not shown."
 * Our choice: the purchases sit beside the listings under the vending URL. The shown paths are here too,
 * so the vending group's paths are all in one list. Bodies: see PinPurchaseParams and DataPurchaseParams
 * (src/momo/resources/vending.ts), which the sandbox implements the same.
 */
export const VENDING_PATHS = {
  nameValidation: '/services/namefinder/query',
  dataBundles: '/services/databundle/bundles',
  pinBundles: '/services/epin/bundles',
  /** Assumed. */
  pinPurchase: '/services/epin/purchase',
  /** Assumed. */
  dataPurchase: '/services/databundle/purchase',
} as const;

/**
 * "product_code (string, required, taken from the list of products of the service)" and "The endpoint
 * listing products: not shown." Our choice: each pin bundle of a service carries its product code in this
 * added field; the pin flow sends it (or the bundle's description when a listing has none).
 */
export const PIN_PRODUCT_CODE_FIELD = 'product_code';

/**
 * "Duplicate-Check-Key: a key expires after 24 hours" says nothing of a request that was refused. Our
 * choice: a key whose request was answered with an error (not 2xx) is not kept, so the same request,
 * corrected, may be sent again under it. The product does not rely on it: a refused payment or request
 * is started again with a new key.
 */
export const DUPLICATE_KEY_KEPT_AFTER_ERROR = false;

/**
 * "Outgoing notifications can carry HTTP basic authentication" is said of notifications; for the
 * collection verification request the scheme is not shown. Our choice: the verification request carries
 * the same `Authorization: Basic` as the organization's notifications, so the product checks both routes
 * with MOMO_WEBHOOK_USER / MOMO_WEBHOOK_PASSWORD.
 */
export const VERIFICATION_SENDS_WEBHOOK_AUTH = true;

/**
 * "Maximum value of `limit`: not shown" and "Samples show the filtered response as a bare list of
 * collections" (no `next` to follow). Our choice: the service honours a `limit` up to this; the client
 * pages a bare list with it, asking the next offset until a page comes back shorter, and the sandbox
 * caps `limit` at it. The reconciliation's time rests on it (docs/reconciliation.md): every page is one of the
 * 30 reads a minute, so a month of 10,000 payments is 100 reads at this size and 1,000 at the default 10.
 */
export const MAX_LIST_LIMIT = 100;

/**
 * "reason: keep below 20 characters because networks may truncate"; the longest accepted is not shown.
 * Our choice: 255 characters (a common text column), so the request flow accepts up to this and warns
 * from REQUEST_REASON_SAFE_LENGTH + 1 on.
 */
export const REQUEST_REASON_MAX_LENGTH = 255;
/** "keep below 20 characters": the longest reason no network cuts. */
export const REQUEST_REASON_SAFE_LENGTH = 19;

/**
 * "retry_interval_minutes: the create parameter list says it cannot be below 10, the object description
 * says not below 30 and at most five retries". Our choice: the create parameter list's 10 (that is what
 * validation is documented by).
 */
export const RETRY_INTERVAL_MIN_MINUTES = 10;

/**
 * "max_attempts: default 3, maximum 3; 0 disables configurable retries". Our reading: it counts retries
 * after the first attempt (0 = none), so at most 3 retries, within the object description's "at most
 * five".
 */
export const MAX_REQUEST_ATTEMPTS = 3;

/**
 * "409: duplicate request (same Duplicate-Check-Key)" and "the `detail` message contains the text `Duplicate
 * Request Detected!`". What the service made under the key: not shown; a read by key: not shown.
 *
 * Our choice: a 409 on our own key means the service holds the key, NOT that it made the payment (or request,
 * or purchase): a request cut off before its body arrived holds the key and makes nothing. The person is told
 * "we are checking whether it went through" (never "already submitted") until the service shows it. How it is
 * looked up by our key: the contract lists payments and requests filtered by number, amount, currency and
 * creation time, each carrying the `metadata.ref` we sent (our ref = the key), so the follow-up reads that list
 * and matches our ref ({@link ALREADY_SUBMITTED_BELIEVED_FOR}); a purchase cannot be read at all (logged for the
 * operator).
 */
export const DUPLICATE_KEY_CONFLICT = 'holds-the-key-not-the-payment' as const;

/**
 * "409: duplicate request (same Duplicate-Check-Key)" and "Duplicate-Check-Key: a key expires after 24 hours"
 * say the key was seen, not that a payment (or request) was made: a service that holds the key from the moment
 * a request arrives (as the sandbox does) keeps it for a request cut off before its body came (a process killed
 * mid-request), and makes nothing. The contract shows no read by key, and its lists filter nothing by our
 * `metadata.ref`; it promises no list consistency either, and says nothing of how long a create may take.
 *
 * Our choice: "already submitted" is believed while the service can be believed to hold it. Its follow-up
 * (src/notifications/follow-up.ts) reads the list (filtered by number, amount, currency and time, matched by our
 * ref) 3 minutes after the intent and again at 8 minutes; a payment neither read shows was never made: journalled
 * `refused`, the person told plainly that nothing was sent, the spend reservation given back. We rely on three
 * things: a payment the service made is listed within minutes of its create (the lists are what the contract
 * gives to find it); no attempt under our key is still in flight by then (the client gives up within its 30 s
 * call budget, and the run that sent it has ended: a new payment gets a new key, so the key is never sent
 * again); and should the service show it later all the same, the reconciliation finds it (our `refused`
 * against its state), journals the service's state and tells the person the correction.
 */
export const ALREADY_SUBMITTED_BELIEVED_FOR = { firstReadSeconds: 180, secondReadSeconds: 480 } as const;

/**
 * "The shape of the banks list endpoint: not shown." Our choice: each bank carries the country it serves in
 * this field (ISO 3166-1 alpha-2, `UG`, `KE`), as the sandbox's list does; a bank that names none is offered
 * everywhere. The pay flow offers a person the banks of their number's country (Ugandan banks to a `+256`
 * number); a chat without a number (Telegram, Slack) is offered every bank.
 */
export const BANK_COUNTRY_FIELD = 'country';

/**
 * "A name-match check compares the supplied name with the network's records; when the organization setting
 * `Name match affects payment` is on, a mismatch makes the payment fail" (Payments rule 3): how the failure reads
 * is not shown. Our choice: a failed payment whose `last_error` speaks of the name failed on the name (the
 * sandbox's: `The name "…" does not match the name on the network (…)`). The names its payer gave are then
 * forgotten, so the next payment to that number asks and checks them again (src/conversation/calls/
 * flow-calls.ts forgetFailedName).
 */
export const NAME_FAILURE = /\bnames?\b/i;

/**
 * Bank payments: "`email` (string, required, e-mail associated with the bank account)" says what the address
 * is, not what the service does with it. Our choice: it is where the bank's receipt of the transfer goes, and
 * the service takes any valid address there, so the organization's own (BANK_TRANSFER_EMAIL) may stand in for
 * an account holder's the payer does not know: the pay flow then offers to skip the email. An integrator who
 * learns the address must be the account holder's sets this false: the email is then always asked.
 */
export const BANK_EMAIL_MAY_BE_ORGANIZATIONS = true;
