/**
 * A per-user request rate limit in front of the engine (an Engine decorator). Each Inbound (or channel turn: a
 * USSD request) costs one point
 * of the bucket `<channel>:<userId>`; a user past the limit is answered `common.tooFast` in their language
 * and the engine is not called at all (no session read, no flow step, no service call).
 *
 * Default: 30 messages per 10 seconds per user per channel (config RATE_LIMIT_MESSAGES and
 * RATE_LIMIT_WINDOW_SECONDS). A person tapping buttons or answering USSD screens sends a message every
 * second or two at most; 30 in 10 s is a script or a stuck client, and one such user must not starve the
 * others of the engine, the store or the service's 30 reads a minute.
 *
 * Counters live in memory (one process), or in Redis when REDIS_URL is set, so processes behind a load
 * balancer share them (rate-limiter-flexible, keys `momo:ratelimit:<channel>:<userId>`). When Redis is not
 * ready, a memory limiter of the same size stands in (insurance), so a Redis outage neither blocks users nor
 * lifts the limit.
 */
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { commonMessages } from '../../flows/messages/common.js';
import type { Lang, UserProfile } from '../../flows/types.js';
import type { Engine, Inbound, Participant, Prompt, SessionStore, TurnDecision, TurnEngine } from '../conversation/types.js';
import { keys } from '../conversation/keys.js';
import { maskPhone, type Logger } from '../log.js';

/** Messages one user may send on one channel per window. Default 30 (see the file comment). */
export const DEFAULT_RATE_LIMIT_MESSAGES = 30;
/** The window in seconds. Default 10. */
export const DEFAULT_RATE_LIMIT_WINDOW_SECONDS = 10;

export interface RateLimitOptions {
  /** Messages per window per user per channel. Default {@link DEFAULT_RATE_LIMIT_MESSAGES}. */
  messages?: number;
  /** Window length in seconds. Default {@link DEFAULT_RATE_LIMIT_WINDOW_SECONDS}. */
  windowSeconds?: number;
  /** REDIS_URL: share counters between processes. Unset: counters in this process's memory. */
  redisUrl?: string;
  /** Prefix of the Redis keys. Default `momo:ratelimit`. */
  keyPrefix?: string;
  /** Where the user's language is read from (profile records), to say "too fast" in it. */
  store?: SessionStore;
  logger: Logger;
}

/** The decorated engine: everything the inner one offers (drain, ...), plus close() for the Redis connection. */
export type RateLimited<E extends Engine> = E & { close(): Promise<void> };

function tooFast(lang: Lang, final: boolean): Prompt {
  const text = commonMessages[lang]?.['common.tooFast'] ?? commonMessages.en['common.tooFast'] ?? 'Too many messages. Please wait.';
  return { text, final };
}

export function withRateLimit<E extends Engine>(engine: E, options: RateLimitOptions): RateLimited<E> {
  const points = options.messages ?? DEFAULT_RATE_LIMIT_MESSAGES;
  const duration = options.windowSeconds ?? DEFAULT_RATE_LIMIT_WINDOW_SECONDS;
  if (!Number.isInteger(points) || points < 1) throw new Error('rate limit: messages must be a whole number of at least 1');
  if (!Number.isInteger(duration) || duration < 1) throw new Error('rate limit: windowSeconds must be a whole number of at least 1');
  const keyPrefix = options.keyPrefix ?? 'momo:ratelimit';
  const { logger } = options;

  let redis: Redis | undefined;
  let limiter: RateLimiterAbstract;
  const memory = new RateLimiterMemory({ points, duration, keyPrefix });
  if (options.redisUrl) {
    // No offline queue: while Redis is away a call fails at once and the insurance limiter answers.
    redis = new Redis(options.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    redis.on('error', (err: Error) => logger.warn({ err: err.message }, 'rate limit: redis error; counting in memory meanwhile'));
    limiter = new RateLimiterRedis({
      storeClient: redis,
      points,
      duration,
      keyPrefix,
      rejectIfRedisNotReady: true,
      insuranceLimiter: memory,
    });
  } else {
    limiter = memory;
  }

  async function langOf(inbound: Participant): Promise<Lang> {
    const stored = await options.store?.get(keys.profile(inbound.channel, inbound.userId)).catch(() => null);
    const lang = (stored?.snapshot as UserProfile | undefined)?.lang;
    return lang === 'sw' ? 'sw' : 'en';
  }

  /** The answer for a user past the limit, or undefined when the message may go on to the engine. */
  async function refusal(inbound: Participant): Promise<Prompt | undefined> {
    try {
      await limiter.consume(`${inbound.channel}:${inbound.userId}`, 1);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const user = inbound.channel === 'ussd' ? maskPhone(inbound.userId) : inbound.userId;
        logger.warn({ channel: inbound.channel, user, retryInMs: rejection.msBeforeNext }, 'rate limit: too many messages, engine not called');
        // USSD cannot hold a screen open while the user waits: the session ends and they dial again.
        return tooFast(await langOf(inbound), inbound.channel === 'ussd');
      }
      // The limiter itself failed (both stores): let the message through rather than lock everyone out.
      logger.error({ err: rejection instanceof Error ? rejection.message : String(rejection) }, 'rate limit: limiter failed, message let through');
    }
    return undefined;
  }
  async function handle(inbound: Inbound): Promise<Prompt> {
    return (await refusal(inbound)) ?? engine.handle(inbound);
  }
  /** A refused turn keeps nothing: the channel's state for the refusal, as for a new session. */
  async function turn<S>(participant: Participant, decide: (state: S | undefined) => TurnDecision<S>): Promise<S> {
    const refused = await refusal(participant);
    if (!refused) return (engine as unknown as TurnEngine).turn(participant, decide);
    const decision = decide(undefined);
    return decision.kind === 'step' ? decision.after(refused) : decision.state;
  }
  async function close(): Promise<void> {
    if (redis) await redis.quit().catch(() => redis?.disconnect());
  }
  // Everything else of the inner engine (drain, ...) is its own, called on it.
  const limited = new Proxy(engine, {
    get(target, property) {
      if (property === 'handle') return handle;
      if (property === 'turn' && 'turn' in target) return turn;
      if (property === 'close') return close;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as RateLimited<E>;
  return limited;
}
