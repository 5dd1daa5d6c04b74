/**
 * The notification work queue: one interface, two backends. BullMQ on Redis when REDIS_URL is set (several
 * web processes share it and jobs survive a restart), in memory otherwise. Both retry a failed job with
 * exponential backoff and give up with a log line after `attempts`.
 */
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import {
  boundedErrorLog,
  closeRedis,
  connectRedis,
  dropRedis,
  replicaCheck,
  QUEUE_PREFIX,
  REPLICATED_WITHIN_MS,
  settingsOf,
  type RedisClient,
  type RedisTarget,
} from '../redis/connect.js';
import { QUEUE_PARTS, queuePrefixes, type PartedQueue, type QueuePrefixes } from '../store/keys.js';
import type { Logger } from '../log.js';
import { within } from '../within.js';

/**
 * A job whose worker lost it (its process died, or Redis dropped the reply that handed it the job) is
 * "stalled": its lock runs out and a stalled check puts it back in the queue. BullMQ's defaults (a 30 s lock,
 * a check every 30 s) leave a user up to a minute without the outcome, and fail a job that stalls twice.
 * Here a lock lasts 15 s (renewed every 7.5 s while the job runs) and each worker checks every 10 s, so such
 * a job is told again within about 25 s; and it may stall up to 5 times, since telling is idempotent (the
 * dispatcher's dedup marks), where failing it would drop a confirmed outcome.
 */
const STALLED_JOBS = { lockDuration: 15_000, stalledInterval: 10_000, maxStalledCount: 5 };

/**
 * What wrote a queued job: its build (src/conversation/flow/build.ts, ordered) and the shape of that build's
 * flows (flows/shape.ts releaseShape). Stored with every BullMQ job in its name ({@link stampName}: a job of any
 * data, a batch of notices being an array), and with a job of an object also as its `writtenBy` field, where
 * the builds before the name carried it read it.
 */
export interface JobStamp {
  build: number;
  flows: string;
}

/** The BullMQ job name of an unstamped job. */
const JOB_NAME = 'notification';

/** The BullMQ job name that carries `stamp`: `notification <build> <flows>`. */
export function stampName(stamp: JobStamp): string {
  return `${JOB_NAME} ${stamp.build} ${stamp.flows}`;
}

/** The stamp of a job: its data's `writtenBy`, else its name's; undefined when it carries none. */
function stampOf(name: string, data: unknown): JobStamp | undefined {
  const field = typeof data === 'object' && data !== null ? (data as { writtenBy?: unknown }).writtenBy : undefined;
  if (typeof field === 'object' && field !== null && typeof (field as JobStamp).build === 'number')
    return field as JobStamp;
  const m = /^notification (\d+) (\S+)$/.exec(name);
  return m ? { build: Number(m[1]), flows: m[2]! } : undefined;
}

/**
 * How long after it was queued a job a later build wrote, with other flows, is handed back by an earlier
 * build's worker (BullQueue.process); past it, no worker of that build has taken it (a rollback): worked here.
 */
export const HAND_BACK_FOR_MS = 10 * 60_000;
/** How far a job handed back is put off: a worker of its build takes it meanwhile. */
export const HAND_BACK_MS = 2_000;

