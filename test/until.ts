/**
 * The suite's one wait: polls `probe` until it gives a value (anything but `undefined` or `false`) and returns
 * that value. A probe that throws has not got there yet (a server still starting, a row not yet written); its
 * last error is in the timeout's message. Waits on Node's own timer and clock, kept before any test fakes them,
 * so a test under vitest's fake timers still waits in real time (it moves its fake time in the probe if it must).
 */
const realSetTimeout = globalThis.setTimeout;
const realNow = performance.now.bind(performance);

export interface UntilOptions {
  /** How long to wait before giving up (ms). */
  timeoutMs?: number;
  /** How long between two probes (ms). */
  everyMs?: number;
}

export async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 20_000, everyMs = 20 }: UntilOptions = {},
): Promise<Exclude<T, undefined | false>> {
  let last: unknown;
  for (const started = realNow(); ;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
      last = value;
    } catch (error) {
      last = error;
    }
    if (realNow() - started >= timeoutMs) break;
    await new Promise((resolve) => realSetTimeout(resolve, everyMs));
  }
  const seen = last instanceof Error ? last.message : JSON.stringify(last);
  throw new Error(`gave up after ${timeoutMs} ms waiting for ${what} (last: ${seen})`);
}

/**
 * A probe for {@link until} made of a reading and a test of it: the reading once `ok` holds of it; until then it
 * throws with the reading, so a timeout names the last one.
 */
export function reading<T>(read: () => T | Promise<T>, ok: (value: T) => boolean): () => Promise<T> {
  return async () => {
    const value = await read();
    if (ok(value)) return value;
    throw new Error(`not yet: ${JSON.stringify(value)?.slice(0, 500)}`);
  };
}
