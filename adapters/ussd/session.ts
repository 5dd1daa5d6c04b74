/**
 * The USSD session record (one per gateway session, key `ussd:<gateway>:<sessionId>`) and the pure rule
 * that tells a new answer from a resend.
 *
 * Africa's Talking sends every answer so far joined by `*`; the new answer is what follows the text
 * already answered and its `*`, so an answer that itself holds `*` survives. The record keeps only the
 * length and a SHA-256 digest of that text: the text carries the PIN, and nothing needs it in clear.
 */
import { createHash } from 'node:crypto';
import type { Prompt } from '../../src/conversation/types.js';
import type { Hop } from './codecs/index.js';

export interface UssdSessionRecord {
  /** The last hop answered: 0 is the dial. */
  hop: number;
  /** Africa's Talking: length and digest of the cumulative text answered so far. */
  seenLength: number;
  seenDigest: string;
  /** The engine's last Prompt, re-rendered when the user pages with 98 / 0. */
  prompt: Prompt;
  /** The page of `prompt` on screen. */
  page: number;
  /** The screen last sent, sent again for a resend. */
  screen: { text: string; final: boolean };
  /** Digest of the phone number the session belongs to: the same session id from another number is refused. */
  owner?: string;
}

export type Step =
  /** A resend, a stale request, or a request after the END: the last screen again, no effect. */
  | { kind: 'repeat'; record: UssdSessionRecord }
  /** The first hop of a session. */
  | { kind: 'dial'; seen: string }
  /** A new answer at hop `hop`. */
  | { kind: 'answer'; hop: number; answer: string; seen: string };

export function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/** What the request `hop` means given the session's record (null: no session yet). */
export function nextStep(record: UssdSessionRecord | null, hop: Exclude<Hop, { kind: 'end' }>): Step {
  if (record === null) return { kind: 'dial', seen: hop.kind === 'cumulative' ? hop.text : '' };
  if (record.screen.final) return { kind: 'repeat', record };
  const next = record.hop + 1;
  if (hop.kind === 'latest') {
    if (hop.start) return { kind: 'repeat', record };
    if (hop.sequence !== undefined && hop.sequence <= record.hop) return { kind: 'repeat', record };
    return { kind: 'answer', hop: next, answer: hop.input, seen: '' };
  }
  const { text } = hop;
  if (record.seenLength === 0) {
    return text === '' ? { kind: 'repeat', record } : { kind: 'answer', hop: next, answer: text, seen: text };
  }
  const extends_ =
    text.length > record.seenLength &&
    text[record.seenLength] === '*' &&
    digest(text.slice(0, record.seenLength)) === record.seenDigest;
  if (!extends_) return { kind: 'repeat', record };
  return { kind: 'answer', hop: next, answer: text.slice(record.seenLength + 1), seen: text };
}

/** Reads a stored record back, or null when it is not one (another writer's key, an old shape). */
export function readRecord(snapshot: unknown): UssdSessionRecord | null {
  if (typeof snapshot !== 'object' || snapshot === null) return null;
  const r = snapshot as Partial<UssdSessionRecord>;
  const ok =
    typeof r.hop === 'number' &&
    typeof r.seenLength === 'number' &&
    typeof r.seenDigest === 'string' &&
    typeof r.page === 'number' &&
    typeof r.prompt?.text === 'string' &&
    typeof r.screen?.text === 'string';
  return ok ? (r as UssdSessionRecord) : null;
}