export interface QueueOptions {
  /** Tries per job, the first included. Default 8 (about four minutes of backoff in all). */
  attempts?: number;
  /** First retry delay in ms, doubled each time. Default 1000. */
  backoffMs?: number;
  /**
   * Jobs worked at once. Default 32: a job's notifications each wait on a Redis round trip and a chat API
   * call, so a worker waits on I/O, not CPU, and too few at once leave the CPU idle while they wait.
   * createNotifications also bounds the notifications
   * dispatched at once, over all jobs, by it.
   */
  concurrency?: number;
  /**
   * BullMQ only: this build's {@link JobStamp}, written into each job it adds; a job a later build wrote with
   * other flows is handed back (put off {@link HAND_BACK_MS}) for {@link HAND_BACK_FOR_MS}, never worked by this
   * older code. Unset: jobs are neither stamped nor handed back.
   */
  written?: JobStamp;
  /** BullMQ only: how a job its worker lost comes back (STALLED_JOBS); tests shorten it. */
  stalledJobs?: Partial<typeof STALLED_JOBS>;
  /**
   * Memory only: most jobs held at once (waiting, being worked or waiting for a retry; not the delayed ones).
   * Past it add() rejects with {@link QueueFullError}, so the receiver answers 503 with Retry-After and the
   * service delivers again later, instead of the process growing without bound under a flood. Default
   * 10000 (a job holds up to 50 notices of a few hundred bytes). Redis holds BullMQ's.
   */
  maxJobs?: number;
  /**
   * BullMQ on Sentinel or a cluster: an add waits for the replicas to hold the job (BullQueue onReplica), up to
   * {@link REPLICATED_WITHIN_MS}. `required`: not held by then (a replica connected), the add fails
   * ({@link NotReplicatedError}): for the jobs whose sender is answered on the add and sends again on a
   * failure (the service's notifications). `waited`: the add goes on with a warning line: for those added on
   * a payment's way (a follow-up), which must not fail because a replica lags. Unset: no wait.
   */
  replicated?: 'required' | 'waited';
  /** BullMQ only: the keys' prefix (keys.ts queuePrefixes). Default {@link QUEUE_PREFIX}. */
  prefix?: string;
  /** BullMQ only: connections shared with the other parts of one queue ({@link createPartedQueue}); unset: its own. */
  shared?: SharedConnections;
  logger: Logger;
}

/**
 * The connections the parts of one queue share ({@link createPartedQueue}): one for the queues' commands (adds,
 * counts), with its replica check, and one for the workers' (fetches, locks, completions); each worker's
 * blocking connection stays its own (BullMQ duplicates one a worker). Opened when first asked for; closed by
 * their owner once every part is.
 */
export class SharedConnections {
  private queueConnection?: RedisClient;
  private workerConnection?: RedisClient;
  private check?: (key: string) => Promise<boolean>;

  constructor(
    private readonly target: RedisTarget,
    private readonly label: string,
    private readonly logger: Logger,
  ) {}

  /** The queues' connection. */
  get queue(): RedisClient {
    return (this.queueConnection ??= this.connect('queue'));
  }

  /** The workers' connection. */
  get worker(): RedisClient {
    return (this.workerConnection ??= this.connect('queue worker'));
  }

  /** {@link replicaCheck} of the queues' connection: per master one WAIT at a time, shared by every part's adds. */
  get held(): (key: string) => Promise<boolean> {
    return (this.check ??= replicaCheck(this.queue, this.target));
  }

  /** Ends the connections at once (a start that does not settle: Redis away). */
  drop(): void {
    for (const c of [this.queueConnection, this.workerConnection]) if (c) dropRedis(c);
  }

  async close(): Promise<void> {
    await Promise.all([this.queueConnection, this.workerConnection].map((c) => (c ? closeRedis(c) : undefined)));
  }

  private connect(what: string): RedisClient {
    // BullMQ workers block on Redis: they need maxRetriesPerRequest null. Errors are logged boundedly.
    return connectRedis(this.target, {
      name: `${what} ${this.label}`,
      logger: this.logger,
      maxRetriesPerRequest: null,
    });
  }
}

/** BullMQ keeps failed jobs a week for the operator, and at most this many, so a flood cannot fill Redis. */
export const FAILED_JOBS_KEPT = 10_000;

/** The memory queue is full: try again in `retryAfterSeconds`. */
export class QueueFullError extends Error {
  readonly retryAfterSeconds = 10;
  constructor(held: number) {
    super(`the notification queue holds ${held} jobs, its most`);
    this.name = 'QueueFullError';
  }
}

