/**
 * Where a USSD session died, for the funnel: a gateway saying a session is over marks the step its flow was
 * waiting at as abandoned (TurnEngine.sessionEnded, which tells EngineOptions.onTransition).
 *
 * - Africa's Talking's end-of-session report, `POST /ussd/africastalking/events`: form fields `date,
 *   sessionId, serviceCode, networkCode, phoneNumber, status, cost, durationInMillis, hopsCount, hopsMetadata,
 *   input, lastAppResponse, errorMessage`, `status` one of `Success` (the session ended on our END screen),
 *   `Incomplete` (the user or the network ended it while we waited for an answer) or `Failed`. Only an
 *   `Incomplete` or `Failed` session counts; each field is parsed and bounded and the report is recorded in
 *   the log (`sessionId, status, durationInMillis, hopsCount, errorMessage`, and of `input` (every answer,
 *   the PIN among them) and `lastAppResponse` only their size: never their words). Answered 200 `{ recorded, reason }`
 *   when the report is well formed (so the gateway does not send it again), 400 with the reason otherwise.
 * - A gateway's release or timeout hop (Hubtel's `release` and `timeout`): hop.ts calls {@link SessionEnds.ended}.
 *
 * The conversation is keyed by the phone number: the report's `phoneNumber`, or, when a report lacks it, the
 * number this process saw on the session's hops (kept in memory for a while, {@link SESSION_MEMORY_MS}).
 * A report counts only when the conversation's USSD state is that very gateway session and its last screen
 * asked for an answer: a forged or stale report about another session changes nothing.
 *
 * Who may call it: the gateway, as its USSD callback (the same protection: the route is added like the
 * gateway's own, see index.ts). Nothing it does moves money or changes a conversation; at worst a forged report
 * about a live session (its id known) counts one abandonment that did not happen.
 */
import type { ServerResponse } from 'node:http';
import { sendJson, type DirectRequest } from '../../src/http/direct-routes.js';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import type { SessionEnd, TurnEngine } from '../../src/conversation/types.js';
import { maskPhone, type Logger } from '../../src/log.js';
import type { GatewayName } from './codecs/codec.js';
import type { UssdState } from './session.js';

/** How long the number of a session seen here is kept for a report that lacks it: a USSD session lasts 3 minutes at most. */
export const SESSION_MEMORY_MS = 10 * 60_000;

/** A bounded text field; numbers are accepted as text. */
const bounded = (max: number) => z.union([z.string(), z.number()]).transform(String).pipe(z.string().max(max));
const count = z
  .union([z.string(), z.number()])
  .transform(String)
  .pipe(
    z
      .string()
      .trim()
      .regex(/^\d{1,10}$/, 'a whole number'),
  )
  .transform(Number);

const report = z.object({
  sessionId: bounded(128).pipe(z.string().trim().min(1, 'required')),
  status: z.enum(['Success', 'Incomplete', 'Failed'], { message: 'one of Success, Incomplete, Failed' }),
  phoneNumber: bounded(32).optional(),
  durationInMillis: count.optional(),
  hopsCount: count.optional(),
  input: bounded(4096).optional(),
  lastAppResponse: bounded(4096).optional(),
  errorMessage: bounded(1024).optional(),
  date: bounded(64).optional(),
  serviceCode: bounded(64).optional(),
  networkCode: bounded(32).optional(),
  cost: bounded(64).optional(),
  hopsMetadata: bounded(4096).optional(),
});

export interface SessionEnds {
  /** Notes the number behind a gateway session (every hop), for reports that lack it. */
  remember(gateway: GatewayName, sessionId: string, phone: string): void;
  /** A gateway session is over: its flow's run is counted abandoned where it waited. Never throws. */
  ended(gateway: GatewayName, sessionId: string, phone: string | undefined): Promise<SessionEnd>;
}

export interface SessionEndsOptions {
  engine: TurnEngine;
  logger: Logger;
}

export function createSessionEnds({ engine, logger }: SessionEndsOptions): SessionEnds {
  // The clock read at each use, not kept a millisecond by a timer each millisecond (record-cache.ts says why).
  const numbers = new LRUCache<string, string>({ max: 50_000, ttl: SESSION_MEMORY_MS, ttlResolution: 0 });
  // What expired is dropped by one timer a minute, not a timer per session (lru-cache's ttlAutopurge resets one
  // on every hop's set).
  setInterval(() => numbers.purgeStale(), 60_000).unref();
  return {
    remember(gateway, sessionId, phone) {
      // Once a session: its number does not change from hop to hop.
      const key = `${gateway}:${sessionId}`;
      if (numbers.get(key) !== phone) numbers.set(key, phone);
    },
    async ended(gateway, sessionId, phone) {
      const number = phone ?? numbers.get(`${gateway}:${sessionId}`);
      if (!number) return { counted: false, reason: 'no conversation is known for this session' };
      if (!engine.sessionEnded) return { counted: false, reason: 'this engine counts no steps' };
      const isCurrent = (state: UssdState | undefined) =>
        state?.gateway === gateway && state.sessionId === sessionId && !state.prompt.final;
      try {
        return await engine.sessionEnded({ channel: 'ussd', conversationId: number, userId: number }, isCurrent);
      } catch (err) {
        logger.warn(
          { gateway, sessionId, err: err instanceof Error ? err.message : String(err) },
          'ussd session end not counted',
        );
        return { counted: false, reason: 'the conversation could not be read' };
      }
    },
  };
}

/**
 * The handler of `POST /ussd/africastalking/events` (after the form body parser). `toPhone` reads the number
 * as the hops do (hop.ts): the same conversation key.
 */
export function africasTalkingEvents(
  ends: SessionEnds,
  toPhone: (msisdn: string) => string | undefined,
  logger: Logger,
) {
  return async (req: DirectRequest, res: ServerResponse): Promise<void> => {
    const parsed = report.safeParse(req.body ?? {});
    if (!parsed.success) {
      // Field names and problems only: values can hold answers (the PIN).
      const reason = parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
      logger.warn({ gateway: 'africastalking', reason }, 'ussd session report refused');
      sendJson(res, 400, { error: reason });
      return;
    }
    const { sessionId, status, phoneNumber, hopsCount, durationInMillis, errorMessage, input, lastAppResponse } =
      parsed.data;
    const phone = phoneNumber === undefined || phoneNumber.trim() === '' ? undefined : toPhone(phoneNumber);
    if (phoneNumber !== undefined && phoneNumber.trim() !== '' && phone === undefined) {
      sendJson(res, 400, { error: 'phoneNumber: not a valid mobile number' });
      return;
    }
    const outcome: SessionEnd =
      status === 'Success'
        ? { counted: false, reason: 'the session ended on our END screen' }
        : await ends.ended('africastalking', sessionId, phone);
    logger.info(
      {
        gateway: 'africastalking',
        sessionId,
        phone: phone ? maskPhone(phone) : undefined,
        status,
        hopsCount,
        durationInMillis,
        // The answers carry the PIN and the last screen the user's details: recorded by their size only.
        input: input === undefined ? undefined : { answers: input === '' ? 0 : input.split('*').length },
        lastAppResponse:
          lastAppResponse === undefined
            ? undefined
            : { chars: lastAppResponse.length, final: /^END\b/.test(lastAppResponse) },
        // The gateway's own words about a failure, cut short and on one line.
        errorMessage: errorMessage ? errorMessage.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 200) : undefined,
        recorded: outcome.counted,
      },
      'ussd session report',
    );
    sendJson(res, 200, outcome.counted ? { recorded: true } : { recorded: false, reason: outcome.reason });
  };
}
