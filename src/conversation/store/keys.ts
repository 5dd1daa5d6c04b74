/**
 * Every key the product writes to its store (memory or Redis), built here and nowhere else. In Redis each
 * sits under the store's prefix (`momo:` by default). Libraries keep their own: the rate limiter
 * (`momo:ratelimit:*`, src/ops/ratelimit.ts), BullMQ (`bull:*`) and the notification marks
 * (`notify:*`, src/notifications/marks.ts).
 */
import { Decimal } from 'decimal.js';
import type { Asker } from '../../../flows/services.js';
import { parseChat } from '../channels/chat-address.js';
import type { Address, Participant } from '../types.js';

type Conversation = Pick<Participant, 'channel' | 'conversationId'>;

export const keys = {
  /** The conversation record: flow state, ledger of answers, channel state, profile copy (ledger.ts). */
  conversation: (c: Conversation): string => `conv:${c.channel}:${c.conversationId}`,
  /** The conversation a {@link keys.conversation} key names; null for any other key. */
  conversationOf: (key: string): Address | null => (key.startsWith('conv:') ? parseChat(key.slice('conv:'.length)) : null),
  /** The lease of the run of a conversation (runner.ts): the run id of the one process calling the service. */
  runLease: (conversationKey: string): string => `lease:${conversationKey}`,
  /** Sorted set of the conversations with a run out, scored by lease expiry: swept for runs whose holder died. */
  openRuns: 'runs',
  /** What the engine remembers of a user: language and remembered candidates. */
  profile: (channel: string, userId: string): string => `profile:${channel}:${userId}`,
  /** Messages kept for a USSD user until the next dial (ussd-inbox.ts). */
  pending: (c: Conversation): string => `pending:${c.channel}:${c.conversationId}`,
  /** What the network verified of a number (registered, its name for it): shared by every user (flow-services.ts). */
  contact: (phonenumber: string): string => `contact:${phonenumber}`,
  /** The names one user gave a number: that user's alone, so nobody's typing becomes another's screen (flow-services.ts). */
  ownContact: (asker: Asker, phonenumber: string): string => `contact:${asker.channel}:${asker.userId}:${phonenumber}`,
  /** The ids of the collection requests one user made, newest last: the collections they see (flow-services.ts). */
  ownRequests: (asker: Asker): string => `requests:${asker.channel}:${asker.userId}`,
  /** Our record of a payment, collection request or purchase we made, by our ref (made-records.ts). */
  made: (ref: string): string => `made:${ref}`,
  /** Our ref of the service's id of that kind (made-records.ts). */
  madeId: (kind: string, id: string): string => `made:id:${kind}:${id}`,
  /** The open collection requests of a number, amount and currency, each accepting one collection (made-records.ts). */
  openRequests: (phone: string, amount: string, currency: string): string => `made:open:${phone}:${new Decimal(amount).toFixed()}:${currency.toUpperCase()}`,
  /**
   * A person's total spent in one currency on one UTC day, in minor units, shared by all their channels
   * (access-policy.ts). A person of their own (`<channel>:<user id>`) keeps the key of before persons.
   */
  dailySpend: (person: string, currency: string, day: string): string => `spend:${person}:${currency}:${day}`,
  /** One payment's share of a daily total, by its Duplicate-Check-Key: counted once, given back once (access-policy.ts). */
  spendReservation: (duplicateCheckKey: string): string => `spendres:${duplicateCheckKey}`,
  /** A payment held for an approver, by its id (src/approvals/held.ts). */
  approval: (id: string): string => `approval:${id}`,
  /** One process sends an approved payment at a time (src/approvals/held.ts). */
  approvalSending: (id: string): string => `approval:${id}:sending`,
  /** The held payments still to decide or still being sent, each with when the sweep looks at it (src/approvals/held.ts). */
  approvalsOpen: 'approvals:open',
  /** A bulk payout: its draft, then its requests' results (src/payouts/payouts.ts). */
  payout: (id: string): string => `payout:${id}`,
  /** The confirmed payouts whose requests are still being made, each with when the sweep looks at it. */
  payoutsOpen: 'payouts:open',
  /** One process makes a payout's requests at a time (src/payouts/payouts.ts). */
  payoutSending: (id: string): string => `payout:${id}:sending`,
  /** Wrong PIN tries of a person, whichever identity typed them (access-policy.ts). */
  pinFailures: (person: string): string => `pinfail:${person}`,
  /** An operator's session on /ops, by the SHA-256 of its cookie (src/ops/access.ts). */
  opsSession: (digest: string): string => `ops:session:${digest}`,
  /** Failed /ops sign-ins from one address (src/ops/access.ts). */
  opsSignInFailures: (address: string): string => `ops:signin:${address}`,
  /** A USSD outcome told to the person's preferred chat, by a digest of the address and the words (src/people/preferred-chat.ts). */
  toldPreferredChat: (digest: string): string => `people:told:${digest}`,
  /** Link codes tried by one chat identity, and link codes made by one person (src/people/link.ts). */
  linkTries: (source: string): string => `link:tries:${source}`,
  linkCodesMade: (person: string): string => `link:made:${person}`,
  /** A Telegram update handled (adapters/telegram/handler.ts). */
  telegramUpdate: (updateId: number): string => `tg:update:${updateId}`,
  /** Set once an update was handled to its end: a redelivery of one without it is handled again. */
  telegramUpdateDone: (updateId: number): string => `tg:update:${updateId}:done`,
  /** The prompt a Telegram chat is looking at (adapters/telegram/prompt-record.ts). */
  telegramPrompt: (chatId: string): string => `tg:prompt:${chatId}`,
  /** A Slack event handled (adapters/slack/index.ts). */
  slackEvent: (eventId: string): string => `slack:event:${eventId}`,
  /** Uses of a Slack response_url, by its SHA-256 (adapters/slack/reply.ts). */
  slackResponseUrl: (digest: string): string => `slack:response-url:${digest}`,
  /** A mark /readyz writes to prove the store takes writes, by a random id (src/ops/health.ts). */
  readyProbe: (id: string): string => `readyz:${id}`,
  /** The one process registering the service's webhooks at start (src/app.ts). */
  webhookRegistration: (receiver: string): string => `webhooks:registering:${receiver}`,
  /** Journal writes waiting for the database, oldest first, and its drain lock (`:lock`) (src/journal/writer.ts). */
  journalPending: 'journal:pending',
} as const;
