/**
 * Every key the product writes to its store (memory or Redis), built here and nowhere else. In Redis each
 * sits under the product's key prefix (REDIS_KEY_PREFIX, {@link DEFAULT_KEY_PREFIX} by default), and so do the
 * libraries' own: the rate limiters (`<prefix>ratelimit:*`, src/ops/ratelimit.ts), the notification marks
 * (`<prefix>notify:{…}:*`, {@link markKeys}), the funnel and the read budget; BullMQ's queues carry the prefix's
 * name in their hash tag instead (`{momo-n<n>}:bull:*`, `{momo-f<n>}:bull:*`, `{momo-s<n>}:bull:*` for `momo:`,
 * {@link queuePrefixesOf}). Two products with different prefixes share a Redis without touching each other's keys.
 *
 * Cluster-ready: every key carries a hash tag (`{…}`: Redis Cluster places a key by the text between its first
 * braces), and the keys one script or transaction touches carry the same one, so they share a slot:
 * - a conversation's keys (record, run lease, pending outcomes) and its user's (profile, contacts, requests)
 *   carry the user's part `{u<n>}`, n = one of {@link PARTS} by a hash of `<channel>:<user id>`; so does the
 *   index of open runs, which the lease script changes with them: it is sharded in those same parts
 *   (`runs:{u<n>}`), and the runner sweeps every part;
 * - a payment's record carries its ref (`made:{ref}`), its notification marks their record's order key;
 * - a person's daily totals and every payment's share of one carry `{spend}`: the reservation is given back
 *   knowing only the payment's ref, so the two cannot carry the person's own tag; one slot holds them all
 *   (one or two commands per payment, never per screen);
 * - a payout's keys carry its id; the list of open ones is sharded into {@link OPEN_PARTS} parts by id
 *   (`payouts:open:{o<n>}`), each read by every process's sweep (held payments are the database's:
 *   src/approvals/held.ts);
 * - BullMQ's keys ({@link queuePrefixes}): the notification queue, the follow-ups (a delayed check of every
 *   intent) and the SMS queue are each sharded into {@link QUEUE_PARTS} queues of their own tag
 *   (`{momo-n<n>}:bull`, `{momo-f<n>}:bull`, `{momo-s<n>}:bull`) by the payment's key, each worked by every
 *   process.
 * test/redis/slots.test.ts walks every builder and every script and fails on keys that would not share a slot.
 */
import { createHash } from 'node:crypto';
import { Decimal } from 'decimal.js';
import { parseChat, userOfAddress } from './chat-address.js';
import type { Address } from './types.js';

type Conversation = Pick<Address, 'channel' | 'conversationId'>;
/** Who is asking (flows/calls.ts Asker): what one user typed is kept under that user's own keys. */
interface Asker {
  channel: string;
  userId: string;
}

/**
 * Parts the users' keys (and the index of open runs) are spread over. Fixed: changing it moves every user's
 * keys. Enough for a cluster of a few dozen masters to share them evenly; every sweep reads one index per part.
 */
export const PARTS = 64;

/** Parts of the list of open payouts. Fixed, as PARTS. */
export const OPEN_PARTS = 8;

/** FNV-1a of a string, 32 bits: spreads ids over the parts (not for security). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The hash tag of a user's keys: `{u<part>}`. */
const userTag = (channel: string, userId: string): string => `{u${fnv1a(`${channel}:${userId}`) % PARTS}}`;
/** The tag of the conversation's user: the same as the user's own keys'. */
const conversationTag = (c: Conversation): string => userTag(c.channel, userOfAddress(c as Address));
/** The hash tag of a key (its first `{…}`), or '' when it has none. */
export function tagOf(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open, close + 1) : '';
}
/** Braces would end a tag early: an id holding one is written without them (the same id, the same tag). */
const braced = (id: string): string => `{${id.replace(/[{}]/g, '_')}}`;

/** The part an open approval or payout is listed in. */
const openPart = (id: string): number => fnv1a(id) % OPEN_PARTS;
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * Parts of each queue spanning every payment (the notifications, the follow-ups, the SMS): each part a BullMQ
 * queue of its own hash tag, so on a cluster their jobs spread over the masters. Fixed: changing it strands the
 * jobs of the parts that go (src/notifications/legacy-queues.ts moves those of the queues it knows).
 */
