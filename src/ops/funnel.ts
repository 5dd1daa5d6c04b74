/**
 * Funnel analytics from the flows' transitions (EngineOptions.onTransition): per UTC day, flow, channel and
 * step, how many runs entered the step, moved on from it, were abandoned there (the user left for something
 * else, the flow expired, the network or the gateway ended it) or failed there (refused by the policy,
 * failed at the service, an engine error), and how long they spent there; per day, flow and channel, how
 * runs ended (FlowOutcome, plus `abandoned` and `error`).
 *
 * Where it is kept: one Redis hash per UTC day, `momo:funnel:<yyyy-mm-dd>`, with fields
 * `<flow>|<channel>|<step>|<counter>` (and `<flow>|<channel>|*|<outcome or started>`), expiring `days` days
 * after its day. A field is only ever made from a step of a registered machine, a known channel and a fixed
 * counter name, so a day's hash has a bounded number of fields whatever arrives; nothing of a user is kept
 * (no phone number, id, amount or answer). Counts are added up in memory and written every second in one
 * MULTI of HINCRBYs, so a hop costs no round trip; a process that dies loses at most that second. Without
 * Redis the days are kept in this process's memory.
 *
 * A run is counted abandoned once, whoever reports it first (the gateway's end-of-session report, then the
 * engine at the next dial): `momo:funnel:left:<runId>` (SET NX, a day; the run id is random), or a set in
 * memory without Redis.
 *
 * Time per step: a fixed histogram of how long runs stayed in a step before they moved on or failed
 * ({@link TIME_BUCKETS_MS}); the median and 90th percentile are read from it (within its bucket).
 */
import { closeRedis, connectRedis, type RedisTarget } from '../redis/connect.js';
import { LRUCache } from 'lru-cache';
import { flows as registeredFlows } from '../../flows/index.js';
import { FLOW_OUTCOMES, type FlowId, type FlowModule, type FlowOutcome } from '../../flows/types.js';
import type { FlowTransition } from '../conversation/flow/flow-runtime.js';
import type { Channel } from '../conversation/types.js';
import type { Logger } from '../log.js';
import { within } from '../within.js';
import { DEFAULT_KEY_PREFIX } from '../store/keys.js';
import { finalSteps, flowGraph, inFlowOrder, stepNames } from './flow-graph.js';
import { FLOW_LABELS, stepLabel } from '../../flows/step-labels.js';

/** The channels counted (a channel added to `Channel` must be added here: the type says so). */
const CHANNEL_SET: Record<Channel, true> = { ussd: true, telegram: true, slack: true, whatsapp: true };
export const CHANNELS = Object.keys(CHANNEL_SET) as Channel[];

/** How a run ended: its final step's outcome, or left (`abandoned`), or failed by the engine (`error`). */
export type RunOutcome = FlowOutcome | 'abandoned' | 'error';
export const RUN_OUTCOMES: readonly RunOutcome[] = [...FLOW_OUTCOMES, 'abandoned', 'error'];

/**
 * Upper bounds (ms) of the time-per-step buckets. From a quarter second (a service call, a button) to half an
 * hour (a chat left open), about 1.5x apart where people answer (2 s to 3 min); past the last bound is one
 * bucket. 20 buckets: 20 fields per step and channel a day.
 */
export const TIME_BUCKETS_MS: readonly number[] = [
  250,
  500,
  1000,
  2000,
  3000,
  5000,
  7500,
  10_000,
  15_000,
  20_000,
  30_000,
  45_000,
  60_000,
  90_000,
  120_000,
  180_000,
  300_000,
  600_000,
  1_800_000,
  Number.POSITIVE_INFINITY,
];

const STEP_COUNTERS = ['entered', 'movedOn', 'abandoned', 'failed'] as const;
type StepCounter = (typeof STEP_COUNTERS)[number];

/** Ends that count as failing at the step left. */
const FAILING: ReadonlySet<RunOutcome> = new Set(['refused', 'failed', 'error']);

/** A run is marked counted-abandoned this long: longer than a conversation record lives (TTL plus an hour). */
const LEFT_MARK_SECONDS = 24 * 3600;

