/**
 * Riding out a blip of the store: a command that fails is tried again, 100 ms doubling between, up to
 * {@link STORE_TRIES} tries (1.5 s in all, inside every channel's deadline). A dropped Redis connection, made
 * again, is ridden out; a longer outage throws the last error. Used by the runner's writes and kept notes and
 * by the read-back of a run-starting write (start-run.ts).
 */

/** Tries of a store command before its failure stands. */
export const STORE_TRIES = 5;

/** The wait after the `failures`-th failure: 100 ms doubling. */
export function pauseAfter(failures: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 100 * 2 ** (failures - 1)));
}

/** `work`, tried again through store failures: its result, or the last error after {@link STORE_TRIES} tries. */
export async function rideOut<T>(work: () => Promise<T>): Promise<T> {
  for (let failures = 0; ;) {
    try {
      return await work();
    } catch (error) {
      if (++failures === STORE_TRIES) throw error;
      await pauseAfter(failures);
    }
  }
}
