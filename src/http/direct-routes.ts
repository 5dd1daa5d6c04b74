/**
 * POST routes served on Node's own request and response objects, in front of express: the USSD gateways'
 * callbacks and reports, the product's hottest path (every hop of every USSD session), and the service's
 * notifications (every delivery of its webhooks). Express gives each
 * request and response its own prototypes (Object.setPrototypeOf), and Node's HTTP and stream code then runs
 * slower on them: the same route, reading the same form with the same body reader, costs several times the
 * CPU a request through express as on Node's own objects (`npx tsx bench/profile/layers.ts` measures it; setting
 * the two prototypes alone, with no express at all, costs as much). Every other route stays on express: a request no direct route
 * takes goes to it untouched, so it answers 404 for an unknown path as it always did.
 *
 * A route is a path, matched as express matches one (case-insensitively, a trailing slash allowed, the query
 * ignored), or a path plus a secret last segment (`<path>/<secret>`, compared in constant time; a request
 * with another last segment is not this route's and goes to express, as an unknown path). Handlers run in
 * order, each passing on with `next()`, as express middleware does; `next(err)`, a throw or a rejection goes
 * to the route's error handler.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import proxyaddr from 'proxy-addr';
import { sameSecret } from './secret.js';

export interface DirectRequest extends IncomingMessage {
  /** What a body reader (body.ts) parsed. */
  body?: unknown;
}

export type Next = (err?: unknown) => void;
export type DirectHandler = (req: DirectRequest, res: ServerResponse, next: Next) => unknown;
export type DirectErrorHandler = (err: unknown, req: DirectRequest, res: ServerResponse) => void;

/** TRUST_PROXY as config.ts gives it: no proxy, a number of proxy hops, or the proxies' addresses and ranges. */
export type TrustProxy = false | number | readonly string[];

interface Route {
  secret?: string;
  handlers: DirectHandler[];
  onError: DirectErrorHandler;
}

/** Answers `status` with a JSON body (what express's res.status().json() sends, without an ETag). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const json = JSON.stringify(body);
  res
    .writeHead(status, {
      ...headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(json),
    })
    .end(json);
}

/** A handler's failure nobody answered: a 500 without details (a route's own error handler may end with it). */
export const answerFailure: DirectErrorHandler = (_err, _req, res) => {
  if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
};

/** The path of a request URL as routes are matched: no query, lower case, no trailing slash. */
function routePath(url: string): string {
  const query = url.indexOf('?');
  const path = (query < 0 ? url : url.slice(0, query)).toLowerCase();
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

export class DirectRoutes {
  private readonly plain = new Map<string, Route>();
  private readonly secret = new Map<string, Route>();
  private readonly before: DirectHandler[] = [];
  private readonly trusted: (address: string, hop: number) => boolean;

  /** `trustProxy`: whom to believe for the caller's address ({@link DirectRoutes.ip}), as express's `trust proxy`. */
  constructor(trustProxy: TrustProxy = false) {
    this.trusted =
      trustProxy === false
        ? () => false
        : typeof trustProxy === 'number'
          ? (_a, hop) => hop < trustProxy
          : proxyaddr.compile([...trustProxy]);
  }

  /**
   * Runs before the handlers of every request a direct route takes, in the order added, whenever added (the
   * product's body drain, metrics and per-source limit).
   */
  use(handler: DirectHandler): void {
    this.before.push(handler);
  }

  /**
   * Serves `POST <path>` (with `secret`: `POST <path>/<secret>` only) with `handlers`; their failures go to
   * `onError` (default: 500).
   */
  post(path: string, options: { secret?: string; onError?: DirectErrorHandler }, ...handlers: DirectHandler[]): void {
    const route: Route = { handlers, onError: options.onError ?? answerFailure };
    if (options.secret === undefined) this.plain.set(routePath(path), route);
    else this.secret.set(routePath(path), { ...route, secret: options.secret });
  }

  /** The caller's address: the socket's, or the one the trusted proxy hops forwarded (express's req.ip). */
  ip(req: IncomingMessage): string | undefined {
    return req.socket.remoteAddress === undefined ? undefined : proxyaddr(req, this.trusted);
  }

  /** The route a request is for, if any. */
  private route(req: IncomingMessage): Route | undefined {
    if (req.method !== 'POST' || req.url === undefined) return undefined;
    const path = routePath(req.url);
    const plain = this.plain.get(path);
    if (plain) return plain;
    const cut = path.lastIndexOf('/');
    const route = cut > 0 ? this.secret.get(path.slice(0, cut)) : undefined;
    if (!route) return undefined;
    // The secret as sent (the path was lower-cased for matching), decoded as express decodes a parameter.
    const raw = req.url.split('?')[0]!.replace(/\/$/, '');
    let given: string;
    try {
      given = decodeURIComponent(raw.slice(raw.lastIndexOf('/') + 1));
    } catch {
      return undefined;
    }
    return sameSecret(given, route.secret!) ? route : undefined;
  }

  /** Node's request listener: a direct route's request to its handlers, any other to `fallback` (the express app). */
  serve(fallback: RequestListener): RequestListener {
    return (req, res) => {
      const route = this.route(req);
      if (!route) return fallback(req, res);
      runChain(this.before, route, req, res);
    };
  }
}

/**
 * One request through its handlers, one after another as each calls `next`; a failure (thrown, rejected, or
 * passed to `next`) goes to the route's onError.
 */
function runChain(before: DirectHandler[], route: Route, req: DirectRequest, res: ServerResponse): void {
  let at = 0;
  const failed = (err: unknown): void => route.onError(err, req, res);
  const next: Next = (err?: unknown): void => {
    if (err !== undefined) return failed(err);
    const handler = at < before.length ? before[at] : route.handlers[at - before.length];
    at++;
    if (!handler) return;
    try {
      const result = handler(req, res, next);
      if (result instanceof Promise) result.catch(failed);
    } catch (error) {
      failed(error);
    }
  };
  next();
}
