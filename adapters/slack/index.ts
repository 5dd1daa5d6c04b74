/**
 * The Slack channel: a Bolt app for the `/momo` slash command, its buttons, its answer modal and direct
 * messages to the app, plus the notifier.
 *
 * HTTP mode (no appToken): `router` serves `POST /slack/events` (commands, interactivity and events all go
 * to that one Request URL). Bolt reads the raw body itself to check the signature, so the router must be
 * mounted where no body parser has run: give parsers to the routes that need them, never app-wide.
 * Socket Mode (appToken set): the router is empty and start() connects.
 * manifest.json beside this file creates the Slack app (command, scopes, interactivity, DM events); replace
 * YOUR-PUBLIC-HOST, or set socket_mode_enabled and SLACK_APP_TOKEN instead.
 *
 * Timing: a command is acknowledged with the prompt itself (the engine answers within its chat deadline,
 * under Slack's 3 s); should it not, the ack says "working on it" and the prompt follows through the
 * command's response_url. Buttons and modal submissions are acknowledged at once and their prompt replaces
 * the message through the response_url (see reply.ts for the 5-uses budget and the direct-message fallback).
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { App, ExpressReceiver, type BlockAction, type ViewSubmitAction, type webApi } from '@slack/bolt';
import type { Logger } from '../../src/log.js';
import { keys } from '../../src/store/keys.js';
import type { Address, Engine, Inbound, Notifier, Prompt } from '../../src/conversation/types.js';
import type { Store } from '../../src/store/types.js';
import { conversationIdOf, userIdOf } from './address.js';
import {
  ANSWER_ACTION,
  ANSWER_BLOCK,
  ANSWER_ELEMENT,
  ANSWER_VIEW,
  readButton,
  answerModal,
  isInputKind,
  promptMessage,
  readAnswerMetadata,
  textMessage,
  type SlackMessage,
} from './blocks.js';
import type { ApprovalDesk } from '../../src/approvals/desk.js';
import { registerApprovals } from './approvals.js';
import type { Payouts } from '../../src/payouts/payouts.js';
import { registerPayouts } from './payout.js';
import { boltLogger } from './bolt-logger.js';
import { parseCommandText } from './command.js';
import { createSlackNotifier } from './notifier.js';
import { createReplier } from './reply.js';
import { within } from '../../src/within.js';

/** The one Request URL of the Slack app (slash command, interactivity and event subscriptions). */
export const SLACK_EVENTS_PATH = '/slack/events';

export interface SlackOptions {
  /** Checks every HTTP request (HMAC-SHA256 of `v0:ts:body`, at most 5 minutes old). */
  signingSecret: string;
  /** Bot token (xoxb-) for the Web API: views.open, chat.postMessage. Verified with auth.test by start(). */
  botToken: string;
  /** App-level token (xapp-): Socket Mode instead of HTTP. Default unset: HTTP through `router`. */
  appToken?: string;
  /** Web API base, e.g. a test server. Default https://slack.com/api/. */
  apiUrl?: string;
  engine: Engine;
  store: Store;
  logger: Logger;
  /**
   * Longest wait for the engine before a command is acknowledged with "working on it". Default 2800 ms:
   * Slack shows an error past 3 s and the engine's own chat deadline (2500 ms) answers before this.
   */
  ackTimeoutMs?: number;
  /**
   * Retries of Web API calls (p-retry options; 429 waits Retry-After first). Default 3 retries, 1 s then
   * doubling: enough for a rate limit or a blip, short enough that a failing notification is handed back
   * to the notification queue (which has its own retries) within seconds.
   */
  retryConfig?: webApi.RetryOptions;
  /**
   * Maker/checker (src/approvals): held payments are posted to `channel` (SLACK_APPROVALS_CHANNEL) and decided
   * there with Approve / Reject. Default unset: no board, so a payment that needs approval is refused.
   */
  approvals?: { desk: ApprovalDesk; channel: string };
  /**
   * Bulk payouts (`/momo payout`), in the currencies Payouts.currenciesOf offers the maker. Default unset:
   * `/momo payout` is an answer like any text.
   */
  payouts?: { payouts: Payouts };
}

export interface Slack {
  /** Serves POST /slack/events in HTTP mode; empty in Socket Mode. Mount at the root of the express app. */
  router: express.Router;
  /** Direct message to the user of a `slack` address. */
  notifier: Notifier;
  /**
   * The engine's answer to a message it first answered "processing" (EngineOptions.onLateOutcome): a direct
   * message with its buttons. They carry their own meaning (a choice's id, a nav, the input asked for), read
   * by the engine against the conversation as it is, so nothing records which message shows the prompt.
   */
  showLate(address: Address, prompt: Prompt): Promise<void>;
  /** Verifies the bot token (auth.test); in Socket Mode also connects. Call before serving requests. */
  start(): Promise<void>;
  /** Disconnects Socket Mode; nothing to do in HTTP mode (the product's server owns the port). */
  stop(): Promise<void>;
}

