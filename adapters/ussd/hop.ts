/**
 * One USSD hop, whatever the gateway: decode -> one engine turn on the user's conversation, whose record
 * also keeps the USSD state (gateway session, hop, last Prompt and page), decided by the pure hop planner
 * (plan.ts): a resend or a page turn is answered from that state, a new answer (and a dial string's answers)
 * steps the flow, and the state goes back in the same compare-and-set -> render -> encode. Logs carry the gateway, the session id, the masked phone and the hop: never a body, an
 * answer or a screen (answers carry PINs).
 */
import { LRUCache } from 'lru-cache';
import type { ServerResponse } from 'node:http';
import { sendJson, type DirectRequest } from '../../src/http/direct-routes.js';
import type { Prompt, TurnEngine } from '../../src/conversation/types.js';
import { maskPhone, type Logger } from '../../src/log.js';
import { within } from '../../src/within.js';
import { parsePhone } from '../../flows/input.js';
import type { Codec, GatewayName, GatewayRequest, Hop } from './codecs/codec.js';
import { answersOfDialString } from './dial-string.js';
import type { SessionEnds } from './events.js';
import { decisionOf, planHop, type HopInput } from './plan.js';
import { renderPrompt } from './renderer.js';
import { answersDigest, type UssdState } from './session.js';

export interface HopOptions {
  engine: TurnEngine;
  /** The engine's USSD deadline; a second past it the router stops waiting and apologises. */
  deadlineMs: number;
  logger: Logger;
  defaultCountry: string;
  /** Key of the stored resend digest (session.ts). */
  digestKey: string;
  /** Told the number behind each session, and the sessions a gateway ends (events.ts): the funnel's abandonments. */
  sessionEnds?: SessionEnds;
  /** The service code (USSD_SERVICE_CODE): what a dialled string starts with before its answers (dial-string.ts). */
  serviceCode: string;
  /** How long a session that ended unfinished may be taken up by the next dial, in seconds (USSD_RESUME_SECONDS). */
  resumeSeconds: number;
  /** Gateways that send the whole input so far, joined by `*`, rather than the latest answer (USSD_WHOLE_INPUT). */
  wholeInput?: readonly GatewayName[];
  /** Clock in ms (the resume window). Default Date.now. */
  now?: () => number;
  /**
   * The process is stopping (SIGTERM): a hop is answered {@link DRAINING} at once, ending the session, and
   * nothing is stepped; the person dials again and reaches another process. Default never.
   */
  draining?: () => boolean;
}

/**
 * How long past the deadline the router still waits for the engine (which answers "processing" at the
 * deadline itself) before answering END on its own. 1 s: well inside a gateway's timeout (15 s at
 * Africa's Talking), and far more than the engine needs to persist and answer after its deadline.
 */
const GUARD_GRACE_MS = 1000;

const APOLOGY_LATE: Prompt = {
  text: 'Sorry, this is taking longer than expected. Dial again shortly to see the result.',
  final: true,
};
/** A stopping process's answer to a hop (HopOptions.draining): nothing stepped, nothing lost. */
export const DRAINING: Prompt = {
  text: 'The service is restarting. Please dial again in a moment; nothing you confirmed is lost.',
  final: true,
};
/** The engine failed (its own failures are answered by it; this one could not read the conversation): no "start again". */
const APOLOGY_FAILED: Prompt = {
  text: 'Sorry, something went wrong. Dial again in a minute to see where you are.',
  final: true,
};

/**
 * What a hop's log lines carry. Made only when a line is logged: at a level that is off, every hop would mask
 * the number for nothing.
 */
function logContext(gateway: string, sessionId: string, phone: string): LogContext {
  return { gateway, sessionId, phone: maskPhone(phone) };
}

interface LogContext {
  gateway: string;
  sessionId: string;
  /** Masked. */
  phone: string;
}

/** Gateways send international numbers without the `+` (256772123456): put it back before parsing. */
function withPlus(msisdn: string): string {
  return /^[1-9]\d{7,14}$/.test(msisdn) ? `+${msisdn}` : msisdn;
}

/**
 * Numbers gateways sent lately, as read: a session sends its caller's number on every hop, and reading one
 * (libphonenumber) is work worth doing once per number, not once per hop. Bounded: 10,000 numbers, about
 * a megabyte.
 */
const readNumbers = new LRUCache<string, { e164?: string }>({ max: 10_000 });

/** The caller's number as a gateway sends it, in the `+` form conversations are keyed by; undefined when it is not one. */
export function gatewayPhone(msisdn: string, defaultCountry: string): string | undefined {
  const key = `${defaultCountry}:${msisdn}`;
  let read = readNumbers.get(key);
  if (!read) {
    const parsed = parsePhone(withPlus(msisdn), defaultCountry);
    read = parsed.ok ? { e164: parsed.e164 } : {};
    readNumbers.set(key, read);
  }
  return read.e164;
}

