/**
 * A wait bounded in time: the engine's waiters (a run's outcome, up to the channel's deadline), the USSD hop's
 * guard past the engine's deadline, Slack's 3-second acknowledgement, a shared file's download, the funnel's
 * last flush at shutdown.
 */

/**
 * Resolves to the promise's value (or rejects with its error), or to undefined when `ms` pass first; the timer
 * is cleared as the promise settles. One promise and one timer: every USSD hop waits through this, so it
 * allocates no second promise to race (bench/profile/hops.ts --alloc shows what a hop allocates).
 */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve, reject) => {
    const timer = setTimeout(resolve, ms, undefined);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
