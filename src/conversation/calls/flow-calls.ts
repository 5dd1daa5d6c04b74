/**
 * FlowCalls over the service's client and the access policy: what the flows' named actors run.
 * Every failure reaches the flow as a ServiceFailure (one mapping, {@link toFailure}). A create refused as
 * a duplicate of our own Duplicate-Check-Key was already accepted: it resolves as AlreadySubmitted. A create
 * the service refused gives its spend reservation back. Retries are the client's alone (one decision, one
 * time budget per call: {@link MONEY_CALL_RETRY} for creates). No method polls the service; the only reads
 * are the ones a person asked for (reads are limited to 30 a minute).
 */
import {
  ALREADY_SUBMITTED,
  type Asker,
  type CollectionSummary,
  type RecentPayment,
  type RecentPayee,
  RECENT_PAYEES_MAX,
  type ContactCheck,
  type Created,
  type FlowCalls,
  type PurchaseResult,
} from '../../../flows/calls.js';
import type { ServiceFailure } from '../../../flows/types.js';
import { isServiceFailure, madeNothing } from '../../../flows/types.js';
import type { Logger } from '../../log.js';
import {
  AuthenticationError,
  ConnectionError,
  DuplicateRequestError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServiceError,
  ValidationError,
  type CallRetry,
  type Collection,
  type Contact,
  type MomoClient,
} from '../../momo/index.js';
import { BANK_COUNTRY_FIELD, NAME_FAILURE } from '../../momo/assumptions.js';
import { contactName } from '../../momo/contact-name.js';
import { namesWithin } from '../../../flows/input.js';
import { localTime } from '../../local-time.js';
import { personServices } from '../../people/person-calls.js';
import type { PeopleDirectory } from '../../people/start.js';
import { keys } from '../../store/keys.js';
import type { AccessPolicy } from '../calls/access-policy.js';
import type { Channel } from '../types.js';
import type { Store } from '../../store/types.js';

export interface FlowCallsOptions {
  client: MomoClient;
  policy: AccessPolicy;
  store: Store;
  logger: Logger;
  /** Clock in milliseconds (the bank list cache). Default Date.now. */
  now?: () => number;
  /** The client's retries of a create under our Duplicate-Check-Key. Default {@link MONEY_CALL_RETRY}. */
  moneyCallRetry?: CallRetry;
  /**
   * The journal's answer to FlowCalls.recentPayment (src/journal: the same payment made a moment ago by the
   * same person). Default: none known, so the pay flow never asks about a second payment.
   */
  recentPayment?: FlowCalls['recentPayment'];
  /**
   * The directory of people's database: Change PIN and link codes (src/people/person-calls.ts). Absent: both
   * are refused `not_allowed`.
   */
  directory?: PeopleDirectory;
  /**
   * The organization's email address (BANK_TRANSFER_EMAIL), sent with a bank transfer whose payer skipped the
   * email. Absent: such a transfer goes without one, and the service refuses it (the pay flow then offers no Skip).
   */
  bankTransferEmail?: string;
  /**
   * The reservation of a payment or purchase is written with its intent and given back with its journalled
   * refusal (recordMade's `reservation`, made-records.ts): a create refused here gives nothing back itself.
   * Default false: the refusal gives the reservation back here.
   */
  reservedWithIntent?: boolean;
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

/** A user's requests are remembered 30 days (a request lives 24 h, its retries and collections a while longer). */
const OWN_REQUESTS_TTL_SECONDS = 30 * 24 * 3600;
/** The most requests remembered per user; older ones give way. */
const OWN_REQUESTS_MAX = 200;
/**
 * How many of the organization's latest collections one read brings, to find a user's among them: one read
 * of the 30 a minute, whatever the number of requests the user made.
 */
const OWN_COLLECTIONS_SEARCH = 100;

/** What the shared record holds: only what the network said. */
interface NetworkFacts {
  registered: boolean;
  nameOnNetwork?: string;
  networkName?: string;
}

/**
 * What one user's record of a number holds: the names they gave, and whether it could be paid. The names are
 * used (lookupContact's `known`) only when `confirmed`: the network's name held them when they were kept. A
 * record kept before this rule has no `confirmed`: its names are asked again.
 */
interface OwnContact {
  registered: boolean;
  firstName?: string;
  lastName?: string;
  confirmed?: true;
}

/** Who paid a number under names kept for them (keys.paidNames): forgotten when the payment fails on the name. */
interface PaidNames {
  channel: string;
  userId: string;
  phone: string;
}

/** A recent payee's currency, when kept. */
const currencyOf = (p: RecentPayee): Pick<RecentPayee, 'currency'> => (p.currency ? { currency: p.currency } : {});

/** True when the names are the network's for the number, as the network told it (namesWithin). */
const confirmedBy = (names: string, nameOnNetwork: string | undefined): boolean =>
  !!nameOnNetwork && namesWithin(names, nameOnNetwork);

/** Writes a record computed from the one stored, with compare-and-set: computed again when another writer won. */
async function keepRecord<T>(
  store: Store,
  logger: Logger,
  key: string,
  ttlSeconds: number,
  update: (previous: T | undefined) => T,
): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const stored = await store.get(key);
    if ((await store.set(key, update(stored?.snapshot as T | undefined), stored?.version ?? null, ttlSeconds)) !== null)
      return;
  }
  logger.warn({ record: key.split(':')[0] }, 'record kept changing; this write was given up');
}