/** Largest body read before the signature is checked. Slack's payloads (a whole message or view) stay far below. */
const BODY_LIMIT = '1mb';
const WORKING = 'Working on it… the answer will appear here.';
const MALFORMED = 'This request is missing its team, user or trigger id, so it was not processed.';
const NO_PAYOUT_CURRENCY =
  "No currency is offered to you for a payout: your country's currencies that the organization allows, in which your role has limits. Ask the operator.";
/**
 * Said when the engine itself failed (it answers every failure of its own, "being confirmed" after a
 * money-moving call, so this is a bug): it cannot know what was confirmed, so it never says to start again.
 */
const SORRY =
  'Sorry, something went wrong. If you confirmed something, do not send it again: you will get a message with the result. Type /momo to continue.';
const EVENT_DEDUP_SECONDS = 60 * 60;

/** Bolt answers rejected requests with an empty body; say why. */
const REJECTION_REASONS: Record<number, string> = {
  400: 'Unreadable Slack request body',
  401: 'Invalid or expired Slack request signature',
  413: 'Slack request body too large',
};

function explainRejections(_req: Request, res: Response, next: NextFunction): void {
  const send = res.send.bind(res);
  res.send = ((body?: unknown) => {
    const reason = body === undefined ? REJECTION_REASONS[res.statusCode] : undefined;
    if (reason) res.type('text/plain');
    return send(reason ?? body);
  }) as Response['send'];
  next();
}

/**
 * Bolt reads a body as a form only when Content-Type is exactly `application/x-www-form-urlencoded`, as
 * Slack sends it; clients that add `; charset=utf-8` (fetch does) would get a 400. The signature covers
 * the body, not the headers, so the type is normalised here.
 */
