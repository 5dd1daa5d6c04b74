/**
 * How a record that several processes share is changed: read it, change it, write it back with
 * compare-and-set, and on a conflict read it again and redo the change. Held payments, payouts, the sweeps'
 * due lists, the USSD inbox and the records of what we made all change this way.
 */
import type { Store } from './types.js';

/** Conflicts in a row before giving up: others writing the same record this often means something is wrong. */
const ATTEMPTS = 10;

/**
 * Changes the record under `key`: `edit` gets what is stored (undefined when nothing is) and answers the new
 * value, or null to write nothing. Answers the value it last read and the one written (null when nothing was).
 * Throws "`what` kept changing" after {@link ATTEMPTS} conflicts.
 */
export async function changeStored<T>(
  store: Store,
  key: string,
  ttlSeconds: number,
  edit: (current: T | undefined) => T | null,
  what: string,
): Promise<{ before: T | undefined; after: T | null }> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const stored = await store.get(key);
    const before = stored?.snapshot as T | undefined;
    const after = edit(before);
    if (after === null) return { before, after: null };
    if ((await store.set(key, after, stored?.version ?? null, ttlSeconds)) !== null) return { before, after };
  }
  throw new Error(`${what} kept changing`);
}