export interface AddOptions {
  /** Makes the add idempotent while the job is known. */
  id?: string;
  /** Runs the job this many ms from now, not at once. */
  delayMs?: number;
}

export const DEFAULT_CONCURRENCY = 32;

export type JobHandler<T> = (job: T) => Promise<void>;

export interface JobQueue<T> {
  /** Adds a job (rejects with QueueFullError when a bounded queue is full). */
  add(job: T, options?: AddOptions): Promise<void>;
  /** Starts working jobs with `handler`. */
  process(handler: JobHandler<T>): void;
  /** Jobs waiting or being worked. */
  depth(): Promise<number>;
  /** Stops taking jobs, finishes the ones in hand, and closes. */
  close(): Promise<void>;
}

interface MemoryItem<T> {
  job: T;
  attempt: number;
}

/** In-process queue: jobs live as long as the process does. */
export class MemoryQueue<T> implements JobQueue<T> {
  private readonly waiting: MemoryItem<T>[] = [];
  /** Retries waiting for their backoff, with the item each will requeue. */
  private readonly retries = new Map<NodeJS.Timeout, MemoryItem<T>>();
  private readonly ids = new Set<string>();
  /** Jobs added with a delay, not yet due. */
  private readonly delayed = new Set<NodeJS.Timeout>();
  private running = 0;
  private handler?: JobHandler<T>;
  private closed = false;
  private idle?: () => void;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly concurrency: number;
  private readonly maxJobs: number;

  constructor(private readonly options: QueueOptions) {
    this.attempts = options.attempts ?? 8;
    this.backoffMs = options.backoffMs ?? 1000;
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.maxJobs = options.maxJobs ?? 10_000;
  }

  async add(job: T, { id, delayMs }: AddOptions = {}): Promise<void> {
    if (this.closed) throw new Error('queue closed');
    const held = await this.depth();
    if (held >= this.maxJobs) throw new QueueFullError(held);
    if (id !== undefined) {
      if (this.ids.has(id)) return;
      this.ids.add(id);
      this.forgetLater(id);
    }
    if (delayMs) {
      const t = setTimeout(() => {
        this.delayed.delete(t);
        this.waiting.push({ job, attempt: 1 });
        this.pump();
      }, delayMs);
      t.unref();
      this.delayed.add(t);
      return;
    }
    this.waiting.push({ job, attempt: 1 });
    this.pump();
  }

  process(handler: JobHandler<T>): void {
    this.handler = handler;
    this.pump();
  }

  async depth(): Promise<number> {
    return this.waiting.length + this.running + this.retries.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    // Delayed jobs live no longer than the process (with Redis they stay in it for the next one).
    for (const t of this.delayed) clearTimeout(t);
    this.delayed.clear();
    // Retries scheduled for later run now, one last time, so nothing held is dropped silently.
    for (const [t, item] of this.retries) {
      clearTimeout(t);
      this.waiting.push({ job: item.job, attempt: item.attempt + 1 });
    }
    this.retries.clear();
    if (this.running === 0 && this.waiting.length === 0) return;
    await new Promise<void>((resolve) => {
      this.idle = resolve;
      this.pump();
    });
  }

  private forgetLater(id: string): void {
    // Duplicate adds within a minute are dropped; later ones are left to the handler's own dedup.
    setTimeout(() => this.ids.delete(id), 60_000).unref();
  }

  private pump(): void {
    if (!this.handler) return;
    while (this.running < this.concurrency && this.waiting.length > 0) {
      const item = this.waiting.shift()!;
      this.running++;
      // run() catches the handler's failure (retried or given up, and logged), so this cannot reject.
      void this.run(item).finally(() => {
        this.running--;
        this.pump();
        if (this.running === 0 && this.waiting.length === 0) this.idle?.();
      });
    }
  }

