/**
 * Who may call /ops: the one check every /ops route goes through ({@link opsAccess}: the funnel, the payments
 * pages, the People page), so the way operators sign in is decided in one place.
 *
 * - `GET /ops/sign-in`: the sign-in form. Anyone. It sets a sign-in cookie (`momo_sign_in`: `HttpOnly`,
 *   `SameSite=Strict`, `Path=/ops/sign-in`, 1 hour) whose random token the form carries as `csrf`.
 * - `POST /ops/sign-in` (form: `name`, `password`, `csrf`): anyone who loaded the form here; a post without the
 *   sign-in cookie, with a `csrf` that is not its token, or with another site's `Origin` is refused with 403
 *   before any password is compared (login CSRF: another site cannot sign a browser in as its own operator).
 *   A right name and password (scrypt, src/people/
 *   operators.ts; the OPS_USER operator against OPS_PASSWORD) gives a session cookie (`HttpOnly`,
 *   `SameSite=Strict`, `Path=/ops`, `Secure` when the request came over https), 8 hours, kept in Redis (or
 *   memory) by its SHA-256 only. Guessing is refused with 429: at most {@link SIGN_IN_LIMIT} failed tries per address
 *   in a while (each try is counted before the password is compared; a success gives back its own count only,
 *   never the failures before it, whichever credential succeeded). A suspended or removed operator is refused,
 *   and their sign-ins end at their next request. The right
 *   operator signing in from another address is never refused for someone else's guesses.
 * - `POST /ops/sign-out` (form: `csrf`): a signed-in operator; ends the session.
 * - `GET` of the pages' stylesheets (`/ops/<name>.css`): anyone (no data).
 * - Every other /ops route: a signed-in operator (cookie); or, to read only (`GET`), Basic auth with an
 *   operator's name and password (scripts, the refreshing funnel page), or for `.json` / `.csv` routes
 *   `Authorization: Bearer <OPS_TOKEN>` ({@link SCRIPT_ROUTES}; a wrong token counts as a failed sign-in). A request that changes anything (any method but GET and HEAD) needs
 *   the session cookie and its CSRF token (form field `csrf` or header `X-CSRF-Token`), and, when the browser
 *   says where it came from (`Origin`), this host: a form posted from another site is refused with 403.
 *   Basic auth and the token never change anything. Without sign-in, a page asked for by a browser is sent to
 *   the sign-in form (303), anything else gets 401.
 * - With the embedded sandbox and no OPS_USER / OPS_PASSWORD (a demo), every visitor is operator `demo`, with
 *   a session made on their first visit so that changes still carry a CSRF token.
 *
 * `res.locals.operator` names who is signed in (every change records it); `res.locals.opsCaller` says
 * `operator` or `script` (the token); `res.locals.opsVia` how they proved it: `session` (the sign-in's cookie:
 * the audit's stored word), `basic` or `token`; `res.locals.signIn` the sign-in itself, when there is one.
 *
 * The operators' audit (audit.ts) gets a row for every sign-in on the form and its refusals (`sign-in`,
 * `sign-in-failed`: wrong name or password, too many tries, no CSRF token), each sign-out, a read by Basic auth or
 * the token (`sign-in`, once per caller, way and address in {@link HEADER_SIGN_IN_SECONDS}; a wrong one always:
 * `sign-in-failed`, the token as `token`), and every other 401, 403 and 429 of /ops (`refused`, {@link
 * OpsAccess.auditRefusals}).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { keys } from '../store/keys.js';
import type { Store } from '../store/types.js';
import { readBody } from '../http/body.js';
import { cookieOf } from '../http/cookie.js';
import { sameSecret } from '../http/secret.js';
import type { OperatorAccounts } from '../people/operators.js';
import { MemoryStore } from '../store/memory-store.js';
import { NOBODY, TOKEN_ACTOR, type OperatorAudit } from './audit.js';
import { html, page as opsPage, type Html } from './html.js';

/** Failed sign-ins allowed per address within `windowSeconds`. */
export interface SignInLimit {
  failures: number;
  windowSeconds: number;
}

