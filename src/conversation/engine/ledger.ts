/**
 * The conversation record (`conv:{u<n>}:<channel>:<conversationId>`, keys.ts; one compare-and-set writes all of it) and its
 * ledger of answers: each recent delivery (Telegram `update_id`, Slack ids, USSD session and hop) with the
 * answer it got: the Prompt shown (a screen, "processing", "being confirmed"), or `waiting` while the run it
 * waits for is out. A delivery seen again gets its entry: the same Prompt, or it waits for the run like the
 * first. Nothing is inferred from the order of deliveries.
 *
 * Small on purpose (the USSD benchmark bounds a session's Redis bytes): a delivery is kept as 11 characters of
 * its SHA-256, and only the latest {@link LEDGER_KEPT} deliveries are kept (channels resend within seconds, the
 * latest few).
 */
import { hash } from 'node:crypto';
import type { UserProfile } from '../../../flows/types.js';
import type { StoredFlow } from '../flow/flow-runtime.js';
import type { Prompt } from '../types.js';

/** A delivery waiting for the run of its conversation. */
export const WAITING = 'waiting';

export type Answer = Prompt | typeof WAITING;

/** `[delivery, answer]`: the delivery as {@link deliveryId} keeps it. */
export type Entry = [string, Answer];

/** Deliveries kept: a resend comes within seconds, of one of the latest few. */
export const LEDGER_KEPT = 5;

/**
 * The run a conversation has out (runner.ts): set by the write that makes its stored flow busy, cleared by the
 * write of its outcome. While set, every new delivery waits for it.
 */
export interface OpenRun {
  /** The run's id, held in its lease: a run that finds another id here lost the conversation and stops. */
  id: string;
  /** A delivery waiting for it was answered "processing": its outcome is delivered late (onLateOutcome). */
  late?: true;
  /** Times the run was taken over from a holder that died. */
  takeovers?: number;
  /**
   * When it was last taken over (the runner's clock, ms): a money run taken over often waits after it before
   * the next takeover. Absent before a takeover, and in records of engines before it (due at once).
   */
  at?: number;
}

/** What `conv:{u<n>}:<channel>:<conversationId>` holds. */
export interface ConversationRecord {
  session?: StoredFlow;
  /** Recent deliveries and their answers, oldest first. */
  ledger: Entry[];
  /** A channel's own state, kept with the conversation (TurnEngine); chat channels keep none. */
  channel?: unknown;
  /**
   * The user's profile (language, remembered candidates) as read when this conversation last started over
   * (a new channel session, an ended or expired flow) and as changed here since: a message in the middle of a
   * flow reads no profile record. A change made in another conversation of the same user (another Telegram
   * chat) shows here from the next start.
   */
  profile?: UserProfile;
  run?: OpenRun;
  /**
   * The latest new channel session (a USSD dial) showed the pending notes: the next message of that session
   * proves its screen arrived, and they are dropped then (ussd-inbox.ts dropSeen) rather than shown at a second dial.
   */
  notesShown?: true;
  /**
   * A run (`run`, its id) of flow run `flowRun` ended late at a question on a channel that cannot push, written
   * with that question: the note it keeps for the next dial, saying nothing was sent (PendingNote.about), is
   * shown only while this is here. A step that answers that flow (not a new channel session's) drops it: the
   * person saw the question after all (a slow holder's waiter showed it), and went on.
   */
  lateQuestion?: LateQuestion;
}

/** See {@link ConversationRecord.lateQuestion}. */
export interface LateQuestion {
  run: string;
  flowRun: string;
}

/** A record and the version it was read or written at. */
export interface Stored {
  record: ConversationRecord;
  version: number;
}

/** How a delivery id is kept: 11 base64url characters of its SHA-256 (66 bits), whatever its length. */
export function deliveryId(messageId: string): string {
  return hash('sha256', messageId, 'base64url').slice(0, 11);
}

const isEntry = (e: unknown): e is Entry =>
  Array.isArray(e) &&
  typeof e[0] === 'string' &&
  (e[1] === WAITING || typeof (e[1] as Prompt | undefined)?.text === 'string');

/** The record as stored (anything unreadable in it is dropped: an empty record where there is none). */
export function readRecord(snapshot: unknown): ConversationRecord {
  const stored = (typeof snapshot === 'object' && snapshot !== null ? snapshot : {}) as Partial<ConversationRecord>;
  return {
    ledger: Array.isArray(stored.ledger) ? stored.ledger.filter(isEntry) : [],
    ...(typeof stored.session?.flow === 'string' ? { session: stored.session } : {}),
    ...(stored.channel !== undefined ? { channel: stored.channel } : {}),
    ...(typeof stored.profile?.lang === 'string' ? { profile: stored.profile } : {}),
    ...(typeof stored.run?.id === 'string' ? { run: stored.run } : {}),
    ...(stored.notesShown === true ? { notesShown: true as const } : {}),
    ...(typeof stored.lateQuestion?.run === 'string' && typeof stored.lateQuestion.flowRun === 'string'
      ? { lateQuestion: stored.lateQuestion }
      : {}),
  };
}

/** The answer the delivery got, `waiting`, or undefined for a delivery the ledger does not hold. */
export function answerOf(record: ConversationRecord, id: string): Answer | undefined {
  return record.ledger.find((entry) => entry[0] === id)?.[1];
}

/** The delivery is the latest the ledger holds (its answer is the one the channel's state should keep). */
export function isNewest(record: ConversationRecord, id: string): boolean {
  return record.ledger.at(-1)?.[0] === id;
}

/**
 * The ledger with the delivery's answer set: in place when it is there, else added as the newest. Past
 * {@link LEDGER_KEPT}, the oldest answered delivery gives way (a waiting one only when all are waiting).
 */
export function withAnswer(ledger: Entry[], id: string, answer: Answer): Entry[] {
  const at = ledger.findIndex((entry) => entry[0] === id);
  if (at >= 0) return ledger.map((entry, i) => (i === at ? [id, answer] : entry));
  const next: Entry[] = [...ledger, [id, answer]];
  if (next.length <= LEDGER_KEPT) return next;
  const answered = next.findIndex((entry) => entry[1] !== WAITING);
  return next.filter((_, i) => i !== (answered >= 0 && answered < next.length - 1 ? answered : 0));
}

/** The ledger with every waiting delivery answered: `answer(id)` (the outcome of the run they waited for). */
export function resolveWaiting(ledger: Entry[], answer: (id: string) => Prompt): Entry[] {
  return ledger.map((entry) => (entry[1] === WAITING ? [entry[0], answer(entry[0])] : entry));
}

/** The record's flow while it waits at a question of its own (not the menu, not ended or expired, no run out). */
export function openFlow(record: ConversationRecord, now: number): StoredFlow | undefined {
  const storedFlow = record.session;
  return storedFlow !== undefined &&
    storedFlow.flow !== 'menu' &&
    !storedFlow.ended &&
    !storedFlow.notice &&
    storedFlow.expiresAt > now &&
    record.run === undefined
    ? storedFlow
    : undefined;
}
