/**
 * Request rate limits, counted in memory (one process) or in Redis when REDIS_URL is set, so processes behind
 * a load balancer share them (rate-limiter-flexible). When Redis is not ready, a memory limiter of the same
 * size stands in (insurance), so a Redis outage neither blocks callers nor lifts the limit.
 *
 * - Per user ({@link withRateLimit}, a wrapper of the engine): each Inbound (or channel turn: a USSD request)
 *   costs one point of the bucket `<channel>:<userId>`; a user past the limit is answered `common.tooFast`
 *   in their language and the engine is not called at all (no conversation read, no flow step, no service call).
 *   Default: 30 messages per 10 seconds per user per channel (config RATE_LIMIT_MESSAGES and
 *   RATE_LIMIT_WINDOW_SECONDS). A person tapping buttons or answering USSD screens sends a message every
 *   second or two at most; 30 in 10 s is a script or a stuck client, and one such user must not starve the
 *   others of the engine, the store or the service's 30 reads a minute. Keys `momo:ratelimit:<channel>:<user>`.
 * - Per source ({@link sourceRateLimit}, express middleware): each request to the routes it is mounted on
 *   (the USSD gateways, the service's notifications; any webhook route) costs one point of its caller's
 *   address (an IPv6 caller's /64, which one host usually holds whole); past the limit: 429 with Retry-After
 *   and a reason, before any body is read or any credential checked. Default 1000 requests per 10 s per
 *   address (config SOURCE_RATE_LIMIT_REQUESTS and SOURCE_RATE_LIMIT_WINDOW_SECONDS). Keys
 *   `momo:sourcelimit:<address>`. The address is the socket's, or the one TRUST_PROXY's hops forwarded:
 *   behind a proxy not named there, every caller shares the proxy's address and so its budget.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { closeRedis, connectRedis, type RedisTarget } from '../redis/connect.js';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { commonMessages } from '../../flows/messages/common.js';
import { isLang, type Lang, type UserProfile } from '../../flows/types.js';
import type { ConversationEngine } from '../conversation/engine/engine.js';
import type { Inbound, Participant, Prompt, TurnDecision } from '../conversation/types.js';
import type { Store } from '../store/types.js';
import { DEFAULT_KEY_PREFIX, keys } from '../store/keys.js';
import { sendJson } from '../http/direct-routes.js';
import { maskUserId, type Logger } from '../log.js';

/** Messages one user may send on one channel per window. Default 30 (see the file comment). */
export const DEFAULT_RATE_LIMIT_MESSAGES = 30;
/** The window in seconds. Default 10. */
export const DEFAULT_RATE_LIMIT_WINDOW_SECONDS = 10;

export interface RateLimitOptions {
  /** Messages per window per user per channel. Default {@link DEFAULT_RATE_LIMIT_MESSAGES}. */
  messages?: number;
  /** Window length in seconds. Default {@link DEFAULT_RATE_LIMIT_WINDOW_SECONDS}. */
  windowSeconds?: number;
  /** Where Redis is (src/redis/connect.ts): counters shared between processes. Unset: in this process's memory. */
  redisUrl?: RedisTarget;
  /** Prefix of the Redis keys. Default `momo:ratelimit`. */
  keyPrefix?: string;
  /** Where the user's language is read from (profile records), to say "too fast" in it. */
  store?: Store;
  logger: Logger;
}

/** The engine behind the limit: what it offers, plus close() for the limiter's Redis connection. */
export type RateLimited = ConversationEngine & { close(): Promise<void> };

function tooFast(lang: Lang, final: boolean): Prompt {
  const text =
    commonMessages[lang]?.['common.tooFast'] ??
    commonMessages.en['common.tooFast'] ??
    'Too many messages. Please wait.';
  return { text, final };
}