/**
 * A payment ended failed (`reason`: its last_error): when it failed on the name (NAME_FAILURE), the names its
 * payer gave the number are forgotten, so the next payment to it asks and checks them again, and the payee is
 * listed by number under "Pay whom?". Knows the payment by its ref only (keys.paidNames, kept by createPayment).
 */
export async function forgetFailedName(
  options: { store: Store; logger: Logger },
  ref: string,
  reason: string | undefined,
): Promise<void> {
  if (!reason || !NAME_FAILURE.test(reason)) return;
  const { store, logger } = options;
  const paid = (await store.get(keys.paidNames(ref)))?.snapshot as PaidNames | undefined;
  if (!paid) return;
  const asker = { channel: paid.channel, userId: paid.userId };
  await store.delete(keys.ownContact(asker, paid.phone));
  await keepRecord<RecentPayee[]>(store, logger, keys.recentPayees(asker), CONTACT_TTL_SECONDS, (previous = []) =>
    previous.map((p) =>
      p.kind !== 'bank' && p.phone === paid.phone ? { kind: p.kind, phone: p.phone, ...currencyOf(p) } : p,
    ),
  );
  await store.delete(keys.paidNames(ref));
  logger.info({ ref }, 'payment failed on the name: the names given for its payee are forgotten');
}

/** Who a recent payee is: a bank account, or a number paid mobile money or airtime. */
const payeeOf = (p: RecentPayee): string =>
  p.kind === 'bank' ? `bank:${p.bank?.id ?? ''}:${p.bank?.accountNumber ?? ''}` : `${p.kind}:${p.phone}`;

/** The asker when a service call names one (createPayment and createCollectionRequest may not). */
const askerOf = (input: Partial<Asker>): Asker | undefined =>
  input.channel && input.userId ? { channel: input.channel, userId: input.userId } : undefined;

/** The id of the request a collection matched (an id before v3, the expanded request from v3), or ''. */
function requestIdOf(c: Collection): string {
  const request = c.collection_request;
  if (request === null || request === undefined) return '';
  return typeof request === 'object' ? String(request.id) : String(request);
}

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
  const senderName = contactName(contact?.first_name, contact?.last_name) || contact?.name_on_network || undefined;
  return {
    id: String(c.id),
    amount: c.amount,
    currency: String(c.currency),
    phonenumber: c.phonenumber,
    status: c.status,
    reference: c.reference ?? '',
    remoteTransactionId: c.remote_transaction_id ?? '',
    paymentDate: c.payment_date ?? '',
    ...(c.payment_date ? { paymentTime: localTime(c.payment_date) } : {}),
    ...(senderName ? { senderName } : {}),
  };
}

