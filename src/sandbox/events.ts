/** Events: get and list (filter `type`), newest first. Every event of the organization is kept. */
import { Router } from 'express';
import { apiLocals, owned, type SandboxContext } from './context.js';
import { methodNotAllowed } from './errors.js';
import { exact, list, type Filters } from './listing.js';
import type { SandboxEvent } from './state.js';

export const eventFilters: Filters<SandboxEvent> = { type: exact((e) => e.type) };

export function eventsRouter(ctx: SandboxContext): Router {
  const router = Router();
  router
    .route('/events')
    .get((req, res) => {
      const { org } = apiLocals(res);
      const mine = [...ctx.state.events.values()].filter((e) => e.organization === org.id);
      res.json(list(req, mine, eventFilters, (e) => ctx.render.event(e)));
    })
    .all(methodNotAllowed('GET'));
  router
    .route('/events/:id')
    .get((req, res) => {
      res.json(ctx.render.event(owned(ctx.state.events, req.params.id, apiLocals(res).org)));
    })
    .all(methodNotAllowed('GET'));
  return router;
}