export const QUEUE_PARTS = 4;

/** The product's key prefix when REDIS_KEY_PREFIX is unset. */
export const DEFAULT_KEY_PREFIX = 'momo:';

/**
 * Why `prefix` cannot be a key prefix, or undefined when it can: letters, digits and `. _ - :`, ending with a
 * colon (`momo:`, `staging-2:`). Never braces: Redis Cluster places a key by the text between its first braces, so a
 * brace in the prefix would take the keys' tags away (BullMQ's tags are made of it, `{<name>-n0}`); nor spaces,
 * nor empty (the product's keys would mingle with anything else in the database).
 */
export function keyPrefixProblem(prefix: string): string | undefined {
  if (prefix === '') return 'empty: give the product a prefix of its own (e.g. momo:)';
  if (/[{}]/.test(prefix)) return "braces would take the keys' hash tags away on a cluster";
  if (/\s/.test(prefix)) return 'no spaces';
  if (!/^[A-Za-z0-9._:-]{1,63}:$/.test(prefix))
    return 'at most 63 letters, digits, . _ - or :, then a colon (e.g. momo: or staging-2:)';
  return undefined;
}

/** The queues in parts, each with the letter its parts' tags carry (`{<name>-<letter><part>}`). */
const PARTED = { notifications: 'n', followUps: 'f', sms: 's' } as const;
export type PartedQueue = keyof typeof PARTED;

/** BullMQ's key prefixes of one product, by its key prefix: {@link queuePrefixesOf}. */
export interface QueuePrefixes {
  /**
   * The one prefix every queue but the follow-ups had before the queues were parted: now only the queues of
   * an earlier version (legacy-queues.ts) and a BullQueue given no prefix.
   */
  shared: string;
  /**
   * The part of `queue` that holds the jobs of `key`: a payment's notifications (the service's id of its
   * record), the follow-ups of our record `ref`, an SMS's dedup key. One key: always one part.
   */
  part(queue: PartedQueue, key: string): string;
  /** Every part of `queue`, each worked by every process. */
  parts(queue: PartedQueue): string[];
  /** Every prefix a queue of this or an earlier version is under (the parts and {@link QueuePrefixes.shared}). */
  all(): string[];
}

/**
 * BullMQ's key prefixes (`<prefix>:<queue name>:…`) of the product whose key prefix is `keyPrefix`. Each carries
 * one hash tag, so every key of a queue lies in one slot, as BullMQ's scripts need on a cluster (its own advice);
 * the same on one server and on Sentinel (one way for every mode), so a deployment moving to a cluster keeps its
 * queued jobs. The tag holds the key prefix's name (`momo:` gives `{momo-n0}:bull`, `staging:` `{staging-n0}:bull`):
 * a tag of its own per product, and the default's keys as they always were.
 */
export function queuePrefixesOf(keyPrefix: string = DEFAULT_KEY_PREFIX): QueuePrefixes {
  const name = keyPrefix.replace(/:$/, '');
  const partPrefix = (queue: PartedQueue, part: number): string => `{${name}-${PARTED[queue]}${part}}:bull`;
  const prefixes: QueuePrefixes = {
    shared: `{${name}}:bull`,
    part: (queue, key) => partPrefix(queue, fnv1a(key) % QUEUE_PARTS),
    parts: (queue) => range(QUEUE_PARTS).map((part) => partPrefix(queue, part)),
    all: () => [prefixes.shared, ...(Object.keys(PARTED) as PartedQueue[]).flatMap((q) => prefixes.parts(q))],
  };
  return prefixes;
}

/** BullMQ's key prefixes of a product under {@link DEFAULT_KEY_PREFIX}. */
export const queuePrefixes: QueuePrefixes = queuePrefixesOf(DEFAULT_KEY_PREFIX);