function normaliseFormType(req: Request, _res: Response, next: NextFunction): void {
  if (req.headers['content-type']?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    req.headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  next();
}

interface Actor {
  team: { id: string } | null;
  user: { id: string; team_id?: string };
}

export function createSlack(options: SlackOptions): Slack {
  const { engine, store, logger } = options;
  const ackTimeoutMs = options.ackTimeoutMs ?? 2800;
  const router = express.Router();
  const log = boltLogger(logger);
  const socketMode = options.appToken !== undefined;

  // Until start() has verified the token Bolt cannot authorize a request: 503, which Slack retries.
  let started = false;
  const whenStarted = (_req: Request, res: Response, next: NextFunction) => {
    if (started) next();
    else res.status(503).type('text/plain').send('Slack adapter is starting');
  };
  if (!socketMode) router.use(SLACK_EVENTS_PATH, whenStarted, explainRejections, normaliseFormType);
  const app = new App({
    token: options.botToken,
    ...(socketMode
      ? { appToken: options.appToken, socketMode: true }
      : {
          receiver: new ExpressReceiver({
            signingSecret: options.signingSecret,
            router,
            endpoints: SLACK_EVENTS_PATH,
            bodyLimit: BODY_LIMIT,
            logger: log,
            // Bolt answers these with an empty 500 or 404. A signed request that fails before any listener
            // acknowledged it is one Bolt could not read (JSON `null`, an event or user that is no object, a
            // team id such as `valueOf` that breaks Bolt's client pool): 400 with a reason, logged as an error.
            processEventErrorHandler: async ({ error, response }) => {
              if (response.headersSent) return false;
              logger.error(
                { err: error instanceof Error ? error.name : typeof error },
                'slack: request could not be processed',
              );
              response.writeHead(400, { 'content-type': 'text/plain' });
              response.end('Slack request could not be processed');
              return false;
            },
            unhandledRequestHandler: ({ response }) => {
              if (response.headersSent) return;
              response.writeHead(404, { 'content-type': 'text/plain' });
              response.end('No handler for this kind of Slack request');
            },
          }),
        }),
    clientOptions: {
      ...(options.apiUrl ? { slackApiUrl: options.apiUrl } : {}),
      retryConfig: options.retryConfig ?? { retries: 3, minTimeout: 1000, factor: 2 },
      timeout: 10_000,
    },
    logger: log,
    convoStore: false,
    deferInitialization: true,
  });
  const replier = createReplier({ client: app.client, store, logger });

  /** The engine's prompt as a message; a failure becomes an apology (and a log line), never silence. */
  const answer = (inbound: Inbound): Promise<SlackMessage> =>
    engine.handle(inbound).then(promptMessage, (err: unknown) => {
      logger.error({ userId: inbound.userId, err: String(err) }, 'slack: engine failed');
      return textMessage(SORRY);
    });

  /** The Inbound of a request, or null (logged) when Slack's ids are missing: a malformed request does nothing. */
  const inboundFrom = (
    teamId: string | undefined,
    userId: string | undefined,
    messageId: string | undefined,
  ): Inbound | null => {
    if (!teamId || !userId || !messageId) {
      logger.warn({ teamId, userId, messageId }, 'slack: request without team, user or delivery id ignored');
      return null;
    }
    return { channel: 'slack', conversationId: conversationIdOf(teamId, userId), userId, messageId };
  };

  const actorInbound = (body: Actor & { trigger_id: string }): Inbound | null =>
    inboundFrom(body.team?.id ?? body.user?.team_id, body.user?.id, body.trigger_id);

  // The app registers one slash command (manifest.json: /momo); whatever a workspace renamed it to, it is this one.
  app.command(/.*/, async ({ command, ack }) => {
    const inbound = inboundFrom(command.team_id, command.user_id, command.trigger_id);
    if (!inbound) {
      await ack({ response_type: 'ephemeral', ...textMessage(MALFORMED) });
      return;
    }
    if (openPayout && command.text.trim().toLowerCase() === 'payout') {
      if (options.payouts!.payouts.currenciesOf({ channel: 'slack', userId: inbound.userId }).length === 0) {
        await ack({ response_type: 'ephemeral', ...textMessage(NO_PAYOUT_CURRENCY) });
        return;
      }
      await ack();
      await openPayout(command.trigger_id, command.channel_id, inbound.userId);
      return;
    }
    const pending = answer({ ...inbound, ...parseCommandText(command.text) });
    const first = await within(pending, ackTimeoutMs);
    if (first) {
      await ack({ response_type: 'ephemeral', ...first });
      return;
    }
    await ack({ response_type: 'ephemeral', ...textMessage(WORKING) });
    await replier.reply(
      { userId: command.user_id, responseUrl: command.response_url, replaceOriginal: false },
      await pending,
    );
  });

  if (options.approvals) options.approvals.desk.attach(registerApprovals(app, { ...options.approvals, logger }));
  const openPayout = options.payouts
    ? registerPayouts(app, {
        ...options.payouts,
        botToken: options.botToken,
        apiUrl: options.apiUrl ?? 'https://slack.com/api/',
        logger,
      })
    : undefined;

  // Every click is acknowledged at once: "Answer" opens the modal, a choice or nav goes to the engine, and
  // anything else (a button of an older version of the app) is acknowledged and left alone. The approvals
  // board's buttons (approvals.ts) and the payout message's (payout.ts) have their own listeners.
  app.action<BlockAction>(
    { type: 'block_actions', action_id: /^(?!momo_approval_|momo_payout_)/ },
    async ({ ack, body, action, client }) => {
      await ack();
      if (action.type !== 'button') return;
      if (action.action_id === ANSWER_ACTION) {
        const kind = action.value && isInputKind(action.value) ? action.value : 'text';
        await client.views.open({
          trigger_id: body.trigger_id,
          view: answerModal(kind, { responseUrl: body.response_url }),
        });
        return;
      }
      const inbound = actorInbound(body);
      const meaning = readButton(action.action_id, action.value);
      if (!inbound || !meaning) return;
      const message = await answer({ ...inbound, ...meaning });
      await replier.reply({ userId: inbound.userId, responseUrl: body.response_url, replaceOriginal: true }, message);
    },
  );

  app.view<ViewSubmitAction>(ANSWER_VIEW, async ({ ack, body, view }) => {
    const typed: unknown = view.state?.values?.[ANSWER_BLOCK]?.[ANSWER_ELEMENT]?.value;
    const text = typeof typed === 'string' ? typed.trim() : undefined;
    if (!text) {
      await ack({ response_action: 'errors', errors: { [ANSWER_BLOCK]: 'Please type an answer.' } });
      return;
    }
    await ack();
    const inbound = actorInbound(body);
    if (!inbound) return;
    const message = await answer({ ...inbound, text });
    const responseUrl = readAnswerMetadata(view.private_metadata)?.responseUrl;
    await replier.reply({ userId: inbound.userId, responseUrl, replaceOriginal: true }, message);
  });

  // Typing in the app's DM works like `/momo <text>`. Events are the one thing Slack retries
  // (X-Slack-Retry-Num); Bolt acknowledges them at once and the event_id is claimed so a retry does nothing.
  app.event('message', async ({ event, body, context }) => {
    if (event.channel_type !== 'im' || event.subtype !== undefined || 'bot_id' in event) return;
    const inbound = inboundFrom(body.team_id, event.user, body.event_id);
    if (!inbound) return;
    if (!(await store.claim(keys.slackEvent(body.event_id), EVENT_DEDUP_SECONDS))) {
      logger.info({ eventId: body.event_id, retryNum: context.retryNum }, 'slack: duplicate delivery dropped');
      return;
    }
    const message = await answer({ ...inbound, ...parseCommandText(event.text) });
    await replier.direct(inbound.userId, message);
  });

  return {
    router,
    notifier: createSlackNotifier(replier),
    showLate: (address, prompt) => replier.direct(userIdOf(address.conversationId), promptMessage(prompt)),
    async start() {
      await app.init();
      started = true;
      if (socketMode) await app.start();
    },
    async stop() {
      if (socketMode) await app.stop();
    },
  };
}
