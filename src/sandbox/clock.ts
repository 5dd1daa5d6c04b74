/**
 * The sandbox clock: every timestamp, expiry, scheduled payment step and webhook retry of the sandbox
 * reads it. Two modes:
 * - real time (autoAdvance): now = wall clock + offset; scheduled work runs on real timers, so a payment
 *   reaches `processed` about a second after it was created, as with a live service.
 * - virtual: time stands still until advance() moves it; nothing runs on its own (deterministic tests).
 * advance(seconds) works in both modes and runs, in order, everything that falls due on the way.
 * Outbound HTTP work (webhook attempts, verification calls) is tracked so idle() can wait for it.
 */
import type { Logger } from 'pino';

interface Task {
  due: number;
  seq: number;
  run: () => unknown;
}

export class SandboxClock {
  private offsetMs = 0;
  private readonly base: number;
  private tasks: Task[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(
    private readonly realTime: boolean,
    private readonly log: Logger,
  ) {
    // Virtual time starts at a whole second so timestamps in tests round-trip through the wire format.
    this.base = Math.floor(Date.now() / 1000) * 1000;
  }

  /** Sandbox time in epoch milliseconds. */
  now(): number {
    return (this.realTime ? Date.now() : this.base) + this.offsetMs;
  }

  /** Runs `run` once sandbox time reaches now + delaySeconds. */
  schedule(delaySeconds: number, run: () => unknown): void {
    if (this.closed) return;
    const task = { due: this.now() + delaySeconds * 1000, seq: this.seq++, run };
    // Binary insertion keeps the queue ordered by due time, then by scheduling order.
    let lo = 0;
    let hi = this.tasks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.tasks[mid]!.due <= task.due) lo = mid + 1;
      else hi = mid;
    }
    this.tasks.splice(lo, 0, task);
    this.arm();
  }

  /** Keeps a promise of outbound work so idle() and advance() wait for it. */
  track<T>(work: Promise<T>): Promise<T> {
    const tracked = work.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
    return tracked;
  }

  /** Resolves once no tracked work is in flight (work started by other work included). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Moves sandbox time forward, running every task that falls due on the way, in order. */
  async advance(seconds: number): Promise<void> {
    const target = this.now() + seconds * 1000;
    for (;;) {
      await this.idle();
      const next = this.tasks[0];
      if (!next || next.due > target) break;
      this.offsetMs += Math.max(0, next.due - this.now());
      await this.runDue();
    }
    this.offsetMs += Math.max(0, target - this.now());
    this.arm();
  }

  /** Stops the timer and drops pending tasks. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.tasks = [];
    await this.idle();
  }

  private async runDue(): Promise<void> {
    while (this.tasks[0] && this.tasks[0].due <= this.now()) {
      const task = this.tasks.shift()!;
      try {
        await task.run();
      } catch (err) {
        this.log.error({ err }, 'sandbox task failed');
      }
    }
  }

  private arm(): void {
    clearTimeout(this.timer);
    const next = this.tasks[0];
    if (!this.realTime || !next || this.closed) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        // runDue catches and logs each task's failure, so this chain cannot reject.
        void this.runDue().then(() => this.arm());
      },
      Math.max(0, next.due - this.now()),
    );
    this.timer.unref();
  }
}
