/**
 * The delivery log of signed events out (src/events-out, docs/webhooks-out.md):
 * - `GET /ops/deliveries?state=<pending|delivered|failed>`: each event's delivery to each endpoint, newest
 *   first: its type and our ref, the endpoint, attempts, last status (or why no answer), next try, delivered at;
 * - `POST /ops/deliveries/replay` (form: `csrf`, `event`, `endpoint`): that delivery is sent again now (the same
 *   event id and body) and retried for another WEBHOOK_RETRY_HOURS; answered 303 to the log.
 *
 * Who may call them: through the /ops access check (src/ops/access.ts). The log: a signed-in operator (or Basic
 * auth with an operator's name and password), everyone in the embedded demo; not a script's Bearer token;
 * anyone else 401 (a browser is sent to sign in). The replay: a signed-in operator only, with the page's CSRF
 * token and from this site; without a session 403 (the access check), without the token 403 (requireCsrf).
 * Endpoints are registered in WEBHOOK_ENDPOINTS only, never here. A bad query or form is a 400 with its
 * reason, an unknown delivery 404, a database that does not answer 503.
 */
import type { Express, RequestHandler } from 'express';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { listDeliveries, replayDelivery, type DeliveryView } from '../events-out/delivery-log.js';
import { DELIVERY_STATES, type EventsOutSchema } from '../events-out/schema.js';
import { readBody } from '../http/body.js';
import type { Logger } from '../log.js';
import type { OpsAccess, SignIn } from './access.js';
import type { OperatorAudit } from './audit.js';
import { html, queryString, when, unavailableAlert, type Html, pageSender } from './html.js';

const send = pageSender('Deliveries', '/ops/deliveries');

export interface DeliveriesRouteOptions {
  /** WEBHOOK_ENDPOINTS: a replay goes only to an endpoint still configured. */
  endpoints: readonly string[];
  /** How long a replayed delivery is retried, ms (WEBHOOK_RETRY_HOURS). */
  retryForMs: number;
  /** Tells the sender to look now. */
  wake?: () => void;
}

const SHOWN = 200;

const query = z
  .object({
    state: z.enum(DELIVERY_STATES, `state is one of ${DELIVERY_STATES.join(', ')}`).optional(),
  })
  .strict();

const replayForm = z
  .object({
    csrf: z.string(),
    event: z.string().regex(/^evt_[0-9a-f]{24}$/, 'event is an event id (evt_…)'),
    endpoint: z.string().min(1).max(2000),
  })
  .strict();

export function addDeliveriesRoutes(
  app: Express,
  access: OpsAccess,
  o: DeliveriesRouteOptions & { db?: Kysely<EventsOutSchema>; logger?: Logger; audit?: OperatorAudit | undefined },
): void {
  const form = readBody('form', { limit: '4kb' }) as RequestHandler;

  app.get('/ops/deliveries', async (req, res) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) {
      const reasons = parsed.error.issues.map((i) =>
        i.code === 'unrecognized_keys' ? `${i.keys.join(', ')}: not taken (state)` : i.message,
      );
      send(
        res,
        400,
        html`<ul class="reasons" role="alert">
          ${reasons.map((r) => html`<li>${r}</li>`)}
        </ul>`,
      );
      return;
    }
    if (!o.db) {
      send(res, 503, html`<p class="reasons" role="alert">The journal is not open: no database.</p>`);
      return;
    }
    try {
      const found = await listDeliveries(o.db, {
        ...(parsed.data.state ? { state: parsed.data.state } : {}),
        limit: SHOWN,
      });
      send(res, 200, body(found, parsed.data.state, o.endpoints, res.locals.signIn as SignIn | undefined));
    } catch (err) {
      o.logger?.warn({ err }, 'ops: the delivery log could not be read');
      send(res, 503, unavailableAlert('The delivery log could not be read'));
    }
  });

  app.post('/ops/deliveries/replay', form, async (req, res) => {
    const by = access.requireCsrf(req, res);
    if (!by) return;
    const parsed = replayForm.safeParse(req.body ?? {});
    if (!parsed.success) {
      const reasons = parsed.error.issues.map((i) => `${i.path.join('.') || 'form'}: ${i.message}`);
      send(res, 400, html`<p class="reasons" role="alert">${reasons.join('; ')}</p>`);
      return;
    }
    const { event, endpoint } = parsed.data;
    if (!o.endpoints.includes(endpoint)) {
      send(
        res,
        400,
        html`<p class="reasons" role="alert">
          That endpoint is no longer in WEBHOOK_ENDPOINTS: nothing is sent to it.
        </p>`,
      );
      return;
    }
    if (!o.db) {
      send(res, 503, html`<p class="reasons" role="alert">The journal is not open: no database.</p>`);
      return;
    }
    try {
      const done = await replayDelivery(o.db, { eventId: event, endpoint, by, retryMs: o.retryForMs });
      if (!done) {
        send(res, 404, html`<p class="reasons" role="alert">No delivery of ${event} to that endpoint.</p>`);
        return;
      }
      o.logger?.info({ event, by }, 'events out: a delivery replayed');
      await o.audit?.recordQuietly(by, 'replay', { event, endpoint });
      o.wake?.();
      res.redirect(303, '/ops/deliveries');
    } catch (err) {
      o.logger?.warn({ err }, 'ops: a replay could not be written');
      send(res, 503, unavailableAlert('The replay could not be written'));
    }
  });
}

