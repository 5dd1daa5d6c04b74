/**
 * The webhook routes, `/whatsapp/webhook`. Who may call them:
 * - `GET`: Meta's verification when the webhook is set up in the app dashboard. Answered with
 *   `hub.challenge` (text/plain) only for `hub.mode=subscribe` with `hub.verify_token` equal to
 *   WHATSAPP_VERIFY_TOKEN (compared in constant time); 403 otherwise. It reveals and changes nothing else.
 * - `POST`: Meta only. The body must carry `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of its raw
 *   bytes with WHATSAPP_APP_SECRET, compared in constant time; a request without it, with a malformed one,
 *   a wrong one, or a body that could not be read to check it is refused with 401 and changes nothing.
 *   A signed body that is not a WhatsApp messages webhook gets 400. A signed delivery is answered 200 at
 *   once, then its messages are worked (handler.ts): Meta wants a quick answer and redelivers otherwise.
 * The body is read by the product's body reader on this route only (a global parser would break Bolt).
 */
import type { IncomingMessage } from 'node:http';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import { readBody } from '../../src/http/body.js';
import type { Logger } from '../../src/log.js';
import type { MessageHandler } from './handler.js';
import { readDelivery } from './payload.js';

export const WEBHOOK_PATH = '/whatsapp/webhook';

/** Meta's webhook payloads stay within 3 MB (its documented maximum). */
const BODY_LIMIT = '3mb';
const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;
/** Meta's challenge is a short number; anything longer is not echoed. */
const CHALLENGE = /^[\x21-\x7e]{1,256}$/;

export interface WebhookOptions {
  appSecret: string;
  verifyToken: string;
  phoneNumberId: string;
  handler: MessageHandler;
  logger: Logger;
}

/** Equal strings, in time that does not depend on where they differ (or on their lengths). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

const refuse = (status: number, reason: string) => Object.assign(new Error(reason), { status, expose: true });

export function createWebhookRouter(options: WebhookOptions): Router {
  const { appSecret, verifyToken, phoneNumberId, handler, logger } = options;
  /** Requests whose signature matched (their later errors keep their own status). */
  const signed = new WeakSet<IncomingMessage>();

  const verify: RequestHandler = (req, res) => {
    const query = new URL(req.originalUrl, 'http://local').searchParams;
    const mode = query.get('hub.mode');
    const token = query.get('hub.verify_token');
    const challenge = query.get('hub.challenge');
    res.set('x-content-type-options', 'nosniff');
    if (mode !== 'subscribe' || token === null || !sameSecret(token, verifyToken)) {
      res
        .status(403)
        .type('text/plain')
        .send('Verification refused: hub.mode must be subscribe and hub.verify_token must match');
      return;
    }
    if (challenge === null || !CHALLENGE.test(challenge)) {
      res.status(400).type('text/plain').send('hub.challenge is missing or not a short token');
      return;
    }
    logger.info('whatsapp: webhook verified by Meta');
    res.status(200).type('text/plain').send(challenge);
  };

  /** A request with no well-formed signature is refused before its body is read. */
  const requireSignature: RequestHandler = (req, _res, next) => {
    const header = req.headers['x-hub-signature-256'];
    if (typeof header !== 'string' || !SIGNATURE.test(header.trim())) {
      return next(refuse(401, 'X-Hub-Signature-256 is missing or not sha256=<64 hex digits>'));
    }
    next();
  };

  const checkSignature = (req: IncomingMessage, body: Buffer): void => {
    const given = Buffer.from(SIGNATURE.exec(String(req.headers['x-hub-signature-256']).trim())![1]!, 'hex');
    const expected = createHmac('sha256', appSecret).update(body).digest();
    if (!timingSafeEqual(given, expected)) throw refuse(401, 'X-Hub-Signature-256 does not match the body');
    signed.add(req);
  };

  const receive: RequestHandler = (req, res) => {
    const read = readDelivery(req.body, phoneNumberId);
    if (!read.ok) {
      res.status(400).json({ error: read.reason });
      return;
    }
    const { messages, statuses, skipped } = read.delivery;
    res.status(200).json({ received: messages.length + statuses.length });
    if (skipped > 0)
      logger.warn({ skipped }, 'whatsapp: items of a delivery skipped (unreadable, or for another phone number)');
    for (const status of statuses) handler.status(status);
    for (const message of messages) handler.accept(message);
  };

  const answerError: ErrorRequestHandler = (error, req, res, _next) => {
    if (res.headersSent) return;
    const status = (error as { status?: unknown }).status;
    const reason = error instanceof Error ? error.message : 'bad request';
    // Until the signature matched, nothing about the request is answered but that.
    if (!signed.has(req)) {
      const why = status === 401 ? reason : `the signature could not be checked: ${reason}`;
      res.status(401).json({ error: why });
      return;
    }
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(status).json({ error: reason });
      return;
    }
    logger.error({ err: reason }, 'whatsapp: webhook failed');
    res.status(500).json({ error: 'internal error' });
  };

  const router = express.Router();
  router.get(WEBHOOK_PATH, verify);
  router.post(
    WEBHOOK_PATH,
    requireSignature,
    readBody('json', { limit: BODY_LIMIT, anyType: true, verify: checkSignature }),
    receive,
    answerError,
  );
  return router;
}