/** A limiter of `points` per `duration` seconds, shared in Redis when `redisUrl` is set; close() its connection. */
function createLimiter(options: {
  points: number;
  duration: number;
  keyPrefix: string;
  redisUrl?: RedisTarget;
  logger: Logger;
  name: string;
}) {
  const { points, duration, keyPrefix, logger, name } = options;
  const memory = new RateLimiterMemory({ points, duration, keyPrefix });
  if (!options.redisUrl) return { limiter: memory as RateLimiterAbstract, close: async () => undefined };
  // No offline queue: while Redis is away a call fails at once and the insurance limiter answers.
  // Its errors are logged boundedly by the factory; meanwhile the memory limiter counts.
  const redis = connectRedis(options.redisUrl, { name, logger, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    points,
    duration,
    keyPrefix,
    rejectIfRedisNotReady: true,
    insuranceLimiter: memory,
  });
  return {
    limiter: limiter as RateLimiterAbstract,
    close: async () => {
      await closeRedis(redis);
    },
  };
}

function wholeNumbers(points: number, duration: number, names: [string, string]): void {
  if (!Number.isInteger(points) || points < 1)
    throw new Error(`rate limit: ${names[0]} must be a whole number of at least 1`);
  if (!Number.isInteger(duration) || duration < 1)
    throw new Error(`rate limit: ${names[1]} must be a whole number of at least 1`);
}

/** `engine` behind the per-user limit: handle() and turn() are counted; the rest goes to the engine as it is. */
export function withRateLimit(engine: ConversationEngine, options: RateLimitOptions): RateLimited {
  const points = options.messages ?? DEFAULT_RATE_LIMIT_MESSAGES;
  const duration = options.windowSeconds ?? DEFAULT_RATE_LIMIT_WINDOW_SECONDS;
  wholeNumbers(points, duration, ['messages', 'windowSeconds']);
  const { logger } = options;
  const { limiter, close } = createLimiter({
    points,
    duration,
    keyPrefix: options.keyPrefix ?? `${DEFAULT_KEY_PREFIX}ratelimit`,
    redisUrl: options.redisUrl,
    logger,
    name: 'rate limit',
  });

  async function langOf(inbound: Participant): Promise<Lang> {
    const stored = await options.store?.get(keys.profile(inbound.channel, inbound.userId)).catch(() => null);
    const lang = (stored?.snapshot as UserProfile | undefined)?.lang;
    return isLang(lang) ? lang : 'en';
  }

  /** The answer for a user past the limit, or undefined when the message may go on to the engine. */
  async function refusal(inbound: Participant): Promise<Prompt | undefined> {
    try {
      await limiter.consume(`${inbound.channel}:${inbound.userId}`, 1);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        logger.warn(
          {
            channel: inbound.channel,
            user: maskUserId(inbound.channel, inbound.userId),
            retryInMs: rejection.msBeforeNext,
          },
          'rate limit: too many messages, engine not called',
        );
        // USSD cannot hold a screen open while the user waits: the session ends and they dial again.
        return tooFast(await langOf(inbound), inbound.channel === 'ussd');
      }
      // The limiter itself failed (both stores): let the message through rather than lock everyone out.
      logger.error(
        { err: rejection instanceof Error ? rejection.message : String(rejection) },
        'rate limit: limiter failed, message let through',
      );
    }
    return undefined;
  }
  async function handle(inbound: Inbound): Promise<Prompt> {
    return (await refusal(inbound)) ?? engine.handle(inbound);
  }
  /** A refused turn keeps nothing: the channel's state for the refusal, as for a new session. */
  async function turn<S>(participant: Participant, decide: (state: S | undefined) => TurnDecision<S>): Promise<S> {
    const refused = await refusal(participant);
    if (!refused) return engine.turn(participant, decide);
    const decision = decide(undefined);
    return decision.kind === 'step' ? decision.after(refused, 0) : decision.state;
  }
  return {
    handle,
    turn,
    // A gateway's report that a session ended is not a message of the user's: not counted.
    sessionEnded: (participant, isCurrent) => engine.sessionEnded(participant, isCurrent),
    // The USSD guard's answer to a delivery already let through (or refused): not a message either.
    toldLate: (participant, messageId) => engine.toldLate(participant, messageId),
    drain: () => engine.drain(),
    stop: () => engine.stop(),
    sweep: () => engine.sweep(),
    handOn: () => engine.handOn(),
    close,
  };
}

