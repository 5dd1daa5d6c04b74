/**
 * The USSD hop planner: what one gateway request means, decided from the USSD state kept with the conversation
 * alone (pure: no I/O, no clock of its own, nothing kept between calls). The engine calls it inside its turn,
 * again whenever the record changed under it, so everything the hop needs afterwards is in the plan:
 * - `repeat`: a resend, a stale request, or a request after the END: the last screen again, nothing written;
 * - `page`: `98` / `0` on a paged screen: another page of it (without the error line of an answer refused
 *   before: `0` from a later page shows the previous page), the flow untouched;
 * - `offer-resume`: a plain dial after a session dropped mid-flow, with no outcome kept for the dial:
 *   "Continue where you left off?" (asked again until answered);
 * - `answers`: the message to hand the engine, and on a dial the answers its dial string typed ahead, taken by
 *   the engine in the same turn while their screens allow (never a PIN, a confirmation, an end, a refused
 *   answer, or a screen opening with outcomes kept for this dial: those are read and typed in the session).
 * {@link decisionOf} turns a plan into the engine's TurnDecision.
 */
import { render } from '../../src/conversation/flow/render.js';
import type { ConversationView, Inbound, Prompt, TurnDecision } from '../../src/conversation/types.js';
import type { GatewayName, Hop } from './codecs/codec.js';
import { answersOfDialString, answersOfText } from './dial-string.js';
import { NAV, renderPrompt, withoutError } from './renderer.js';
import { readHop, resumable, type Digest, type UssdState } from './session.js';

/** What the planner reads besides the stored state: the request, as the handler decoded it. */
export interface HopInput {
  gateway: GatewayName;
  sessionId: string;
  /** The caller's number, `+` form: the conversation, the user and the phone of the message. */
  phone: string;
  hop: Exclude<Hop, { kind: 'end' }>;
  /** Service codes a dialled string may start with (USSD_SERVICE_CODE, and the one the request names). */
  serviceCodes: readonly string[];
  digest: Digest;
  /** The time of the request, ms since the epoch. */
  now: number;
  /** How long a dropped session may be taken up (USSD_RESUME_SECONDS), ms. */
  resumeMs: number;
}

/** What a hop's new state holds besides its screen: the gateway session, the hop and the text answered so far. */
type Shown = Omit<UssdState, 'prompt' | 'page' | 'resume' | 'walked'>;

export type HopPlan =
  | { kind: 'repeat'; state: UssdState }
  | { kind: 'page'; state: UssdState }
  | { kind: 'offer-resume'; state: UssdState }
  | { kind: 'answers'; inbound: Inbound; ahead: readonly string[]; shown: Shown };

/** What request `input` means given the state stored with the conversation (see the file comment). */
export function planHop(stored: UssdState | undefined, input: HopInput, conversation?: ConversationView): HopPlan {
  const read = readHop(stored, input.gateway, input.sessionId, input.hop, input.digest);
  if (read.kind === 'repeat') return { kind: 'repeat', state: read.state };
  const number = read.kind === 'answer' ? read.hop : 0;
  const shown: Shown = {
    gateway: input.gateway,
    sessionId: input.sessionId,
    hop: number,
    seenLength: read.seen.length,
    seenDigest: input.digest(read.seen),
    at: input.now,
  };
  const { phone } = input;
  const inbound: Inbound = {
    channel: 'ussd',
    conversationId: phone,
    userId: phone,
    phoneNumber: phone,
    messageId: `${input.sessionId}:${number}`,
  };
  if (read.kind === 'dial') {
    const { hop } = input;
    const ahead =
      hop.kind === 'cumulative' ? answersOfText(hop.text) : answersOfDialString(hop.input, input.serviceCodes);
    // A plain dial after a session dropped mid-flow asks whether to take it up; a dial string says what it
    // wants. Not a flow whose service call is out or made (its outcome shows at the dial), ended or expired,
    // nor while outcomes are kept for this dial: they are shown first, on the menu.
    const saved =
      ahead.length === 0 && conversation?.waiting !== false && conversation?.notes !== true
        ? resumable(stored, input.now, input.resumeMs)
        : undefined;
    if (saved) return { kind: 'offer-resume', state: show(shown, resumeQuestion(saved.prompt), 0, saved) };
    return { kind: 'answers', inbound: { ...inbound, newSession: true }, ahead, shown };
  }
  const { state } = read;
  const key = read.answer.trim();
  if (state.resume) {
    // 1: the flow where it is (its PIN asked again, its outcome if a call was made); 2 or 00: the menu.
    if (key === '1') return { kind: 'answers', inbound: { ...inbound, resume: true }, ahead: [], shown };
    if (key === '2' || key === NAV.home)
      return { kind: 'answers', inbound: { ...inbound, newSession: true }, ahead: [], shown };
    return { kind: 'offer-resume', state: show(shown, state.prompt, 0, state.resume) };
  }
  const page = pageTurn(key, state);
  // A page turn leaves the refused answer behind: its error line is dropped (the pages stay the same).
  if (page !== undefined) return { kind: 'page', state: show(shown, withoutError(state.prompt), page) };
  return { kind: 'answers', inbound: { ...inbound, ...toAction(read.answer, state.prompt) }, ahead: [], shown };
}

