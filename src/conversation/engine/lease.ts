/**
 * The lease of a run: `lease:conv:{u<n>}:<channel>:<id>` holds the run id of the one process calling a
 * conversation's services, until an expiry, and the conversation is listed in the open runs (`runs:{u<n>}`, the
 * part of the index in its slot, keys.ts) scored by that expiry, so a sweep finds it when it lapses. Here: the
 * lease of a conversation, the change that takes it in the write recording a run, its renewal every third of
 * its life while the run goes on, and its release. Not here: who may take a lease that expired and when
 * (take-over.ts), nor the writes of the run's record that end it (run-record.ts).
 */
import { errorMessage } from '../../log.js';
import type { logged } from '../../store/chat-address.js';
import { keys } from '../../store/keys.js';
import type { Lease, LeaseChange } from '../../store/types.js';
import type { RunnerOptions } from './run.js';

/** The run lease of a conversation, listed in the part of the open runs in its slot (`index`: the part it was found in). */
export const leaseOf = (key: string, index = keys.openRuns(key)): Lease => ({
  key: keys.runLease(key),
  index,
  member: key,
});

/** The lease of `key` for `token`, taken by the write that records the run (Store.set). */
export const takeLease = (key: string, token: string, ms: number): LeaseChange => ({ take: leaseOf(key), token, ms });

/**
 * Gives up a lease. `unlist` once nothing is left to run (the outcome written, or no run due); without it
 * the conversation stays listed and a sweep looks at it again (a run may still be due: a write lost or failed).
 */
export async function releaseLease(
  o: Pick<RunnerOptions, 'store' | 'logger'>,
  key: string,
  token: string,
  unlist = false,
  index?: string,
): Promise<void> {
  await o.store
    .releaseLease(leaseOf(key, index), token, unlist)
    .catch((error: unknown) => o.logger.warn({ err: errorMessage(error) }, 'engine: lease not released'));
}

/** A lease a run holds while it goes on. */
export interface HeldLease {
  /**
   * Renews the lease while it is this run's (true); never takes it again once it lapsed: by then another
   * process may have taken the run over, finished it and released the lease, and a lease taken again would
   * answer the person's next message "too many at once" until it expired.
   */
  renew(): Promise<boolean>;
  /**
   * Asked for less than a third of its life ago: ours without asking (nobody takes a lease before it expires,
   * and it was set to last at least leaseMs from then).
   */
  fresh(): boolean;
  /** Stops renewing (the run stopped). */
  stop(): void;
}

/**
 * Holds the lease of run `token` on `key`, taken at `leasedAt`: renewed every third of its life until stop(),
 * a renewal that finds it taken or fails logged (the run finds out before its next call). Once `o.handedOn` says
 * so (a stopping process handed its runs on: Runner.handOn), it is neither renewed nor fresh: another process
 * takes the run over.
 */
export function holdLease(
  o: Pick<RunnerOptions, 'store' | 'logger' | 'now' | 'leaseMs' | 'handedOn'>,
  key: string,
  token: string,
  leasedAt: number,
  log: ReturnType<typeof logged>,
): HeldLease {
  const handedOn = () => o.handedOn?.() === true;
  const lease = leaseOf(key);
  let asked = leasedAt;
  const renew = async (): Promise<boolean> => {
    if (handedOn()) return false;
    const at = o.now();
    const held = await o.store.renewLease(lease, token, o.leaseMs);
    if (held) asked = at;
    return held;
  };
  const renewal = setInterval(() => {
    renew().then(
      (held) => held || o.logger.warn(log, 'engine: a run found its lease taken'),
      (error: unknown) =>
        o.logger.warn({ ...log, err: errorMessage(error) }, 'engine: a run could not renew its lease'),
    );
  }, o.leaseMs / 3);
  renewal.unref();
  return {
    renew,
    fresh: () => !handedOn() && o.now() - asked < o.leaseMs / 3,
    stop: () => clearInterval(renewal),
  };
}
