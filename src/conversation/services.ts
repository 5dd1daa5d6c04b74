/**
 * FlowServices over the service's client and the access policy: what the flows' named actors run.
 * Every failure reaches the flow as a ServiceFailure (one mapping, {@link toFailure}). A create refused as
 * a duplicate of our own Duplicate-Check-Key was already accepted: it resolves as AlreadySubmitted. A create
 * the service refused gives its spend reservation back. Retries are the client's alone (one decision, one
 * time budget per call: {@link MONEY_CALL_RETRY} for creates). No method polls the service; the only reads
 * are the ones a person asked for (reads are limited to 30 a minute).
 */
import { ALREADY_SUBMITTED, type CollectionSummary, type ContactCheck, type Created, type FlowServices, type PurchaseResult } from '../../flows/services.js';
import type { ServiceFailure } from '../../flows/types.js';
import { isServiceFailure } from '../../flows/types.js';
import { maskPhone, type Logger } from '../log.js';
import {
  AuthenticationError,
  ConnectionError,
  DuplicateRequestError,
  MomoError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServiceError,
  ValidationError,
  type CallRetry,
  type Collection,
  type Contact,
  type MomoClient,
} from '../momo/index.js';
import { keys } from './keys.js';
import { giveBackSpend, type AccessPolicy } from './policy.js';
import { OPEN_REQUEST_TTL_SECONDS } from './records.js';
import type { Channel, SessionStore } from './types.js';

export interface ServicesOptions {
  client: MomoClient;
  policy: AccessPolicy;
  store: SessionStore;
  logger: Logger;
  /** Clock in milliseconds (the bank list cache). Default Date.now. */
  now?: () => number;
  /** The client's retries of a create under our Duplicate-Check-Key. Default {@link MONEY_CALL_RETRY}. */
  moneyCallRetry?: CallRetry;
}

/**
 * How long a payment, collection request or purchase is asked again under its Duplicate-Check-Key while its
 * outcome is unknown (no answer, 5xx, 429): about half a minute, up to 10 retries (the client's backoff, 0.3 s
 * doubling to 5 s). The key makes asking again safe (a 409 then means it was made), so a service blip of a
 * few seconds does not leave a confirmed payment unmade while its user waits for the outcome; the chat was
 * answered long before (the engine's deadline) and gets the outcome when it comes.
 */
export const MONEY_CALL_RETRY: CallRetry = { maxRetries: 10, budgetMs: 30_000 };

/** What we learnt of a number is kept 30 days: names and networks rarely change. */
const CONTACT_TTL_SECONDS = 30 * 24 * 3600;
/** The bank list is reused for an hour: it rarely changes and reads are limited. */
const BANKS_TTL_MS = 3600 * 1000;

/** The one mapping from a thrown error to the ServiceFailure a flow sees. */
export function toFailure(error: unknown): ServiceFailure {
  if (isServiceFailure(error) && !(error instanceof Error)) return error;
  if (error instanceof ValidationError) return { code: 'validation', fields: error.fields, message: error.message };
  if (error instanceof DuplicateRequestError) return { code: 'duplicate' };
  if (error instanceof RateLimitError) return { code: 'rate_limited' };
  if (error instanceof AuthenticationError) return { code: 'unauthenticated' };
  if (error instanceof PermissionError) return { code: 'forbidden' };
  if (error instanceof NotFoundError) return { code: 'not_found' };
  if (error instanceof ServiceError) return { code: 'service' };
  if (error instanceof ConnectionError) return { code: 'connection' };
  return { code: 'unknown', message: error instanceof Error ? error.message : String(error) };
}

const notNo = (value: string | null | undefined): boolean => !/^(no|false|0)$/i.test(value ?? '');

function contactCheck(contact: Contact): ContactCheck {
  return {
    known: true,
    registered: notNo(contact.phone_is_mm_registered) && notNo(contact.phone_is_supported),
    ...(contact.name_on_network ? { nameOnNetwork: contact.name_on_network } : {}),
    ...(contact.network_name ? { networkName: contact.network_name } : {}),
    ...(contact.first_name ? { firstName: contact.first_name } : {}),
    ...(contact.last_name ? { lastName: contact.last_name } : {}),
  };
}

