/**
 * What the engine remembers of a user across conversations (`profile:<channel>:<userId>`): the language and
 * the candidates a finished flow asked to remember. A conversation keeps a copy in its record (ledger.ts) and
 * reads this one when it starts over.
 */
import type { UserProfile } from '../../../flows/types.js';
import type { Logger } from '../../log.js';
import { keys } from '../../store/keys.js';
import type { Participant } from '../types.js';
import type { Store, StoredSnapshot } from '../../store/types.js';

/** A year: a language choice outlives any flow. */
const PROFILE_TTL_SECONDS = 365 * 24 * 3600;
/** Attempts when other writers keep winning the compare-and-set. */
const ATTEMPTS = 5;

/** The user's stored profile, or undefined when there is none. */
export async function readProfile(
  store: Store,
  who: Pick<Participant, 'channel' | 'userId'>,
): Promise<UserProfile | undefined> {
  return profileOf(await store.get(keys.profile(who.channel, who.userId)));
}

/** The profile a read of `profile:<channel>:<userId>` found (turn-read.ts reads it with the conversation). */
export function profileOf(stored: StoredSnapshot | null): UserProfile | undefined {
  return stored?.snapshot as UserProfile | undefined;
}

/** Merges changes into the stored profile (compare-and-set, retried); no changes, no write. */
export async function rememberProfile(
  store: Store,
  who: Pick<Participant, 'channel' | 'userId'>,
  changes: Partial<UserProfile>,
  logger: Logger,
): Promise<void> {
  if (Object.keys(changes).length === 0) return;
  const key = keys.profile(who.channel, who.userId);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const stored = await store.get(key);
    const merged = { lang: 'en', ...(stored?.snapshot as UserProfile | undefined), ...changes };
    if ((await store.set(key, merged, stored?.version ?? null, PROFILE_TTL_SECONDS)) !== null) return;
  }
  logger.warn({ channel: who.channel }, 'engine: profile not saved after repeated conflicts');
}