  private async run(item: MemoryItem<T>): Promise<void> {
    try {
      await this.handler!(item.job);
    } catch (err) {
      if (item.attempt >= this.attempts || this.closed) {
        this.options.logger.error({ err: String(err), attempt: item.attempt }, 'notification job given up');
        return;
      }
      const delay = this.backoffMs * 2 ** (item.attempt - 1);
      this.options.logger.warn({ err: String(err), attempt: item.attempt, delay }, 'notification job failed, retrying');
      const t = setTimeout(() => {
        this.retries.delete(t);
        this.waiting.push({ job: item.job, attempt: item.attempt + 1 });
        this.pump();
      }, delay);
      this.retries.set(t, item);
    }
  }
}

/** A job the replicas did not take in time while one is connected (Sentinel, Cluster): not safe from a failover. */
export class NotReplicatedError extends Error {
  constructor() {
    super(`the job is not on a replica after ${REPLICATED_WITHIN_MS} ms; not taken`);
    this.name = 'NotReplicatedError';
  }
}

/** BullMQ queue on Redis. */
export class BullQueue<T> implements JobQueue<T> {
  private readonly queue: Queue;
  /** Sentinel and Cluster modes: how an add waits for the replicas to hold it ({@link onReplica}); unset: no wait. */
  private readonly replicated?: 'required' | 'waited';
  /**
   * Sentinel and Cluster modes: whether the replicas hold the adds made so far on the queue's own connection
   * (BullMQ sends a queue's commands on the connection it is given; on a cluster, to the master of the queue's
   * slot, which its prefix's hash tag names: {@link slotKey}); the adds at once share one WAIT.
   */
  private readonly held?: (key: string) => Promise<boolean>;
  /** A key in the slot of every key of this queue (`<prefix>:<name>`, its tag the prefix's): what WAIT is for. */
  private readonly slotKey: string;
  private worker?: Worker;
  private readonly connections: RedisClient[] = [];
  /** The queue as its log lines name it: with its prefix when not the default (a part of the follow-ups). */
  private readonly label: string;

  constructor(
    private readonly redisUrl: RedisTarget,
    private readonly name: string,
    private readonly options: QueueOptions,
  ) {
    this.label = options.prefix && options.prefix !== QUEUE_PREFIX ? `${options.prefix}:${name}` : name;
    this.slotKey = `${options.prefix ?? QUEUE_PREFIX}:${name}`;
    const connection = options.shared?.queue ?? this.connect(redisUrl);
    if (settingsOf(redisUrl).mode !== 'server' && options.replicated) {
      this.replicated = options.replicated;
      this.held = options.shared?.held ?? replicaCheck(connection, redisUrl);
    }
    this.queue = new Queue(name, {
      connection,
      prefix: options.prefix ?? QUEUE_PREFIX,
      defaultJobOptions: {
        attempts: options.attempts ?? 8,
        backoff: { type: 'exponential', delay: options.backoffMs ?? 1000 },
        removeOnComplete: { age: 3600, count: 1000 },
        removeOnFail: { age: 7 * 24 * 3600, count: FAILED_JOBS_KEPT },
      },
    });
    const errors = boundedErrorLog(this.options.logger, { queue: this.label }, 'queue error');
    this.queue.on('error', errors.error);
  }

  private connect(target: RedisTarget): RedisClient {
    // BullMQ workers block on Redis: they need maxRetriesPerRequest null. Errors are logged boundedly.
    const c = connectRedis(target, {
      name: `queue ${this.label}`,
      logger: this.options.logger,
      maxRetriesPerRequest: null,
    });
    this.connections.push(c);
    return c;
  }

  async add(job: T, { id, delayMs }: AddOptions = {}): Promise<void> {
    // BullMQ job ids may not contain ':'.
    const { written } = this.options;
    const data =
      written && typeof job === 'object' && job !== null && !Array.isArray(job) ? { ...job, writtenBy: written } : job;
    await this.queue.add(written ? stampName(written) : JOB_NAME, data, {
      ...(id ? { jobId: id.replace(/:/g, '_') } : {}),
      ...(delayMs ? { delay: delayMs } : {}),
    });
    if (this.held) await this.onReplica(this.held);
  }

