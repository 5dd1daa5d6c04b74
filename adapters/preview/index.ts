/**
 * `/preview`: one conversation as USSD, Telegram, Slack and WhatsApp show it, side by side, for flow authors.
 * Served only with the embedded sandbox (the demo: no MOMO_BASE_URL, no real money); in production none of
 * these routes exists (404).
 *
 * - `GET /preview` (`?phone=+256...` presets the number): the page. Anyone who can reach the demo. It sets a
 *   cookie `momo_preview` (`HttpOnly`, `SameSite=Strict`, `Path=/preview`) holding a random token, which the page
 *   carries in its `<meta name="csrf">`.
 * - `GET /preview/preview.js`, `/preview/preview.css`: the page's own script and style (no data). Anyone.
 * - `POST /preview/turn` (JSON `{ phone, lang?, action }`, at most 8 kB): one action in a pane (read.ts), answered
 *   with the Prompt and its four renderings (render.ts). Only the page: the `X-CSRF-Token` header must equal the
 *   cookie's token (double submit) and a browser's `Origin`, when it sends one, must be this host; else 403 and
 *   nothing is done. A body that is not JSON, too large, or with a value out of bounds gets 400 / 413 / 415 with
 *   the reason.
 *
 * The preview's conversation is its own participant: channel `ussd` (a PIN is asked, as on a phone; the chats'
 * flows ask none), conversation and user `preview:<phone>`, the phone as its number (so the country's menus
 * show), so it never reads or writes a real user's conversation, profile, limits or outcomes; and it runs on
 * the demo's sandbox. It goes through the engine's turn as the USSD adapter does: the prompt shown and each
 * pane's page are kept with the conversation, written in the same compare-and-set.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import type { Lang } from '../../flows/types.js';
import { rememberProfile } from '../../src/conversation/engine/profile.js';
import type { Participant, TurnDecision, TurnEngine } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import { bodyRefusal, readBody } from '../../src/http/body.js';
import { cookieOf } from '../../src/http/cookie.js';
import { setPageHeaders } from '../../src/http/page-headers.js';
import { sameSecret } from '../../src/http/secret.js';
import type { Logger } from '../../src/log.js';
import { previewPage, PREVIEW_CSS, PREVIEW_JS } from './page.js';
import { previewRequest, readAction, shown, type PreviewAction, type PreviewState } from './read.js';
import { renderAll } from './render.js';
import { DEMO_PHONE } from '../ussd/simulator.js';

export interface PreviewOptions {
  /** The engine (with the product's rate limit): the preview's turns are counted like anyone's. */
  engine: TurnEngine;
  /** Where a language chosen on the page is remembered for the preview's user (its profile). */
  store: Store;
  logger: Logger;
  /** The number the page starts with. Default the simulator's demo user ({@link DEMO_PHONE}). */
  phone?: string;
}

/** The cookie of the page's CSRF token. */
export const PREVIEW_COOKIE = 'momo_preview';
const TOKEN = /^[\w-]{32}$/;
/** A day: the page stays usable through a working session. */
const COOKIE_SECONDS = 24 * 3600;

/** Own files only, never framed: the page draws every value as text (textContent), never as markup. */
function securityHeaders(res: Response): void {
  setPageHeaders(res, "'none'");
}

/** The participant of a preview of `phone`: its own conversation and user, never a real one's. */
export function previewParticipant(phone: string): Participant {
  const id = `preview:${phone}`;
  return { channel: 'ussd', conversationId: id, userId: id };
}

/** The engine's decision for `action` on the state stored (pure, as TurnEngine.turn wants it). */
function decide(action: PreviewAction, phone: string, messageId: string) {
  return (state: PreviewState | undefined): TurnDecision<PreviewState> => {
    const reading = readAction(action, state);
    switch (reading.kind) {
      case 'message':
        return {
          kind: 'step',
          inbound: { ...previewParticipant(phone), phoneNumber: phone, messageId, ...reading.request },
          after: (prompt) => shown(prompt),
        };
      case 'page':
        return {
          kind: 'reply',
          state: { ...state!, pages: { ...state!.pages, [reading.pane]: reading.page } },
          changed: true,
        };
      case 'say':
        // Not written: the channel's own words are for this answer only.
        return {
          kind: 'reply',
          state: { ...state!, said: { pane: reading.pane, text: reading.text } },
          changed: false,
        };
      case 'show':
        return { kind: 'reply', state: state!, changed: false };
    }
  };
}

/** Adds the preview's routes (call only with the embedded sandbox). */
export function addPreviewRoutes(app: Express, options: PreviewOptions): void {
  const { engine, store, logger } = options;
  const json = readBody('json', { limit: '8kb' }) as RequestHandler;

  app.get('/preview', (req, res) => {
    let token = cookieOf(req, PREVIEW_COOKIE);
    if (!token || !TOKEN.test(token)) {
      token = randomBytes(24).toString('base64url');
      res.cookie(PREVIEW_COOKIE, token, {
        httpOnly: true,
        sameSite: 'strict',
        secure: req.secure,
        path: '/preview',
        maxAge: COOKIE_SECONDS * 1000,
      });
    }
    securityHeaders(res);
    res.type('html').send(previewPage(token, options.phone ?? DEMO_PHONE));
  });
  app.get('/preview/preview.js', (_req, res) => {
    securityHeaders(res);
    res.type('js').send(PREVIEW_JS);
  });
  app.get('/preview/preview.css', (_req, res) => {
    securityHeaders(res);
    res.type('css').send(PREVIEW_CSS);
  });

  /** A request from the page itself: this site's Origin (when sent) and the cookie's token in the header. */
  const fromPage = (req: Request): boolean => {
    const origin = req.get('origin');
    if (origin !== undefined && origin !== 'null' && origin !== `${req.protocol}://${req.get('host')}`) return false;
    const token = cookieOf(req, PREVIEW_COOKIE) ?? '';
    const given = req.get('x-csrf-token') ?? '';
    return TOKEN.test(token) && given.length > 0 && sameSecret(given, token);
  };

  app.post(
    '/preview/turn',
    (req, res, next) => {
      securityHeaders(res);
      // Checked before the body is read: a request from elsewhere costs nothing.
      if (fromPage(req)) return next();
      res
        .status(403)
        .json({ detail: 'Not from the preview page of this site (no valid CSRF token): nothing was done.' });
    },
    json,
    async (req: Request, res: Response) => {
      const parsed = previewRequest.safeParse(req.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue?.path.join('.') || 'body';
        res.status(400).json({
          detail: req.body === undefined ? 'The body must be JSON.' : `${where}: ${issue?.message ?? 'invalid'}`,
        });
        return;
      }
      const { phone, lang, action } = parsed.data;
      try {
        if (action.kind === 'dial' && lang)
          await rememberProfile(store, previewParticipant(phone), { lang: lang as Lang }, logger);
        const state = await engine.turn(previewParticipant(phone), decide(action, phone, `preview:${randomUUID()}`));
        res.json(renderAll(state));
      } catch (err) {
        logger.error({ err: err instanceof Error ? err.message : String(err) }, 'preview: turn failed');
        res.status(503).json({ detail: 'The conversation store did not answer; try again.' });
      }
    },
  );
  // The body reader's refusals (too large, not JSON, not utf-8): a reason, never a 500.
  app.use('/preview', (err: unknown, _req: Request, res: Response, next: NextFunction) => {
    const refusal = bodyRefusal(err);
    if (refusal === undefined) return next(err);
    res.status(refusal.status).json({ detail: refusal.reason });
  });
}
