/**
 * The one typed client of the mobile-money service: import everything from here.
 *
 * ```ts
 * const momo = new MomoClient({ baseUrl, apiKey, version: 'v5' });
 * const payment = await momo.payments.create(
 *   { phonenumber: '+256772123456', amount: '1500', currency: 'UGX', description: 'Rent', metadata: { chat, ref } },
 *   { duplicateCheckKey: context.key }, // kept in flow context: a repeat after a crash is a 409, not a second payment
 * );
 * for await (const c of momo.collections.listAll({ status: 'successful' })) { ... }
 * ```
 * Errors: MomoError subclasses when the service answered no (status, body, requestId; status 0 when the
 * client refused before sending), ConnectionError when it could not be reached.
 */
export { MomoClient, type MomoClientOptions } from './client.js';
export {
  AuthenticationError,
  ConnectionError,
  DuplicateRequestError,
  MethodNotAllowedError,
  MomoError,
  NotAcceptableError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServiceError,
  UnsupportedMediaTypeError,
  ValidationError,
} from './errors.js';
export { isInternationalPhone, type Amount, type Metadata } from './params.js';
export type { CallRetry, MoneyCallOptions, WriteOptions } from './http.js';
export { MissingKeyError } from './http.js';
export type { ListParams, MoneyListFilters } from './pagination.js';
export type {
  Bank,
  Collection,
  CollectionRequest,
  Contact,
  DataBundle,
  DataPurchase,
  Event,
  NameValidation,
  Page,
  Payment,
  PinBundle,
  PinPurchase,
  RecipientEntry,
  Transaction,
  Webhook,
} from './schemas.js';
export type { ContactCreateParams, ContactListFilters, ContactUpdateParams } from './resources/contacts.js';
export type {
  PaymentCreateParams,
  PaymentListFilters,
  PaymentRecipient,
  NationalIdType,
} from './resources/payments.js';
export type { CollectionClaimParams, CollectionListFilters } from './resources/collections.js';
export type { CollectionRequestCreateParams, CollectionRequestListFilters } from './resources/collectionRequests.js';
export type { EventType, WebhookCreateParams, WebhookListFilters } from './resources/webhooks.js';
export type { EventListFilters } from './resources/events.js';
export type {
  DataBundleListParams,
  DataPurchaseParams,
  NameValidationParams,
  PinBundleListParams,
  PinPurchaseParams,
} from './resources/vending.js';
