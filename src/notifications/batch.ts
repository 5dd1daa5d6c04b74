/**
 * Group commit for the receiver: the deliveries that arrive in the same turn of the event loop are queued
 * as ONE job, added once, and every one of their requests is answered when that add is done (so each still
 * answers 200 only once its notification is durably queued, and 503 if the add failed).
 *
 * Why: a queued job costs the same (an add, a fetch, a finish: three Lua scripts, and their JavaScript)
 * whether it holds one notification or fifty. Under a burst the service delivers many at once and they
 * share one job; alone, a notification is a batch of one and waits no longer than before (setImmediate
 * runs right after the I/O callbacks of the current turn).
 */

export interface TickBatcherOptions<T> {
  /** Queues one batch; its promise is every caller's answer. */
  flush(items: T[]): Promise<void>;
  /** Largest batch; a full batch is closed and the next item starts another. Default 100. */
  maxItems?: number;
}

/** Returns `add(item)`: resolves when the batch holding `item` was flushed, rejects when that failed. */
export function tickBatcher<T>(options: TickBatcherOptions<T>): (item: T) => Promise<void> {
  const max = options.maxItems ?? 100;
  let open: { items: T[]; done: Promise<void> } | null = null;
  return (item: T) => {
    if (!open || open.items.length >= max) {
      const batch: { items: T[]; done: Promise<void> } = { items: [], done: Promise.resolve() };
      batch.done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        if (open === batch) open = null;
        return options.flush(batch.items);
      });
      open = batch;
    }
    open.items.push(item);
    return open.done;
  };
}

/**
 * At most `n` calls of `run` at once, the others wait in order: the notifications of many batch jobs share
 * one bound, so a burst calls the chat APIs as many times at once as before batching (the queue's
 * concurrency), not that times the batch size.
 */
export function createLimiter(n: number): <R>(run: () => Promise<R>) => Promise<R> {
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async <R>(run: () => Promise<R>): Promise<R> => {
    if (running < n) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await run();
    } finally {
      release();
    }
  };
}
