/**
 * The chaos run: people pay over USSD (Africa's Talking) and Telegram through product instances that are
 * child processes (`node dist/src/main.js`, two by default, on one Redis, configured by environment as in
 * production), against a standalone sandbox on its own port, while faults are injected:
 * - at the service (proxies.ts): answers lost after the payment committed, 5xx before and after;
 * - kills (instances.ts): an instance SIGKILLed at a random moment, while a payment call it sent is held,
 *   after the service committed it, or right after its answer was relayed (between the answer and the
 *   record's write); each is replaced by a new process on the same Redis;
 * - Redis (redis-proxy.ts): every connection cut for a moment; writes refused (out of memory) for a moment
 *   just after the service accepted a payment;
 * - Telegram (bot-api.ts): sends failed (5xx, 429 with retry_after, dropped connections), and outages;
 * - deliveries (transport.ts): requests and updates delivered twice, to two instances;
 * - with `redis` (redis-modes.ts), on a master, replica and Sentinels, or a three-master cluster, of their
 *   own: failovers and SIGKILLs of the master, or slots moved, every redisFaultEveryMs (in place of the cuts
 *   and refusals of one server); `failoverCost` says what the people answered during those saw.
 * The people (users.ts) behave as people do; count.ts says what the figures count and when a run passes;
 * diagnosis.ts what a failed conversation shows.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { hashPin } from '../../src/conversation/calls/access-policy.js';
import { createLogger } from '../../src/log.js';
import { DEFAULT_KEY_PREFIX, queuePrefixesOf } from '../../src/store/keys.js';
import { createSandbox } from '../../src/sandbox/index.js';
import { notificationQueueName } from '../../src/notifications/index.js';
import { deriveSecretToken } from '../../adapters/telegram/webhook.js';
import { ChaosBotApi } from './bot-api.js';
import {
  countFigures,
  failuresOf,
  minimumKills,
  passes,
  paymentsByChat,
  resultLine,
  type Figures,
  type SandboxPayment,
} from './count.js';
import { diagnose } from './diagnosis.js';
import { cleanProductKeys, productKeyPrefix } from '../shutdown/product.js';
import { Fleet, type Crash } from './instances.js';
import { awaitJournal, type JournalCheck } from './journal.js';
import { Balancer, FaultProxy, type Fault } from './proxies.js';
import { RedisProxy } from './redis-proxy.js';
import { startRedisSet, type RedisMode, type RedisSet } from './redis-modes.js';
import { copyProblem, PLACEHOLDER, STORE_FAULT_TAIL_MS } from './copies.js';
import { Transport } from './transport.js';
import { createPeople, PIN, START_OVER, type Conversation } from './users.js';
import { serverDatabase } from '../journal/server-database.js';
import { until } from '../until.js';

export interface ChaosOptions {
  conversations: number;
  /** Conversations at once. Default 16. */
  concurrency?: number;
  /** Product instances at once. Default 2. */
  instances?: number;
  /** Share of conversations on Telegram (the rest USSD). Default 0.25. */
  telegramShare?: number;
  /**
   * Redis (a database other than 0), which the instances share under a key prefix of the run's own
   * (REDIS_KEY_PREFIX), its keys deleted at the end. Default redis://127.0.0.1:6379/11.
   */
  redisUrl?: string;
  /** Servers of the run's own beyond one Redis (redis-modes.ts), in place of redisUrl. */
  redis?: RedisMode;
  /** Milliseconds between two faults of those servers (each waits for them to be whole again). Default 10000. */
  redisFaultEveryMs?: number;
  /** Seed of the fault and user choices. Default the clock. */
  seed?: number;
  /** Milliseconds between two faults of the rotation (kills, Redis cuts and refusals, Telegram outages). Default 3000. */
  faultEveryMs?: number;
  /** How long Redis stays cut. Default 800. */
  redisCutMs?: number;
  /** How long Redis refuses writes after a payment was accepted. Default 1000. */
  redisRefusalMs?: number;
  /** How long a Telegram outage lasts: past the bot's retries of a send (0.5 + 1 + 2 s). Default 4000. */
  telegramOutageMs?: number;
  /** How long an acknowledged user keeps looking for the outcome before leaving; they look once more at the end. Default 45000. */
  lookForMs?: number;
  /** Progress lines (stderr in the CLI). */
  progress?: (line: string) => void;
  /** Every line the instances write, prefixed with the instance's name (CHAOS_LOG). */
  productLog?: (line: string) => void;
}