/** The last write at close waits this long for Redis at most: a stop is never held up by the funnel. */
const CLOSE_WAIT_MS = 2000;

export interface FunnelOptions {
  /** Where Redis is (src/redis/connect.ts): counts shared by every process. Unset: counted in this process's memory. */
  redisUrl?: RedisTarget;
  /** Prefix of the Redis keys. Default `momo:` (tests use their own). */
  keyPrefix?: string;
  /** FUNNEL_DAYS: UTC days kept, today included. Default 30: a month to compare with. */
  days?: number;
  /** The flows whose steps are counted. Default the registry (flows/index.ts). */
  flows?: Partial<Record<FlowId, FlowModule>>;
  /** How often counts are written to Redis, ms. Default 1000: a second of counts lost at most, one write a second. */
  flushMs?: number;
  /** Clock in ms. Default Date.now (tests pass their own). */
  now?: () => number;
  logger: Logger;
}

/** The figures of one step (or one step on one channel). */
export interface StepFigures {
  entered: number;
  movedOn: number;
  abandoned: number;
  failed: number;
  /** Entered and not moved on: abandoned, failed, or still there (0 for a final step: runs end there). */
  dropOff: number;
  /** Time spent before moving on or failing, ms: median and 90th percentile (null: no timed run). */
  medianMs: number | null;
  p90Ms: number | null;
  /** How many stays were timed. */
  timed: number;
}

export interface StepReport extends StepFigures {
  /** The step's name in the machine (`awaitingAmount`). */
  step: string;
  /** The step in words an operations lead reads ("Amount asked"): flows/step-labels.ts. */
  label: string;
  final: boolean;
  channels: Partial<Record<Channel, StepFigures>>;
}

export type OutcomeCounts = Record<RunOutcome, number>;

export interface FlowReport {
  flow: FlowId;
  /** The flow's name on the page ("Pay someone"). */
  label: string;
  /** Runs started. */
  started: number;
  steps: StepReport[];
  /** How the runs ended, all channels. */
  outcomes: OutcomeCounts;
  /** How the runs ended, per day and channel (only days and channels with a count). */
  outcomesByDay: Array<{ day: string; channel: Channel; started: number } & OutcomeCounts>;
}

export interface FunnelReport {
  /** The UTC days covered, oldest first. */
  days: string[];
  /** The channels counted (one when the report was asked for one). */
  channels: Channel[];
  flows: FlowReport[];
}

export interface FunnelQuery {
  /** Days back, today included (1..the days kept). */
  days: number;
  channel?: Channel;
}

export interface Funnel {
  /** Counts one move (EngineOptions.onTransition). Synchronous, never throws. */
  record(move: FlowTransition): void;
  /** The figures of the last days. Writes what this process holds first. */
  report(query: FunnelQuery): Promise<FunnelReport>;
  /** UTC days kept. */
  readonly daysKept: number;
  /** Writes what is held (and waits for abandonments being checked). */
  flush(): Promise<void>;
  /** Writes what is held (waiting {@link CLOSE_WAIT_MS} at most) and closes the Redis connection. */
  close(): Promise<void>;
}

/** The UTC day of a time, `yyyy-mm-dd`. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const field = (flow: string, channel: string, step: string, counter: string): string =>
  `${flow}|${channel}|${step}|${counter}`;

/** The time counters' names, by bucket (`t0`, `t1`, ...). */
const TIME_COUNTERS = TIME_BUCKETS_MS.map((_, i) => `t${i}`);

const DAY_MS = 86_400_000;

/** The bucket of a stay of `ms`. */
export function bucketOf(ms: number): number {
  const index = TIME_BUCKETS_MS.findIndex((bound) => ms <= bound);
  return index < 0 ? TIME_BUCKETS_MS.length - 1 : index;
}

/**
 * The q-quantile (0..1) of a histogram over {@link TIME_BUCKETS_MS}, ms: linear within the bucket it falls
 * in; the last, unbounded bucket reads as its lower bound. Null for an empty histogram.
 */
