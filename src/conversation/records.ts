/**
 * The USSD inbox: messages kept for a USSD user until the next dial (USSD cannot push), written by the
 * notifications layer and by late runs, shown and emptied by the engine at the next dial.
 */
import { keys } from './keys.js';
import type { Address, Notifier, SessionStore } from './types.js';

/** Pending messages live a week: a user who does not dial for longer has seen them by SMS or not at all. */
export const PENDING_TTL_SECONDS = 7 * 24 * 3600;

/** How many pending messages are kept; older ones give way (a screen shows only the latest few). */
const PENDING_MAX = 5;

/**
 * A message kept for the next dial: an outcome (a string), or a run's own answer kept in case it never reached
 * the phone (`interim`), which the service's outcome of the same request, coming later, makes redundant.
 */
export type PendingNote = string | { interim: string };

/** The texts of pending notes, oldest first. */
export const pendingTexts = (snapshot: unknown): string[] =>
  ((snapshot as PendingNote[] | undefined) ?? []).map((note) => (typeof note === 'string' ? note : note.interim));

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
    const kept = (stored?.snapshot as PendingNote[] | undefined) ?? [];
    const notes = (options.interim ? [{ interim: text }, ...kept] : [...kept.filter((note) => typeof note === 'string'), text]).slice(-PENDING_MAX);
    if ((await store.set(key, notes, stored?.version ?? null, PENDING_TTL_SECONDS)) !== null) return;
  }
  throw new Error('pending messages kept changing');
}

/** The USSD "notifier": USSD cannot push, so messages wait for the next dial (the engine shows them). */
export function ussdInbox(store: SessionStore): Notifier {
  return { send: (address, text) => addPending(store, address, text) };
}
