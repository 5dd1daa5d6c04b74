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
 * The routes go on the app itself, not on a Router mounted in it (one dispatch less per delivery, as for
 * the USSD routes).
 */
import type { Express, Request, Response, NextFunction, RequestHandler } from 'express';
import { readBody } from '../http/body.js';
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
function checkBasicAuth(credentials: ReceiverOptions['basicAuth']): RequestHandler[] {
  if (!credentials) return [];
  return [(req: Request, res: Response, next: NextFunction) => {
    const expected = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
    if (!sameSecret(req.get('authorization') ?? '', expected)) {
      res.set('WWW-Authenticate', 'Basic realm="notifications"').status(401).json({ detail: 'Invalid or missing credentials.' });
      return;
    }
    next();
  }];
}

/** The 200 a queued notification gets, written as is (no ETag to hash for it). */
const QUEUED = JSON.stringify({ ok: true });

function fieldErrors(issues: { path: PropertyKey[]; message: string }[]): Record<string, string[]> {
  const fields: Record<string, string[]> = {};
  for (const issue of issues) (fields[issue.path.map(String).join('.') || 'body'] ??= []).push(issue.message);
  return fields;
}

export function addReceiverRoutes(app: Express, options: ReceiverOptions): void {
  const json = readBody('json', { limit: '256kb', anyType: true });
  const auth = checkBasicAuth(options.basicAuth);

  app.post('/notifications/momo', ...auth, json, async (req, res) => {
    const parsed = notificationBody.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ detail: 'Expected a JSON object {hook: {event}, data: {...}}.', fields: fieldErrors(parsed.error.issues) });
      return;
    }
    const notice = parseNotice(parsed.data);
    if (!notice.ok) {
      res.status(400).json({ detail: `Unreadable data for ${parsed.data.hook.event}.`, fields: fieldErrors(notice.issues) });
      return;
    }
    try {
      if (notice.notice) await options.enqueue(notice.notice);
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': QUEUED.length }).end(QUEUED);
    } catch (err) {
      if (err instanceof QueueFullError) {
        options.logger.warn({ err: err.message }, 'notification refused: the queue is full');
        res.set('Retry-After', String(err.retryAfterSeconds)).status(503).json({ detail: 'Too many notifications queued; retry later.' });
        return;
      }
      options.logger.error({ err: String(err) }, 'notification could not be queued');
      res.status(503).json({ detail: 'Temporarily unable to take notifications; retry later.' });
    }
  });

  app.post('/notifications/momo/verify', ...auth, json, async (req, res) => {
    const parsed = verificationBody.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ detail: 'Expected phonenumber, amount, currency_code and remote_transaction_id.', fields: fieldErrors(parsed.error.issues) });
      return;
    }
    try {
      res.status(200).type('text/plain').send(await options.verify(parsed.data));
    } catch (err) {
      // No answer in time means the organization's default applies; say so rather than guess.
      options.logger.error({ err: String(err) }, 'verification failed');
      res.status(503).type('text/plain').send('verification unavailable');
    }
  });

  // A malformed JSON body: 400 with the reason, never a 500.
  app.use('/notifications', (err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (err && typeof err === 'object' && 'status' in err && (err as { status: number }).status < 500) {
      const e = err as { status: number; message?: string; type?: string };
      res.status(e.status).json({ detail: e.type === 'entity.too.large' ? 'Body too large.' : `Malformed body: ${e.message ?? 'invalid JSON'}` });
      return;
    }
    next(err);
  });
}