export function createFlowCalls(options: FlowCallsOptions): FlowCalls {
  const { client, policy, store, logger } = options;
  const now = options.now ?? Date.now;
  const retry = options.moneyCallRetry ?? MONEY_CALL_RETRY;
  let banks: { at: number; list: Array<{ id: string; name: string; country?: string }> } | undefined;

  /** Runs a call; any failure becomes a ServiceFailure, logged without personal data. */
  async function call<T>(name: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const failure = toFailure(error);
      logger.warn(
        { service: name, code: failure.code, status: (error as { status?: number }).status },
        'service call failed',
      );
      throw failure;
    }
  }

  /**
   * A create carrying our own key (`work` gets the client's write options: the key and the retries). A
   * duplicate answer means an earlier call under the key was accepted: AlreadySubmitted. A failure that proves
   * nothing was made (400, 401, 403, 404, or refused before sending) gives the spend reserved under the key back
   * (`spent`: the create reserved one); any other (no answer, 5xx, 429) keeps it, as the money may have moved.
   */
  async function create<T>(
    name: string,
    key: string,
    spent: boolean,
    work: (write: { key: string; retry: CallRetry }) => Promise<T>,
  ): Promise<Created<T>> {
    return call(name, async () => {
      try {
        return await work({ key, retry });
      } catch (error) {
        if (error instanceof DuplicateRequestError) {
          logger.info({ service: name }, 'already submitted under this Duplicate-Check-Key');
          return ALREADY_SUBMITTED;
        }
        // Given back only when the failure proves nothing was made (flows/types.ts madeNothing): a 429 may end a
        // run whose earlier attempt under this key the service committed, and a 2xx the client could not read did.
        if (spent && !options.reservedWithIntent && madeNothing(toFailure(error)))
          await policy.giveBackSpend(store, key, 'refused by the service');
        throw error;
      }
    });
  }

  const keep = <T>(key: string, ttlSeconds: number, update: (previous: T | undefined) => T): Promise<void> =>
    keepRecord(store, logger, key, ttlSeconds, update);

  /** True when the asker's role lets them see every collection of the organization. */
  const seesAll = (asker: Asker): boolean =>
    policy.role(asker.channel as Channel, asker.userId)?.seeAllCollections === true;
  /** The ids of the requests the asker made. */
  const ownRequests = async (asker: Asker): Promise<Set<string>> =>
    new Set(((await store.get(keys.ownRequests(asker)))?.snapshot as string[] | undefined) ?? []);

  return {
    verifyPin: (input) => policy.verifyPin(store, { ...input, channel: input.channel as Channel }),
    ...personServices({ policy, store, ...(options.directory ? { directory: options.directory } : {}) }),
    checkSpend: (input) => policy.checkSpend(store, { ...input, channel: input.channel as Channel }),
    reserveSpend: (input) => policy.reserveSpend(store, { ...input, channel: input.channel as Channel }),

    async lookupContact({ phonenumber, ...asker }) {
      const [own, shared] = await Promise.all([
        store.get(keys.ownContact(asker, phonenumber)),
        store.get(keys.contact(phonenumber)),
      ]);
      const network = shared?.snapshot as NetworkFacts | undefined;
      const mine = own?.snapshot as OwnContact | undefined;
      const heard = {
        ...(network?.nameOnNetwork ? { nameOnNetwork: network.nameOnNetwork } : {}),
        ...(network?.networkName ? { networkName: network.networkName } : {}),
      };
      // Names are used without asking only when the network confirmed them (OwnContact.confirmed).
      if (!mine?.confirmed || !mine.firstName || !mine.lastName)
        return { known: false, registered: mine?.registered ?? network?.registered ?? false, ...heard };
      return {
        known: true,
        ...heard,
        registered: mine.registered,
        firstName: mine.firstName,
        lastName: mine.lastName,
      };
    },

    verifyContact: ({ phonenumber, firstName, lastName, ...asker }) =>
      call('verifyContact', async () => {
        const contact = await client.contacts.create({
          phone_number: phonenumber,
          first_name: firstName,
          last_name: lastName,
          metadata: { sync: '1' },
        });
        // The service's contact may carry names someone else typed first: this user's own are the ones kept.
        const check = { ...contactCheck(contact), firstName, lastName };
        const { registered, nameOnNetwork, networkName } = check;
        await keep<NetworkFacts>(keys.contact(phonenumber), CONTACT_TTL_SECONDS, () => ({
          registered,
          ...(nameOnNetwork ? { nameOnNetwork } : {}),
          ...(networkName ? { networkName } : {}),
        }));
        // Only names the network's holds are kept (its own name chosen later is kept by createPayment): a name
        // it refused is asked again next time, never put on a summary unasked.
        if (registered && confirmedBy(`${firstName} ${lastName}`, nameOnNetwork))
          await keep<OwnContact>(keys.ownContact(asker, phonenumber), CONTACT_TTL_SECONDS, () => ({
            registered,
            firstName,
            lastName,
            confirmed: true,
          }));
        else await store.delete(keys.ownContact(asker, phonenumber));
        return check;
      }),

    createPayment: (input) =>
      create('createPayment', input.duplicateCheckKey, true, async (write) => {
        if (input.recipients) {
          const payout = await client.payments.create(
            {
              recipient_data: input.recipients,
              currency: input.currency,
              description: input.description,
              metadata: input.metadata,
            },
            write,
          );
          return { id: String(payout.id), state: payout.state };
        }
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
              ? {
                  account_number: input.bank.accountNumber,
                  account_name: input.bank.accountName,
                  bank: Number(input.bank.bank),
                  ...((input.bank.email ?? options.bankTransferEmail)
                    ? { email: input.bank.email ?? options.bankTransferEmail }
                    : {}),
                }
              : {}),
          },
          write,
        );
        const asker = askerOf(input);
        if (asker) {
          // The names given are kept when the network's name (as verification learnt it) holds them; names not
          // given (a known contact's) were confirmed when kept. A bank payee is named by its account.
          const typed = [input.firstName, input.lastName].filter(Boolean).join(' ');
          const facts = typed
            ? ((await store.get(keys.contact(input.phonenumber)))?.snapshot as NetworkFacts | undefined)
            : undefined;
          const typedConfirmed = typed !== '' && facts?.registered === true && confirmedBy(typed, facts.nameOnNetwork);
          let named = false;
          await keep<OwnContact>(keys.ownContact(asker, input.phonenumber), CONTACT_TTL_SECONDS, (previous) => {
            if (typedConfirmed) {
              named = true;
              return { registered: true, firstName: input.firstName, lastName: input.lastName, confirmed: true };
            }
            named = typed === '' && previous?.confirmed === true;
            // Names given that the network did not confirm are not kept (nor are older ones left to be used).
            return typed === '' ? { registered: true, ...previous } : { registered: true };
          });
          if (named && input.paymentType !== 'bank')
            await keep<PaidNames>(keys.paidNames(input.duplicateCheckKey), CONTACT_TTL_SECONDS, () => ({
              ...asker,
              phone: input.phonenumber,
            }));
          const { bank } = input;
          const listedName = input.paymentType === 'bank' || named ? input.payeeName : undefined;
          const paid: RecentPayee = {
            kind: input.paymentType,
            phone: input.phonenumber,
            currency: input.currency,
            ...(listedName ? { name: listedName } : {}),
            ...(named && input.paymentType !== 'bank' ? { nameChecked: true as const } : {}),
            // The account as paid (never a PIN or a secret): paying it again asks none of it.
            ...(bank
              ? {
                  bank: {
                    id: bank.bank,
                    name: bank.name ?? '',
                    accountNumber: bank.accountNumber,
                    accountName: bank.accountName,
                    ...(bank.email ? { email: bank.email } : {}),
                  },
                }
              : {}),
          };
          // Newest first, each payee once: the pay flow lists these before asking for a number.
          await keep<RecentPayee[]>(keys.recentPayees(asker), CONTACT_TTL_SECONDS, (previous = []) =>
            [paid, ...previous.filter((p) => payeeOf(p) !== payeeOf(paid))].slice(0, RECENT_PAYEES_MAX),
          );
        }
        return { id: String(payment.id), state: payment.state };
      }),

    recentPayment: (input) =>
      call('recentPayment', async (): Promise<RecentPayment | null> =>
        options.recentPayment ? options.recentPayment(input) : null,
      ),

    recentPayees: (asker) =>
      call('recentPayees', async (): Promise<RecentPayee[]> => {
        const stored = (await store.get(keys.recentPayees(asker)))?.snapshot;
        if (!Array.isArray(stored)) return [];
        // A name the network did not confirm (an entry kept before that rule) is not listed: the number is.
        return (stored as RecentPayee[])
          .slice(0, RECENT_PAYEES_MAX)
          .map((p): RecentPayee =>
            p.nameChecked || p.kind === 'bank' || p.name === undefined
              ? p
              : { kind: p.kind, phone: p.phone, ...currencyOf(p) },
          );
      }),

    listBanks: ({ country }) =>
      call('listBanks', async () => {
        if (!banks || now() - banks.at >= BANKS_TTL_MS) {
          const page = await client.banks.list();
          banks = {
            at: now(),
            list: page.results.map((b) => ({
              id: String(b.id),
              name: b.name,
              ...(b[BANK_COUNTRY_FIELD] ? { country: b[BANK_COUNTRY_FIELD] } : {}),
            })),
          };
        }
        // A person's own country's banks, and those naming none (BANK_COUNTRY_FIELD); no country: every bank.
        return banks.list
          .filter((b) => country === undefined || b.country === undefined || b.country === country)
          .map(({ id, name }) => ({ id, name }));
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
        const asker = askerOf(input);
        if (asker)
          await keep<string[]>(keys.ownRequests(asker), OWN_REQUESTS_TTL_SECONDS, (ids = []) =>
            [...ids, String(request.id)].slice(-OWN_REQUESTS_MAX),
          );
        return {
          id: String(request.id),
          status: request.status,
          ...(request.mfscode ? { mfscode: request.mfscode } : {}),
        };
      }),

    claimCollection: ({ amount, remoteTransactionId, phonenumber, ...asker }) =>
      call('claimCollection', async () => {
        const found = await client.collections.claim({
          amount,
          remote_transaction_id: remoteTransactionId,
          phonenumber,
        });
        if (seesAll(asker)) return found.map(summary);
        // A collection no request matched is theirs to claim: they gave its amount, transaction id and sender.
        const mine = await ownRequests(asker);
        return found.filter((c) => requestIdOf(c) === '' || mine.has(requestIdOf(c))).map(summary);
      }),

    latestCollections: ({ limit, ...asker }) =>
      call('latestCollections', async () => {
        if (seesAll(asker))
          return (await client.collections.list({ limit, ordering: '-created' })).results.map(summary);
        const mine = await ownRequests(asker);
        // Nothing asked for, nothing to see: no read spent.
        if (mine.size === 0) return [];
        const latest = await client.collections.list({ limit: OWN_COLLECTIONS_SEARCH, ordering: '-created' });
        return latest.results
          .filter((c) => mine.has(requestIdOf(c)))
          .slice(0, limit)
          .map(summary);
      }),

    listDataBundles: ({ network, accountNumber }) =>
      call('listDataBundles', async () =>
        (
          await client.vending.listDataBundles({
            service_type: network,
            ...(accountNumber ? { account_number: accountNumber } : {}),
          })
        ).map((b) => ({
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
        const found = await client.vending.validateName({
          service_type: input.serviceType,
          product_code: input.productCode,
          account_number: input.accountNumber,
        });
        const raw = found.user?.rawOutput ?? found.rawOutput;
        const name = found.user?.name || [raw?.firstName, raw?.middleName, raw?.lastName].filter(Boolean).join(' ');
        if (!found.gsmNo || !name)
          throw {
            code: 'not_found',
            message: found.errorMessage ?? found.user?.errorMessage ?? 'no candidate',
          } satisfies ServiceFailure;
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
