/**
 * Telling a run's outcome late: to a person whose delivery was answered "processing" at its deadline (or whose
 * run was taken over), pushed through onLateOutcome and, where the channel keeps outcomes for the next dial
 * (USSD), kept in the USSD inbox; and telling them plainly that nothing was sent when the write that started
 * their run was lost, or never landed (followUnknown). Not here: deciding that an answer is late (deadline.ts),
 * nor writing the outcome in the record (run-record.ts).
 */
import type { AnyMachineSnapshot } from 'xstate';
import type { Lang, Text } from '../../../flows/types.js';
import { errorMessage } from '../../log.js';
import { logged } from '../../store/chat-address.js';
import { rideOut } from '../../store/ride-out.js';
import { addPending } from '../channels/ussd-inbox.js';
import { isMoney, type StoredFlow } from '../flow/flow-runtime.js';
import type { Address, Participant, Prompt } from '../types.js';
import type { Stored } from './ledger.js';
import { refOf, type RunnerOptions } from './run.js';

/** How often, and for how long, a run-starting write whose landing is unknown is read again (followUnknown). */
const UNKNOWN_READ_EVERY_MS = 1_000;
const UNKNOWN_READ_FOR_MS = 5 * 60_000;

/**
 * The write that started this run is gone from the store (a failover dropped it) and no money-moving call was
 * made under it: none will be. Its waiters may have been told "still working on it" (and the next USSD dial
 * would ask again for what the flow waited for), so they are told plainly, late, that nothing was sent (on
 * USSD kept for the next dial), and the spend an earlier step reserved under the payment's key is given
 * back: no run will pay under it (the key is this run's; a new start makes another).
 */
export async function nothingSent(
  o: RunnerOptions,
  participant: Participant,
  storedFlow: StoredFlow,
  snapshot: AnyMachineSnapshot,
  lang: Lang,
) {
  const { runtime, answers, logger } = o;
  const log = logged(participant);
  logger.warn(
    log,
    'engine: the write that started this run is gone from the store (a failover dropped it); stopped before the next service call, told that nothing was sent',
  );
  const ref = isMoney(snapshot) ? refOf(runtime.invocation(storedFlow.flow, snapshot)) : undefined;
  if (ref && o.giveBack)
    await o
      .giveBack(ref)
      .catch((error: unknown) =>
        logger.warn({ ...log, err: errorMessage(error) }, 'engine: a reserved spend was not given back'),
      );
  await deliverLate(o, participant, answers.notice('common.runFailed', lang, true), false);
}

/**
 * A run's outcome for a chat whose delivery was answered "processing": pushed, and where answers are kept for
 * the next dial (USSD) kept there (`about`: see {@link keepForNextDial}).
 */
export async function deliverLate(
  o: RunnerOptions,
  participant: Participant,
  prompt: Prompt,
  kept: boolean,
  words?: Text,
  about?: string,
): Promise<void> {
  const address: Address = { channel: participant.channel, conversationId: participant.conversationId };
  try {
    // Only outcomes are kept for the next dial: a question shown late (the next step of a flow whose USSD
    // session ended meanwhile) answers nothing there; the next dial starts over (or resumes) instead.
    if (o.capabilitiesOf(address.channel).keepsForNextDial && prompt.final && !kept)
      await keepForNextDial(o, participant, prompt, words, about);
    await o.onLateOutcome?.(address, prompt);
  } catch (error) {
    o.logger.error({ ...logged(address), err: errorMessage(error) }, 'engine: late outcome not delivered');
  }
}

/**
 * A run's USSD answer kept for the next dial, until the service's outcome supersedes it (an interim note).
 * A dropped connection is ridden out (ride-out.ts); false when it was not kept (deliverLate tries once more
 * after the outcome is written). `words`: the prompt's words as catalogue text, so the dial says them in the
 * person's language then (absent: its text as it is now). `about`: the run whose late question the note is
 * about, shown only while nobody answered that question (PendingNote.about).
 */
export async function keepForNextDial(
  o: RunnerOptions,
  participant: Participant,
  prompt: Prompt,
  words?: Text,
  about?: string,
): Promise<boolean> {
  const address: Address = { channel: participant.channel, conversationId: participant.conversationId };
  try {
    await rideOut(() =>
      addPending(o.store, address, prompt.text, {
        interim: true,
        ...(words ? { words } : {}),
        ...(about ? { about } : {}),
      }),
    );
    return true;
  } catch (error) {
    o.logger.error({ ...logged(address), err: errorMessage(error) }, 'engine: outcome not kept for the next dial');
    return false;
  }
}

/**
 * The write that would start run `token` failed and the record could not be read to tell whether it landed:
 * its delivery was answered "processing". The record is read again every {@link UNKNOWN_READ_EVERY_MS} (for
 * up to {@link UNKNOWN_READ_FOR_MS}) until it can be. Holding the run's id, the write landed: a sweep takes
 * the run over once its lease expires and delivers its outcome. Left as it was (`expected`), the write did
 * not land and never will, and nothing runs: the user is told so late ("nothing was sent, start again").
 * Changed by another write, the delivery that wrote it answers. Never throws.
 */
export function followUnknown(
  o: RunnerOptions,
  stopped: () => boolean,
  key: string,
  participant: Participant,
  token: string,
  expected: number | null,
  lang: Lang,
): void {
  void (async () => {
    for (const until = o.now() + UNKNOWN_READ_FOR_MS; o.now() < until && !stopped();) {
      await new Promise<void>((resolve) => setTimeout(resolve, UNKNOWN_READ_EVERY_MS).unref());
      let read: Stored | null;
      try {
        read = await o.records.read(key);
      } catch {
        continue;
      }
      if (read?.record.run?.id === token) return;
      if ((read?.version ?? null) === expected) {
        o.logger.warn(
          logged(participant),
          'engine: a run-starting write found not to have landed; told late that nothing was sent',
        );
        await deliverLate(o, participant, o.answers.notice('common.runFailed', lang, true), false);
      }
      return;
    }
    o.logger.error(
      logged(participant),
      'engine: whether a run started could not be read; its user was told "processing"',
    );
  })();
}