/** 20 tries in 10 minutes per address: an operator mistyping never meets it; a guesser gets 20 per 10 minutes. */
export const SIGN_IN_LIMIT: SignInLimit = { failures: 20, windowSeconds: 600 };
/** How long a session lasts: 8 hours, a working day. */
export const SESSION_SECONDS = 8 * 3600;
/** The cookie's name. */
export const SESSION_COOKIE = 'momo_ops';
/** The cookie of the sign-in form's CSRF token. */
export const SIGN_IN_COOKIE = 'momo_sign_in';
/** How long a sign-in form may be posted after it was loaded: 1 hour. */
const SIGN_IN_FORM_SECONDS = 3600;

/**
 * A read by Basic auth or the token signs in at every request (a script, the funnel page refreshing): the audit
 * records it once per caller, way and address in 10 minutes, not once a request.
 */
export const HEADER_SIGN_IN_SECONDS = 600;

/** What a caller that used up its sign-in tries is told (the page, a script, Basic auth alike). */
const TOO_MANY_TRIES = 'Too many failed sign-ins from this address; try again later.';

/** Paths under /ops that scripts may read with the OPS_TOKEN as well as operators with their password. */
export const SCRIPT_ROUTES: readonly string[] = [
  '/ops/payments.json',
  '/ops/payments.csv',
  '/ops/statements.json',
  '/ops/statements.csv',
  '/ops/people.json',
  '/ops/audit.json',
  '/ops/audit.csv',
];

export interface SignIn {
  operator: string;
  csrf: string;
}

export interface OpsAccessOptions {
  store: Store;
  /** The operators who may sign in; null: none (the demo's `open`, or /ops not served). */
  operators: () => Promise<OperatorAccounts | null>;
  /** OPS_USER / OPS_PASSWORD: that operator is checked against the settings (no database needed). */
  settingsOperator?: { user: string; password: string };
  /** The demo: everyone is operator `demo`. */
  open: boolean;
  /** OPS_TOKEN: reads of `.json` / `.csv` routes with `Authorization: Bearer`. */
  opsToken?: string;
  signInLimit?: SignInLimit;
  /** The operators' audit; unset (no database), nothing is recorded. */
  audit?: OperatorAudit;
}

const digest = (token: string): string => createHash('sha256').update(token).digest('hex');
const SAFE = new Set(['GET', 'HEAD']);

export class OpsAccess {
  private readonly limit: SignInLimit;

  constructor(private readonly o: OpsAccessOptions) {
    this.limit = o.signInLimit ?? SIGN_IN_LIMIT;
  }

  /** The session the request's cookie names, or null. */
  async session(req: Request): Promise<SignIn | null> {
    const token = cookieOf(req, SESSION_COOKIE);
    if (!token || !/^[\w-]{43}$/.test(token)) return null;
    const signIn = (await this.o.store.get(keys.opsSignIn(digest(token))))?.snapshot as SignIn | undefined;
    if (!signIn) return null;
    // A suspended or removed operator's sign-ins end at once.
    if (!(await this.active(signIn.operator))) return null;
    return signIn;
  }

  /** Whether the operator is neither suspended nor removed (the database says; without one, always). */
  private async active(name: string): Promise<boolean> {
    const operators = await this.o.operators();
    return !operators?.isActive || (await operators.isActive(name));
  }