export function createHopHandler(options: HopOptions) {
  const { engine, deadlineMs, logger, defaultCountry } = options;
  const digest = answersDigest(options.digestKey);
  const now = options.now ?? Date.now;
  const resumeMs = options.resumeSeconds * 1000;
  const wholeInput = new Set(options.wholeInput ?? []);

  return (codec: Codec) => async (req: DirectRequest, res: ServerResponse) => {
    const decoded = codec.decode(req.body);
    if (!decoded.ok) {
      logger.warn({ gateway: codec.name, reason: decoded.reason }, 'ussd request refused');
      sendJson(res, 400, { error: decoded.reason });
      return;
    }
    const request = decoded.request;
    const phone = gatewayPhone(request.phoneNumber, defaultCountry);
    if (phone === undefined) {
      logger.warn({ gateway: codec.name, sessionId: request.sessionId }, 'ussd request refused: phone number');
      sendJson(res, 400, { error: 'phone number is not a valid mobile number' });
      return;
    }
    options.sessionEnds?.remember(codec.name, request.sessionId, phone);
    const hop = request.hop;
    if (hop.kind !== 'end' && options.draining?.()) {
      logger.info(logContext(codec.name, request.sessionId, phone), 'ussd hop refused: the process is stopping');
      send(res, codec, request, DRAINING, 0, 0);
      return;
    }
    if (hop.kind === 'end') {
      // Nothing to release: the state stays with the conversation, and the next dial is another session.
      logger.info(logContext(codec.name, request.sessionId, phone), 'ussd session released by the gateway');
      send(res, codec, request, { text: '', final: true }, 0, 0);
      await options.sessionEnds?.ended(codec.name, request.sessionId, phone);
      return;
    }
    const at = now();
    const participant = { channel: 'ussd' as const, conversationId: phone, userId: phone };
    const input: HopInput = {
      gateway: codec.name,
      sessionId: request.sessionId,
      phone,
      hop: asHop(hop, codec.name, request),
      serviceCodes: codesOf(request),
      digest,
      now: at,
      resumeMs,
    };
    /** The delivery the turn last decided to step (a hop answered from the channel's state steps none). */
    let stepped: string | undefined;
    const outcome = await guarded(
      engine.turn<UssdState>(participant, (stored, conversation) => {
        const decision = decisionOf(planHop(stored, input, conversation));
        stepped = decision.kind === 'step' ? decision.inbound.messageId : undefined;
        return decision;
      }),
    );
    if (outcome.kind === 'late') {
      logger.warn(logContext(codec.name, request.sessionId, phone), 'ussd engine past the deadline: apologised');
      send(res, codec, request, APOLOGY_LATE, 0, 0);
      // "Dial again shortly to see the result": the next dial must have one to show, even when this turn's work
      // is stuck or dropped (a stalled Redis, a failover). A turn stuck before it decided anything has no
      // delivery id yet: one no delivery has stands for it (it left no trace).
      await engine.toldLate?.(participant, stepped ?? `${request.sessionId}:undecided`);
    } else if (outcome.kind === 'failed') {
      logger.error(
        { ...logContext(codec.name, request.sessionId, phone), err: errorName(outcome.err) },
        'ussd hop failed: apologised',
      );
      send(res, codec, request, APOLOGY_FAILED, 0, 0);
    } else {
      const state = outcome.state;
      // Every state this hop writes is stamped with its time: one stamped earlier is the last screen again.
      const repeated = state.at !== at;
      if (logger.isLevelEnabled('info'))
        logger.info(
          {
            ...logContext(codec.name, request.sessionId, phone),
            hop: state.hop,
            final: state.prompt.final,
            ...(state.walked ? { walked: state.walked } : {}),
          },
          repeated ? 'ussd repeat: same screen' : 'ussd hop',
        );
      send(res, codec, request, state.prompt, state.page, state.hop);
    }
  };

  /**
   * The hop as the session rules read it. A gateway set to send the whole input (USSD_WHOLE_INPUT) is read as
   * Africa's Talking is: every answer so far joined by `*` (a dialled string becomes its answers). A first
   * request of the others carries the dialled string, whose answers the planner hands the engine.
   */
  function asHop(
    hop: Exclude<Hop, { kind: 'end' }>,
    gateway: GatewayName,
    request: GatewayRequest,
  ): Exclude<Hop, { kind: 'end' }> {
    if (hop.kind !== 'latest' || !wholeInput.has(gateway)) return hop;
    const input = hop.input.trim();
    return {
      kind: 'cumulative',
      text: input.startsWith('*') ? answersOfDialString(input, codesOf(request)).join('*') : hop.input,
    };
  }

  /** Service codes a dialled string of this request may start with: ours, and the one the request names. */
  function codesOf(request: GatewayRequest): string[] {
    return request.serviceCode ? [options.serviceCode, request.serviceCode] : [options.serviceCode];
  }

  /** The engine's turn, never waited for much past the deadline and never throwing. */
  async function guarded(turn: Promise<UssdState>) {
    const work = turn.then(
      (state) => ({ kind: 'done' as const, state }),
      (err: unknown) => ({ kind: 'failed' as const, err }),
    );
    return (await within(work, deadlineMs + GUARD_GRACE_MS)) ?? { kind: 'late' as const };
  }
}

/** Writes the screen of `prompt` (page `page`) as the gateway wants it. A screen is never cached, so no ETag to hash. */
function send(
  res: ServerResponse,
  codec: Codec,
  request: GatewayRequest,
  prompt: Prompt,
  page: number,
  hop: number,
): void {
  const screen = renderPrompt(prompt, page);
  const reply = codec.encode({ text: screen.text, final: screen.final, hop }, request);
  const [type, body] =
    reply.type === 'text'
      ? ['text/plain; charset=utf-8', reply.body]
      : ['application/json; charset=utf-8', JSON.stringify(reply.body)];
  res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
}

/** The error's class name only: messages can quote the input. */
function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