  /**
   * Sentinel and Cluster modes: a job is taken only once the replicas of its master hold it. A failover drops
   * the old master's last writes, and a notification the receiver acknowledged in that moment would be gone for
   * good (the service does not send it again), its outcome left to the follow-up minutes later. Not held within
   * {@link REPLICATED_WITHIN_MS} while a replica is connected: {@link NotReplicatedError} (the receiver answers
   * 503, the service sends it again). A master with no replica connected takes it alone: no failover can drop it.
   */
  private async onReplica(held: (key: string) => Promise<boolean>): Promise<void> {
    // WAIT counts the replicas holding every write this connection made so far to that master: the add among them.
    if (await held(this.slotKey)) return;
    if (this.replicated === 'required') throw new NotReplicatedError();
    this.options.logger.warn(
      { queue: this.label, waitedMs: REPLICATED_WITHIN_MS },
      'queue: a job not yet on a replica; going on (a failover now would drop it)',
    );
  }

  process(handler: JobHandler<T>): void {
    this.worker = new Worker(
      this.name,
      async (job: Job, token?: string) => {
        // Due when it was added plus the delay it was added with (its `delay` is a retry's or a hand-back's since).
        if (this.handsBack(stampOf(job.name, job.data), job.timestamp + (job.opts.delay ?? 0))) {
          this.options.logger.info({ queue: this.label, jobId: job.id }, "queue: a later build's job handed back");
          await job.moveToDelayed(Date.now() + HAND_BACK_MS, token);
          throw new DelayedError();
        }
        await handler(withoutStamp(job.data) as T);
      },
      {
        connection: this.options.shared?.worker ?? this.connect(this.redisUrl),
        prefix: this.options.prefix ?? QUEUE_PREFIX,
        concurrency: this.options.concurrency ?? DEFAULT_CONCURRENCY,
        ...STALLED_JOBS,
        ...this.options.stalledJobs,
      },
    );
    this.worker.on('failed', (job, err) => {
      const attempts = job?.opts.attempts ?? 1;
      const made = job?.attemptsMade ?? 0;
      if (made >= attempts)
        this.options.logger.error({ err: err.message, attempts: made }, 'notification job given up');
      else this.options.logger.warn({ err: err.message, attempt: made }, 'notification job failed, retrying');
    });
    // BullMQ's loop reports each failed fetch while Redis is away (and waits runRetryDelay between): bounded.
    const loopErrors = boundedErrorLog(this.options.logger, { queue: this.label }, 'queue worker error');
    this.worker.on('error', loopErrors.error);
    this.worker.on('ready', () => loopErrors.back('queue worker: back'));
    this.worker.on('stalled', (jobId) =>
      this.options.logger.warn({ jobId }, 'notification job stalled (its worker lost it); queued again'),
    );
  }

  /**
   * A job a later build wrote, with other flows than this build's, due less than {@link HAND_BACK_FOR_MS} ago
   * (a follow-up queued for 30 minutes counts from then): left for a worker of that build, never read by this
   * older code.
   */
  private handsBack(writtenBy: JobStamp | undefined, dueAt: number): boolean {
    const mine = this.options.written;
    if (!mine || !writtenBy) return false;
    if (writtenBy.flows === mine.flows || writtenBy.build <= mine.build) return false;
    return Date.now() - dueAt < HAND_BACK_FOR_MS;
  }