export function quantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i] ?? 0;
    if (n > 0 && below + n >= rank) {
      const lower = i === 0 ? 0 : TIME_BUCKETS_MS[i - 1]!;
      const upper = TIME_BUCKETS_MS[i]!;
      if (!Number.isFinite(upper)) return lower;
      return Math.round(lower + ((upper - lower) * (rank - below)) / n);
    }
    below += n;
  }
  return TIME_BUCKETS_MS.at(-2)!;
}

/** Where counts are kept: Redis hashes, or memory. */
interface Tally {
  add(day: string, counts: Map<string, number>): Promise<void>;
  read(days: string[]): Promise<Map<string, number>[]>;
  /** True for the first caller about this run. */
  firstLeft(runId: string): Promise<boolean>;
  close(): Promise<void>;
}

function redisTally(target: RedisTarget, keyPrefix: string, daysKept: number, logger: Logger | undefined): Tally {
  // One retry: while Redis is away a write fails after one reconnection attempt (its counts are kept for the
  // next one) and so does a report (the page says so), instead of waiting for Redis to come back.
  const redis = connectRedis(target, {
    name: 'funnel',
    ...(logger ? { logger } : {}),
    keyPrefix,
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
  });
  const key = (day: string) => `funnel:${day}`;
  return {
    async add(day, counts) {
      const multi = redis.multi();
      for (const [name, n] of counts) multi.hincrby(key(day), name, n);
      // Kept `daysKept` whole days after its own.
      multi.expire(key(day), (daysKept + 1) * 86_400);
      await multi.exec();
    },
    async read(days) {
      // One command a day, sent together (auto-pipelining; one by one on a cluster, src/redis/connect.ts).
      const replies = await Promise.all(days.map((day) => redis.hgetall(key(day))));
      return replies.map((hash) => new Map(Object.entries(hash).map(([k, v]) => [k, Number(v)])));
    },
    async firstLeft(runId) {
      return (await redis.set(`funnel:left:${runId}`, '1', 'EX', LEFT_MARK_SECONDS, 'NX')) === 'OK';
    },
    async close() {
      // Not waiting for commands still queued while Redis is away: their counts are lost, the stop is not held.
      await closeRedis(redis);
    },
  };
}

function memoryTally(daysKept: number): Tally {
  const days = new Map<string, Map<string, number>>();
  const left = new LRUCache<string, true>({ max: 100_000, ttl: LEFT_MARK_SECONDS * 1000 });
  return {
    async add(day, counts) {
      const hash = days.get(day) ?? new Map<string, number>();
      days.set(day, hash);
      for (const [name, n] of counts) hash.set(name, (hash.get(name) ?? 0) + n);
      // The oldest days go once more than `daysKept` are held.
      for (const old of [...days.keys()].sort().slice(0, Math.max(0, days.size - daysKept - 1))) days.delete(old);
    },
    async read(wanted) {
      return wanted.map((day) => new Map(days.get(day) ?? []));
    },
    async firstLeft(runId) {
      if (left.has(runId)) return false;
      left.set(runId, true);
      return true;
    },
    async close() {},
  };
}

