import { afterEach, describe, expect, it, vi } from 'vitest';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import {
  BullQueue,
  FAILED_JOBS_KEPT,
  HAND_BACK_MS,
  MemoryQueue,
  QueueFullError,
} from '../../src/notifications/queue.js';
import { createLogger } from '../../src/log.js';
import { REDIS_URL } from '../conversation/redis-helper.js';
import { QUEUE_PREFIX } from '../../src/redis/connect.js';
import { until } from '../until.js';

const logger = createLogger('silent');

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('MemoryQueue', () => {
  it('retries a failing job with backoff until it succeeds', async () => {
    const q = new MemoryQueue<{ n: number }>({ logger, backoffMs: 1, attempts: 5 });
    const seen: number[] = [];
    const done = deferred();
    let failures = 2;
    q.process(async (job) => {
      seen.push(job.n);
      if (failures-- > 0) throw new Error('chat api down');
      done.resolve();
    });
    await q.add({ n: 7 });
    await done.promise;
    expect(seen).toEqual([7, 7, 7]);
    await q.close();
  });

  it('gives up after the configured attempts, with a log line', async () => {
    const gaveUp = deferred<string>();
    const capture = createLogger('info', {
      write(line: string) {
        if (line.includes('given up')) gaveUp.resolve(line);
      },
    });
    const q = new MemoryQueue<number>({ logger: capture, backoffMs: 1, attempts: 3 });
    let calls = 0;
    q.process(async () => {
      calls++;
      throw new Error('always');
    });
    await q.add(1);
    expect(JSON.parse(await gaveUp.promise)).toMatchObject({ attempt: 3, err: 'Error: always' });
    expect(calls).toBe(3);
    await q.close();
    expect(await q.depth()).toBe(0);
  });

  it('drops a second add with the same id while the first is known', async () => {
    const q = new MemoryQueue<string>({ logger });
    const got: string[] = [];
    await q.add('a', { id: 'same' });
    await q.add('b', { id: 'same' });
    q.process(async (j) => {
      got.push(j);
    });
    await q.close();
    expect(got).toEqual(['a']);
  });

  it('is bounded: past maxJobs an add is refused (QueueFullError) until jobs are worked', async () => {
    const q = new MemoryQueue<number>({ logger, maxJobs: 3, concurrency: 1 });
    await q.add(1);
    await q.add(2);
    await q.add(3);
    await expect(q.add(4)).rejects.toBeInstanceOf(QueueFullError);
    const got: number[] = [];
    q.process(async (j) => {
      got.push(j);
    });
    await q.close();
    expect(got).toEqual([1, 2, 3]);
  });

  it('runs a delayed job when it is due, not before; it is not counted as held', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const q = new MemoryQueue<string>({ logger, maxJobs: 1 });
      const got: string[] = [];
      const done = deferred();
      q.process(async (j) => {
        got.push(j);
        if (j === 'later') done.resolve();
      });
      await q.add('later', { delayMs: 150 });
      expect(await q.depth()).toBe(0);
      await vi.advanceTimersByTimeAsync(149);
      expect(got).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      await done.promise;
      expect(got).toEqual(['later']);
      await q.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('finishes the jobs in hand on close', async () => {
    const q = new MemoryQueue<number>({ logger, concurrency: 1 });
    const got: number[] = [];
    const inHand = deferred();
    const release = deferred();
    q.process(async (j) => {
      inHand.resolve();
      await release.promise;
      got.push(j);
    });
    await Promise.all([q.add(1), q.add(2), q.add(3)]);
    // Closed while the first is in hand and two wait.
    await inHand.promise;
    const closed = q.close();
    release.resolve();
    await closed;
    expect(got).toEqual([1, 2, 3]);
  });
});

describe('BullQueue (real Redis)', () => {
  const url = REDIS_URL;
  const name = `test-notify-${process.pid}-${Date.now()}`;
  const queues: BullQueue<{ n: number }>[] = [];
  afterEach(async () => {
    await Promise.all(queues.splice(0).map((q) => q.close()));
    const r = new Redis(url);
    const keys = await r.keys(`${QUEUE_PREFIX}:${name}*`);
    if (keys.length) await r.del(...keys);
    await r.quit();
  });

  it("hands a later build's job back to a worker of that build, and works its own build's and an equal shape's", async () => {
    const older = { build: 1, flows: 'old-flows' };
    const newer = { build: 2, flows: 'new-flows' };
    const next = new BullQueue<{ n: number }>(url, name, { logger, written: newer });
    queues.push(next);
    await next.add({ n: 1 }, { id: 'job:1' });
    // Only the older build works: it hands the job back (put off, never worked by it) and works its own.
    const old = new BullQueue<{ n: number }>(url, name, { logger, written: older });
    queues.push(old);
    const oldGot: unknown[] = [];
    old.process(async (job) => void oldGot.push(job));
    const check = new Queue(name, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix: QUEUE_PREFIX });
    for (;;) {
      const delayed = await check.getDelayed();
      if (delayed.some((job) => job.id === 'job_1')) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await old.add({ n: 2 }, { id: 'job:2' });
    for (;;) {
      if (oldGot.length > 0) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Its own job, without the stamp the queue keeps; the later build's job not among them.
    expect(oldGot).toEqual([{ n: 2 }]);
    // The older build's process stops (a rolling deploy's next step); a worker of the later build takes the job
    // handed back. (While both run, which worker BullMQ wakes for the job when its delay ends is BullMQ's
    // choice: the older one may take it and hand it back again, round after round.)
    await old.close();
    const got = deferred<unknown>();
    next.process(async (job) => got.resolve(job));
    expect(await got.promise).toEqual({ n: 1 });
    expect(oldGot).toEqual([{ n: 2 }]);
    await check.close();
  });

  /** Waits until the job `id` is put off by a hand-back (delayed {@link HAND_BACK_MS}), or `got` holds something. */
  async function handedBack(check: Queue, id: string, got: unknown[]): Promise<void> {
    for (;;) {
      if (got.length > 0) return;
      const delayed = await check.getDelayed();
      if (delayed.some((job) => job.id === id && job.delay > 0 && job.delay <= HAND_BACK_MS)) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it("hands back a later build's batch of notices (a job that is an array) as any other of its jobs", async () => {
    const older = { build: 1, flows: 'old-flows' };
    const newer = { build: 2, flows: 'new-flows' };
    const next = new BullQueue<number[]>(url, name, { logger, written: newer });
    const old = new BullQueue<number[]>(url, name, { logger, written: older });
    queues.push(next as never, old as never);
    await next.add([1, 2], { id: 'batch:1' });
    const oldGot: unknown[] = [];
    old.process(async (job) => void oldGot.push(job));
    const check = new Queue(name, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix: QUEUE_PREFIX });
    await handedBack(check, 'batch_1', oldGot);
    expect(oldGot).toEqual([]);
    // Its own build's batch, as it was added.
    await old.add([3], { id: 'batch:2' });
    await until('the older build works its own batch', () => oldGot.length > 0);
    expect(oldGot).toEqual([[3]]);
    await old.close();
    const got = deferred<unknown>();
    next.process(async (job) => got.resolve(job));
    expect(await got.promise).toEqual([1, 2]);
    await check.close();
  });

  it("hands back a later build's job queued long ago for its delay: the hand-back time counts from when it was due", async () => {
    const older = { build: 1, flows: 'old-flows' };
    const newer = { build: 2, flows: 'new-flows' };
    const old = new BullQueue<{ n: number }>(url, name, { logger, written: older });
    queues.push(old);
    // A follow-up the later build queued 30 minutes ago, due now (BullMQ's own `timestamp`, no wait).
    const raw = new Queue(name, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix: QUEUE_PREFIX });
    const halfHour = 30 * 60_000;
    await raw.add(
      `notification ${newer.build} ${newer.flows}`,
      { n: 1, writtenBy: newer },
      { jobId: 'late_1', timestamp: Date.now() - halfHour, delay: halfHour },
    );
    const oldGot: unknown[] = [];
    old.process(async (job) => void oldGot.push(job));
    await handedBack(raw, 'late_1', oldGot);
    expect(oldGot).toEqual([]);
    // Handed back, it is still left alone when its put-off ends (the job's delay is the hand-back's now).
    const [job] = await raw.getDelayed();
    await job!.promote();
    await handedBack(raw, 'late_1', oldGot);
    expect(oldGot).toEqual([]);
    await raw.close();
  });

  it('keeps jobs added while no worker runs, for the next process to work', async () => {
    const producer = new BullQueue<{ n: number }>(url, name, { logger });
    queues.push(producer);
    await producer.add({ n: 1 }, { id: 'job:1' });
    await producer.add({ n: 1 }, { id: 'job:1' });
    await producer.add({ n: 2 }, { id: 'job:2' });
    expect(await producer.depth()).toBe(2);
    await producer.close();
    queues.length = 0;

    // A new process on the same Redis.
    const consumer = new BullQueue<{ n: number }>(url, name, { logger });
    queues.push(consumer);
    const got: number[] = [];
    const done = deferred();
    consumer.process(async (job) => {
      got.push(job.n);
      if (got.length === 2) done.resolve();
    });
    await done.promise;
    expect(got.sort()).toEqual([1, 2]);
  });

  it('tells a job that two workers in turn took and lost (stalled twice) instead of failing it', async () => {
    const fast = { lockDuration: 300, stalledInterval: 200 };
    /** A worker that takes one job and is then killed without finishing it: the job stays active until its lock runs out. */
    async function takeAndDie(): Promise<void> {
      const connection = new Redis(url, { maxRetriesPerRequest: null });
      const taken = deferred();
      const worker = new Worker(name, () => (taken.resolve(), new Promise<void>(() => {})), {
        connection,
        prefix: QUEUE_PREFIX,
        ...fast,
        maxStalledCount: 5,
      });
      await taken.promise;
      await worker.close(true);
      await connection.quit();
    }
    const producer = new BullQueue<{ n: number }>(url, name, { logger });
    queues.push(producer);
    await producer.add({ n: 7 });
    await takeAndDie(); // taken, lost
    await takeAndDie(); // found stalled, taken again, lost again

    const q = new BullQueue<{ n: number }>(url, name, { logger, stalledJobs: fast });
    queues.push(q);
    const told = deferred<number>();
    q.process(async (job) => told.resolve(job.n));
    expect(await told.promise).toBe(7);
  });

  it('keeps failed jobs by count as well as by age, and runs a delayed job when due', async () => {
    const q = new BullQueue<{ n: number }>(url, name, { logger });
    queues.push(q);
    await q.add({ n: 1 }, { id: 'delayed:1', delayMs: 200 });
    const check = new Queue(name, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix: QUEUE_PREFIX });
    const job = await check.getJob('delayed_1');
    expect(job?.opts.removeOnFail).toEqual({ age: 7 * 24 * 3600, count: FAILED_JOBS_KEPT });
    expect(await check.getJobCounts('delayed')).toEqual({ delayed: 1 });
    await check.close();
    const done = deferred<number>();
    q.process(async (j) => done.resolve(j.n));
    expect(await done.promise).toBe(1);
  });

  it('retries a failed job', async () => {
    const q = new BullQueue<{ n: number }>(url, name, { logger, backoffMs: 10, attempts: 3 });
    queues.push(q);
    let calls = 0;
    const done = deferred();
    q.process(async () => {
      calls++;
      if (calls < 2) throw new Error('once');
      done.resolve();
    });
    await q.add({ n: 3 });
    await done.promise;
    expect(calls).toBe(2);
  });
});
