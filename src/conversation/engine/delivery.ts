/**
 * What a delivery is to the parts of the turn (turn.ts): the options they share (TurnOptions), a new delivery
 * being stepped against the record as read (Delivery), its answer (Delivered), a lost compare-and-set
 * (CONFLICT), and how a delivery is named in the logs. Types and two small readings only: how a delivery is
 * read, stepped, written and answered is in the modules named for each.
 */
import type { Lang } from '../../../flows/types.js';
import type { Logger } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import type { Store } from '../../store/types.js';
import type { AccessPolicy } from '../calls/access-policy.js';
import type { FlowEnd, FlowRuntime, FlowTransition, StepContext } from '../flow/flow-runtime.js';
import type { Channel, ChannelCapabilities, Inbound, NoteWords, Participant, Prompt } from '../types.js';
import type { Answers } from './answers.js';
import type { ConversationRecord, Stored } from './ledger.js';
import type { RecordCache } from './record-cache.js';
import type { Runner } from './runner.js';

export interface TurnOptions {
  store: Store;
  records: RecordCache;
  runtime: FlowRuntime;
  answers: Answers;
  runner: Runner;
  policy: AccessPolicy;
  /** The StepContext of a delivery's user, with the flows they may start. */
  context(participant: Participant & Pick<Inbound, 'phoneNumber'>): StepContext;
  /** What a channel can do, as its adapter declares it (EngineOptions.channels). */
  capabilitiesOf(channel: Channel): ChannelCapabilities;
  onFlowEnd?: (end: FlowEnd) => void;
  /** Told of each move of a flow run between steps once it is stored (EngineOptions.onTransition). */
  onTransition?: (transition: FlowTransition) => void;
  /** Per channel, how long a delivery waits before it is answered without its outcome (a secret check's here). */
  deadlineOf(channel: Channel): number;
  /** Clock in milliseconds: a stored flow's expiry, deadlines, the lease's age. The turn reads no other clock. */
  now: () => number;
  /** EngineOptions.dialNote: a note of the notifications' catalogue in the person's language. */
  dialNote?: (words: NoteWords, lang: Lang) => string;
  logger: Logger;
}

/** The answer to one delivery and the channel state kept with it. */
export interface Delivered<S> {
  prompt?: Prompt;
  state: S;
}

/** A new delivery, the ledger holding no answer for it, and the record it is stepped against. */
export interface Delivery<S> {
  inbound: Inbound;
  /** Its ledger id (ledger.ts deliveryId). */
  id: string;
  /** The conversation's key. */
  key: string;
  /** The record as read or kept, with its version; null when the conversation has none yet. */
  stored: Stored | null;
  /** `stored`'s record, or an empty one. */
  record: ConversationRecord;
  /** The channel's state for an answer (TurnDecision `after`). */
  after: (prompt: Prompt) => S;
  /**
   * The channel's deadline for its answer, from when the delivery began: a PIN check and a wait for the run end
   * by it (at the deadline they answer "processing"), and kept outcomes shown later are not counted as seen.
   */
  answerBy?: number;
}

/** A step lost its compare-and-set to another message: read again and redo it. */
export const CONFLICT = Symbol('conflict');

/** The record of a conversation that has none yet. */
export const EMPTY: ConversationRecord = { ledger: [] };

/** A delivery as the logs name it: its conversation and user, masked, and its message id. */
export const who = (inbound: Inbound) => ({ ...logged(inbound), messageId: inbound.messageId });
