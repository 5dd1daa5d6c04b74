/**
 * Who may call a gateway's routes. A USSD gateway's request names the caller's phone number, and that
 * number is the user's identity: whoever can post to these routes can act as any user. So in production a
 * gateway route is served only with a way to tell the gateway from everyone else:
 * - a secret as the callback URL's last path segment, `POST /ussd/<gateway>/<USSD_CALLBACK_TOKEN>`, compared
 *   in constant time; a request with another last segment falls through to the app's 404, as an unknown path;
 * - and/or an allow-list of the gateway's addresses (USSD_ALLOWED_IPS, IPv4 and IPv6 CIDR ranges) checked
 *   against the caller's address (DirectRoutes.ip, as express's `req.ip`): the socket's address, or with
 *   TRUST_PROXY the one its named proxy hops forwarded. A caller outside it gets 403.
 * With neither, the route is not served. With the embedded sandbox (a demo on a laptop) the routes are also
 * served open, at `/ussd/<gateway>`, as the simulator and `npm run ussd` post.
 *
 * Every route of a gateway (its callback, its end-of-session or events reports) is added with
 * {@link addGatewayRoute}, so each takes the same protection.
 */
import ipaddr from 'ipaddr.js';
import {
  sendJson,
  type DirectErrorHandler,
  type DirectHandler,
  type DirectRoutes,
} from '../../src/http/direct-routes.js';

export interface GatewayAccess {
  /**
   * USSD_CALLBACK_TOKEN: each route is served at `<path>/<token>`. Unset: no token route. The product refuses
   * a token shorter than 16 characters (src/config.ts).
   */
  token?: string;
  /**
   * USSD_ALLOWED_IPS: addresses or CIDR ranges the caller's address must be in, on every route of the
   * gateway (the token route too). Unset: any address.
   */
  allowedIps?: readonly string[];
  /** Also serve `<path>` itself to anyone: only with the embedded sandbox (the demo), never in production. */
  open: boolean;
}

/** True when the routes are served at all (see the file comment). */
export function isServed(access: GatewayAccess): boolean {
  return access.open || access.token !== undefined || access.allowedIps !== undefined;
}

/** A matcher of addresses against CIDR ranges (a bare address is its own /32 or /128). */
export function addressMatcher(entries: readonly string[]): (address: string | undefined) => boolean {
  const ranges = entries.map((entry) =>
    entry.includes('/')
      ? ipaddr.parseCIDR(entry)
      : ([ipaddr.parse(entry), ipaddr.parse(entry).kind() === 'ipv4' ? 32 : 128] as const),
  );
  return (address) => {
    if (!address || !ipaddr.isValid(address)) return false;
    // An IPv4 caller on a dual-stack socket shows as ::ffff:a.b.c.d: compare it as the IPv4 address it is.
    const ip = ipaddr.process(address);
    return ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
  };
}

/**
 * Adds `POST <path>` for a gateway with the protection `access` gives (see the file comment), as a direct
 * route (src/http/direct-routes.ts: the hot path, on Node's own request and response); its handlers'
 * failures go to `onError`. Returns false when the route is not served.
 */
export function addGatewayRoute(
  routes: DirectRoutes,
  access: GatewayAccess,
  path: string,
  onError: DirectErrorHandler,
  ...handlers: DirectHandler[]
): boolean {
  if (!isServed(access)) return false;
  const guards: DirectHandler[] = [];
  if (access.allowedIps) {
    const allowed = addressMatcher(access.allowedIps);
    guards.push((req, res, next) => {
      if (allowed(routes.ip(req))) return next();
      sendJson(res, 403, { detail: 'This address may not call the USSD gateway routes (USSD_ALLOWED_IPS).' });
    });
  }
  // With a token, another last segment is not this route: it goes on to the app, whose answer is 404.
  if (access.token !== undefined) routes.post(path, { secret: access.token, onError }, ...guards, ...handlers);
  if (access.open || access.token === undefined) routes.post(path, { onError }, ...guards, ...handlers);
  return true;
}
