/**
 * OPS_TOKEN: who may read the operations details (/metrics, the details of /readyz). Set, a request must
 * carry `Authorization: Bearer <OPS_TOKEN>` (compared in constant time); unset, they are open, as on a
 * laptop. /healthz never asks for it: a load balancer's probe carries no token.
 */
import type { NextFunction, Request, Response } from 'express';
import { sameSecret } from '../http/secret.js';

/** True when no token is configured, or the request carries it as a Bearer token. */
export function hasOpsToken(req: Request, token: string | undefined): boolean {
  if (!token) return true;
  return sameSecret(req.get('authorization') ?? '', `Bearer ${token}`);
}

/** Route guard: 401 (with `WWW-Authenticate: Bearer`) unless {@link hasOpsToken}. */
export function requireOpsToken(token: string | undefined) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (hasOpsToken(req, token)) return next();
    res
      .set('WWW-Authenticate', 'Bearer realm="ops"')
      .status(401)
      .json({ detail: 'Send Authorization: Bearer <OPS_TOKEN>.' });
  };
}