  private async signIn(req: Request, res: Response, operator: string): Promise<SignIn> {
    const token = randomBytes(32).toString('base64url');
    const signIn: SignIn = { operator, csrf: randomBytes(24).toString('base64url') };
    await this.o.store.set(keys.opsSignIn(digest(token)), signIn, null, SESSION_SECONDS);
    res.cookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: 'strict',
      secure: req.secure,
      path: '/ops',
      maxAge: SESSION_SECONDS * 1000,
    });
    return signIn;
  }

  /** Checks a name and password, the OPS_USER operator against the settings, others against the database. */
  private async verify(name: string, password: string): Promise<string | null> {
    const first = this.o.settingsOperator;
    if (first && name === first.user)
      return sameSecret(password, first.password) && (await this.active(first.user)) ? first.user : null;
    const operators = await this.o.operators();
    return operators ? operators.verify(name, password) : null;
  }

  /**
   * Counts a try from `address` before it is checked (atomically, so tries sent together are all counted
   * first); false when the address used up its tries. Only the address is counted: guesses from elsewhere
   * never lock the right operator out.
   */
  private async countTry(address: string): Promise<boolean> {
    return (
      await this.o.store.addWithinLimit(
        keys.opsSignInFailures(address),
        1,
        this.limit.failures,
        this.limit.windowSeconds,
      )
    ).ok;
  }

  /** Counts a try from `address` (countTry), or answers 429 to a caller that used up its tries: false then. */
  private async tryCounted(address: string, res: Response): Promise<boolean> {
    if (await this.countTry(address)) return true;
    res.set('Retry-After', String(this.limit.windowSeconds)).status(429).json({ detail: TOO_MANY_TRIES });
    return false;
  }

  /**
   * A try that succeeded gives back its own count, and only its own: the address's failures stay counted, so a
   * right credential (the token, another operator's password) never clears the count another's guesses made.
   */
  private async giveBackTry(address: string): Promise<void> {
    await this.o.store.addWithinLimit(
      keys.opsSignInFailures(address),
      -1,
      this.limit.failures,
      this.limit.windowSeconds,
    );
  }

  /** Adds the sign-in and sign-out routes (before {@link guard}). */
  addRoutes(app: Express): void {
    const form = readBody('form', { limit: '4kb' }) as RequestHandler;
    app.get('/ops/sign-in', (req, res) => {
      res
        .type('html')
        .send(
          signInPage(
            this.signInToken(req, res),
            typeof req.query.failed === 'string' ? 'That name and password do not match an operator.' : undefined,
          ),
        );
    });
    app.post('/ops/sign-in', form, async (req, res, next) => {
      try {
        const body = (req.body ?? {}) as Record<string, unknown>;
        const formToken = cookieOf(req, SIGN_IN_COOKIE) ?? '';
        const given = typeof body.csrf === 'string' ? body.csrf : '';
        if (!this.sameSite(req) || formToken.length === 0 || !sameSecret(given, formToken)) {
          await this.signInFailed(req, res, nameOf(body), 'form', 'no valid CSRF token');
          res
            .status(403)
            .type('html')
            .send(
              signInPage(
                this.signInToken(req, res),
                'This sign-in did not come from the form of this site (no valid CSRF token). Sign in again here.',
              ),
            );
          return;
        }
        const name = nameOf(body);
        const password = typeof body.password === 'string' ? body.password.slice(0, 200) : '';
        const address = req.ip ?? 'unknown';
        if (!(await this.countTry(address))) {
          await this.signInFailed(req, res, name, 'form', 'too many failed sign-ins from this address');
          res.status(429).type('html').send(signInPage(formToken, TOO_MANY_TRIES));
          return;
        }
        const operator = name && password ? await this.verify(name, password) : null;
        if (!operator) {
          await this.signInFailed(req, res, name, 'form', 'wrong name or password');
          res.status(401).type('html').send(signInPage(formToken, 'That name and password do not match an operator.'));
          return;
        }
        await this.giveBackTry(address);
        await this.o.audit?.recordQuietly(operator, 'sign-in', { via: 'form', address });
        res.clearCookie(SIGN_IN_COOKIE, { path: '/ops/sign-in' });
        await this.signIn(req, res, operator);
        res.redirect(303, '/ops');
      } catch (err) {
        next(err);
      }
    });
    app.post('/ops/sign-out', form, async (req, res, next) => {
      try {
        const token = cookieOf(req, SESSION_COOKIE);
        const signIn = await this.session(req);
        if (!signIn || !token || !this.csrfOk(req, signIn)) {
          res.status(403).json({ detail: 'Sign out from the page (the form carries its CSRF token).' });
          return;
        }
        await this.o.store.delete(keys.opsSignIn(digest(token)));
        await this.o.audit?.recordQuietly(signIn.operator, 'sign-out', { address: req.ip ?? 'unknown' });
        res.clearCookie(SESSION_COOKIE, { path: '/ops' });
        res.redirect(303, '/ops/sign-in');
      } catch (err) {
        next(err);
      }
    });
  }

  /** The sign-in form's token: the one its cookie holds, else a new one set in that cookie. */
  private signInToken(req: Request, res: Response): string {
    const held = cookieOf(req, SIGN_IN_COOKIE);
    if (held && /^[\w-]{32}$/.test(held)) return held;
    const token = randomBytes(24).toString('base64url');
    res.cookie(SIGN_IN_COOKIE, token, {
      httpOnly: true,
      sameSite: 'strict',
      secure: req.secure,
      path: '/ops/sign-in',
      maxAge: SIGN_IN_FORM_SECONDS * 1000,
    });
    return token;
  }

  /** False when the browser says the request came from another site (`Origin`); `null` or none: the token decides. */
  private sameSite(req: Request): boolean {
    const origin = req.get('origin');
    return origin === undefined || origin === 'null' || origin === `${req.protocol}://${req.get('host')}`;
  }

  private csrfOk(req: Request, signIn: SignIn): boolean {
    if (!this.sameSite(req)) return false;
    const body = (req.body ?? {}) as Record<string, unknown>;
    const given = typeof body.csrf === 'string' ? body.csrf : (req.get('x-csrf-token') ?? '');
    return given.length > 0 && sameSecret(given, signIn.csrf);
  }

  /** The check in front of every /ops route but sign-in (see the file comment). */
  guard(): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      this.check(req, res).then((ok) => (ok ? next() : undefined), next);
    };
  }

  private async check(req: Request, res: Response): Promise<boolean> {
    const safe = SAFE.has(req.method);
    // The pages' own stylesheets hold no data: the sign-in form needs them before anyone signed in.
    if (safe && /^\/ops\/[\w-]+\.css$/.test(req.baseUrl + req.path)) return true;
    const signIn = await this.session(req);
    if (signIn) {
      // Changes are checked by the route once its body is read (requireCsrf); reads pass here.
      res.locals.operator = signIn.operator;
      res.locals.opsCaller = 'operator';
      res.locals.opsVia = 'session';
      res.locals.signIn = signIn;
      return true;
    }
    if (safe && this.o.open) {
      res.locals.signIn = await this.signIn(req, res, 'demo');
      res.locals.operator = 'demo';
      res.locals.opsCaller = 'operator';
      res.locals.opsVia = 'session';
      return true;
    }
    const [scheme, encoded] = (req.get('authorization') ?? '').split(' ');
    const scriptRoute = SCRIPT_ROUTES.includes(req.baseUrl + req.path);
    if (safe && scheme?.toLowerCase() === 'bearer' && scriptRoute && this.o.opsToken) {
      const address = req.ip ?? 'unknown';
      if (!(await this.tryCounted(address, res))) return false;
      if (sameSecret(encoded ?? '', this.o.opsToken)) {
        await this.giveBackTry(address);
        res.locals.operator = 'OPS_TOKEN';
        res.locals.opsCaller = 'script';
        res.locals.opsVia = 'token';
        await this.headerSignIn(req, TOKEN_ACTOR, 'token');
        return true;
      }
      await this.signInFailed(req, res, NOBODY, 'token', 'wrong token');
    }
    if (safe && scheme?.toLowerCase() === 'basic' && encoded) {
      const decoded = Buffer.from(encoded, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const name = colon < 0 ? '' : decoded.slice(0, colon);
      const address = req.ip ?? 'unknown';
      if (!(await this.tryCounted(address, res))) return false;
      const operator = colon < 0 ? null : await this.verify(name, decoded.slice(colon + 1));
      if (operator) {
        await this.giveBackTry(address);
        res.locals.operator = operator;
        res.locals.opsCaller = 'operator';
        res.locals.opsVia = 'basic';
        await this.headerSignIn(req, operator, 'basic');
        return true;
      }
      await this.signInFailed(req, res, name.slice(0, 64), 'basic', 'wrong name or password');
    }
    if (!safe) {
      res.status(403).json({ detail: 'Sign in on /ops/sign-in; changes need the session and its CSRF token.' });
      return false;
    }
    if (req.accepts(['json', 'html']) === 'html' && !/\.(json|csv|js|css)$/.test(req.path)) {
      res.redirect(303, '/ops/sign-in');
      return false;
    }
    const challenge = [
      'Basic realm="momo-chat operations", charset="UTF-8"',
      ...(scriptRoute && this.o.opsToken ? ['Bearer realm="ops"'] : []),
    ];
    res
      .set('WWW-Authenticate', challenge)
      .status(401)
      .json({
        detail:
          scriptRoute && this.o.opsToken
            ? 'Sign in on /ops/sign-in, send Basic auth (reads only), or send Authorization: Bearer <OPS_TOKEN>.'
            : 'Sign in on /ops/sign-in, or send Basic auth (reads only).',
      });
    return false;
  }

  /** Records a refused sign-in (and marks the answer recorded, so {@link auditRefusals} adds no second row). */
  private async signInFailed(req: Request, res: Response, name: string, via: string, reason: string): Promise<void> {
    if (!this.o.audit) return;
    res.locals.audited = true;
    await this.o.audit.recordQuietly(name || NOBODY, 'sign-in-failed', {
      via,
      reason,
      address: req.ip ?? 'unknown',
      path: req.baseUrl + req.path,
    });
  }

  /** Records a read's sign-in by Basic auth or the token, once per caller, way and address in a while. */
  private async headerSignIn(req: Request, actor: string, via: string): Promise<void> {
    if (!this.o.audit) return;
    const address = req.ip ?? 'unknown';
    const first = await this.o.store
      .addWithinLimit(keys.opsSignInRecorded(digest(`${via}\n${actor}\n${address}`)), 1, 1, HEADER_SIGN_IN_SECONDS)
      .then((r) => r.ok)
      .catch(() => true);
    if (first) await this.o.audit.recordQuietly(actor, 'sign-in', { via, address });
  }

  /**
   * Before every /ops route: once the answer is sent, a 401, 403 or 429 that no sign-in row recorded is recorded
   * as `refused` (who, if known, the method, the path, the address), whichever route refused it.
   */
  auditRefusals(): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      const audit = this.o.audit;
      if (audit) {
        const path = req.originalUrl.split('?')[0]!.slice(0, 200);
        res.on('finish', () => {
          if (![401, 403, 429].includes(res.statusCode) || res.locals.audited) return;
          const actor =
            res.locals.opsCaller === 'script'
              ? TOKEN_ACTOR
              : typeof res.locals.operator === 'string'
                ? res.locals.operator
                : NOBODY;
          // Fired and forgotten: recordQuietly catches and logs its own failure.
          void audit.recordQuietly(actor, 'refused', {
            status: res.statusCode,
            method: req.method,
            path,
            address: req.ip ?? 'unknown',
          });
        });
      }
      next();
    };
  }

  /**
   * For a route that changes something, after its body is read: 403 unless the request carries the session's
   * CSRF token and comes from this site. Returns the operator's name, or null when it answered.
   */
  requireCsrf(req: Request, res: Response): string | null {
    const signIn = res.locals.signIn as SignIn | undefined;
    if (!signIn || !this.csrfOk(req, signIn)) {
      res
        .status(403)
        .type('html')
        .send(
          opsPage(
            'Refused',
            '',
            html`<p>This change did not come from a page of this site (no valid CSRF token). Nothing was changed.</p>`,
          ),
        );
      return null;
    }
    return signIn.operator;
  }
}

