/**
 * What the USSD guard answered on its own ("taking longer than expected, dial again to see the result",
 * TurnEngine.toldLate): the deliveries it answered, kept for the person's next dial, and of those the ones that
 * dial says nothing was sent for.
 */
import type { Logger } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import { keys } from '../../store/keys.js';
import { pauseAfter, STORE_TRIES } from '../../store/ride-out.js';
import type { Store, StoredSnapshot } from '../../store/types.js';
import type { Participant } from '../types.js';
import { liveNotes } from './dial-notes.js';
import { answerOf, deliveryId, openFlow, WAITING, type ConversationRecord } from './ledger.js';

/** How long deliveries answered by the USSD guard are remembered for the next dial (the resume window's order). */
export const TOLD_LATE_TTL_SECONDS = 3600;
/** Deliveries the guard answered that are remembered at once (the newest). */
const TOLD_LATE_KEPT = 5;

/** The delivery ids kept under keys.toldLate, oldest first. */
function toldLateIds(snapshot: unknown): string[] {
  const ids = (snapshot as { ids?: unknown } | null | undefined)?.ids;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}

/**
 * Of the deliveries the USSD guard answered "taking longer, dial again to see the result" (keys.toldLate),
 * those the next dial says nothing was sent for: the person was promised a result and nothing will show one.
 * Only while the conversation's flow waits at a question of its own (not the menu, not ended or expired, no run
 * out): such a flow has made no money call (a money call's state is held by a replica before it is made,
 * runner.ts durable, so no failover puts a flow back before one; after it the flow ends with its outcome), and
 * the dial would otherwise offer to take it up there as if nothing had been said. Not while outcomes are kept
 * for the dial (they are the result). Of those deliveries, all but one answered after a money call: the rest
 * have no answer (their work dropped: a write a failover discarded, a process that died, a turn stuck before it
 * decided anything) or one the person never saw (answered after the guard: a screen of the flow, or a PIN
 * check's "Nothing was sent" whose copy kept for the dial a failover dropped). A flow that ended (a payment
 * told, the menu since) says nothing here: a dial after a payment, answered by the guard, is no news of it.
 */
export function unseenAfterToldLate(
  record: ConversationRecord,
  toldLate: StoredSnapshot | null | undefined,
  pending: StoredSnapshot | null | undefined,
  now: number,
): string[] {
  const ids = toldLateIds(toldLate?.snapshot);
  if (ids.length === 0 || !openFlow(record, now) || liveNotes(pending, record).length > 0) return [];
  return ids.filter((id) => {
    const answer = answerOf(record, id);
    return answer === undefined || answer === WAITING || answer.money !== true;
  });
}

/**
 * Remembers, for the person's next dial, that the USSD guard answered delivery `messageId` "taking longer than
 * expected, dial again to see the result" before the engine did (its work may be stuck behind a stalled Redis,
 * or dropped). On Sentinel and on a cluster it waits once for the replicas to hold it (Store.replicated,
 * up to a second), not until they do: that wait holds the store's connection (to the key's master), and the
 * guard answering says the connection is slow already (every delivery of the process waits behind it). Tried again through store failures. Never throws.
 */
export async function keepToldLate(
  store: Store,
  participant: Participant,
  messageId: string,
  logger: Logger,
): Promise<void> {
  const key = keys.toldLate(participant);
  const id = deliveryId(messageId);
  for (let tries = 1; tries <= STORE_TRIES; tries++) {
    try {
      const stored = await store.get(key);
      const ids = toldLateIds(stored?.snapshot);
      if (ids.includes(id)) return;
      const next = { ids: [...ids, id].slice(-TOLD_LATE_KEPT) };
      if ((await store.set(key, next, stored?.version ?? null, TOLD_LATE_TTL_SECONDS)) === null) continue;
      await store.replicated?.(key);
      return;
    } catch {
      await pauseAfter(tries);
    }
  }
  logger.error(logged(participant), 'engine: a delivery the USSD guard answered could not be remembered');
}
