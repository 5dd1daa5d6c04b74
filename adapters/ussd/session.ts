/**
 * The USSD state kept with the user's conversation (the engine's record `conv:{u<n>}:ussd:<phone>`, written in the
 * same compare-and-set as the flow): which gateway session the user is in, the hop answered, the last Prompt
 * and the page of it on screen. And the pure rule that tells a new answer from a resend.
 *
 * Africa's Talking sends every answer so far joined by `*`; the new answer is what follows the text
 * already answered and its `*`, so an answer that itself holds `*` survives. The state keeps only the
 * length and a digest of that text: the text carries the PIN, and nothing needs it in clear. The digest is
 * an HMAC-SHA256 under a key kept out of Redis (the product derives it from its API key, so every process
 * computes the same one): a plain hash of text whose other answers are known would give the PIN back in
 * 10^4 guesses to whoever reads the record.
 *
 * Keyed by the phone number, a session id sent from another number can never reach this state: that number
 * has a conversation of its own.
 */
import { createHmac, createSecretKey } from 'node:crypto';
import type { Prompt } from '../../src/conversation/types.js';
import type { GatewayName, Hop } from './codecs/codec.js';

export interface UssdState {
  /** The gateway and its session id this state belongs to; a request of another session is a new dial. */
  gateway: GatewayName;
  sessionId: string;
  /** The last hop answered: 0 is the dial. */
  hop: number;
  /** Africa's Talking: length and digest of the cumulative text answered so far. */
  seenLength: number;
  seenDigest: string;
  /** The engine's last Prompt, rendered again for a resend or when the user pages with 98 / 0. */
  prompt: Prompt;
  /** The page of `prompt` on screen. */
  page: number;
  /** When this state was written (ms since the epoch): a session dropped longer ago than the resume window is not offered again. */
  at?: number;
  /** `prompt` asks "Continue where you left off?": the screen the dropped session was on, shown again on `1`. */
  resume?: { prompt: Prompt; page: number };
  /** Answers of the dial string the engine took at the dial (plan.ts; the gateway's own hop stays 0). */
  walked?: number;
}

/** What a request hop is, read against the stored state: a repeat, a dial, or a new answer. */
export type HopRead =
  /** A resend, a stale request, or a request after the END: the last screen again, no effect. */
  | { kind: 'repeat'; state: UssdState }
  /** The first hop of a session. */
  | { kind: 'dial'; seen: string }
  /** A new answer at hop `hop`. */
  | { kind: 'answer'; hop: number; answer: string; seen: string; state: UssdState };

/** The digest of the answered text kept in the state. */
export type Digest = (text: string) => string;

/**
 * HMAC-SHA256 of the text under `key` (see the file comment), base64url. The key is made a KeyObject once: a
 * string key is copied into a new secret key on every digest, two a hop.
 */
export function answersDigest(key: string): Digest {
  const secret = createSecretKey(Buffer.from(key, 'utf8'));
  return (text) => createHmac('sha256', secret).update(text).digest('base64url');
}

/**
 * What the request `hop` of gateway session `gateway`/`sessionId` means, given the state stored with the
 * conversation (undefined: none yet) and the digest its seenDigest was made with.
 */
export function readHop(
  stored: UssdState | undefined,
  gateway: GatewayName,
  sessionId: string,
  hop: Exclude<Hop, { kind: 'end' }>,
  digest: Digest,
): HopRead {
  const state = readState(stored);
  if (state === null || state.gateway !== gateway || state.sessionId !== sessionId) {
    return { kind: 'dial', seen: hop.kind === 'cumulative' ? hop.text : '' };
  }
  if (state.prompt.final) return { kind: 'repeat', state };
  const next = state.hop + 1;
  if (hop.kind === 'latest') {
    if (hop.start) return { kind: 'repeat', state };
    if (hop.sequence !== undefined && hop.sequence <= state.hop) return { kind: 'repeat', state };
    return { kind: 'answer', hop: next, answer: hop.input, seen: '', state };
  }
  const { text } = hop;
  if (state.seenLength === 0) {
    return text === '' ? { kind: 'repeat', state } : { kind: 'answer', hop: next, answer: text, seen: text, state };
  }
  const extends_ =
    text.length > state.seenLength &&
    text[state.seenLength] === '*' &&
    digest(text.slice(0, state.seenLength)) === state.seenDigest;
  if (!extends_) return { kind: 'repeat', state };
  return { kind: 'answer', hop: next, answer: text.slice(state.seenLength + 1), seen: text, state };
}

/**
 * The screen a dial of another session may take up (USSD_RESUME_SECONDS): the last screen of a session that
 * ended waiting for an answer, within `resumeMs` of its last hop (the question itself, dropped in turn, offers
 * the same screen again). None once the flow showed its end (an outcome, "being confirmed": nothing to take up)
 * or when the user had answered nothing in it (its first screen is the menu the dial shows anyway).
 */
export function resumable(stored: UssdState | undefined, now: number, resumeMs: number): UssdState['resume'] {
  const state = readState(stored);
  if (state === null || state.at === undefined || now - state.at >= resumeMs || state.prompt.final) return undefined;
  if (state.resume) return state.resume;
  if (state.hop === 0 && !state.walked) return undefined;
  return { prompt: state.prompt, page: state.page };
}

/** The stored state, or null when it is not one (absent, or an older shape). */
export function readState(stored: unknown): UssdState | null {
  if (typeof stored !== 'object' || stored === null) return null;
  const s = stored as Partial<UssdState>;
  const ok =
    typeof s.gateway === 'string' &&
    typeof s.sessionId === 'string' &&
    typeof s.hop === 'number' &&
    typeof s.seenLength === 'number' &&
    typeof s.seenDigest === 'string' &&
    typeof s.page === 'number' &&
    typeof s.prompt?.text === 'string';
  return ok ? (s as UssdState) : null;
}
