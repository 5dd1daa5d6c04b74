/** The one typed client of the mobile-money service: import everything from here. */
export { MomoClient, type MomoClientOptions } from './client.js';
export {
  AuthenticationError,
  ConnectionError,
  DuplicateRequestError,
  MomoError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServiceError,
  ValidationError,
} from './errors.js';
export { isInternationalPhone, type Amount, type Metadata } from './params.js';
export type { WriteOptions } from './http.js';
export type { ListParams } from './pagination.js';
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
export type { PaymentCreateParams, PaymentListFilters, PaymentRecipient, NationalIdType } from './resources/payments.js';
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