export interface ChaosResult extends Figures {
  ok: boolean;
  /** `chaos: conversations=N confirmed=C payments=P duplicates=D lost=L told=T kills=K` */
  line: string;
  records: Conversation[];
  /** How often each fault was injected. */
  faults: Record<string, number>;
  /** Instances that died without being killed, or did not exit cleanly at the end. */
  crashes: Crash[];
  /** The diagnosis of every failed conversation (diagnosis.ts). */
  failures: string[];
  /** Everything else worth a look: broken-off conversations, a resent USSD request answered differently, ... */
  problems: string[];
  /** The journal's check (journal.ts): an intent per payment, each confirmed one final and told. */
  journal: JournalCheck;
  /** The users who gave up without an acknowledgement and without a payment: what they were answered. */
  gaveUp: string[];
  /** With `redis`: the faults of the servers and what the people answered during them saw. */
  failoverCost?: FailoverCost;
}

/** What the answers that came while the servers were failing (from a fault until whole again, and 2 s more) were. */
export interface FailoverCost {
  faults: Array<{ what: string; ms: number }>;
  /** Answers in those windows, and the conversations they belong to. */
  answers: number;
  conversations: number;
  /**
   * Of those answers: "still working on it", "something went wrong / start again", "cannot reach", "Continue
   * where you left off?", and the screen before it again after an answer.
   */
  processing: number;
  startOver: number;
  unavailable: number;
  resumeOffered: number;
  repeated: number;
  /** Conversations that saw at least one of those. */
  touched: number;
}

/** `chaos: failover cost ...`: the line the CLI prints. */
export function failoverCostLine(c: FailoverCost): string {
  const slowest = Math.max(0, ...c.faults.map((f) => f.ms));
  return (
    `chaos: redis faults=${c.faults.length} (${c.faults.map((f) => f.what).join(',')}; longest ${slowest} ms) ` +
    `answers-during=${c.answers} conversations-during=${c.conversations} touched=${c.touched} ` +
    `processing=${c.processing} start-over=${c.startOver} unavailable=${c.unavailable} ` +
    `resume-offered=${c.resumeOffered} repeated=${c.repeated}`
  );
}

const API_KEY = 'chaos-key';
const BOT_TOKEN = '424242:CHAOS-token';
const WEBHOOK_USER = 'chaos-webhooks';
const WEBHOOK_PASSWORD = 'chaos-webhook-password';
/** The Africa's Talking callback's secret path segment (USSD_CALLBACK_TOKEN), when the product serves one. */
const USSD_TOKEN = 'chaos-ussd-callback-token';
/** The faults taken in turn, one every faultEveryMs; the armed ones fire on the next payment call. */
const ROTATION = [
  'kill-at-random',
  'redis-cut',
  'kill-before-commit',
  'telegram-outage',
  'kill-after-commit',
  'redis-refuses-after-commit',
  'kill-after-answer',
] as const;
/** Faults of single service calls, by chance: payment creates, then any other call. */
const PAYMENT_FAULTS: Array<[Fault, number]> = [
  ['drop-after-commit', 0.1],
  ['slow-drop-after-commit', 0.05],
  ['5xx', 0.1],
  ['5xx-after-commit', 0.05],
  ['redis-refuses-after-commit', 0.01],
];
const OTHER_CALL_5XX = 0.03;
const DUPLICATE_DELIVERIES = 0.1;
const TELEGRAM_SEND_FAULTS = 0.05;

