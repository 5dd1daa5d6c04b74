/**
 * Request limits of the main API (spec, Limits): reads (GET, HEAD) and writes (everything else) per
 * organization per minute of real time; past them, 429 with `Retry-After` in seconds and a `{detail}`.
 * The vending group and the sandbox controls are not limited.
 */
import type { RequestHandler } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { apiLocals } from './context.js';
import { detailError } from './errors.js';

export interface Limits {
  /** Read requests per minute per organization. Default 30, as the spec states. */
  readsPerMinute: number;
  /** Write requests per minute per organization. Default 3000, as the spec states. */
  writesPerMinute: number;
}

export const SPEC_LIMITS: Limits = { readsPerMinute: 30, writesPerMinute: 3000 };

export function rateLimit(limits: Limits): RequestHandler {
  const reads = new RateLimiterMemory({ points: limits.readsPerMinute, duration: 60, keyPrefix: 'reads' });
  const writes = new RateLimiterMemory({ points: limits.writesPerMinute, duration: 60, keyPrefix: 'writes' });
  return async (req, res, next) => {
    const limiter = req.method === 'GET' || req.method === 'HEAD' ? reads : writes;
    try {
      await limiter.consume(apiLocals(res).org.id);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw detailError(429, `Request was throttled. Expected available in ${seconds} seconds.`, {
        'Retry-After': String(seconds),
      });
    }
    next();
  };
}