/** The keys of the notification marks of one record (src/notifications/marks.ts): one tag, the record's order key. */
export function markKeys(
  orderKey: string,
  dedupKey = '',
): { rank: string; sent: string; lease: string; reading: string } {
  const tag = braced(orderKey);
  return {
    rank: `notify:${tag}:rank`,
    sent: `notify:${tag}:sent:${dedupKey}`,
    lease: `notify:${tag}:lease:${dedupKey}`,
    reading: `notify:${tag}:reading:${dedupKey}`,
  };
}

export const keys = {
  /** The conversation record: flow state, ledger of answers, channel state, profile copy (ledger.ts). */
  conversation: (c: Conversation): string => `conv:${conversationTag(c)}:${c.channel}:${c.conversationId}`,
  /** The conversation a {@link keys.conversation} key names; null for any other key. */
  conversationOf: (key: string): Address | null => {
    const tag = tagOf(key);
    return key.startsWith('conv:{') && tag ? parseChat(key.slice(`conv:${tag}:`.length)) : null;
  },
  /** The lease of the run of a conversation (runner.ts): the run id of the one process calling the service. */
  runLease: (conversationKey: string): string => `lease:${conversationKey}`,
  /**
   * The part of the sorted set of the conversations with a run out (scored by lease expiry, swept for runs
   * whose holder died) that lists this conversation: the one in its slot.
   */
  openRuns: (conversationKey: string): string => `runs:${tagOf(conversationKey)}`,
  /** Every part of the index of open runs, each swept. */
  openRunsParts: (): string[] => range(PARTS).map((part) => `runs:{u${part}}`),
  /** What the engine remembers of a user: language and remembered candidates. */
  profile: (channel: string, userId: string): string => `profile:${userTag(channel, userId)}:${channel}:${userId}`,
  /** Messages kept for a USSD user until the next dial (ussd-inbox.ts). */
  pending: (c: Conversation): string => `pending:${conversationTag(c)}:${c.channel}:${c.conversationId}`,
  /**
   * The USSD deliveries a gateway's guard answered "taking longer, dial again to see the result" before the
   * engine did (engine/told-late.ts keepToldLate): the next dial says what became of them.
   */
  toldLate: (c: Conversation): string => `told-late:${conversationTag(c)}:${c.channel}:${c.conversationId}`,
  /** What the network verified of a number (registered, its name for it): shared by every user (flow-calls.ts). */
  contact: (phonenumber: string): string => `contact:${braced(phonenumber)}`,
  /** The names one user gave a number: that user's alone, so nobody's typing becomes another's screen (flow-calls.ts). */
  ownContact: (asker: Asker, phonenumber: string): string =>
    `contact:${userTag(asker.channel, asker.userId)}:${asker.channel}:${asker.userId}:${phonenumber}`,
  /** The ids of the collection requests one user made, newest last: the collections they see (flow-calls.ts). */
  ownRequests: (asker: Asker): string =>
    `requests:${userTag(asker.channel, asker.userId)}:${asker.channel}:${asker.userId}`,
  /** The people one user paid lately, newest first (flow-calls.ts): listed first when they pay again. */
  recentPayees: (asker: Asker): string =>
    `payees:${userTag(asker.channel, asker.userId)}:${asker.channel}:${asker.userId}`,
  /**
   * Who paid a number under names we remembered, by the payment's ref (flow-calls.ts): a payment that fails on
   * the name forgets them for that payer, knowing only its ref.
   */
  paidNames: (ref: string): string => `paid-names:${braced(ref)}`,
  /** Our record of a payment, collection request or purchase we made, by our ref (made-records.ts). */
  made: (ref: string): string => `made:${braced(ref)}`,
  /**
   * Our ref of the service's id of that kind (made-records.ts), under the service and organization it belongs to
   * (`scope`, {@link serviceScope}): an id of another deployment's service sharing this Redis is not ours.
   */
  madeId: (scope: string, kind: string, id: string): string => `made:id:${scope}:${kind}:${braced(id)}`,
  /** The open collection requests of a number, amount and currency, each accepting one collection (made-records.ts). */
  openRequests: (phone: string, amount: string, currency: string): string =>
    `made:open:${braced(phone)}:${new Decimal(amount).toFixed()}:${currency.toUpperCase()}`,
  /**
   * A person's total spent in one currency on one UTC day, in minor units, shared by all their channels
   * (access-policy.ts). A person of their own (`<channel>:<user id>`) keeps the key of before persons.
   */
  dailySpend: (person: string, currency: string, day: string): string => `spend:{spend}:${person}:${currency}:${day}`,
  /** One payment's share of a daily total, by its Duplicate-Check-Key: counted once, given back once (access-policy.ts). */
  spendReservation: (duplicateCheckKey: string): string => `spendres:{spend}:${duplicateCheckKey}`,
  /** A bulk payout: its draft, then its requests' results (src/payouts/payouts.ts). */
  payout: (id: string): string => `payout:${braced(id)}`,
  /** The part of the list of confirmed payouts whose requests are still being made that lists this one. */
  payoutsOpen: (id: string): string => `payouts:open:{o${openPart(id)}}`,
  /** Every part of the list of open payouts. */
  payoutsOpenParts: (): string[] => range(OPEN_PARTS).map((part) => `payouts:open:{o${part}}`),
  /** One process makes a payout's requests at a time (src/payouts/payouts.ts). */
  payoutSending: (id: string): string => `payout:${braced(id)}:sending`,
  /** Wrong PIN tries of a person, whichever identity typed them (access-policy.ts). */
  pinFailures: (person: string): string => `pinfail:${braced(person)}`,
  /** An operator's sign-in on /ops, by the SHA-256 of its cookie (src/ops/access.ts). */
  opsSignIn: (digest: string): string => `ops:session:${braced(digest)}`,
  /** Failed /ops sign-ins from one address (src/ops/access.ts). */
  opsSignInFailures: (address: string): string => `ops:signin:${braced(address)}`,
  /** A read's sign-in by Basic auth or the token already audited, by a digest of who, how and where (src/ops/access.ts). */
  opsSignInRecorded: (digest: string): string => `ops:signin-recorded:${braced(digest)}`,
  /** A USSD outcome told to the person's preferred chat, by a digest of the address and the words (src/people/preferred-chat.ts). */
  toldPreferredChat: (digest: string): string => `people:told:${braced(digest)}`,
  /** Link codes tried by one chat identity, and link codes made by one person (src/people/link.ts). */
  linkTries: (source: string): string => `link:tries:${braced(source)}`,
  linkCodesMade: (person: string): string => `link:made:${braced(person)}`,
  /** A Telegram update handled (adapters/telegram/handler.ts). */
  telegramUpdate: (updateId: number): string => `tg:update:{${updateId}}`,
  /** Set once an update was handled to its end: a redelivery of one without it is handled again. */
  telegramUpdateDone: (updateId: number): string => `tg:update:{${updateId}}:done`,
  /** The prompt a Telegram chat is looking at (adapters/telegram/prompt-record.ts). */
  telegramPrompt: (chatId: string): string => `tg:prompt:${braced(chatId)}`,
  /** A Slack event handled (adapters/slack/index.ts). */
  slackEvent: (eventId: string): string => `slack:event:${braced(eventId)}`,
  /** Uses of a Slack response_url, by its SHA-256 (adapters/slack/reply.ts). */
  slackResponseUrl: (digest: string): string => `slack:response-url:${braced(digest)}`,
  /** A mark /readyz writes to prove the store takes writes, by a random id (src/ops/health.ts). */
  readyProbe: (id: string): string => `readyz:${braced(id)}`,
  /** The one process registering the service's webhooks at start (src/app.ts). */
  webhookRegistration: (receiver: string): string => `webhooks:registering:${braced(receiver)}`,
  /** Journal writes waiting for the database, oldest first, and its drain lock (`:lock`) (src/journal/writer.ts). */
  journalPending: '{journal}:pending',
} as const;

/**
 * The service and organization our ids belong to, as a short digest of the service's address and API key (an
 * API key is one organization's): `made:id:<scope>:…` keys of a staging and a production product sharing one
 * Redis never meet. The key itself is never stored.
 */
export function serviceScope(baseUrl: string, apiKey: string): string {
  return createHash('sha256')
    .update(`${baseUrl.replace(/\/+$/, '')}\n${apiKey}`)
    .digest('hex')
    .slice(0, 16);
}
