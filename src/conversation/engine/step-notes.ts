/**
 * The lines a step shows above its answer, and what showing them means for the record. On a new dial: the
 * outcomes kept for it (dial-notes.ts), "nothing was sent" first for the deliveries the USSD guard answered and
 * nothing will tell (their ledger entries answered so, so their work, if it comes late, finds them answered and
 * sends nothing); then the step's own notes (the service was updated, the flow expired). Pure.
 */
import type { Lang } from '../../../flows/types.js';
import type { Step } from '../flow/flow-runtime.js';
import type { StoredSnapshot } from '../../store/types.js';
import type { Inbound, Prompt } from '../types.js';
import type { PendingNote } from '../channels/ussd-inbox.js';
import { liveNotes, pendingNotes, withToldLate } from './dial-notes.js';
import type { TurnOptions } from './delivery.js';
import { withAnswer, type ConversationRecord, type Entry, type LateQuestion } from './ledger.js';
import { unseenAfterToldLate } from './told-late.js';

export interface StepNotes {
  /** Deliveries the USSD guard answered "dial again" for, which this dial tells nothing was sent. */
  unseen: string[];
  /** Their answer, "nothing was sent", when there are any. */
  nothingSent: Prompt | undefined;
  /** The record's ledger with their answers. */
  ledger: Entry[];
  /** The kept notes a dial shows (dial-notes.ts liveNotes): written back counted as shown. */
  live: PendingNote[];
  /** The dial's notes shown (kept outcomes, "nothing was sent"), under their header. */
  shownPending: string[];
  /** Every line above the answer: the dial's notes, then the step's own. */
  notes: string[];
  /**
   * The record's marks: the dial's notes were shown; a question reached late (ConversationRecord.lateQuestion),
   * kept until a step answers its flow (a new dial's does not).
   */
  marked: { notesShown?: true; lateQuestion?: LateQuestion };
  /** This message followed a dial that showed notes, in its USSD session: they reached the phone. */
  seen: boolean;
}

export function stepNotes(
  o: Pick<TurnOptions, 'answers' | 'dialNote' | 'now'>,
  inbound: Inbound,
  record: ConversationRecord,
  planned: Step,
  pending: StoredSnapshot | null,
  toldLate: StoredSnapshot | null,
  lang: Lang,
): StepNotes {
  const { answers } = o;
  // A new dial after the USSD guard answered "dial again to see the result" for deliveries nothing will tell:
  // this dial says that nothing was sent, and records it as their answer, so their work, if it comes late (a
  // turn stuck behind a stalled Redis), finds them answered and sends nothing.
  const unseen = inbound.newSession ? unseenAfterToldLate(record, toldLate, pending, o.now()) : [];
  const nothingSent = unseen.length > 0 ? answers.notice('common.runFailed', lang, true) : undefined;
  const ledger = unseen.reduce((entries, lost) => withAnswer(entries, lost, nothingSent!), record.ledger);
  const live = liveNotes(pending, record);
  const shownPending = withToldLate(o, pendingNotes(o, live, lang), nothingSent, lang);
  const notes = [...shownPending, ...planned.notes.map((t) => answers.text(t, lang))];
  // Notes shown now are marked in the record; the next message of this session drops them (and the mark).
  const { lateQuestion } = record;
  const marked = {
    ...(shownPending.length > 0 ? { notesShown: true as const } : {}),
    ...(lateQuestion && (inbound.newSession || record.session?.runId !== lateQuestion.flowRun) ? { lateQuestion } : {}),
  };
  const seen = !inbound.newSession && record.notesShown === true;
  return { unseen, nothingSent, ledger, live, shownPending, notes, marked, seen };
}