  async depth(): Promise<number> {
    const counts = await this.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  async close(): Promise<void> {
    // BullMQ reports a failed start of its connection (Redis away, or closed under it) as an error of the
    // queue or worker, and nobody hears it once they are closed: such a report would end the process. So
    // their start settles first: a moment to finish it, else their connections are ended and the failure is
    // reported while it is still heard.
    const started = Promise.allSettled([this.queue.waitUntilReady(), this.worker?.waitUntilReady()]);
    if ((await within(started, 1_000)) === undefined) {
      for (const connection of this.connections) dropRedis(connection);
      this.options.shared?.drop();
      await started;
    }
    // Worker.close() waits for the jobs in hand to finish; waiting jobs stay in Redis for the next start.
    await this.worker?.close();
    await this.queue.close();
    // Its own connections; shared ones are closed by their owner.
    await Promise.all(this.connections.map((c) => closeRedis(c)));
  }
}

/** A job's data without the stamp an object carries (`writtenBy`): what its handler is given. */
function withoutStamp(data: unknown): unknown {
  if (typeof data !== 'object' || data === null || Array.isArray(data) || !('writtenBy' in data)) return data;
  const { writtenBy: _stamp, ...rest } = data as { writtenBy?: unknown };
  return rest;
}

/**
 * One queue in parts (each a queue of its own, on a cluster of its own slot): a job goes to the part `partOf`
 * names (the same job always to the same part, so an add with an id stays idempotent), and every part is worked.
 * `split` cuts a job holding the work of several parts (a batch of notifications) into pieces each of one part,
 * added each to its own (at once; the add fails if any does).
 */
export class ShardedQueue<T> implements JobQueue<T> {
  constructor(
    private readonly parts: JobQueue<T>[],
    private readonly partOf: (job: T) => number,
    private readonly split: (job: T) => T[] = (job) => [job],
    /** Run once every part is closed (the connections they share). */
    private readonly closed: () => Promise<void> = async () => undefined,
  ) {}

  async add(job: T, options?: AddOptions): Promise<void> {
    await Promise.all(
      this.split(job).map((piece) => this.parts[this.partOf(piece) % this.parts.length]!.add(piece, options)),
    );
  }

  process(handler: JobHandler<T>): void {
    for (const part of this.parts) part.process(handler);
  }

  async depth(): Promise<number> {
    return (await Promise.all(this.parts.map((part) => part.depth()))).reduce((a, b) => a + b, 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.parts.map((part) => part.close()));
    await this.closed();
  }
}

/**
 * A queue spanning every payment (keys.ts {@link PartedQueue}): on Redis in {@link QUEUE_PARTS} BullMQ queues of
 * their own tag (keys.ts queuePrefixes), a job in the part of its key (`keyOf`: its payment's), every part worked
 * by every process at a {@link QUEUE_PARTS}th of `concurrency` each (so the jobs in hand over all parts stay
 * bounded by it), and each add waiting for the replicas of the master of its own part (`replicated`); in memory
 * one queue. `split`: {@link ShardedQueue}. The parts share their connections ({@link SharedConnections}): a
 * queue in parts opens as many as one queue did, plus a blocking one a part; and the adds of the parts one
 * master serves share its WAIT (on one server or Sentinel, all of them: one master). `of`: the product's queue
 * prefixes (keys.ts queuePrefixesOf its key prefix).
 */
export function createPartedQueue<T>(
  queue: PartedQueue,
  name: string,
  redisUrl: RedisTarget | undefined,
  options: QueueOptions,
  keyOf: (job: T) => string,
  split?: (job: T) => T[],
  of: QueuePrefixes = queuePrefixes,
): JobQueue<T> {
  if (!redisUrl) return new MemoryQueue<T>(options);
  const prefixes = of.parts(queue);
  const concurrency = Math.max(1, Math.ceil((options.concurrency ?? DEFAULT_CONCURRENCY) / QUEUE_PARTS));
  const shared = new SharedConnections(redisUrl, name, options.logger);
  return new ShardedQueue(
    prefixes.map((prefix) => new BullQueue<T>(redisUrl, name, { ...options, prefix, concurrency, shared })),
    (job) => prefixes.indexOf(of.part(queue, keyOf(job))),
    split,
    () => shared.close(),
  );
}
