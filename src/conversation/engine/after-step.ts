/**
 * What follows a committed step; none of it may take the step's answer away: the flow ends and moves told,
 * the profile's remembered changes saved, the kept outcomes a dial showed marked shown (then dropped once the
 * next message proves they reached the phone), and what the USSD guard answered forgotten once a dial said what
 * became of it. Failures are logged, never thrown.
 */
import { errorMessage } from '../../log.js';
import { keys } from '../../store/keys.js';
import type { StoredSnapshot } from '../../store/types.js';
import { afterShown, dropSeen, PENDING_TTL_SECONDS, type PendingNote } from '../channels/ussd-inbox.js';
import type { Step } from '../flow/flow-runtime.js';
import type { Inbound } from '../types.js';
import { who, type TurnOptions } from './delivery.js';
import { rememberProfile } from './profile.js';

/** The deliveries the USSD guard answered, once a dial has said what became of them. */
export async function forgetToldLate(o: Pick<TurnOptions, 'store' | 'logger'>, inbound: Inbound): Promise<void> {
  await o.store
    .delete(keys.toldLate(inbound))
    .catch((error: unknown) =>
      o.logger.warn(
        { ...who(inbound), err: errorMessage(error) },
        'engine: deliveries the USSD guard answered not forgotten',
      ),
    );
}

/**
 * What follows a committed step. `seen`: this message followed a dial that showed pending notes, in its
 * session, so they reached the phone and are dropped. `live`: the kept notes a dial shows (the others, about a
 * question answered since, go when these are written back). Undefined when there is nothing to write (most steps:
 * nothing remembered, no kept outcomes shown): no promise to wait for.
 */
export function afterStep(
  o: Pick<TurnOptions, 'store' | 'logger' | 'onFlowEnd' | 'onTransition'>,
  inbound: Inbound,
  planned: Step,
  pending: StoredSnapshot | null,
  live: PendingNote[],
  shownPending: boolean,
  seen: boolean,
): Promise<void> | undefined {
  const { store, logger } = o;
  for (const end of planned.ended ?? []) o.onFlowEnd?.(end);
  for (const move of planned.moves ?? []) o.onTransition?.(move);
  const remembered = Object.keys(planned.remember).length > 0;
  const shown = pending !== null && shownPending;
  if (!remembered && !shown && !seen) return undefined;
  return (async () => {
    try {
      await rememberProfile(store, inbound, planned.remember, logger); // writes nothing when nothing is remembered
      if (shown) await store.set(keys.pending(inbound), afterShown(live), pending.version, PENDING_TTL_SECONDS);
      if (seen) await dropSeen(store, inbound);
    } catch (error) {
      logger.warn({ ...who(inbound), err: errorMessage(error) }, 'engine: profile or shown outcomes not saved');
    }
  })();
}
