/**
 * Who may call /ops: the one check every /ops route goes through ({@link opsAccess}), so the way operators
 * sign in can be replaced in one place.
 *
 * - With OPS_USER and OPS_PASSWORD set: whoever sends them as Basic auth (both compared in constant time).
 *   The script routes ({@link SCRIPT_ROUTES}: the payments export as JSON and CSV) also take
 *   `Authorization: Bearer <OPS_TOKEN>` when OPS_TOKEN is set. Anyone else gets 401; an address with too many
 *   failed sign-ins in a while (SIGN_IN_LIMIT, a wrong Bearer token counts too) gets 429 until the while is over.
 * - Without them: everyone in the embedded demo (`open`), nobody in production (the routes are not added).
 */
import type { Request, RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { sameSecret } from '../http/secret.js';

/** Failed sign-ins per caller address (req.ip) within `windowSeconds`, counted in this process. */
export interface SignInLimit {
  failures: number;
  windowSeconds: number;
}

/** 20 failures in 10 minutes: an operator mistyping never meets it; a guesser gets 20 tries per 10 minutes. */
export const SIGN_IN_LIMIT: SignInLimit = { failures: 20, windowSeconds: 600 };

/** Paths under /ops that scripts may read with the OPS_TOKEN as well as operators with their password. */
export const SCRIPT_ROUTES: readonly string[] = ['/ops/payments.json', '/ops/payments.csv'];

export interface OpsAccessOptions {
  /** OPS_USER and OPS_PASSWORD. */
  credentials?: { user: string; password: string };
  /** OPS_TOKEN: Bearer token for {@link SCRIPT_ROUTES}. */
  opsToken?: string;
  /** No credentials set: serve /ops to everyone (the embedded demo only). */
  open: boolean;
  signInLimit?: SignInLimit;
}

type Verdict = 'operator' | 'script' | 'refused';

/** The caller's Basic pair or Bearer token, checked; every secret compared whatever the others gave. */
function verdictOf(req: Request, options: OpsAccessOptions, scriptRoute: boolean): Verdict {
  const { credentials, opsToken } = options;
  if (!credentials) return options.open ? 'operator' : 'refused';
  const header = req.get('authorization') ?? '';
  const space = header.indexOf(' ');
  const scheme = space < 0 ? header.toLowerCase() : header.slice(0, space).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer') {
    return scriptRoute && opsToken !== undefined && value !== '' && sameSecret(value, opsToken) ? 'script' : 'refused';
  }
  const decoded = scheme === 'basic' && value ? Buffer.from(value, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  const user = colon < 0 ? '' : decoded.slice(0, colon);
  const password = colon < 0 ? '' : decoded.slice(colon + 1);
  // Both compared, always: how long it takes says nothing about which one was wrong.
  const userOk = sameSecret(user, credentials.user);
  const passwordOk = sameSecret(password, credentials.password);
  return colon >= 0 && userOk && passwordOk ? 'operator' : 'refused';
}

/**
 * The middleware in front of every /ops route; undefined when /ops is not served at all (production
 * without OPS_USER / OPS_PASSWORD). It records who called in `res.locals.opsCaller` ('operator' or 'script').
 */
export function opsAccess(options: OpsAccessOptions): RequestHandler | undefined {
  if (!options.credentials && !options.open) return undefined;
  const limit = options.signInLimit ?? SIGN_IN_LIMIT;
  const failures = new RateLimiterMemory({ points: limit.failures, duration: limit.windowSeconds, keyPrefix: 'ops-sign-in' });
  return async (req, res, next) => {
    if (!options.credentials) {
      res.locals.opsCaller = 'operator';
      return next();
    }
    const address = req.ip ?? 'unknown';
    const seen = await failures.get(address);
    if (seen && seen.consumedPoints >= limit.failures) {
      res.set('Retry-After', String(Math.ceil(seen.msBeforeNext / 1000))).status(429).json({ detail: 'Too many failed sign-ins from this address; try again later.' });
      return;
    }
    const scriptRoute = SCRIPT_ROUTES.includes(req.baseUrl + req.path) || SCRIPT_ROUTES.includes(req.originalUrl.split('?')[0]!);
    const verdict = verdictOf(req, options, scriptRoute);
    if (verdict !== 'refused') {
      // An operator who mistyped starts afresh once signed in.
      if (seen) await failures.delete(address);
      res.locals.opsCaller = verdict;
      return next();
    }
    await failures.penalty(address, 1);
    const challenge = ['Basic realm="momo-chat operations", charset="UTF-8"', ...(scriptRoute && options.opsToken ? ['Bearer realm="ops"'] : [])];
    res.set('WWW-Authenticate', challenge).status(401).json({
      detail: scriptRoute && options.opsToken ? 'Sign in with OPS_USER and OPS_PASSWORD, or send Authorization: Bearer <OPS_TOKEN>.' : 'Sign in with OPS_USER and OPS_PASSWORD.',
    });
  };
}
