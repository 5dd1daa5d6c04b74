/**
 * One USSD hop, whatever the gateway: decode -> one engine turn on the user's conversation, whose record
 * also keeps the USSD state (gateway session, hop, last Prompt and page): a resend or a page turn is answered
 * from that state, a new answer steps the flow, and the state goes back in the same compare-and-set ->
 * render -> encode. Logs carry the gateway, the session id, the masked phone and the hop: never a body, an
 * answer or a screen (answers carry PINs).
 */
import { LRUCache } from 'lru-cache';
import type { ServerResponse } from 'node:http';
import { sendJson, type DirectRequest } from '../../src/http/direct-routes.js';
import type { ConversationView, Inbound, Prompt, TurnDecision, TurnEngine } from '../../src/conversation/types.js';
import { maskPhone, type Logger } from '../../src/log.js';
import { within } from '../../src/within.js';
import { parsePhone } from '../../flows/input.js';
import { render } from '../../src/conversation/flow/render.js';
import type { Codec, GatewayName, GatewayRequest, Hop } from './codecs/codec.js';
import { answersOfDialString, answersOfText } from './dial-string.js';
import type { SessionEnds } from './events.js';
import { NAV, renderPrompt } from './renderer.js';
import { answersDigest, readHop, readState, resumable, type Digest, type UssdState } from './session.js';

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
    const ctx: LogContext = { gateway: codec.name, sessionId: request.sessionId, phone: maskPhone(phone) };
    const hop = request.hop;
    if (hop.kind === 'end') {
      // Nothing to release: the state stays with the conversation, and the next dial is another session.
      logger.info(ctx, 'ussd session released by the gateway');
      send(res, codec, request, { text: '', final: true }, 0, 0);
      await options.sessionEnds?.ended(codec.name, request.sessionId, phone);
      return;
    }
    let repeated = false;
    let dialAnswers: string[] = [];
    const at = now();
    const participant = { channel: 'ussd' as const, conversationId: phone, userId: phone };
    let outcome = await guarded(
      engine.turn(participant, (stored: UssdState | undefined, conversation?: ConversationView) => {
        const decided = decideHop(stored, { codec, request, hop: asHop(hop, codec.name, request), phone, digest, now: at, resumeMs, conversation });
        repeated = decided.decision.kind === 'reply' && !decided.decision.changed;
        dialAnswers = decided.walk;
        return decided.decision;
      }),
    );
    // A dial string: each of its answers as if typed, up to the first screen that needs more (or refuses one).
    for (let k = 1; k <= dialAnswers.length && outcome.kind === 'done' && now() - at < deadlineMs; k++) {
      const answer = dialAnswers[k - 1]!;
      const next = await guarded(engine.turn(participant, (stored: UssdState | undefined) => walkStep(stored, k, answer, { codec, request, phone, now: at })));
      if (next.kind === 'done' && next.state?.walked !== k) break;
      outcome = next;
    }
    if (outcome.kind === 'late') {
      logger.warn(ctx, 'ussd engine past the deadline: apologised');
      send(res, codec, request, APOLOGY_LATE, 0, 0);
    } else if (outcome.kind === 'failed') {
      logger.error({ ...ctx, err: errorName(outcome.err) }, 'ussd hop failed: apologised');
      send(res, codec, request, APOLOGY_FAILED, 0, 0);
    } else {
      const state = outcome.state;
      logger.info({ ...ctx, hop: state.hop, final: state.prompt.final, ...(state.walked ? { walked: state.walked } : {}) }, repeated ? 'ussd repeat: same screen' : 'ussd hop');
      send(res, codec, request, state.prompt, state.page, state.hop);
    }
  };

  /**
   * The hop as the session rules read it. A gateway set to send the whole input (USSD_WHOLE_INPUT) is read as
   * Africa's Talking is: every answer so far joined by `*` (a dialled string becomes its answers). A first
   * request of the others carries the dialled string, whose answers hop.ts walks.
   */
  function asHop(hop: Exclude<Hop, { kind: 'end' }>, gateway: GatewayName, request: GatewayRequest): Exclude<Hop, { kind: 'end' }> {
    if (hop.kind !== 'latest' || !wholeInput.has(gateway)) return hop;
    const input = hop.input.trim();
    return { kind: 'cumulative', text: input.startsWith('*') ? answersOfDialString(input, codesOf(request)).join('*') : hop.input };
  }

  /** Service codes a dialled string of this request may start with: ours, and the one the request names. */
  function codesOf(request: GatewayRequest): string[] {
    return request.serviceCode ? [options.serviceCode, request.serviceCode] : [options.serviceCode];
  }

  /** What this request means given the state stored with the conversation; with the answers its dial string carries. */
  function decideHop(stored: UssdState | undefined, c: HopContext): { decision: TurnDecision<UssdState>; walk: string[] } {
    const { codec, request, hop, phone } = c;
    const read = readHop(stored, codec.name, request.sessionId, hop, c.digest);
    if (read.kind === 'repeat') return { decision: { kind: 'reply', state: read.state, changed: false }, walk: [] };
    const number = read.kind === 'answer' ? read.hop : 0;
    const shown: Shown = { gateway: codec.name, sessionId: request.sessionId, hop: number, seenLength: read.seen.length, seenDigest: c.digest(read.seen), at: c.now };
    const inbound: Inbound = { channel: 'ussd', conversationId: phone, userId: phone, phoneNumber: phone, messageId: `${request.sessionId}:${number}` };
    if (read.kind === 'dial') {
      const walk = hop.kind === 'cumulative' ? answersOfText(hop.text) : answersOfDialString(hop.input, codesOf(request));
      // A plain dial after a session dropped mid-flow asks whether to take it up; a dial string says what it
      // wants. Not a flow whose service call is out or made (its outcome shows at the dial), ended or expired.
      const saved = walk.length === 0 && c.conversation?.waiting !== false ? resumable(stored, c.now, c.resumeMs) : undefined;
      if (saved) return { decision: { kind: 'reply', state: show(shown, resumeQuestion(saved.prompt), 0, saved), changed: true }, walk: [] };
      return { decision: stepWith(shown, inbound, { newSession: true }), walk };
    }
    const { state } = read;
    const key = read.answer.trim();
    if (state.resume) {
      // 1: the flow where it is (its PIN asked again, its outcome if a call was made); 2 or 00: the menu.
      if (key === '1') return { decision: stepWith(shown, inbound, { resume: true }), walk: [] };
      if (key === '2' || key === NAV.home) return { decision: stepWith(shown, inbound, { newSession: true }), walk: [] };
      return { decision: { kind: 'reply', state: show(shown, state.prompt, 0, state.resume), changed: true }, walk: [] };
    }
    const paged = pageTurn(key, state, (page) => show(shown, state.prompt, page));
    if (paged) return { decision: paged, walk: [] };
    return { decision: stepWith(shown, inbound, toAction(read.answer, state.prompt)), walk: [] };
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

interface HopContext {
  codec: Codec;
  request: GatewayRequest;
  hop: Exclude<Hop, { kind: 'end' }>;
  phone: string;
  digest: Digest;
  /** The time of the request, ms. */
  now: number;
  resumeMs: number;
  /** What the engine tells of the conversation (absent with engines that keep no flows). */
  conversation?: ConversationView;
}

/** What a hop's new state holds besides its screen: the gateway session, the hop and the text answered so far. */
type Shown = Omit<UssdState, 'prompt' | 'page' | 'resume' | 'walked'>;

/** The state of a hop showing `prompt` (page `page`). */
function show(shown: Shown, prompt: Prompt, page: number, resume?: UssdState['resume']): UssdState {
  const { gateway, sessionId, hop, seenLength, seenDigest, at } = shown;
  const state: UssdState = { gateway, sessionId, hop, seenLength, seenDigest, prompt, page, at };
  if (resume) state.resume = resume;
  return state;
}

/** A message for the flow; its answer is shown from its first page. */
function stepWith(shown: Shown, inbound: Inbound, extra: Partial<Inbound>): TurnDecision<UssdState> {
  return { kind: 'step', inbound: { ...inbound, ...extra }, after: showFirstPage(shown) };
}

function showFirstPage(shown: Shown): (prompt: Prompt) => UssdState {
  return (prompt) => show(shown, prompt, 0);
}

/** Writes the screen of `prompt` (page `page`) as the gateway wants it. A screen is never cached, so no ETag to hash. */
function send(res: ServerResponse, codec: Codec, request: GatewayRequest, prompt: Prompt, page: number, hop: number): void {
  const screen = renderPrompt(prompt, page);
  const reply = codec.encode({ text: screen.text, final: screen.final, hop }, request);
  const [type, body] = reply.type === 'text' ? ['text/plain; charset=utf-8', reply.body] : ['application/json; charset=utf-8', JSON.stringify(reply.body)];
  res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
}

/**
 * Answer `k` of the dial string (`answer`), taken on the state the dial (or answer k-1) left: as if typed,
 * unless that screen ends the session, asks for a PIN or a confirmation (those are typed in the session), or
 * refused the answer before (its re-prompt stays). The gateway's hop number stays (its next request follows
 * the dial); the state counts the answers walked.
 */
function walkStep(stored: UssdState | undefined, k: number, answer: string, c: Pick<HopContext, 'codec' | 'request' | 'phone' | 'now'>): TurnDecision<UssdState> {
  const state = readState(stored);
  // No state of this dial any more (the record was lost): the walk stops on what the dial answered.
  if (state === null) return { kind: 'reply', state: stored as UssdState, changed: false };
  const ours = state.gateway === c.codec.name && state.sessionId === c.request.sessionId && (state.walked ?? 0) === k - 1;
  if (!ours || stopsWalk(state.prompt)) return { kind: 'reply', state, changed: false };
  const show = (prompt: Prompt, page: number): UssdState => ({ ...state, prompt, page, at: c.now, walked: k });
  const paged = pageTurn(answer.trim(), state, (page) => show(state.prompt, page));
  if (paged) return paged;
  const inbound: Inbound = { channel: 'ussd', conversationId: c.phone, userId: c.phone, phoneNumber: c.phone, messageId: `${c.request.sessionId}:0.${k}` };
  return { kind: 'step', inbound: { ...inbound, ...toAction(answer, state.prompt) }, after: (prompt) => show(prompt, 0) };
}

/**
 * A screen a dial string never answers: the end, a PIN, a confirmation, one that refused the last answer, or
 * one opening with outcomes kept for this dial (they are read before anything else is answered).
 */
function stopsWalk(prompt: Prompt): boolean {
  return prompt.final || prompt.input === 'pin' || prompt.refused === true || prompt.noted === true || (prompt.choices ?? []).some((c) => c.id === 'confirm');
}

/** `98` / `0` on a paged list: the next or previous page of the screen, the flow untouched. */
function pageTurn(key: string, state: UssdState, show: (page: number) => UssdState): TurnDecision<UssdState> | undefined {
  if (key !== NAV.more && key !== NAV.back) return undefined;
  const shown = renderPrompt(state.prompt, state.page);
  if (key === NAV.more && shown.page < shown.pageCount - 1) return { kind: 'reply', state: show(shown.page + 1), changed: true };
  if (key === NAV.back && shown.page > 0) return { kind: 'reply', state: show(shown.page - 1), changed: true };
  return undefined;
}

/** "Continue where you left off?" in the language of the screen left. */
function resumeQuestion(left: Prompt): Prompt {
  const lang = left.lang ?? 'en';
  return {
    text: render({ key: 'common.resume' }, lang),
    choices: [
      { id: 'continue', label: render({ key: 'common.resumeContinue' }, lang) },
      { id: 'restart', label: render({ key: 'common.resumeRestart' }, lang) },
    ],
    ...(left.lang ? { lang: left.lang } : {}),
    final: false,
  };
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
