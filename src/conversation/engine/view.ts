/**
 * What the channel may know of the conversation when it decides (ConversationView, TurnDecision): whether a
 * flow waits to be taken up, and whether there is something to say first (kept outcomes, what the USSD guard
 * answered). Pure over the record and what was read with it.
 */
import type { StoredSnapshot } from '../../store/types.js';
import type { ConversationView, Participant } from '../types.js';
import { liveNotes } from './dial-notes.js';
import type { TurnOptions } from './delivery.js';
import { openFlow, type ConversationRecord } from './ledger.js';
import { unseenAfterToldLate } from './told-late.js';

/**
 * What the channel may know of the conversation (ConversationView). A flow other than the one the
 * conversation starts with now (Change PIN for a person whose PIN was reset meanwhile) is not offered to be
 * taken up: that one comes first.
 */
export function viewOf(
  o: Pick<TurnOptions, 'runtime' | 'context' | 'now'>,
  record: ConversationRecord,
  pending: StoredSnapshot | null | undefined,
  participant: Participant,
  toldLate?: StoredSnapshot | null,
): ConversationView {
  const open = openFlow(record, o.now());
  // A flow this release cannot take up (another build's, started again at the next step) is not offered.
  const storedFlow = open && o.runtime.admit(open).kind !== 'updated' ? open : undefined;
  // The user's context (their policy) only for a flow that could be taken up.
  const home = storedFlow ? o.context(participant).home : 'menu';
  const waiting = storedFlow !== undefined && (home === 'menu' || storedFlow.flow === home);
  // Something to say of what the USSD guard answered counts as a note: no flow is offered to be taken up first.
  const notes =
    liveNotes(pending, record).length > 0 || unseenAfterToldLate(record, toldLate, pending, o.now()).length > 0;
  return { waiting, notes };
}