/** Requests one address may send to the routes the per-source limit guards, per window. Default 1000. */
export const DEFAULT_SOURCE_RATE_LIMIT_REQUESTS = 1000;
/** The per-source window in seconds. Default 10. */
export const DEFAULT_SOURCE_RATE_LIMIT_WINDOW_SECONDS = 10;

export interface SourceRateLimitOptions {
  /** Requests per window per address. Default {@link DEFAULT_SOURCE_RATE_LIMIT_REQUESTS}. */
  requests?: number;
  /** Window length in seconds. Default {@link DEFAULT_SOURCE_RATE_LIMIT_WINDOW_SECONDS}. */
  windowSeconds?: number;
  /** Where Redis is (src/redis/connect.ts): counters shared between processes. Unset: in this process's memory. */
  redisUrl?: RedisTarget;
  /** Prefix of the Redis keys. Default `momo:sourcelimit`. */
  keyPrefix?: string;
  /** The caller's address (DirectRoutes.ip: the socket's, or what the trusted proxy hops forwarded). */
  addressOf: (req: IncomingMessage) => string | undefined;
  logger: Logger;
}

/**
 * The per-source limit as middleware on Node's own request and response, for express routes and direct ones
 * (src/http/direct-routes.ts) alike (mount it before the routes it guards); close() frees Redis.
 */
export type SourceRateLimit = ((req: IncomingMessage, res: ServerResponse, next: () => void) => void) & {
  close(): Promise<void>;
};

/** The caller's bucket: its IPv4 address, or its IPv6 address's /64 (one host usually holds a whole /64). */
export function sourceOf(address: string | undefined): string {
  if (!address || !ipaddr.isValid(address)) return 'unknown';
  const ip = ipaddr.process(address);
  return ip.kind() === 'ipv6'
    ? `${ipaddr.IPv6.networkAddressFromCIDR(`${ip.toString()}/64`).toString()}/64`
    : ip.toString();
}

export function sourceRateLimit(options: SourceRateLimitOptions): SourceRateLimit {
  const points = options.requests ?? DEFAULT_SOURCE_RATE_LIMIT_REQUESTS;
  const duration = options.windowSeconds ?? DEFAULT_SOURCE_RATE_LIMIT_WINDOW_SECONDS;
  wholeNumbers(points, duration, ['requests', 'windowSeconds']);
  const { logger } = options;
  const { limiter, close } = createLimiter({
    points,
    duration,
    keyPrefix: options.keyPrefix ?? `${DEFAULT_KEY_PREFIX}sourcelimit`,
    redisUrl: options.redisUrl,
    logger,
    name: 'source limit',
  });

  const middleware = (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const source = sourceOf(options.addressOf(req));
    limiter.consume(source, 1).then(
      () => next(),
      (rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) {
          // The limiter itself failed (both stores): let the request through rather than refuse every caller.
          logger.error(
            { err: rejection instanceof Error ? rejection.message : String(rejection) },
            'source limit: limiter failed, request let through',
          );
          next();
          return;
        }
        const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        // Once per window and source, not once per refused request (a flood must not flood the log too), and
        // the route's first two segments only: a third may be a callback token.
        // express rewrites req.url below a mount path (`app.use('/notifications/momo', ...)`); originalUrl keeps it.
        const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '';
        const route = url.split('?')[0]!.split('/').slice(0, 3).join('/');
        if (rejection.consumedPoints === points + 1)
          logger.warn({ source, route, retryInSeconds: seconds }, 'source limit: too many requests from one address');
        sendJson(
          res,
          429,
          {
            detail: `Too many requests from this address: at most ${points} in ${duration} s. Retry after ${seconds} s.`,
          },
          { 'retry-after': String(seconds) },
        );
      },
    );
  };
  return Object.assign(middleware, { close });
}
