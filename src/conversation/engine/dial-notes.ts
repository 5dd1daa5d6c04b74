/**
 * The dial notes: what a new USSD dial (a new channel session) shows above its screen of the outcomes kept for
 * it in the USSD inbox, newest first under one header, each said again in the dial's language and shortened
 * whole to the room a screen leaves, with "nothing was sent" first for what the USSD guard answered. Pure: the
 * turn reads the inbox (turn-read.ts) and marks the notes shown (step-notes.ts, after-step.ts). Not here:
 * keeping an outcome for the next dial (late-outcome.ts, channels/ussd-inbox.ts).
 */
import type { Lang } from '../../../flows/types.js';
import type { StoredSnapshot } from '../../store/types.js';
import { storedNotes, type PendingNote } from '../channels/ussd-inbox.js';
import { DIAL_NOTES_MAX, fitWhole } from '../flow/plain-text.js';
import type { NoteWords, Prompt } from '../types.js';
import type { Answers } from './answers.js';
import type { ConversationRecord } from './ledger.js';

export interface DialNotesOptions {
  answers: Answers;
  /** EngineOptions.dialNote: a note of the notifications' catalogue in the person's language. */
  dialNote?: (words: NoteWords, lang: Lang) => string;
}

/**
 * A kept note in the language of the dial: said again from its key and values when it has them (the person
 * may have changed language since it was kept, or it was kept in another), else its words as kept.
 */
function noteText(o: DialNotesOptions, note: PendingNote, lang: Lang): string {
  const { words } = note;
  if (!words) return note.text;
  if (words.from !== 'notify') return o.answers.text(words, lang);
  return o.dialNote ? o.dialNote(words, lang) : note.text;
}

/**
 * The pending notes a dial shows: all but one about a late question (PendingNote.about) the conversation no
 * longer marks (ConversationRecord.lateQuestion): the person answered that question since.
 */
export function liveNotes(pending: StoredSnapshot | null | undefined, record: ConversationRecord): PendingNote[] {
  return storedNotes(pending?.snapshot).filter(
    (note) => note.about === undefined || note.about === record.lateQuestion?.run,
  );
}

/** Pending outcomes to show on a new channel session (USSD dial), newest first, under a header. */
export function pendingNotes(o: DialNotesOptions, notes: PendingNote[], lang: Lang): string[] {
  const texts = notes.map((note) => noteText(o, note, lang));
  if (texts.length === 0) return [];
  // Newest first: the latest outcome ("Done...") supersedes the earlier ones ("submitted, you will be
  // notified"), so it is the one that must fit. Each is shortened whole to the room left (never cut
  // mid-word by the screen); older ones that do not fit are left to their SMS.
  const shown: string[] = [];
  let room = DIAL_NOTES_MAX;
  for (const text of [...texts].reverse()) {
    const fitted = fitWhole(text, room);
    if (shown.length > 0 && fitted !== text) break;
    shown.push(fitted);
    room -= fitted.length + 1;
    if (room <= 0) break;
  }
  return [o.answers.text({ key: 'common.pendingOutcome' }, lang), ...shown];
}

/** The dial's notes with "nothing was sent" (for what the USSD guard answered) first, under the notes' header. */
export function withToldLate(
  o: DialNotesOptions,
  shown: string[],
  nothingSent: Prompt | undefined,
  lang: Lang,
): string[] {
  if (!nothingSent) return shown;
  const [header, ...rest] = shown.length > 0 ? shown : [o.answers.text({ key: 'common.pendingOutcome' }, lang)];
  return [header!, fitWhole(nothingSent.text, DIAL_NOTES_MAX), ...rest];
}