/** The name a sign-in form gave (trimmed, at most 64 characters), or ''. */
const nameOf = (body: Record<string, unknown>): string =>
  typeof body.name === 'string' ? body.name.trim().slice(0, 64) : '';

function signInPage(csrf: string, error?: string): string {
  const body: Html = html`<h2>Operators sign in</h2>
    ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
    <form method="post" action="/ops/sign-in" class="sign-in">
      <input type="hidden" name="csrf" value="${csrf}" />
      <label>Name <input name="name" autocomplete="username" required maxlength="64" /></label>
      <label
        >Password <input name="password" type="password" autocomplete="current-password" required maxlength="200"
      /></label>
      <button type="submit">Sign in</button>
    </form>`;
  return opsPage('Sign in', '/ops/sign-in', body);
}

/** The options of {@link opsAccess}: the page's own, as addOpsPage has them. */
export interface AccessSettings {
  /** OPS_USER and OPS_PASSWORD. */
  credentials?: { user: string; password: string } | undefined;
  opsToken?: string | undefined;
  open: boolean;
  signInLimit?: SignInLimit | undefined;
  store?: Store | undefined;
  operators?: (() => Promise<OperatorAccounts | null>) | undefined;
  audit?: OperatorAudit | undefined;
}

/**
 * The access check of /ops; undefined when /ops is not served at all (production with neither OPS_USER /
 * OPS_PASSWORD nor OPS_TOKEN). With OPS_TOKEN alone, scripts read the `.json` and `.csv` routes with it and
 * operators of the database sign in.
 */
export function opsAccess(options: AccessSettings): OpsAccess | undefined {
  if (!options.credentials && !options.open && !options.opsToken) return undefined;
  return new OpsAccess({
    store: options.store ?? new MemoryStore(),
    operators: options.operators ?? (async () => null),
    ...(options.credentials ? { settingsOperator: options.credentials } : {}),
    open: !options.credentials && options.open,
    ...(options.opsToken ? { opsToken: options.opsToken } : {}),
    ...(options.signInLimit ? { signInLimit: options.signInLimit } : {}),
    ...(options.audit ? { audit: options.audit } : {}),
  });
}
