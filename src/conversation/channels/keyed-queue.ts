/**
 * Runs tasks one after another per key (a Telegram chat, a WhatsApp user), and tasks of different keys side
 * by side: the chat adapters keep one conversation's messages in order with it.
 *
 * This orders a chat's updates within one process only. Across processes (several instances behind one
 * webhook) the engine's compare-and-set on the conversation record keeps the conversation consistent: a second writer
 * loses and the user is asked to try again rather than two updates interleaving.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs task after every earlier task of the same key has settled; resolves or rejects with it. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    // The tail settles either way and forgets itself once no later task of the key waits on it.
    const forget = () => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<void> = result.then(forget, forget);
    this.tails.set(key, tail);
    return result;
  }

  /** Resolves when every task queued so far has settled (used on shutdown). Idle keys are not kept. */
  async idle(): Promise<void> {
    await Promise.all(this.tails.values());
  }
}
