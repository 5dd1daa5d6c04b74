/**
 * POST /notifications/momo: the service's webhook notifications. Answers 200 at once and queues the work
 * (the service waits 5 s and retries up to 10 times): only the parsed, bounded fields of a body (a Notice),
 * never the body itself. An event that owes no chat anything is answered 200 and dropped; one we act on whose
 * data cannot be read gets 400 with the reason. POST /notifications/momo/verify: collection verification,
 * answered as text within the service's 60 s.
 *
 * Who may call them: the service, authenticated by Basic auth when MOMO_WEBHOOK_USER/PASSWORD are set (then
 * anyone else gets 401). Without credentials anyone can post, so nothing posted is believed because of what
 * it says: a notice is told only about a record of ours, in our words, and a final state only once the
 * service's read agrees (dispatch.ts).
 * Both are direct routes (src/http/direct-routes.ts), served on Node's own objects in front of express as the
 * USSD gateways' are: a delivery is a request of the product's second-busiest path, and express's own
 * prototypes make Node's HTTP code slower on it (bench/profile/notify.ts measures it).
 */
import type { ServerResponse } from 'node:http';
import { readBody } from '../http/body.js';
import {
  answerFailure,
  sendJson,
  type DirectErrorHandler,
  type DirectHandler,
  type DirectRoutes,
} from '../http/direct-routes.js';
import { sameSecret } from '../http/secret.js';
import type { Logger } from '../log.js';
import { notificationBody, parseNotice, type Notice } from './events.js';
import { QueueFullError } from './queue.js';
import { verificationBody, type VerificationBody } from './verify.js';

export interface ReceiverOptions {
  /** Queues one notice; rejects when the queue cannot take it (the service then retries). */
  enqueue(notice: Notice): Promise<void>;
  /** Answers one verification request with `ACCEPT <id>` or `REJECT <id> <reason>`. */
  verify(body: VerificationBody): Promise<string>;
  /** Basic auth credentials the service sends; unset: no Authorization is expected. */
  basicAuth?: { user: string; password: string };
  logger: Logger;
}

/** The Basic auth check as a route handler; none when no credentials are configured. */
function checkBasicAuth(credentials: ReceiverOptions['basicAuth']): DirectHandler[] {
  if (!credentials) return [];
  const expected = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
  return [
    (req, res, next) => {
      if (!sameSecret(req.headers.authorization ?? '', expected)) {
        sendJson(
          res,
          401,
          { detail: 'Invalid or missing credentials.' },
          { 'www-authenticate': 'Basic realm="notifications"' },
        );
        return;
      }
      next();
    },
  ];
}

/** The 200 a queued notification gets, written as is (no ETag to hash for it). */
const QUEUED = JSON.stringify({ ok: true });

function fieldErrors(issues: { path: PropertyKey[]; message: string }[]): Record<string, string[]> {
  const fields: Record<string, string[]> = {};
  for (const issue of issues) (fields[issue.path.map(String).join('.') || 'body'] ??= []).push(issue.message);
  return fields;
}

/** A body that could not be read (malformed JSON, too large, a charset or encoding we do not read): 4xx with the reason, never a 500. */
const refuseBody: DirectErrorHandler = (err, req, res) => {
  const e = (err ?? {}) as { status?: unknown; message?: string; type?: string };
  if (typeof e.status !== 'number' || e.status >= 500) return answerFailure(err, req, res);
  if (!res.headersSent)
    sendJson(res, e.status, {
      detail: e.type === 'entity.too.large' ? 'Body too large.' : `Malformed body: ${e.message ?? 'invalid JSON'}`,
    });
};

function sendText(res: ServerResponse, status: number, text: string): void {
  res
    .writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) })
    .end(text);
}

export function addReceiverRoutes(direct: DirectRoutes, options: ReceiverOptions): void {
  const json = readBody('json', { limit: '256kb', anyType: true });
  const auth = checkBasicAuth(options.basicAuth);

  direct.post('/notifications/momo', { onError: refuseBody }, ...auth, json, async (req, res) => {
    const parsed = notificationBody.safeParse(req.body);
    if (!parsed.success) {
      sendJson(res, 400, {
        detail: 'Expected a JSON object {hook: {event}, data: {...}}.',
        fields: fieldErrors(parsed.error.issues),
      });
      return;
    }
    const notice = parseNotice(parsed.data);
    if (!notice.ok) {
      sendJson(res, 400, {
        detail: `Unreadable data for ${parsed.data.hook.event}.`,
        fields: fieldErrors(notice.issues),
      });
      return;
    }
    try {
      if (notice.notice) await options.enqueue(notice.notice);
      res
        .writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': QUEUED.length })
        .end(QUEUED);
    } catch (err) {
      if (err instanceof QueueFullError) {
        options.logger.warn({ err: err.message }, 'notification refused: the queue is full');
        sendJson(
          res,
          503,
          { detail: 'Too many notifications queued; retry later.' },
          { 'retry-after': String(err.retryAfterSeconds) },
        );
        return;
      }
      options.logger.error({ err: String(err) }, 'notification could not be queued');
      sendJson(res, 503, { detail: 'Temporarily unable to take notifications; retry later.' });
    }
  });

  direct.post('/notifications/momo/verify', { onError: refuseBody }, ...auth, json, async (req, res) => {
    const parsed = verificationBody.safeParse(req.body);
    if (!parsed.success) {
      sendJson(res, 400, {
        detail: 'Expected phonenumber, amount, currency_code and remote_transaction_id.',
        fields: fieldErrors(parsed.error.issues),
      });
      return;
    }
    try {
      sendText(res, 200, await options.verify(parsed.data));
    } catch (err) {
      // No answer in time means the organization's default applies; say so rather than guess.
      options.logger.error({ err: String(err) }, 'verification failed');
      sendText(res, 503, 'verification unavailable');
    }
  });
}
