/**
 * Webhooks: create, get, list (filters `user`, `event`). Targets must be https; `?skip-cert-verify` on a
 * target skips certificate validation when notifying (it does not waive https). With the sandbox option
 * allowHttpWebhooks, plain http is also accepted for loopback hosts (localhost, 127.0.0.1, ::1), so a bot
 * running on a developer's machine can receive notifications without a certificate.
 * Managing webhooks needs the organization permission `Manage Users and Organization Settings`
 * (organization option manageSettings; 403 without it).
 * Deletion: a target answering 410 is deleted (notifications.ts); the API has no delete.
 */
import { Router } from 'express';
import { z } from 'zod';
import { apiLocals, owned, type SandboxContext } from './context.js';
import { detailError, methodNotAllowed, validate } from './errors.js';
import { REQUIRED, text } from './fields.js';
import { exact, list, type Filters } from './listing.js';
import { EVENT_TYPES, type Webhook } from './state.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function targetSchema(allowHttp: boolean) {
  return text(500).superRefine((v, ctx) => {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      return ctx.addIssue({ code: 'custom', message: 'Enter a valid URL.' });
    }
    const loopbackHttp = allowHttp && url.protocol === 'http:' && LOOPBACK.has(url.hostname);
    if (url.protocol !== 'https:' && !loopbackHttp) {
      ctx.addIssue({
        code: 'custom',
        message: allowHttp
          ? 'Enter an https URL (http only for localhost).'
          : 'Enter an https URL: non-HTTPS URLs are rejected.',
      });
    }
  });
}

export const webhookFilters: Filters<Webhook> = { user: exact((w) => w.user), event: exact((w) => w.event) };

/** The create body; `allowHttp`: SandboxOptions.allowHttpWebhooks. */
export const webhookCreateSchema = (allowHttp: boolean) =>
  z.object({
    event: z.enum(EVENT_TYPES, {
      error: (i) =>
        i.input === undefined ? REQUIRED : `"${String(i.input)}" is not a valid choice: ${EVENT_TYPES.join(', ')}.`,
    }),
    target: targetSchema(allowHttp),
  });

export function webhooksRouter(ctx: SandboxContext): Router {
  const router = Router();
  const createSchema = webhookCreateSchema(ctx.allowHttpWebhooks);
  router.use('/webhooks', (_req, res, next) => {
    if (!apiLocals(res).org.manageSettings) {
      throw detailError(403, 'Managing webhooks needs the permission "Manage Users and Organization Settings".');
    }
    next();
  });
  router
    .route('/webhooks')
    .get((req, res) => {
      const { org } = apiLocals(res);
      const mine = [...ctx.state.webhooks.values()].filter((w) => w.organization === org.id);
      res.json(list(req, mine, webhookFilters, (w) => ctx.render.webhook(w)));
    })
    .post((req, res) => {
      const { org } = apiLocals(res);
      const input = validate(createSchema, req.body);
      const now = ctx.clock.now();
      const hook: Webhook = {
        id: ctx.state.nextId('webhook'),
        organization: org.id,
        user: org.userId,
        ...input,
        created: now,
        updated: now,
      };
      ctx.state.webhooks.set(hook.id, hook);
      res.status(201).json(ctx.render.webhook(hook));
    })
    .all(methodNotAllowed('GET', 'POST'));
  router
    .route('/webhooks/:id')
    .get((req, res) => {
      res.json(ctx.render.webhook(owned(ctx.state.webhooks, req.params.id, apiLocals(res).org)));
    })
    .all(methodNotAllowed('GET'));
  return router;
}
