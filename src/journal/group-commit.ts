/**
 * Several facts a commit (src/journal/journal.ts): every event's insert takes the chain's lock and holds it
 * through its commit's flush (migration 0301), so the database chains one commit at a time. Writes handed over
 * while a statement of this kind is under way wait, and the next statement writes them together: one commit for
 * all of them. Nothing waits to gather: a write handed over while none is under way goes at once, alone.
 *
 * Each caller is told its own result only once the statement that holds its rows has ended, and that statement
 * runs alone, outside any transaction: its end is its commit. A statement the database refused for what one of
 * its writes held wrote none of them: each is then written alone, as if it had come alone, and gets its own
 * result or error. A statement whose end is not known (the connection lost, a timeout, the server stopping)
 * tells every one of its callers that error: none is told written.
 */

/** What a statement of several gives each of its writes: its result, or the error its caller gets. */
export type Told<R> = { value: R } | { error: unknown };

export interface GroupCommitOptions<T, R> {
  /** Writes one alone (its own statement and commit), as it was written before any grouping. */
  alone(item: T): Promise<R>;
  /** Writes several in one statement; one answer each, in their order. */
  together(items: T[]): Promise<Array<Told<R>>>;
  /** What two writes of one statement may not share (a ref, an event's key): the second waits for the next. */
  keys(item: T): string[];
  /** The most writes one statement takes. */
  most: number;
}

interface Waiting<T, R> {
  item: T;
  resolve(value: R): void;
  reject(error: unknown): void;
}

export class GroupCommit<T, R> {
  private readonly waiting: Array<Waiting<T, R>> = [];
  private committing = false;

  constructor(private readonly o: GroupCommitOptions<T, R>) {}

  write(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (!this.committing) void this.commitWaiting();
    });
  }

  private async commitWaiting(): Promise<void> {
    this.committing = true;
    try {
      while (this.waiting.length > 0) await this.commit(this.take());
    } finally {
      this.committing = false;
    }
  }

  /** The waiting writes the next statement takes, oldest first, none sharing a key with one before it. */
  private take(): Array<Waiting<T, R>> {
    const batch: Array<Waiting<T, R>> = [];
    const taken = new Set<string>();
    for (let i = 0; i < this.waiting.length && batch.length < this.o.most;) {
      const next = this.waiting[i]!;
      const keys = this.o.keys(next.item);
      if (keys.some((key) => taken.has(key))) {
        i++;
        continue;
      }
      for (const key of keys) taken.add(key);
      batch.push(next);
      this.waiting.splice(i, 1);
    }
    return batch;
  }

  private async commit(batch: Array<Waiting<T, R>>): Promise<void> {
    const alone = (w: Waiting<T, R>) =>
      this.o
        .alone(w.item)
        .then(w.resolve, w.reject)
        .catch(() => {});
    if (batch.length === 1) return alone(batch[0]!);
    let told: Array<Told<R>>;
    try {
      told = await this.o.together(batch.map((w) => w.item));
    } catch (error) {
      if (!refusedWholly(error)) {
        for (const w of batch) w.reject(error);
        return;
      }
      await Promise.all(batch.map(alone));
      return;
    }
    batch.forEach((w, i) => {
      const answer = told[i];
      if (!answer) w.reject(new Error('the journal gave a write of several no answer'));
      else if ('error' in answer) w.reject(answer.error);
      else w.resolve(answer.value);
    });
  }
}

/**
 * True when the database refused a statement for what it held and so wrote none of it (an SQLSTATE outside the
 * classes of a connection lost, an operator's cancel or a timeout, resources and the server's own faults).
 * Anything else leaves the statement's end unknown.
 */
export function refusedWholly(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|53|57|58|XX)/.test(code);
}