function row(d: DeliveryView, signIn: SignIn | undefined, endpoints: readonly string[]): Html {
  const replayable = signIn && endpoints.includes(d.endpoint);
  return html`<tr class="delivery" data-state="${d.state}" data-event="${d.eventId}">
    <td><code>${d.eventId}</code><br /><small>${d.type}</small></td>
    <td><a href="/ops/payments/${encodeURIComponent(d.ref)}">${d.ref}</a></td>
    <td>${d.endpoint}</td>
    <td><span class="state delivery-${d.state}">${d.state}</span></td>
    <td>${d.attempts}</td>
    <td>${d.lastStatus ?? (d.lastError ? html`<small>${d.lastError}</small>` : '–')}</td>
    <td>${d.nextTry ? when(d.nextTry) : '–'}</td>
    <td>${d.deliveredAt ? when(d.deliveredAt) : '–'}</td>
    <td>
      ${
        replayable
          ? html`<form method="post" action="/ops/deliveries/replay">
              <input type="hidden" name="csrf" value="${signIn.csrf}" />
              <input type="hidden" name="event" value="${d.eventId}" />
              <input type="hidden" name="endpoint" value="${d.endpoint}" />
              <button type="submit">Replay</button>
            </form>`
          : ''
      }${d.replayedBy ? html`<small>replayed by ${d.replayedBy}</small>` : ''}
    </td>
  </tr>`;
}

function body(
  found: { items: DeliveryView[]; more: boolean },
  state: string | undefined,
  endpoints: readonly string[],
  signIn: SignIn | undefined,
): Html {
  const filters = html`<p class="filters">
    Show:
    <a href="/ops/deliveries" ${state ? '' : html` aria-current="true"`}>all</a>${DELIVERY_STATES.map(
      (s) =>
        html` ·
          <a href="/ops/deliveries${queryString({ state: s })}" ${s === state ? html` aria-current="true"` : ''}
            >${s}</a
          >`,
    )}
  </p>`;
  return html`<section aria-labelledby="deliveries-title">
    <h2 id="deliveries-title">Events out: deliveries</h2>
    <p class="note">
      Every state change of a payment, request, purchase or payout is posted, signed, to each endpoint of
      <code>WEBHOOK_ENDPOINTS</code> (set in the environment only), and retried with backoff until it is taken.
      Endpoints: ${endpoints.length === 0 ? 'none set' : endpoints.join(', ')}.
    </p>
    ${filters}
    ${
      found.items.length === 0
        ? html`<p class="empty">No deliveries${state ? ` ${state}` : ''}.</p>`
        : html`<table class="deliveries">
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Our ref</th>
                  <th scope="col">Endpoint</th>
                  <th scope="col">State</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Next try</th>
                  <th scope="col">Delivered</th>
                  <th scope="col"></th>
                </tr>
              </thead>
              <tbody>
                ${found.items.map((d) => row(d, signIn, endpoints))}
              </tbody>
            </table>
            ${found.more ? html`<p class="note">The newest ${SHOWN} shown.</p>` : ''}`
    }
  </section>`;
}
