/**
 * The USSD inbox: messages kept for a USSD user until the next dial (USSD cannot push), written by the
 * notifications layer and by runs, shown by the engine at the next dial, and at the one after unless a later
 * message of the first dial's session proved that its screen arrived (dropSeen).
 */
import { changeStored } from '../../store/change-stored.js';
import { keys } from '../../store/keys.js';
import type { Address, NoteWords, Notifier } from '../types.js';
import type { Store } from '../../store/types.js';

/** Pending messages live a week: a user who does not dial for longer has seen them by SMS or not at all. */
export const PENDING_TTL_SECONDS = 7 * 24 * 3600;

/** How many pending messages are kept; older ones give way (a screen shows only the latest few). */
const PENDING_MAX = 5;

/**
 * A message kept for the next dial: an outcome, or a run's own answer kept in case it never reached the phone
 * (`interim`), which the service's outcome of a request, coming later, makes redundant. `shown`: at how many
 * dials it was on the screen (the answer to a dial can be lost too, so a note not proved seen is shown at two).
 * `words`: the same note as its message key and values, shown in the person's language at the dial (they may
 * have changed it since); `text`, its words when it was kept, is shown for a note kept before notes had words.
 * `about`: the run whose question, reached late, the note says nothing was sent for; shown only while the
 * conversation still says nobody answered it (the engine's ConversationRecord.lateQuestion).
 */
export interface PendingNote {
  text: string;
  words?: NoteWords;
  interim?: true;
  shown?: number;
  about?: string;
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

/** Changes the pending notes (`change` null: nothing to write). */
async function changePending(
  store: Store,
  address: Address,
  change: (notes: PendingNote[]) => PendingNote[] | null,
): Promise<void> {
  await changeStored<unknown>(
    store,
    keys.pending(address),
    PENDING_TTL_SECONDS,
    (stored) => change(storedNotes(stored)),
    'pending messages',
  );
}

/**
 * Adds a message to show at the user's next dial. Messages show newest first (stored oldest first). An
 * `interim` note (a run's answer: "submitted, you will be notified", or how it ended) is filed under the
 * outcomes already there, as the service's outcome may already have overtaken it, and over the older interim
 * notes (the latest attempt's answer first); an outcome drops the interim notes before it. The same note not
 * shown yet is not added twice.
 */
export async function addPending(
  store: Store,
  address: Address,
  text: string,
  options: { interim?: boolean; words?: NoteWords; about?: string } = {},
): Promise<void> {
  const fields = {
    ...(options.words ? { words: options.words } : {}),
    ...(options.about ? { about: options.about } : {}),
  };
  await changePending(store, address, (kept) => {
    // Already there and not shown yet (a write tried again after its answer was lost): kept once.
    if (
      kept.some(
        (note) =>
          note.text === text &&
          !note.shown &&
          (note.interim === true) === (options.interim === true) &&
          note.about === options.about,
      )
    )
      return null;
    if (!options.interim) return [...kept.filter((note) => !note.interim), { text, ...fields }].slice(-PENDING_MAX);
    const interims = kept.filter((note) => note.interim);
    return [...interims, { text, ...fields, interim: true as const }, ...kept.filter((note) => !note.interim)].slice(
      -PENDING_MAX,
    );
  });
}

/**
 * The notes a dial showed, once a later message of the same USSD session proves that screen reached the phone:
 * dropped (they are shown at a second dial only because the answer to a dial can be lost). A note added since
 * (shown at no dial yet) stays.
 */
export async function dropSeen(store: Store, address: Address): Promise<void> {
  await changePending(store, address, (kept) => {
    const unseen = kept.filter((note) => !note.shown);
    return unseen.length === kept.length ? null : unseen;
  });
}

/**
 * The USSD "notifier": USSD cannot push, so messages wait for the next dial (the engine shows them). An outcome
 * kept is told only once a failover cannot drop it (Store.replicated, on Sentinel and on a cluster): the
 * replicas of its master hold it and it is read back (a failover between the write and the wait leaves the
 * connection on the new master, where the wait proves nothing of the write). Else the send fails, and the notification's retry keeps it
 * again: without this, an outcome journalled as told but lost with the old master was never shown.
 */
export function ussdInbox(store: Store): Notifier {
  return {
    async send(address, text, words) {
      await addPending(store, address, text, words ? { words } : {});
      if (!store.replicated) return;
      const key = keys.pending(address);
      const held = await store.replicated(key);
      const kept = storedNotes((await store.get(key))?.snapshot).some((note) => note.text === text);
      if (!held || !kept) throw new Error('the outcome kept for the next dial is not on a replica yet; told again');
    },
  };
}