// timer-ok: the helper of the faults' schedule and length, the run's subject; each use says which.
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** mulberry32: small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A production access policy naming every person of the run (no `*` entry), USSD users with a PIN hash. */
function writePolicy(dir: string, conversations: Conversation[]): string {
  const pin = hashPin(PIN);
  const role = { role: 'payer' };
  const users = { telegram: {} as Record<string, object>, slack: {}, ussd: {} as Record<string, object> };
  for (const c of conversations) {
    const [channel, id] = [c.channel, c.chat.slice(c.chat.indexOf(':') + 1)];
    if (channel === 'telegram') users.telegram[id] = role;
    else users.ussd[id] = { ...role, pin };
  }
  const file = join(dir, 'policy.json');
  writeFileSync(
    file,
    JSON.stringify({
      roles: { payer: { flows: ['pay'], perPaymentLimit: { UGX: '100000' }, dailyLimit: { UGX: '10000000' } } },
      users,
    }),
  );
  return file;
}

/** POSTs an empty form: the status says whether the route exists (404) or checks its input (4xx). */
function probe(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        agent: false,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const n = options.conversations;
  const seed = options.seed ?? Date.now() % 1_000_000;
  const random = prng(seed);
  const progress = options.progress ?? (() => {});
  const redisUrl = new URL(options.redisUrl ?? 'redis://127.0.0.1:6379/11');
  const db = redisUrl.pathname.replace('/', '') || '0';
  if (db === '0') throw new Error('chaos: use a dedicated Redis database, not 0');
  const faultEveryMs = options.faultEveryMs ?? 3000;
  const problems: string[] = [];
  /** The rotation's faults that are not service calls' (those are counted by the fault proxy). */
  const rotation: Record<string, number> = { 'kill-at-random': 0, 'redis-cut': 0, 'telegram-outage': 0 };
  const startedAt = Date.now();
  progress(`chaos: seed ${seed}`);

  const redisSet: RedisSet | undefined = options.redis
    ? await startRedisSet(options.redis, progress, random)
    : undefined;
  // On a cluster, a failed conversation's keys are looked up on the master its client lands on (diagnosis.ts
  // scans): the queue's counts below are single keys, read wherever they are.
  const redis = (redisSet?.client as Redis | undefined) ?? new Redis(redisUrl.toString());
  // On the servers of its own the instances keep the default prefix (the faults aim at its queues' tags); on a
  // shared Redis one of the run's own, whose keys alone it deletes.
  const keyPrefix = redisSet ? DEFAULT_KEY_PREFIX : productKeyPrefix('chaos');

  // The people, and a policy that names them.
  const base = 100000 + (seed % 800000);
  const records: Conversation[] = Array.from({ length: n }, (_, index) => {
    const telegram = random() < (options.telegramShare ?? 0.25);
    return {
      index,
      channel: telegram ? 'telegram' : 'ussd',
      chat: telegram
        ? `telegram:${7_000_000_000 + base * 1000 + index}`
        : `ussd:+256701${String((base + index) % 1_000_000).padStart(6, '0')}`,
      amount: String(1000 + Math.floor(random() * 40) * 100),
      confirmed: false,
      told: false,
      restarts: 0,
      unacknowledged: [],
      trail: [],
    };
  });
  const dir = mkdtempSync(join(tmpdir(), 'momo-chaos-'));
  const policyFile = writePolicy(dir, records);

  // The standalone sandbox on its own port, sending its webhooks with Basic auth.
  const sandbox = createSandbox({
    apiKey: API_KEY,
    allowHttpWebhooks: true,
    autoAdvance: true,
    limits: { readsPerMinute: 1_000_000, writesPerMinute: 1_000_000 },
    logger: createLogger('silent'),
  });
  sandbox.controls.setOrganization({ webhookAuth: { username: WEBHOOK_USER, password: WEBHOOK_PASSWORD } });
  const sandboxServer: Server = await new Promise((resolve) => {
    const s = sandbox.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const sandboxPort = (sandboxServer.address() as AddressInfo).port;

  const redisProxy = await new RedisProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) }).start();
  // Several processes on one Redis keep their journal in one PostgreSQL database (a production start refuses
  // REDIS_URL without DATABASE_URL): one of the run's own, dropped at its end.
  const journalDatabase = await serverDatabase('chaos');
  const bot = await new ChaosBotApi({ faultShare: TELEGRAM_SEND_FAULTS, random }).start();

  // The rotation's faults of payment calls wait for the next one: a kill only when every instance is up (so
  // one is always left to take over), at most two waiting; a refusal of Redis writes at once.
  const armedKills: Fault[] = [];
  let armedRefusal = false;
  /** When Redis was cut or refused writes (ms since the epoch, from and to: Infinity while it lasts). */
  const storeFaults: Array<[number, number]> = [];
  let fleet: Fleet;
  const faultProxy = new FaultProxy({
    targetPort: sandboxPort,
    choose({ instance, method, path }) {
      // An instance starting registers its webhooks: no faults until it listens.
      if (fleet.byName(instance)?.port === undefined) return 'none';
      const r = random();
      if (method !== 'POST' || path !== '/api/payments') return r < OTHER_CALL_5XX ? '5xx' : 'none';
      if (armedRefusal && !redisSet) {
        armedRefusal = false;
        return 'redis-refuses-after-commit';
      }
      if (armedKills.length > 0 && fleet.allUp()) return armedKills.shift()!;
      let sum = 0;
      // Beyond one Redis the instances do not go through the Redis proxy: no refusals of it.
      for (const [fault, share] of PAYMENT_FAULTS)
        if (r < (sum += share)) return redisSet && fault === 'redis-refuses-after-commit' ? 'none' : fault;
      return 'none';
    },
    kill: (instance) => fleet.kill(instance),
    refuseRedisWrites: () => {
      const ms = options.redisRefusalMs ?? 1000;
      storeFaults.push([Date.now(), Date.now() + ms]);
      redisProxy.refuseWrites(ms);
    },
    killDelayMs: () => Math.floor(random() * 20),
  });

  fleet = new Fleet({
    size: options.instances ?? 2,
    env: async (name) => ({
      PORT: '0',
      LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
      MOMO_BASE_URL: `http://127.0.0.1:${await faultProxy.listenFor(name)}`,
      MOMO_API_KEY: API_KEY,
      MOMO_WEBHOOK_USER: WEBHOOK_USER,
      MOMO_WEBHOOK_PASSWORD: WEBHOOK_PASSWORD,
      ...(redisSet?.env ?? { REDIS_URL: `redis://127.0.0.1:${redisProxy.port}/${db}` }),
      REDIS_KEY_PREFIX: keyPrefix,
      DATABASE_URL: journalDatabase.url,
      PUBLIC_URL: `http://127.0.0.1:${balancer.port}`,
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_API_ROOT: bot.apiRoot,
      ACCESS_POLICY_FILE: policyFile,
      USSD_CALLBACK_TOKEN: USSD_TOKEN,
      // Every gateway request and notification of the run comes from one address (loopback), as a busy
      // gateway's would: the per-source limit is set for that traffic (README, Security).
      SOURCE_RATE_LIMIT_REQUESTS: '1000000',
      // Its people answer a screen within a fraction of a second and start over at once, faster than anyone
      // types, and the transport sends copies: 30 messages in 10 s (the per-user default) is within their
      // reach, and a copy refused "too fast" is no test of the money path. The limit has its own tests
      // (test/security/ratelimit.test.ts).
      RATE_LIMIT_MESSAGES: '1000',
      // A killed instance's runs and notifications are taken over once their leases lapse: short ones here, so
      // that each of the run's kills costs its people seconds, not the half-minute a production lease leaves
      // for a live process's stall (the takeovers are the same; they come sooner).
      RUN_LEASE_MS: '3000',
      RUN_SWEEP_MS: '600',
      NOTIFY_LEASE_MS: '6000',
      NOTIFY_JOB_LOCK_MS: '3000',
    }),
    gone: (name) => faultProxy.forget(name),
    onLine: options.productLog ? (name, line) => options.productLog!(`${name} ${line}\n`) : undefined,
    progress,
  });
  const balancer = await new Balancer(() => fleet.livePorts()).start();
  await fleet.start();
  // The gateway's callback: with the secret path segment when the product serves one.
  const ussdPath =
    (await probe(fleet.up(0)!.port!, `/ussd/africastalking/${USSD_TOKEN}`)) === 404
      ? '/ussd/africastalking'
      : `/ussd/africastalking/${USSD_TOKEN}`;
  progress(
    `chaos: ${options.instances ?? 2} instances up (${Math.round((Date.now() - startedAt) / 1000)} s); USSD callback ${ussdPath.replace(USSD_TOKEN, '<token>')}`,
  );

  const transport = new Transport({
    fleet,
    duplicateShare: DUPLICATE_DELIVERIES,
    random,
    onCopy(request, first, copy) {
      const problem = copyProblem(request.path, first, copy, storeFaults);
      if (problem) problems.push(problem);
    },
  });
  const people = createPeople({
    transport,
    bot,
    ussdPath,
    telegramSecret: deriveSecretToken(BOT_TOKEN),
    seed,
    lookForMs: options.lookForMs ?? 45_000,
    startedAt,
  });

  // ---------------------------------------------------------------- faults over time

  let running = true;
  const chaosLoop = (async () => {
    for (let turn = 0; running; turn++) {
      await sleep(faultEveryMs); // timer-ok: the faults' schedule (one every faultEveryMs) is the run's subject
      if (!running) break;
      const fault = ROTATION[turn % ROTATION.length]!;
      switch (fault) {
        case 'kill-at-random': {
          const up = fleet.allUp() ? fleet.livePorts().length : 0;
          if (up === 0) continue;
          const victim = fleet.up(Math.floor(random() * up))!;
          if (fleet.kill(victim.name)) rotation[fault]!++;
          continue;
        }
        case 'redis-cut': {
          if (redisSet) continue;
          rotation[fault]!++;
          progress('chaos: cutting Redis');
          // Seen from its start: a copy answered while it lasts is judged against it.
          const cut: [number, number] = [Date.now(), Infinity];
          storeFaults.push(cut);
          redisProxy.cut();
          await sleep(options.redisCutMs ?? 800); // timer-ok: how long Redis is cut is the fault itself
          redisProxy.restore();
          cut[1] = Date.now();
          continue;
        }
        case 'telegram-outage':
          rotation[fault]!++;
          progress('chaos: Telegram down');
          bot.outage(options.telegramOutageMs ?? 4000);
          continue;
        case 'redis-refuses-after-commit':
          armedRefusal = !redisSet;
          continue;
        default:
          if (armedKills.length < 2) armedKills.push(fault);
      }
    }
  })();

  /** The faults of the servers beyond one Redis, one at a time, each once they are whole again. */
  const redisFaults: Array<{ what: string; from: number; to: number }> = [];
  const redisLoop = (async () => {
    while (redisSet && running) {
      await sleep(options.redisFaultEveryMs ?? 10_000); // timer-ok: the schedule of the servers' faults
      if (!running) break;
      try {
        const fault = await redisSet.fault();
        if (fault) {
          redisFaults.push(fault);
          storeFaults.push([fault.from, fault.to]);
        }
      } catch (error) {
        problems.push(`redis fault: ${String(error)}`);
      }
    }
  })();

  // ---------------------------------------------------------------- the conversations

  let next = 0;
  let finished = 0;
  const worker = async () => {
    while (next < n) {
      const c = records[next++]!;
      try {
        await people.converse(c);
      } catch (error) {
        problems.push(`conversation ${c.index} (${c.chat}) broke off: ${String(error)}`);
      }
      if (++finished % 25 === 0)
        progress(
          `chaos: ${finished}/${n} conversations (${Math.round((Date.now() - startedAt) / 1000)} s, ${fleet.kills} kills)`,
        );
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 16, n) }, worker));
  running = false;
  await chaosLoop;
  await redisLoop;

  // Users not told yet come back later and look once more (every 2 s, for as long as they looked before).
  const untold = () => records.filter((c) => c.confirmed && !c.told);
  const everyoneTold = async () => {
    await Promise.all(untold().map((c) => people.lookAgain(c).catch(() => undefined)));
    return untold().length === 0;
  };
  const lookForMs = options.lookForMs ?? 45_000;
  await until('every user told', everyoneTold, { timeoutMs: lookForMs, everyMs: 2000 }).catch(() => false);

  // ---------------------------------------------------------------- the count

  const payments: SandboxPayment[] = sandbox.controls.payments().map((p) => {
    const wire = p as {
      id: number;
      state: string;
      created?: string;
      metadata?: { chat?: string; ref?: string } | null;
    };
    return {
      id: wire.id,
      state: wire.state,
      chat: wire.metadata?.chat,
      ref: wire.metadata?.ref,
      created: wire.created,
    };
  });
  const figures = countFigures(records, payments, fleet.kills);
  // The journal, while the instances still run (a fact buffered in Redis while the database was cut off is
  // written by a live one).
  const confirmedChats = new Set(records.filter((c) => c.confirmed).map((c) => c.chat));
  const journal = await awaitJournal(journalDatabase.url, () => payments, confirmedChats);
  progress(journal.line);
  for (const line of journal.problems.slice(0, 30)) problems.push(`journal: ${line}`);
  const made = paymentsByChat(payments);
  const failures: string[] = [];
  const deliveries = (paymentId: number) => {
    const events = new Set(
      sandbox.controls
        .events()
        .filter((e) => (e as { data?: { id?: number } }).data?.id === paymentId)
        .map((e) => (e as { id: number }).id),
    );
    return sandbox.controls
      .deliveries()
      .filter((d) => events.has(d.event))
      .map((d) => `${d.event_type}#${d.event} attempt ${d.attempt}: ${d.status ?? d.error} ${d.outcome}`);
  };
  for (const c of records) {
    const kinds = failuresOf(c, made.get(c.chat)?.length ?? 0);
    if (kinds.length === 0) continue;
    failures.push(
      await diagnose(c, kinds, {
        startedAt,
        payments,
        calls: faultProxy.paymentCalls,
        instances: fleet.history,
        deliveries,
        redis,
      }),
    );
  }
  const gaveUp = records
    .filter((c) => !c.confirmed && !made.has(c.chat))
    .map(
      (c) =>
        `${c.chat}: ${c.restarts} restarts; steps ${JSON.stringify(c.trail.map((s) => `${s.t}+${s.took ?? '?'}ms ${s.via ?? '--'} ${s.what}`))}`,
    );
  if (figures.told < figures.confirmed) {
    // The notification queue's parts as the run ends: a notification not told yet waits there, or failed.
    const counts = await Promise.all(
      queuePrefixesOf(keyPrefix)
        .parts('notifications')
        .map((prefix) => {
          const q = `${prefix}:${notificationQueueName(API_KEY)}`;
          return Promise.all([
            redis.llen(`${q}:wait`),
            redis.llen(`${q}:active`),
            redis.zcard(`${q}:delayed`),
            redis.zcard(`${q}:failed`),
          ]);
        }),
    );
    const [wait, active, delayed, failed] = [0, 1, 2, 3].map((i) => counts.reduce((sum, part) => sum + part[i]!, 0));
    problems.push(
      `notification queue at the end: wait ${wait}, active ${active}, delayed ${delayed}, failed ${failed}`,
    );
  }
  if (figures.kills < minimumKills(n))
    problems.push(`only ${figures.kills} kills; a run of ${n} needs ${minimumKills(n)}`);

  const failoverCost = redisSet ? costOf(records, redisFaults, startedAt) : undefined;

  // ---------------------------------------------------------------- teardown

  await fleet.stop();
  const crashes = fleet.crashes;
  for (const crash of crashes)
    problems.push(`${crash.name} died by itself (${crash.code ?? crash.signal}):\n    ${crash.tail.join('\n    ')}`);
  const faults: Record<string, number> = {
    ...faultProxy.counts,
    ...rotation,
    serviceRequests: faultProxy.requests,
    redisCommandsRefused: redisProxy.refused,
    ...Object.fromEntries(Object.entries(bot.faults).map(([k, v]) => [`telegram-${k}`, v])),
    duplicateDeliveries: transport.duplicates,
    requestsRefused: transport.refused,
    requestsUnanswered: transport.noAnswers,
    failedStarts: fleet.failedStarts.length,
  };
  await balancer.close();
  await faultProxy.close();
  await bot.close();
  await redisProxy.close();
  sandboxServer.closeAllConnections();
  await new Promise<void>((resolve) => sandboxServer.close(() => resolve()));
  await sandbox.close();
  await journalDatabase.drop();
  if (redisSet) await redisSet.close();
  else {
    await cleanProductKeys(redis, keyPrefix);
    await redis.quit();
  }
  rmSync(dir, { recursive: true, force: true });

  const ok = passes(figures) && crashes.length === 0 && journal.ok;
  return {
    ...figures,
    ok,
    line: resultLine(figures),
    records,
    faults,
    crashes,
    failures,
    problems,
    gaveUp,
    journal,
    ...(failoverCost ? { failoverCost } : {}),
  };
}