export function createFunnel(options: FunnelOptions): Funnel {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const daysKept = options.days ?? 30;
  if (!Number.isInteger(daysKept) || daysKept < 1 || daysKept > 366)
    throw new Error('funnel: days must be a whole number from 1 to 366');
  const tally = options.redisUrl
    ? redisTally(options.redisUrl, options.keyPrefix ?? DEFAULT_KEY_PREFIX, daysKept, options.logger)
    : memoryTally(daysKept);

  /** Each flow's steps in the order written, and its final ones: the only steps counted. */
  const shapes = new Map<FlowId, { steps: string[]; counted: Set<string>; finals: Set<string> }>();
  for (const [flow, module] of inFlowOrder(options.flows ?? registeredFlows)) {
    const graph = flowGraph(module.machine);
    const steps = stepNames(graph);
    shapes.set(flow, { steps, counted: new Set(steps), finals: finalSteps(graph) });
  }
  function isStep(flow: FlowId, step: string | undefined): step is string {
    return step !== undefined && shapes.get(flow)!.counted.has(step);
  }

  /**
   * The name of a counter (`field`), made once: a move is counted under the same few names every time, so none
   * is built or hashed again per move (a USSD session makes seven moves). Bounded by the flows' steps.
   */
  const names = new Map<string, Map<string, Map<string, Map<string, string>>>>();
  function nameOf(flow: FlowId, channel: Channel, step: string, counter: string): string {
    let byChannel = names.get(flow);
    if (!byChannel) names.set(flow, (byChannel = new Map()));
    let bySteps = byChannel.get(channel);
    if (!bySteps) byChannel.set(channel, (bySteps = new Map()));
    let byCounter = bySteps.get(step);
    if (!byCounter) bySteps.set(step, (byCounter = new Map()));
    let name = byCounter.get(counter);
    if (name === undefined) byCounter.set(counter, (name = field(flow, channel, step, counter)));
    return name;
  }

  /** The day of the last move counted, and the times it spans: every move of a day reads it without a Date. */
  let day = { from: 0, to: 0, name: '' };
  function dayAt(ms: number): string {
    if (ms < day.from || ms >= day.to) {
      const from = Math.floor(ms / DAY_MS) * DAY_MS;
      day = { from, to: from + DAY_MS, name: dayOf(ms) };
    }
    return day.name;
  }

  /** Counts not written yet, per day. */
  let held = new Map<string, Map<string, number>>();
  /** Abandonments being checked (first report of their run?). */
  const checking = new Set<Promise<void>>();
  let writing: Promise<void> = Promise.resolve();

  function add(day: string, name: string, n = 1): void {
    let counts = held.get(day);
    if (!counts) held.set(day, (counts = new Map<string, number>()));
    counts.set(name, (counts.get(name) ?? 0) + n);
  }

  function count(move: FlowTransition, day: string): void {
    const { flow, channel, from, to, end } = move;
    if (from === undefined && isStep(flow, to)) add(day, nameOf(flow, channel, '*', 'started'));
    if (isStep(flow, from)) {
      const leaving: StepCounter =
        end === 'abandoned' ? 'abandoned' : end !== undefined && FAILING.has(end) ? 'failed' : 'movedOn';
      add(day, nameOf(flow, channel, from, leaving));
      if (leaving !== 'abandoned' && Number.isFinite(move.enteredAt)) {
        add(day, nameOf(flow, channel, from, TIME_COUNTERS[bucketOf(Math.max(0, move.at - move.enteredAt!))]!));
      }
    }
    if (isStep(flow, to)) add(day, nameOf(flow, channel, to, 'entered'));
    if (end !== undefined) add(day, nameOf(flow, channel, '*', end));
  }

  function record(move: FlowTransition): void {
    try {
      if (!shapes.has(move.flow) || !Object.hasOwn(CHANNEL_SET, move.channel) || !Number.isFinite(move.at)) return;
      if (move.end !== undefined && !RUN_OUTCOMES.includes(move.end)) return;
      const day = dayAt(move.at);
      if (move.end !== 'abandoned') return count(move, day);
      const check: Promise<void> = tally
        .firstLeft(move.runId)
        .then((first) => (first ? count(move, day) : undefined))
        .catch((err: unknown) => logger.warn({ err: String(err) }, 'funnel: an abandonment was not counted'))
        .finally(() => checking.delete(check));
      checking.add(check);
    } catch (err) {
      logger.warn({ err: String(err) }, 'funnel: a move was not counted');
    }
  }

  /** Writes what is held; counts a failed write could not store are held again for the next one. */
  function flush(): Promise<void> {
    writing = writing.then(async () => {
      await Promise.all([...checking]);
      const batch = held;
      held = new Map();
      for (const [day, counts] of batch) {
        try {
          await tally.add(day, counts);
        } catch (err) {
          logger.warn({ err: String(err) }, 'funnel: counts not written yet; kept for the next write');
          for (const [name, n] of counts) add(day, name, n);
        }
      }
    });
    return writing;
  }

  // flush() keeps a failed write's counts for the next one and never rejects.
  const timer = setInterval(() => void flush(), options.flushMs ?? 1000);
  timer.unref();

  async function report(query: FunnelQuery): Promise<FunnelReport> {
    await flush();
    const today = now();
    const days = Array.from({ length: query.days }, (_, i) => dayOf(today - (query.days - 1 - i) * DAY_MS));
    const hashes = await tally.read(days);
    const channels = query.channel ? [query.channel] : CHANNELS;
    const flows = [...shapes.entries()].map(([flow, shape]) => flowReport(flow, shape, days, hashes, channels));
    return { days, channels, flows };
  }

  return {
    record,
    report,
    daysKept,
    flush,
    async close() {
      clearInterval(timer);
      await within(flush(), CLOSE_WAIT_MS);
      await tally.close();
    },
  };
}

