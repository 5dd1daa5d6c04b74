/**
 * One USSD hop, whatever the gateway: decode -> one engine turn on the user's conversation, whose record
 * also keeps the USSD state (gateway session, hop, last Prompt and page): a resend or a page turn is answered
 * from that state, a new answer steps the flow, and the state goes back in the same compare-and-set ->
 * render -> encode. Logs carry the gateway, the session id, the masked phone and the hop: never a body, an
 * answer or a screen (answers carry PINs).
 */
import type { Request, Response } from 'express';
import type { Inbound, Prompt, TurnDecision, TurnEngine } from '../../src/conversation/types.js';
import { maskPhone, type Logger } from '../../src/log.js';
import { parsePhone } from '../../flows/input.js';
import type { Codec, GatewayRequest, Hop } from './codecs/codec.js';
import type { SessionEnds } from './events.js';
import { NAV, renderPrompt } from './renderer.js';
import { answersDigest, nextStep, type Digest, type UssdState } from './session.js';

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
/** The engine failed (its own failures are answered by it; this one could not read the conversation): no "start again". */
const APOLOGY_FAILED: Prompt = { text: 'Sorry, something went wrong. Dial again in a minute to see where you are.', final: true };

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

/** The caller's number as a gateway sends it, in the `+` form conversations are keyed by; undefined when it is not one. */
export function gatewayPhone(msisdn: string, defaultCountry: string): string | undefined {
  const parsed = parsePhone(withPlus(msisdn), defaultCountry);
  return parsed.ok ? parsed.e164 : undefined;
}

export function createHopHandler(options: HopOptions) {
  const { engine, deadlineMs, logger, defaultCountry } = options;
  const digest = answersDigest(options.digestKey);

  return (codec: Codec) => async (req: Request, res: Response) => {
    const decoded = codec.decode(req.body);
    if (!decoded.ok) {
      logger.warn({ gateway: codec.name, reason: decoded.reason }, 'ussd request refused');
      res.status(400).json({ error: decoded.reason });
      return;
    }
    const request = decoded.request;
    const phone = gatewayPhone(request.phoneNumber, defaultCountry);
    if (phone === undefined) {
      logger.warn({ gateway: codec.name, sessionId: request.sessionId }, 'ussd request refused: phone number');
      res.status(400).json({ error: 'phone number is not a valid mobile number' });
      return;
    }
    options.sessionEnds?.remember(codec.name, request.sessionId, phone);
    const ctx: LogContext = { gateway: codec.name, sessionId: request.sessionId, phone: maskPhone(phone) };
    const send = (prompt: Prompt, page: number, hop: number) => {
      const screen = renderPrompt(prompt, page);
      const reply = codec.encode({ text: screen.text, final: screen.final, hop }, request);
      // Written directly rather than with res.send: a screen is never cached, so no ETag to hash.
      const [type, body] = reply.type === 'text' ? ['text/plain; charset=utf-8', reply.body] : ['application/json; charset=utf-8', JSON.stringify(reply.body)];
      res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
    };

    const hop = request.hop;
    if (hop.kind === 'end') {
      // Nothing to release: the state stays with the conversation, and the next dial is another session.
      logger.info(ctx, 'ussd session released by the gateway');
      send({ text: '', final: true }, 0, 0);
      await options.sessionEnds?.ended(codec.name, request.sessionId, phone);
      return;
    }
    let repeated = false;
    const decide = (stored: UssdState | undefined) => {
      const decision = decideHop(stored, codec, request, hop, phone, digest);
      repeated = decision.kind === 'reply' && !decision.changed;
      return decision;
    };
    const outcome = await guarded(engine.turn({ channel: 'ussd', conversationId: phone, userId: phone }, decide));
    if (outcome.kind === 'late') {
      logger.warn(ctx, 'ussd engine past the deadline: apologised');
      send(APOLOGY_LATE, 0, 0);
    } else if (outcome.kind === 'failed') {
      logger.error({ ...ctx, err: errorName(outcome.err) }, 'ussd hop failed: apologised');
      send(APOLOGY_FAILED, 0, 0);
    } else {
      const state = outcome.state;
      logger.info({ ...ctx, hop: state.hop, final: state.prompt.final }, repeated ? 'ussd repeat: same screen' : 'ussd hop');
      send(state.prompt, state.page, state.hop);
    }
  };

  /** The engine's turn, never waited for much past the deadline and never throwing. */
  async function guarded(turn: Promise<UssdState>) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<{ kind: 'late' }>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'late' }), deadlineMs + GUARD_GRACE_MS);
    });
    const work = turn.then(
      (state) => ({ kind: 'done' as const, state }),
      (err: unknown) => ({ kind: 'failed' as const, err }),
    );
    const outcome = await Promise.race([work, late]);
    clearTimeout(timer);
    return outcome;
  }
}

/**
 * What this request means given the state stored with the conversation: the last screen again (a resend),
 * another page of the last Prompt, or a message for the flow (the dial, an answer).
 */
function decideHop(
  stored: UssdState | undefined,
  codec: Codec,
  request: GatewayRequest,
  hop: Exclude<Hop, { kind: 'end' }>,
  phone: string,
  digest: Digest,
): TurnDecision<UssdState> {
  const step = nextStep(stored, codec.name, request.sessionId, hop, digest);
  if (step.kind === 'repeat') return { kind: 'reply', state: step.state, changed: false };
  const number = step.kind === 'answer' ? step.hop : 0;
  const seenDigest = digest(step.seen);
  const show = (prompt: Prompt, page: number): UssdState => ({
    gateway: codec.name,
    sessionId: request.sessionId,
    hop: number,
    seenLength: step.seen.length,
    seenDigest,
    prompt,
    page,
  });
  const inbound: Inbound = { channel: 'ussd', conversationId: phone, userId: phone, phoneNumber: phone, messageId: `${request.sessionId}:${number}` };
  if (step.kind === 'dial') return { kind: 'step', inbound: { ...inbound, newSession: true }, after: (prompt) => show(prompt, 0) };
  const { state } = step;
  const key = step.answer.trim();
  if (key === NAV.more || key === NAV.back) {
    const shown = renderPrompt(state.prompt, state.page);
    if (key === NAV.more && shown.page < shown.pageCount - 1) return { kind: 'reply', state: show(state.prompt, shown.page + 1), changed: true };
    if (key === NAV.back && shown.page > 0) return { kind: 'reply', state: show(state.prompt, shown.page - 1), changed: true };
  }
  return { kind: 'step', inbound: { ...inbound, ...toAction(step.answer, state.prompt) }, after: (prompt) => show(prompt, 0) };
}

/** An answer -> what it means: `00` home, `0` back, a shown choice's number, or text. */
function toAction(answer: string, prompt: Prompt): Pick<Inbound, 'nav' | 'choice' | 'text'> {
  const key = answer.trim();
  if (key === NAV.home) return { nav: 'home' };
  if (key === NAV.back) return { nav: 'back' };
  if (/^\d{1,2}$/.test(key)) {
    const choice = prompt.choices?.[Number(key) - 1];
    if (choice) return { choice: choice.id };
  }
  return { text: answer };
}

/** The error's class name only: messages can quote the input. */
function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