/** The screen of a trail step (`<answer> -> <screen>`). */
const screenOf = (what: string): string => what.slice(what.indexOf(' -> ') + 4);

/** Answers that came while the servers failed (and 2 s after, the clients catching up), and what they said. */
function costOf(
  records: Conversation[],
  faults: Array<{ what: string; from: number; to: number }>,
  startedAt: number,
): FailoverCost {
  const windows = faults.map((f) => [f.from - startedAt, f.to - startedAt + STORE_FAULT_TAIL_MS] as const);
  const cost: FailoverCost = {
    faults: faults.map((f) => ({ what: f.what, ms: f.to - f.from })),
    answers: 0,
    conversations: 0,
    processing: 0,
    startOver: 0,
    unavailable: 0,
    resumeOffered: 0,
    repeated: 0,
    touched: 0,
  };
  for (const c of records) {
    let during = false;
    let touched = false;
    c.trail.forEach((step, i) => {
      if (!windows.some(([from, to]) => from <= step.t && step.t <= to)) return;
      during = true;
      cost.answers++;
      const seen = {
        processing: PLACEHOLDER.test(step.what),
        startOver: START_OVER.test(step.what),
        unavailable: /cannot reach your conversation/i.test(step.what),
        resumeOffered: /Continue where you left off/.test(step.what),
        // The same screen again after an answer (a dial showing the menu again is a look for the outcome).
        repeated: i > 0 && !step.what.startsWith('dial ') && screenOf(c.trail[i - 1]!.what) === screenOf(step.what),
      };
      for (const [kind, yes] of Object.entries(seen)) if (yes) cost[kind as keyof typeof seen]++;
      touched ||= Object.values(seen).some(Boolean);
    });
    if (during) cost.conversations++;
    if (touched) cost.touched++;
  }
  return cost;
}