/** The engine's TurnDecision for a plan: the state it keeps after the engine's answer shows its first page. */
export function decisionOf(plan: HopPlan): TurnDecision<UssdState> {
  switch (plan.kind) {
    case 'repeat':
      return { kind: 'reply', state: plan.state, changed: false };
    case 'page':
    case 'offer-resume':
      return { kind: 'reply', state: plan.state, changed: true };
    case 'answers': {
      const { shown } = plan;
      const after = (prompt: Prompt, taken: number): UssdState => ({
        ...show(shown, prompt, 0),
        ...(taken > 0 ? { walked: taken } : {}),
      });
      return plan.ahead.length > 0
        ? { kind: 'step', inbound: plan.inbound, ahead: { answers: plan.ahead, take: takeAhead }, after }
        : { kind: 'step', inbound: plan.inbound, after };
    }
  }
}

/** An answer typed ahead, read on `screen` as if typed there; undefined on a screen a dial string never answers. */
function takeAhead(screen: Prompt, answer: string): Pick<Inbound, 'nav' | 'choice' | 'text'> | undefined {
  return stopsWalk(screen) || isPageKey(answer.trim(), screen) ? undefined : toAction(answer, screen);
}

/**
 * A screen a dial string never answers: the end, a PIN, a confirmation, one that refused the last answer, or
 * one opening with outcomes kept for this dial (they are read before anything else is answered).
 */
function stopsWalk(prompt: Prompt): boolean {
  return (
    prompt.final ||
    prompt.input === 'pin' ||
    prompt.refused === true ||
    prompt.noted === true ||
    (prompt.choices ?? []).some((c) => c.id === 'confirm')
  );
}

/** The state of a hop showing `prompt` (page `page`). */
function show(shown: Shown, prompt: Prompt, page: number, resume?: UssdState['resume']): UssdState {
  const { gateway, sessionId, hop, seenLength, seenDigest, at } = shown;
  const state: UssdState = { gateway, sessionId, hop, seenLength, seenDigest, prompt, page, at };
  if (resume) state.resume = resume;
  return state;
}

/** `98` / `0` on a paged screen: the page it turns to; undefined when the key turns no page there. */
export function pageTurn(key: string, state: Pick<UssdState, 'prompt' | 'page'>): number | undefined {
  if (key !== NAV.more && key !== NAV.back) return undefined;
  const shown = renderPrompt(state.prompt, state.page);
  if (key === NAV.more && shown.page < shown.pageCount - 1) return shown.page + 1;
  if (key === NAV.back && shown.page > 0) return shown.page - 1;
  return undefined;
}

/** A page key typed ahead on a paged screen (shown from its first page): the walk stops there, on that screen. */
function isPageKey(key: string, screen: Prompt): boolean {
  return pageTurn(key, { prompt: screen, page: 0 }) !== undefined;
}

/**
 * "Continue where you left off?" in the language of the screen left. Nothing is behind it to go back to, so
 * it offers no `0 Back 00 Home` (`top`): its choices are the way on, and 00 still opens the menu.
 */
function resumeQuestion(left: Prompt): Prompt {
  const lang = left.lang ?? 'en';
  return {
    text: render({ key: 'common.resume' }, lang),
    choices: [
      { id: 'continue', label: render({ key: 'common.resumeContinue' }, lang) },
      { id: 'restart', label: render({ key: 'common.resumeRestart' }, lang) },
    ],
    ...(left.lang ? { lang: left.lang } : {}),
    top: true,
    final: false,
  };
}

/** An answer -> what it means: `00` home, `0` back, a shown choice's number, or text. */
export function toAction(answer: string, prompt: Prompt): Pick<Inbound, 'nav' | 'choice' | 'text'> {
  const key = answer.trim();
  if (key === NAV.home) return { nav: 'home' };
  if (key === NAV.back) return { nav: 'back' };
  if (/^\d{1,2}$/.test(key)) {
    const choice = prompt.choices?.[Number(key) - 1];
    if (choice) return { choice: choice.id };
  }
  return { text: answer };
}
