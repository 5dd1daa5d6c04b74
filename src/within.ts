/**
 * A wait bounded in time: the engine's waiters (a run's outcome, up to the channel's deadline), the USSD hop's
 * guard past the engine's deadline, Slack's 3-second acknowledgement, a shared file's download, the funnel's
 * last flush at shutdown.
 */

/** Resolves to the promise's value, or to undefined when `ms` pass first (the timer is always cleared). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
