/**
 * `Duplicate-Check-Key`: a write carrying a key already seen (per organization) in the last 24 hours of
 * sandbox time is refused with 409 `Duplicate Request Detected!`. The key is held from the moment the
 * write arrives (so two concurrent copies cannot both pass) and, as DUPLICATE_KEY_KEPT_AFTER_ERROR
 * (src/momo/assumptions.ts) says, released when the write is refused (answered other than 2xx), so a client
 * may fix a 400 and send again under the same key.
 */
import type { RequestHandler, Response } from 'express';
import type { SandboxClock } from './clock.js';
import { DUPLICATE_KEY_KEPT_AFTER_ERROR } from '../momo/assumptions.js';
import { detailError } from './errors.js';

const DUPLICATE_KEY_TTL_SECONDS = 24 * 60 * 60;
const DUPLICATE_DETAIL = 'Duplicate Request Detected! This Duplicate-Check-Key was used in the last 24 hours.';

export class DuplicateKeys {
  private readonly expiries = new Map<string, number>();

  constructor(private readonly clock: SandboxClock) {}

  /** Middleware for writes; `scope` names the key's owner (the organization). */
  guard(scope: (res: Response) => string): RequestHandler {
    return (req, res, next) => {
      const key = req.get('duplicate-check-key');
      if (req.method === 'GET' || req.method === 'HEAD' || key === undefined || key === '') return next();
      const id = `${scope(res)}\n${key}`;
      const now = this.clock.now();
      this.sweep(now);
      if (this.expiries.has(id)) throw detailError(409, DUPLICATE_DETAIL);
      this.expiries.set(id, now + DUPLICATE_KEY_TTL_SECONDS * 1000);
      res.on('finish', () => {
        if (!DUPLICATE_KEY_KEPT_AFTER_ERROR && (res.statusCode < 200 || res.statusCode >= 300))
          this.expiries.delete(id);
      });
      next();
    };
  }

  /** Drops expired keys. Every key lives as long, so the oldest (first inserted) expire first. */
  private sweep(now: number): void {
    for (const [id, expires] of this.expiries) {
      if (expires > now) break;
      this.expiries.delete(id);
    }
  }
}
