/**
 * The USSD inbox: messages kept for a USSD user until the next dial (USSD cannot push), written by the
 * notifications layer and by runs, shown by the engine at the next two dials.
 */
import { keys } from './keys.js';
import type { Address, Notifier, SessionStore } from './types.js';

/** Pending messages live a week: a user who does not dial for longer has seen them by SMS or not at all. */
export const PENDING_TTL_SECONDS = 7 * 24 * 3600;

/** How many pending messages are kept; older ones give way (a screen shows only the latest few). */
const PENDING_MAX = 5;

/**
 * A message kept for the next dial: an outcome, or a run's own answer kept in case it never reached the phone
 * (`interim`), which the service's outcome of a request, coming later, makes redundant. `shown`: at how many
 * dials it was on the screen (the answer to a dial can be lost too, so a note is shown at two).
 */
export interface PendingNote {
  text: string;
  interim?: true;
  shown?: number;
}

/** A note is shown at this many dials, then dropped. */
const SHOWN_AT = 2;

/** The pending notes as stored (a plain string, or `{ interim }`, from before notes were counted). */
export function storedNotes(snapshot: unknown): PendingNote[] {
  return ((snapshot as Array<string | PendingNote | { interim: string }> | undefined) ?? []).map((note) =>
    typeof note === 'string' ? { text: note } : 'text' in note ? note : { text: note.interim, interim: true },
  );
}

/** The notes after a dial showed them: each counted once more, those shown at enough dials dropped. */
export function afterShown(notes: PendingNote[]): PendingNote[] {
  return notes.map((note) => ({ ...note, shown: (note.shown ?? 0) + 1 })).filter((note) => note.shown < SHOWN_AT);
}

/**
 * Adds a message to show at the user's next dial (compare-and-set, retried when another writer wins).
 * Messages show newest first. An `interim` note (a run's answer: "submitted, you will be notified", or how it
 * ended) is filed under those already there, as the service's outcome may already have overtaken it; an
 * outcome drops the interim notes before it.
 */
export async function addPending(store: SessionStore, address: Address, text: string, options: { interim?: boolean } = {}): Promise<void> {
  const key = keys.pending(address);
  for (let attempt = 0; attempt < 10; attempt++) {
    const stored = await store.get(key);
    const kept = storedNotes(stored?.snapshot);
    const notes = (options.interim ? [{ text, interim: true as const }, ...kept] : [...kept.filter((note) => !note.interim), { text }]).slice(-PENDING_MAX);
    if ((await store.set(key, notes, stored?.version ?? null, PENDING_TTL_SECONDS)) !== null) return;
  }
  throw new Error('pending messages kept changing');
}

/** The USSD "notifier": USSD cannot push, so messages wait for the next dial (the engine shows them). */
export function ussdInbox(store: SessionStore): Notifier {
  return { send: (address, text) => addPending(store, address, text) };
}
