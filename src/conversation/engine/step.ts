/**
 * One new delivery against the record as read: a user the access policy does not know is refused; the
 * continuation rule gives the step (continuation.ts); a later build's flow is left alone; while a run is out
 * the delivery is listed waiting and waits for it; a step into a PIN check runs the check first
 * (secret-check.ts); then the step is written, with the notes it shows (step-notes.ts): its screen
 * (show-screen.ts), or its run started (start-run.ts). A lost compare-and-set is a CONFLICT: the turn reads
 * again and redoes the step.
 */
import type { UserProfile } from '../../../flows/types.js';
import type { StoredSnapshot } from '../../store/types.js';
import { isBusy, isSecret } from '../flow/flow-runtime.js';
import { nextStep } from './continuation.js';
import { CONFLICT, who, type Delivered, type Delivery, type TurnOptions } from './delivery.js';
import { WAITING, withAnswer } from './ledger.js';
import { checkSecrets, checkTooLate } from './secret-check.js';
import { showScreen } from './show-screen.js';
import { startRun } from './start-run.js';
import { stepNotes } from './step-notes.js';

/** What a step reads besides the record: the user's profile, the dial's kept outcomes and what the guard answered. */
export interface StepReads {
  profile: UserProfile;
  pending: StoredSnapshot | null;
  toldLate: StoredSnapshot | null;
}

export async function step<S>(
  o: TurnOptions,
  delivery: Delivery<S>,
  read: StepReads,
): Promise<Delivered<S> | typeof CONFLICT> {
  const { answers, runtime, logger } = o;
  const { inbound, id, key, stored, record, after, answerBy } = delivery;
  const { profile, pending, toldLate } = read;
  if (!o.policy.role(inbound.channel, inbound.userId)) {
    logger.info(who(inbound), 'engine: refused a user the access policy does not know');
    const prompt = answers.notice('common.notAllowed', profile.lang, true);
    return { prompt, state: after(prompt) };
  }
  const ctx = o.context(inbound);
  const stepped = nextStep(o, inbound, record, profile, ctx);
  if (stepped === 'newer') {
    // Nothing written: the record stays the later build's, for a process of that build to answer.
    logger.info(who(inbound), 'engine: a conversation of a later build left alone; answered try again');
    const prompt = answers.notice('common.tryAgainSoon', profile.lang, true);
    return { prompt, state: after(prompt) };
  }
  if (stepped === 'wait') {
    // A run is out: this delivery waits for its outcome, listed as waiting first so a copy of it waits too.
    const written = await o.records.write(
      key,
      { ...record, ledger: withAnswer(record.ledger, id, WAITING) },
      stored!.version,
    );
    if (!written) return CONFLICT;
    const waiter = { key, participant: inbound, id, lang: profile.lang, notes: [], after, answerBy };
    return o.runner.wait(waiter, written) as Promise<Delivered<S>>;
  }
  // Only a step into a PIN check waits for one (most steps: no async call to wait through).
  const planned = isSecret(runtime.restore(stepped.storedFlow))
    ? await checkSecrets(o, inbound, stepped, ctx, answerBy)
    : stepped;
  if (!planned) return checkTooLate(o, delivery, profile.lang);
  const lang = planned.profile.lang;
  const shown = stepNotes(o, inbound, record, planned, pending, toldLate, lang);
  const landed = runtime.restore(planned.storedFlow);
  if (!isBusy(landed)) return showScreen(o, delivery, planned, landed, read, shown, lang);
  return startRun(o, delivery, planned, read, shown, lang);
}