function summary(c: Collection): CollectionSummary {
  const contact = typeof c.contact === 'object' && c.contact !== null ? c.contact : undefined;
  const senderName = [contact?.first_name, contact?.last_name].filter(Boolean).join(' ') || contact?.name_on_network || undefined;
  return {
    id: String(c.id),
    amount: c.amount,
    currency: String(c.currency),
    phonenumber: c.phonenumber,
    status: c.status,
    reference: c.reference ?? '',
    remoteTransactionId: c.remote_transaction_id ?? '',
    paymentDate: c.payment_date ?? '',
    ...(senderName ? { senderName } : {}),
  };
}

export function createServices(options: ServicesOptions): FlowServices {
  const { client, policy, store, logger } = options;
  const now = options.now ?? Date.now;
  const retry = options.moneyCallRetry ?? MONEY_CALL_RETRY;
  let banks: { at: number; list: Array<{ id: string; name: string }> } | undefined;

  /** Runs a call; any failure becomes a ServiceFailure, logged without personal data. */
  async function call<T>(name: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const failure = toFailure(error);
      logger.warn({ service: name, code: failure.code, status: (error as { status?: number }).status }, 'service call failed');
      throw failure;
    }
  }

  /**
   * A create carrying our own key (`work` gets the client's write options: the key and the retries). A
   * duplicate answer means an earlier call under the key was accepted: AlreadySubmitted. An answer saying no
   * (any 4xx but 409) gives the spend reserved under the key back (`spent`: the create reserved one); an
   * outcome still unknown (no answer, 5xx) keeps it, as the money may have moved.
   */
  async function create<T>(name: string, key: string, spent: boolean, work: (write: { duplicateCheckKey: string; retry: CallRetry }) => Promise<T>): Promise<Created<T>> {
    return call(name, async () => {
      try {
        return await work({ duplicateCheckKey: key, retry });
      } catch (error) {
        if (error instanceof DuplicateRequestError) {
          logger.info({ service: name }, 'already submitted under this Duplicate-Check-Key');
          return ALREADY_SUBMITTED;
        }
        // A 4xx (or a request refused before sending, status 0) made nothing; a 2xx the client could not read did.
        const refused = error instanceof MomoError && (error.status === 0 || (error.status >= 400 && error.status < 500));
        if (spent && refused) await giveBackSpend(store, key);
        throw error;
      }
    });
  }

  async function keepContact(phonenumber: string, update: (previous: ContactCheck | undefined) => ContactCheck): Promise<void> {
    const stored = await store.get(keys.contact(phonenumber));
    const next = update(stored?.snapshot as ContactCheck | undefined);
    if ((await store.set(keys.contact(phonenumber), next, stored?.version ?? null, CONTACT_TTL_SECONDS)) === null) {
      logger.info({ phone: maskPhone(phonenumber) }, 'contact record changed meanwhile; kept the other write');
    }
  }

  return {
    verifyPin: (input) => policy.verifyPin(store, { ...input, channel: input.channel as Channel }),
    reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: input.channel as Channel }),

    async lookupContact({ phonenumber }) {
      const stored = await store.get(keys.contact(phonenumber));
      return (stored?.snapshot as ContactCheck | undefined) ?? { known: false, registered: false };
    },

    verifyContact: ({ phonenumber, firstName, lastName }) =>
      call('verifyContact', async () => {
        const contact = await client.contacts.create({ phone_number: phonenumber, first_name: firstName, last_name: lastName, metadata: { sync: '1' } });
        const check = contactCheck(contact);
        await keepContact(phonenumber, () => check);
        return check;
      }),

    createPayment: (input) =>
      create('createPayment', input.duplicateCheckKey, true, async (write) => {
        const payment = await client.payments.create(
          {
            phonenumber: input.phonenumber,
            ...(input.paymentType === 'bank' ? {} : { payment_type: input.paymentType }),
            amount: input.amount,
            currency: input.currency,
            description: input.description,
            metadata: input.metadata,
            ...(input.firstName ? { first_name: input.firstName } : {}),
            ...(input.lastName ? { last_name: input.lastName } : {}),
            ...(input.bank
              ? { account_number: input.bank.accountNumber, account_name: input.bank.accountName, bank: Number(input.bank.bank), email: input.bank.email }
              : {}),
          },
          write,
        );
        await keepContact(input.phonenumber, (previous) => ({
          registered: true,
          ...previous,
          known: true,
          ...(input.firstName ? { firstName: input.firstName } : {}),
          ...(input.lastName ? { lastName: input.lastName } : {}),
        }));
        return { id: String(payment.id), state: payment.state };
      }),

    listBanks: () =>
      call('listBanks', async () => {
        if (banks && now() - banks.at < BANKS_TTL_MS) return banks.list;
        const page = await client.banks.list();
        banks = { at: now(), list: page.results.map((b) => ({ id: String(b.id), name: b.name })) };
        return banks.list;
      }),

    createCollectionRequest: (input) =>
      create('createCollectionRequest', input.duplicateCheckKey, false, async (write) => {
        const request = await client.collectionRequests.create(
          {
            phonenumber: input.phonenumber,
            amount: input.amount,
            currency: input.currency,
            reason: input.reason,
            send_instructions: input.sendInstructions,
            metadata: input.metadata,
          },
          write,
        );
        // Collection verification accepts what matches an open request made here (src/notifications).
        const key = keys.openRequest(input.phonenumber, input.amount, input.currency);
        const open = await store.get(key);
        await store.set(key, { id: String(request.id), chat: input.metadata.chat ?? '' }, open?.version ?? null, OPEN_REQUEST_TTL_SECONDS);
        return { id: String(request.id), status: request.status, ...(request.mfscode ? { mfscode: request.mfscode } : {}) };
      }),

    claimCollection: (input) =>
      call('claimCollection', async () =>
        (await client.collections.claim({ amount: input.amount, remote_transaction_id: input.remoteTransactionId, phonenumber: input.phonenumber })).map(summary),
      ),

    latestCollections: ({ limit }) =>
      call('latestCollections', async () => (await client.collections.list({ limit, ordering: '-created' })).results.map(summary)),

    listDataBundles: ({ network, accountNumber }) =>
      call('listDataBundles', async () =>
        (await client.vending.listDataBundles({ service_type: network, ...(accountNumber ? { account_number: accountNumber } : {}) })).map((b) => ({
          datacode: b.datacode,
          name: b.name,
          allowance: b.allowance ?? '',
          price: b.price,
          validity: b.validity ?? '',
        })),
      ),

    purchaseData: (input) =>
      create<PurchaseResult>('purchaseData', input.duplicateCheckKey, true, async (write) => {
        const purchase = await client.vending.purchaseData(
          {
            service_type: input.network,
            datacode: input.datacode,
            phonenumber: input.phonenumber,
            amount: input.amount,
            ...(input.accountNumber ? { account_number: input.accountNumber } : {}),
          },
          write,
        );
        return { reference: purchase.reference, status: purchase.status };
      }),

    listPinBundles: ({ serviceType }) =>
      call('listPinBundles', async () =>
        (await client.vending.listPinBundles({ service_type: serviceType })).map((b) => ({
          amount: b.amount,
          available: b.available,
          description: b.description ?? '',
          ...(b.product_code ? { productCode: b.product_code } : {}),
        })),
      ),

    validateCandidate: (input) =>
      call('validateCandidate', async () => {
        const found = await client.vending.validateName({ service_type: input.serviceType, product_code: input.productCode, account_number: input.accountNumber });
        const raw = found.user?.rawOutput ?? found.rawOutput;
        const name = found.user?.name || [raw?.firstName, raw?.middleName, raw?.lastName].filter(Boolean).join(' ');
        if (!found.gsmNo || !name) throw { code: 'not_found', message: found.errorMessage ?? found.user?.errorMessage ?? 'no candidate' } satisfies ServiceFailure;
        return { name, gsmNo: found.gsmNo };
      }),

    purchasePin: (input) =>
      create<PurchaseResult>('purchasePin', input.duplicateCheckKey, true, async (write) => {
        const purchase = await client.vending.purchasePin(
          {
            service_type: input.serviceType,
            product_code: input.productCode,
            account_number: input.accountNumber,
            gsmNo: input.gsmNo,
            amount: input.amount,
            quantity: input.quantity,
          },
          write,
        );
        return { reference: purchase.reference, status: purchase.status, pins: purchase.pins.map((p) => p.pin) };
      }),
  };
}