/** One flow's figures from the days' hashes. */
function flowReport(
  flow: FlowId,
  shape: { steps: string[]; finals: Set<string> },
  days: string[],
  hashes: Map<string, number>[],
  channels: Channel[],
): FlowReport {
  const sum = (channel: Channel, step: string, counter: string) =>
    hashes.reduce((total, hash) => total + (hash.get(field(flow, channel, step, counter)) ?? 0), 0);
  const figures = (channel: Channel, step: string, final: boolean) => {
    const counters = Object.fromEntries(STEP_COUNTERS.map((c) => [c, sum(channel, step, c)])) as Record<
      StepCounter,
      number
    >;
    const times = TIME_BUCKETS_MS.map((_, i) => sum(channel, step, `t${i}`));
    return { counters, times, final };
  };
  const steps = shape.steps.map((step): StepReport => {
    const final = shape.finals.has(step);
    const perChannel = channels.map((channel) => [channel, figures(channel, step, final)] as const);
    const total = {
      counters: Object.fromEntries(
        STEP_COUNTERS.map((c) => [c, perChannel.reduce((t, [, f]) => t + f.counters[c], 0)]),
      ) as Record<StepCounter, number>,
      times: TIME_BUCKETS_MS.map((_, i) => perChannel.reduce((t, [, f]) => t + f.times[i]!, 0)),
      final,
    };
    const used = perChannel.filter(
      ([, f]) => f.counters.entered + f.counters.movedOn + f.counters.abandoned + f.counters.failed > 0,
    );
    return {
      step,
      label: stepLabel(flow, step),
      final,
      ...stepFigures(total),
      channels: Object.fromEntries(used.map(([c, f]) => [c, stepFigures(f)])),
    };
  });
  const outcomes = Object.fromEntries(RUN_OUTCOMES.map((o) => [o, 0])) as OutcomeCounts;
  let started = 0;
  const outcomesByDay: FlowReport['outcomesByDay'] = [];
  days.forEach((day, i) => {
    const hash = hashes[i]!;
    for (const channel of channels) {
      const get = (counter: string) => hash.get(field(flow, channel, '*', counter)) ?? 0;
      const row = {
        day,
        channel,
        started: get('started'),
        ...(Object.fromEntries(RUN_OUTCOMES.map((o) => [o, get(o)])) as OutcomeCounts),
      };
      started += row.started;
      for (const o of RUN_OUTCOMES) outcomes[o] += row[o];
      if (row.started > 0 || RUN_OUTCOMES.some((o) => row[o] > 0)) outcomesByDay.push(row);
    }
  });
  return { flow, label: FLOW_LABELS[flow] ?? flow, started, steps, outcomes, outcomesByDay };
}

function stepFigures({
  counters,
  times,
  final,
}: {
  counters: Record<StepCounter, number>;
  times: number[];
  final: boolean;
}): StepFigures {
  return {
    ...counters,
    dropOff: final ? 0 : Math.max(0, counters.entered - counters.movedOn),
    medianMs: quantile(times, 0.5),
    p90Ms: quantile(times, 0.9),
    timed: times.reduce((a, b) => a + b, 0),
  };
}
