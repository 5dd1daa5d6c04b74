/**
 * The turn's reads. The record, with what a conversation starting over needs read in the same round trip (the
 * user's profile, the outcomes kept for the next dial, what the USSD guard answered where the channel keeps
 * outcomes for the next dial): a new USSD dial, where the record is mostly not kept here. Then, for a step,
 * what of those it uses, read now when the record came from memory; mid-flow on a kept record (most messages)
 * nothing is read.
 */
import { keys } from '../../store/keys.js';
import type { StoredSnapshot } from '../../store/types.js';
import type { Inbound, Participant } from '../types.js';
import type { TurnOptions } from './delivery.js';
import type { ConversationRecord, Stored } from './ledger.js';
import { profileOf, readProfile } from './profile.js';
import type { StepReads } from './step.js';

/** What was read with the record. */
export interface Alongside {
  profile: StoredSnapshot | null;
  pending: StoredSnapshot | null;
  toldLate: StoredSnapshot | null;
}

/** The record and what a conversation starting over needs, in one round trip. */
export async function readRecord(
  o: Pick<TurnOptions, 'records'>,
  key: string,
  participant: Participant,
  keepsForNextDial: boolean,
): Promise<{ stored: Stored | null; alongside: Alongside }> {
  const [read, profile, pending, toldLate] = await o.records.readWith(key, [
    keys.profile(participant.channel, participant.userId),
    keys.pending(participant),
    ...(keepsForNextDial ? [keys.toldLate(participant)] : []),
  ]);
  return {
    stored: read,
    alongside: { profile: profile ?? null, pending: pending ?? null, toldLate: toldLate ?? null },
  };
}

/**
 * What a step reads besides the record. The profile record is read when the conversation starts over, with the
 * pending outcomes of a new channel session (one round trip); otherwise the copy kept in the record serves.
 */
export async function readForStep(
  o: Pick<TurnOptions, 'store' | 'now'>,
  inbound: Inbound,
  record: ConversationRecord,
  alongside: Alongside | undefined,
  keepsForNextDial: boolean,
): Promise<StepReads> {
  const { store } = o;
  const storedFlow = record.session;
  const fresh =
    inbound.newSession === true ||
    !record.profile ||
    !storedFlow ||
    storedFlow.ended ||
    storedFlow.expiresAt <= o.now();
  // Mid-flow on a kept record (most messages) nothing is read: no Promise.all of two constants a message.
  const [read, pending, toldLate] = alongside
    ? [
        fresh ? profileOf(alongside.profile) : undefined,
        inbound.newSession ? alongside.pending : null,
        inbound.newSession ? alongside.toldLate : null,
      ]
    : fresh || inbound.newSession
      ? await Promise.all([
          fresh ? readProfile(store, inbound) : undefined,
          inbound.newSession ? store.get(keys.pending(inbound)) : null,
          inbound.newSession && keepsForNextDial ? store.get(keys.toldLate(inbound)) : null,
        ])
      : [undefined, null, null];
  const profile = (fresh ? read : record.profile) ?? { lang: 'en' };
  return { profile, pending, toldLate };
}
