/**
 * The webhook route. It parses JSON itself (the app hosts Slack's Bolt route, which needs raw bodies, so no
 * parser is mounted globally), rejects what is not an update with a 400, and leaves the secret check to
 * grammY's webhookCallback (a call without the right X-Telegram-Bot-Api-Secret-Token gets 401).
 *
 * What Telegram is answered: 200 once the update is handled, including when handling failed, because the
 * user has been told and a redelivery would fail the same way (handler.ts). A slow update is answered 200
 * at the timeout while its handling goes on, so Telegram neither redelivers it nor holds back the next ones.
 * Only when the bot cannot take an update at all (it could not reach Telegram to initialise, or the store
 * cannot record the update: handler.ts UpdateNotTaken) is the answer 503, so Telegram redelivers later.
 */
import { createHash } from 'node:crypto';
import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import { webhookCallback, type Bot } from 'grammy';
import type { Logger } from '../../src/log.js';
import { describeError } from './describe-error.js';

export const WEBHOOK_PATH = '/telegram/webhook';

/** The default secret token: stable across restarts and instances without another setting to manage. */
export function deriveSecretToken(botToken: string): string {
  return createHash('sha256').update(botToken).digest('hex').slice(0, 32);
}

export interface WebhookOptions {
  secretToken: string;
  timeoutMs: number;
  logger: Logger;
}

const requireUpdate: RequestHandler = (req, res, next) => {
  const body: unknown = req.body;
  const updateId = typeof body === 'object' && body !== null ? (body as { update_id?: unknown }).update_id : undefined;
  if (Number.isSafeInteger(updateId)) return next();
  res.status(400).json({ error: 'expected a Telegram update: a JSON object with an integer update_id' });
};

export function createWebhookRouter(bot: Bot, { secretToken, timeoutMs, logger }: WebhookOptions): Router {
  const answerError: ErrorRequestHandler = (error, _req, res, _next) => {
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(status).json({ error: `bad request body: ${(error as Error).message}` });
      return;
    }
    logger.error({ err: describeError(error) }, 'telegram: webhook could not take an update');
    res.status(503).json({ error: 'the bot cannot take updates right now; retry later' });
  };
  const router = express.Router();
  router.post(
    WEBHOOK_PATH,
    express.json(),
    requireUpdate,
    webhookCallback(bot, 'express', { secretToken, onTimeout: 'return', timeoutMilliseconds: timeoutMs }),
    answerError,
  );
  return router;
}
