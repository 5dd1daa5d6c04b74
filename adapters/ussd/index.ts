/**
 * The USSD channel's routes, added to the product's app itself: `POST /ussd/<gateway>` for Africa's Talking,
 * Hubtel, Arkesel, Nalo and Beem, and Africa's Talking's end-of-session report `POST /ussd/africastalking/events`
 * (events.ts), behind the protection of access.ts (in production at `/ussd/<gateway>/<USSD_CALLBACK_TOKEN>`
 * and/or from USSD_ALLOWED_IPS), and `GET /simulator` with the embedded sandbox only. The gateway routes are
 * direct routes (src/http/direct-routes.ts), served on Node's own request and response in front of the app:
 * every hop of every session comes through them, and express's handling costs several times the CPU of
 * Node's own a request. The simulator's pages and the demo's answer for an unknown gateway stay on the app.
 * Body parsers sit on the gateway routes only: a global parser would break Slack's Bolt route on the same app.
 */
import type { Express } from 'express';
import { bodyRefusal, readBody } from '../../src/http/body.js';
import { sendJson, type DirectErrorHandler, type DirectRoutes } from '../../src/http/direct-routes.js';
import type { TurnEngine } from '../../src/conversation/types.js';
import type { Logger } from '../../src/log.js';
import type { SmsMessage } from '../../src/notifications/sms.js';
import { addGatewayRoute, type GatewayAccess } from './access.js';
import type { GatewayName } from './codecs/codec.js';
import { codecs } from './codecs/index.js';
import { africasTalkingEvents, createSessionEnds } from './events.js';
import { createHopHandler, gatewayPhone } from './hop.js';
import { simulatorPage } from './simulator.js';

export interface UssdRoutesOptions {
  /** Answers each hop, keeping the USSD state with the conversation (src/conversation createEngine). */
  engine: TurnEngine;
  /** The service code the simulator dials and shows (config USSD_SERVICE_CODE, default `*384*123#`). */
  serviceCode: string;
  /**
   * The deadline the engine keeps for USSD (config USSD_DEADLINE_MS, default 3000). The route waits at
   * most a second longer for the engine, then answers END with an apology so the gateway never hangs.
   */
  deadlineMs: number;
  /** Gets gateway, session id, masked phone and hop per request; never a body, an answer or a screen. */
  logger: Logger;
  /**
   * Country for numbers a gateway sends in local form (ISO 3166 alpha-2). Default `UG`, as config
   * DEFAULT_COUNTRY; gateways normally send international numbers and this is not used.
   */
  defaultCountry?: string;
  /** Who may call the gateway routes (access.ts): the product builds it from its settings. */
  access: GatewayAccess;
  /**
   * The key of the stored resend digest (session.ts), a secret kept out of Redis and the same in every
   * process sharing it: the product derives it from its API key.
   */
  digestKey: string;
  /**
   * How long a session that ended unfinished (dropped by the network, released, timed out) may be taken up by
   * the next dial, in seconds: config USSD_RESUME_SECONDS, default 120.
   */
  resumeSeconds?: number;
  /**
   * Gateways that send the whole input so far (every answer joined by `*`, as Africa's Talking does) rather
   * than the latest answer: config USSD_WHOLE_INPUT. Default none.
   */
  wholeInput?: readonly GatewayName[];
  /** Serve `GET /simulator`, a phone in the browser. Default false: the product serves it only with the embedded sandbox. */
  simulator?: boolean;
  /** The demo's SMS outbox (src/notifications/sms.ts): with the simulator, `GET /simulator/sms?phone=` lists a number's messages. */
  smsOutbox?: { to(phone: string): SmsMessage[] };
  /** The process is stopping: each hop is answered with a short screen ending the session (hop.ts DRAINING). */
  draining?: () => boolean;
}

/** Default of UssdRoutesOptions.resumeSeconds, as config USSD_RESUME_SECONDS: two minutes, about a USSD session's own length. */
export const DEFAULT_RESUME_SECONDS = 120;

/** Largest body a gateway sends; anything bigger is not a USSD request. */
const BODY_LIMIT = '16kb';

export function addUssdRoutes(app: Express, direct: DirectRoutes, options: UssdRoutesOptions): void {
  const defaultCountry = options.defaultCountry ?? 'UG';
  const sessionEnds = createSessionEnds({ engine: options.engine, logger: options.logger });
  const handle = createHopHandler({
    engine: options.engine,
    deadlineMs: options.deadlineMs,
    logger: options.logger,
    defaultCountry,
    digestKey: options.digestKey,
    sessionEnds,
    serviceCode: options.serviceCode,
    resumeSeconds: options.resumeSeconds ?? DEFAULT_RESUME_SECONDS,
    wholeInput: options.wholeInput,
    draining: options.draining,
  });
  const parsers = { form: readBody('form', { limit: BODY_LIMIT }), json: readBody('json', { limit: BODY_LIMIT }) };

  // Parser failures on these routes: a reason, never the body (it can hold a PIN). Anything else is ours: 500.
  const refuseBody: DirectErrorHandler = (err, req, res) => {
    // The gateway's name only: the path's last segment may be the callback token.
    const gateway = (req.url ?? '').split('/')[2];
    const refusal = bodyRefusal(err);
    if (refusal === undefined) {
      options.logger.error({ gateway, err: err instanceof Error ? err.name : 'unknown' }, 'ussd route failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      return;
    }
    options.logger.warn({ gateway, reason: refusal.reason }, 'ussd request refused');
    if (!res.headersSent) sendJson(res, refusal.status, { error: refusal.reason });
  };

  // Africa's Talking's end-of-session report (events.ts): a gateway route like the callback, protected alike.
  const toPhone = (msisdn: string) => gatewayPhone(msisdn, defaultCountry);
  addGatewayRoute(
    direct,
    options.access,
    '/ussd/africastalking/events',
    refuseBody,
    parsers.form,
    africasTalkingEvents(sessionEnds, toPhone, options.logger),
  );
  for (const codec of codecs)
    addGatewayRoute(direct, options.access, `/ussd/${codec.name}`, refuseBody, parsers[codec.body], handle(codec));
  if (options.access.open) {
    const known = codecs.map((c) => c.name).join(', ');
    app.post('/ussd/:gateway', (_req, res) => {
      res.status(404).json({ error: `unknown USSD gateway; served: ${known}` });
    });
  }

  if (options.simulator) {
    const page = simulatorPage(options.serviceCode);
    app.get('/simulator', (_req, res) => {
      res.type('html').send(page);
    });
    // The messages the simulator's phone received (the demo's SMS outbox), newest last.
    app.get('/simulator/sms', (req, res) => {
      const phone = typeof req.query.phone === 'string' ? gatewayPhone(req.query.phone, defaultCountry) : undefined;
      if (!phone) {
        res.status(400).json({ error: 'phone: a mobile number is required' });
        return;
      }
      res.json({ messages: options.smsOutbox?.to(phone) ?? [] });
    });
  }
}
