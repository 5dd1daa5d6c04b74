/**
 * The main API router, mounted at /api. In order: the faults turned on (faults.ts), the version in the
 * path (`/api/v2/...`), the token, the Accept header, the limits, the version saved at the organization's
 * first request, the Duplicate-Check-Key, the body, then the resources; unknown paths are 404 `{detail}`.
 *
 * Versions: a request's version is its path version, else its `Service-Version` header (`v3` or `3`),
 * else the organization's saved version; the override never changes the saved one. The saved version is
 * the latest (v5) at the organization's first request; controls.setOrganization({ version }) changes it
 * as the web portal would. Every answer carries `Service-Version` with the version used.
 */
import { Router, type RequestHandler } from 'express';
import { banksRouter } from './banks.js';
import { parseBody } from './body.js';
import { collectionRequestsRouter } from './collection-requests.js';
import { collectionsRouter } from './collections.js';
import { contactsRouter } from './contacts.js';
import { apiLocals, type SandboxContext } from './context.js';
import type { DuplicateKeys } from './duplicates.js';
import { apiErrorHandler, detailError } from './errors.js';
import { eventsRouter } from './events.js';
import { faultGate } from './faults.js';
import { rateLimit, type Limits } from './limits.js';
import { paymentsRouter } from './payments.js';
import { LATEST_VERSION, VERSIONS, type Organization, type SandboxState, type Version } from './state.js';
import { webhooksRouter } from './webhooks.js';

const readVersion = (v: string): Version | undefined => {
  const name = (/^\d+$/.test(v.trim()) ? `v${v.trim()}` : v.trim().toLowerCase()) as Version;
  return VERSIONS.includes(name) ? name : undefined;
};

/** `/vN/...` -> `/...`, remembering vN; an unknown version in the path is 404. */
const versionFromPath: RequestHandler = (req, res, next) => {
  const m = /^\/(v\d+)(?=\/|$|\?)/.exec(req.url);
  if (m) {
    const version = readVersion(m[1]!);
    if (!version) throw detailError(404, 'Invalid version in URL path.');
    res.locals.pathVersion = version;
    req.url = req.url.slice(m[0].length) || '/';
  }
  next();
};

/** `Authorization: Token <key>`: 401 `{detail}` otherwise. Also used by the sandbox controls. */
export function authenticate(state: SandboxState): RequestHandler {
  return (req, res, next) => {
    const m = /^Token\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    const org = m ? state.organizationByKey(m[1]!) : undefined;
    if (!org) throw detailError(401, 'Invalid token.', { 'WWW-Authenticate': 'Token' });
    res.locals.org = org satisfies Organization;
    next();
  };
}

const negotiate: RequestHandler = (req, _res, next) => {
  if (req.get('accept') && !req.accepts('application/json')) {
    throw detailError(406, 'Could not satisfy the request Accept header: the service answers JSON.');
  }
  next();
};

const resolveVersion: RequestHandler = (req, res, next) => {
  const { org } = apiLocals(res);
  org.version ??= LATEST_VERSION;
  const header = req.get('service-version');
  const fromHeader = header === undefined ? undefined : readVersion(header);
  if (header !== undefined && !fromHeader) throw detailError(400, 'Invalid version in "Service-Version" header.');
  const version: Version = res.locals.pathVersion ?? fromHeader ?? org.version;
  res.locals.version = version;
  res.set('Service-Version', version);
  next();
};

export function apiRouter(ctx: SandboxContext, limits: Limits, duplicates: DuplicateKeys): Router {
  const router = Router();
  router.use(
    faultGate(ctx.faults),
    versionFromPath,
    authenticate(ctx.state),
    negotiate,
    rateLimit(limits),
    resolveVersion,
    duplicates.guard((res) => String(apiLocals(res).org.id)),
    parseBody,
  );
  router.use(
    contactsRouter(ctx),
    paymentsRouter(ctx),
    banksRouter(),
    collectionsRouter(ctx),
    collectionRequestsRouter(ctx),
    webhooksRouter(ctx),
    eventsRouter(ctx),
  );
  router.use(() => {
    throw detailError(404, 'Not found.');
  });
  router.use(apiErrorHandler(ctx.log));
  return router;
}
