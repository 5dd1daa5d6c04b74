/**
 * A step that lands where the flow waits for the person (no call to make): its screen rendered with the notes
 * above it, written with the delivery's ledger entry, the channel's state and the profile in one
 * compare-and-set, then what follows the step (after-step.ts).
 */
import type { AnyMachineSnapshot } from 'xstate';
import type { Lang } from '../../../flows/types.js';
import type { StoredSnapshot } from '../../store/types.js';
import type { Step } from '../flow/flow-runtime.js';
import { afterStep, forgetToldLate } from './after-step.js';
import { CONFLICT, who, type Delivered, type Delivery, type TurnOptions } from './delivery.js';
import { withAnswer, type ConversationRecord } from './ledger.js';
import type { StepNotes } from './step-notes.js';

export async function showScreen<S>(
  o: TurnOptions,
  delivery: Delivery<S>,
  planned: Step,
  landed: AnyMachineSnapshot,
  read: { pending: StoredSnapshot | null; toldLate: StoredSnapshot | null },
  shown: StepNotes,
  lang: Lang,
): Promise<Delivered<S> | typeof CONFLICT> {
  const { answers, logger } = o;
  const { inbound, id, key, stored, record, after, answerBy } = delivery;
  const { unseen, nothingSent, ledger, shownPending, notes, marked, seen } = shown;
  const screen = answers.withNotes(answers.screen(planned.storedFlow, lang, inbound.channel), notes);
  const prompt = shownPending.length > 0 ? { ...screen, noted: true } : screen;
  const state = after(prompt);
  // A final screen tagged `secret` (a link code) is shown once: the record keeps neither it nor its flow,
  // and a resend of this delivery is told to ask again.
  const shownOnce = landed.status === 'done' && landed.hasTag('secret');
  const kept = shownOnce ? answers.notice('common.shownOnce', lang, true) : prompt;
  const next: ConversationRecord = {
    ...(shownOnce ? {} : { session: planned.storedFlow }),
    ledger: withAnswer(ledger, id, kept),
    channel: shownOnce ? after(kept) : state,
    profile: planned.profile,
    ...marked,
  };
  if (!(await o.records.write(key, next, stored?.version ?? null))) return CONFLICT;
  // Kept outcomes on a screen written past the channel's deadline may never reach the phone (the USSD router's
  // guard answers "dial again" in its place): not counted as shown, so two later dials still show them.
  const inTime = answerBy === undefined || o.now() <= answerBy;
  if (unseen.length > 0) {
    logger.warn(who(inbound), 'engine: a dial told that nothing was sent for what the USSD guard answered');
    // Said on a screen that may not reach the phone, and this dial left the flow for the menu (the next dial
    // finds no flow waiting): kept for the next dial as a run's late answer is.
    if (!inTime) await o.runner.keepForNextDial(inbound, nothingSent!, { key: 'common.runFailed' });
  }
  if (read.toldLate && inbound.newSession && !record.run) await forgetToldLate(o, inbound);
  const saving = afterStep(o, inbound, planned, read.pending, shown.live, shownPending.length > 0 && inTime, seen);
  if (saving) await saving;
  return { prompt, state };
}
