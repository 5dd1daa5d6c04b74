/**
 * The journal as the product's parts use it: the intent written before the money moves (one round trip, its
 * failure stops the money), every later fact handed to the buffered writer (never waited for), and who asked
 * in the words of the access policy (their role). The parts take a {@link MoneyJournal}; app.ts makes it.
 */
import type { Reservation } from '../conversation/calls/limits.js';
import type { Intent, JournalEvent } from './journal.js';
import { Journal } from './journal.js';
import type { DoubtReason, OwedOutcomes } from './owed.js';
import type { JournalWriter } from './writer.js';

export { Journal } from './journal.js';
export { OwedOutcomes, type DoubtReason } from './owed.js';
export type { Intent, JournalEvent } from './journal.js';

export interface MoneyJournal {
  /**
   * Commits the intent before the money-moving call; throws when the database does not take it. Gives the
   * operation's short ref (src/journal/short-ref.ts), the reference people are shown. With a reservation, both
   * in one statement (Journal.intend): throws OverDailyLimit when the daily limit refused it (no intent).
   */
  intend(intent: Intent, reservation?: Reservation): Promise<string | void>;
  /**
   * Whether the journal holds the operation `ref` (one read): an intent whose write failed may have been
   * committed all the same (a timeout after the server took it). Throws when the database does not answer.
   */
  holds?(ref: string): Promise<boolean>;
  /** Hands a later fact to the buffered writer (returns at once). */
  write(event: JournalEvent): void;
  /** Writes a later fact now (awaited); throws when the database does not take it. */
  append?(event: JournalEvent): Promise<boolean>;
  /**
   * Writes, awaited, that the outcome owed of `ref` is in doubt (./owed.ts): before the person is told it is
   * being checked. Absent without owed outcomes; throws when the database does not answer.
   */
  inDoubt?(ref: string, reason: Exclude<DoubtReason, 'intent'>): Promise<boolean>;
  /**
   * Writes a fact at once (a refusal that gives a reservation back before the person is told); handed to the
   * buffered writer when the database does not take it. Never rejects.
   */
  writeNow(event: JournalEvent): Promise<void>;
  /** Who a channel user is to the access policy: their role ('' when it knows none) and person, if any. */
  who(channel: string, userId: string): Who;
}

export interface Who {
  role: string;
  person?: string;
}

export function moneyJournal(
  journal: Journal,
  writer: JournalWriter,
  who: (channel: string, userId: string) => Partial<Who>,
  owed?: OwedOutcomes,
): MoneyJournal {
  return {
    intend: (intent, reservation) => journal.intend(intent, reservation),
    holds: async (ref) => (await journal.byRef(ref)) !== undefined,
    write: (event) => writer.write(event),
    append: (event) => journal.append(event),
    ...(owed ? { inDoubt: (ref: string, reason: Exclude<DoubtReason, 'intent'>) => owed.inDoubt(ref, reason) } : {}),
    writeNow: async (event) => {
      try {
        await journal.append(event);
      } catch {
        writer.write(event);
      }
    },
    who: (channel, userId) => {
      const { role, person } = who(channel, userId);
      return { role: role ?? '', ...(person ? { person } : {}) };
    },
  };
}

/** Answer/refusal/state/approval/telling events, built the one way (re-exported for the parts that write them). */
export const events = {
  answer: Journal.answerEvent,
  refusal: Journal.refusalEvent,
  state: Journal.stateEvent,
  approval: Journal.approvalEvent,
  telling: Journal.tellingEvent,
};
